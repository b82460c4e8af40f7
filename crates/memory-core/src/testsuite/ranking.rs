//! Conformance of full-text ranking: on a fixed corpus every backend returns the hits of an
//! exhaustive reference ranking written here from [`crate::search`]'s definitions, in the
//! same order, with scores that agree to a small relative tolerance (a backend may compute
//! in `f64`).
//!
//! The reference analyses each record's [`search_fields`](MemoryItem::search_fields) with
//! [`Analyzer`], computes the statistics of each namespace (record count, total field
//! lengths, document frequencies), scores every record holding a query term as the sum of
//! [`bm25f`] over the query's distinct terms ([`Analyzer::query_terms`]) in `f64`, rounded
//! to `f32`, and orders by score, then id (memories: then namespace; pages: namespace,
//! then id, and the score multiplied by the match rules' boost). A scope over several
//! namespaces ranks each namespace with its own statistics and merges.

use std::collections::HashMap;

use chrono::{TimeZone, Utc};

use super::child;
use crate::search::{MEMORY_FIELD_WEIGHTS, PAGE_FIELD_WEIGHTS, bm25_idf, bm25f, length_factors};
use crate::text::Analyzer;
use crate::{
    KnowledgePage, KnowledgeStore, MemoryItem, MemoryStore, Namespace, PageMatchSignals, PageQuery,
    Scope, SearchQuery,
};

mod cut;

pub(super) use self::cut::{memory_rarest, memory_ties};

/// Hits compared per query.
const TOP_K: usize = 10;
/// Largest relative difference allowed between a backend's score and the reference's.
const TOLERANCE: f32 = 1e-5;

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

/// Words of the corpus: topics carry meaning, fillers make lengths and frequencies vary.
const TOPICS: [&str; 12] = [
    "garden", "tomato", "hiking", "mountain", "coffee", "espresso", "python", "rust", "violin",
    "concert", "marathon", "bakery",
];
const FILLERS: [&str; 20] = [
    "morning",
    "friend",
    "weekend",
    "bought",
    "visited",
    "yesterday",
    "often",
    "quiet",
    "river",
    "house",
    "lunch",
    "project",
    "little",
    "neighbour",
    "sister",
    "market",
    "evening",
    "bright",
    "travel",
    "letter",
];
const TAGS: [&str; 5] = ["hobby", "work", "family", "health", "food"];

/// The memory queries: single words, several words, words found only in tags or contexts,
/// a word in no record, and text that is all stop words.
const MEMORY_QUERIES: [&str; 14] = [
    "tomato garden",
    "rust",
    "espresso coffee morning",
    "violin concert tickets",
    "marathon training evening",
    "python project",
    "hiking mountain river",
    "bakery",
    "what did you ask about coffee",
    "hobby",
    "neighbour letter sister",
    "quiet evening travel market lunch",
    "nothing matches zeppelin",
    "the and of",
];

/// The page queries: title prefixes, tags and summaries trigger the match rules' boost.
const PAGE_QUERIES: [&str; 12] = [
    "garden",
    "tomato garden",
    "coffee espresso",
    "rust python project",
    "violin",
    "concert market",
    "hiking",
    "food",
    "marathon river morning",
    "bakery bread",
    "little house",
    "zeppelin",
];

/// A deterministic generator (a 64-bit LCG), so every backend sees the same corpus.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % below as u64) as usize
    }
}

/// `count` words: `topics` topic words among fillers, in generated order.
fn words(rng: &mut Lcg, count: usize, topics: usize) -> String {
    let mut out: Vec<&str> = Vec::with_capacity(count);
    for at in 0..count {
        out.push(if at < topics {
            TOPICS[rng.next(TOPICS.len())]
        } else {
            FILLERS[rng.next(FILLERS.len())]
        });
    }
    for at in (1..out.len()).rev() {
        out.swap(at, rng.next(at + 1));
    }
    out.join(" ")
}

/// The memory corpus of `ns`: 48 items of 2 to 60 words, some tagged, a third with a
/// context, a few sharing their text exactly (equal scores, ordered by id).
fn memory_corpus(ns: &Namespace) -> Vec<MemoryItem> {
    let mut rng = Lcg(0x5EED_0001);
    let mut items = Vec::new();
    for i in 0..48usize {
        let length = 2 + rng.next(if i % 4 == 0 { 59 } else { 20 });
        let topics = 1 + rng.next(length.min(4));
        let content = if i % 16 == 15 {
            // The same text as an earlier item: a tie.
            items
                .get(i - 8)
                .map(|item: &MemoryItem| item.content.clone())
                .unwrap_or_default()
        } else {
            words(&mut rng, length, topics)
        };
        let at = Utc
            .timestamp_opt(1_700_000_000 + i as i64 * 60, 0)
            .single()
            .unwrap_or_default();
        let mut item = MemoryItem::new(ns.clone(), content)
            .and_then(|item| item.with_id(format!("r{i:02}")))
            .map(|item| item.with_created_at(at))
            .unwrap_or_else(|error| panic!("conformance: building memory r{i:02}: {error}"));
        if i % 5 == 1 {
            let tags = [TAGS[rng.next(TAGS.len())], TAGS[rng.next(TAGS.len())]];
            item = item
                .with_tags(tags)
                .unwrap_or_else(|error| panic!("conformance: tagging r{i:02}: {error}"));
        }
        if i % 3 == 2 {
            let count = 1 + rng.next(3);
            let question = format!("what did you ask about {}?", words(&mut rng, count, 1));
            item = item.with_context(question);
        }
        items.push(item);
    }
    items
}

/// The page corpus of `ns`: 12 pages with every field used.
fn page_corpus(ns: &Namespace) -> Vec<KnowledgePage> {
    let mut rng = Lcg(0x5EED_0002);
    (0..12usize)
        .map(|i| {
            let (count, topics) = (1 + rng.next(3), 0);
            let title = format!("{} {}", TOPICS[i], words(&mut rng, count, topics));
            let (count, topics) = (3 + rng.next(8), 1 + rng.next(2));
            let summary = words(&mut rng, count, topics);
            let (count, topics) = (5 + rng.next(50), 1 + rng.next(4));
            let content = words(&mut rng, count, topics);
            let tags = [TAGS[i % TAGS.len()], TOPICS[(i * 7 + 3) % TOPICS.len()]];
            KnowledgePage::new(ns.clone(), format!("p{i:02}"), title)
                .and_then(|page| page.with_tags(tags))
                .map(|page| page.with_summary(summary).with_content(content))
                .unwrap_or_else(|error| panic!("conformance: building page p{i:02}: {error}"))
        })
        .collect()
}

/// A record as the reference ranks it.
struct Doc<const N: usize> {
    ns: Namespace,
    id: String,
    tf: HashMap<String, [u16; N]>,
    len: [u32; N],
}

fn analyze<const N: usize>(ns: &Namespace, id: &str, fields: [&str; N]) -> Doc<N> {
    let analyzer = Analyzer::default();
    let mut tf: HashMap<String, [u16; N]> = HashMap::new();
    let mut len = [0u32; N];
    for (field, text) in fields.iter().enumerate() {
        analyzer.for_each_term(text, |term| {
            len[field] += 1;
            let counts = tf.entry(term.to_owned()).or_insert([0; N]);
            counts[field] = counts[field].saturating_add(1);
        });
    }
    Doc {
        ns: ns.clone(),
        id: id.to_owned(),
        tf,
        len,
    }
}

/// Every record holding a query term, scored with the statistics of its own namespace, as
/// `(score, index into docs)`, unordered.
fn reference_scores<const N: usize>(
    docs: &[Doc<N>],
    weights: &[f32; N],
    query: &str,
) -> Vec<(f32, usize)> {
    let terms = Analyzer::default().query_terms(query);
    let mut namespaces: Vec<&Namespace> = docs.iter().map(|doc| &doc.ns).collect();
    namespaces.sort();
    namespaces.dedup();
    let mut out = Vec::new();
    for ns in namespaces {
        let members: Vec<usize> = (0..docs.len()).filter(|at| docs[*at].ns == *ns).collect();
        let n = members.len() as f32;
        let mut total_len = [0u64; N];
        for at in &members {
            for (total, len) in total_len.iter_mut().zip(docs[*at].len) {
                *total += u64::from(len);
            }
        }
        let length_factor = length_factors(n, &total_len);
        for at in &members {
            let doc = &docs[*at];
            let mut sum = 0.0f64;
            let mut found = false;
            for term in &terms {
                let Some(tf) = doc.tf.get(term) else { continue };
                let df = members
                    .iter()
                    .filter(|other| docs[**other].tf.contains_key(term))
                    .count();
                let idf = bm25_idf(n, df as f32);
                sum += f64::from(bm25f(weights, &length_factor, tf, &doc.len, idf));
                found = true;
            }
            if found {
                out.push((sum as f32, *at));
            }
        }
    }
    out
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= TOLERANCE * a.abs().max(b.abs())
}

/// Panics unless the reference's first `TOP_K + 1` scores are each either equal to the next
/// or clearly apart from it: a fixture whose order a backend computing in `f64` could
/// legitimately flip would be no test.
fn assert_separated(what: &str, query: &str, scores: &[f32]) {
    for pair in scores.windows(2).take(TOP_K) {
        assert!(
            pair[0] == pair[1] || !close(pair[0], pair[1]),
            "conformance fixture: {what} {query:?} has near-equal scores {pair:?}"
        );
    }
}

/// Compares `(id, score)` hits with the reference's, in order.
fn assert_same(what: &str, query: &str, got: &[(String, f32)], expected: &[(String, f32)]) {
    let ids = |hits: &[(String, f32)]| hits.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(got),
        ids(expected),
        "conformance: {what} for {query:?} ranks like the reference (BM25F of memory_core::search \
         over each namespace's statistics); got scores {got:?}, expected {expected:?}"
    );
    for ((id, score), (_, reference)) in got.iter().zip(expected) {
        assert!(
            close(*score, *reference),
            "conformance: {what} for {query:?}: {id} scores {score}, the reference {reference}"
        );
    }
}

/// Memory search: one namespace, then a subtree of two namespaces with their own statistics.
pub(super) async fn memory_ranking(store: &dyn MemoryStore, ns: &Namespace) {
    let one = child(ns, "one");
    let split = child(ns, "split");
    let (a, b) = (child(&split, "a"), child(&split, "b"));
    let corpus = memory_corpus(&one);
    let mut items = corpus.clone();
    for (at, item) in corpus.iter().enumerate() {
        let mut moved = item.clone();
        moved.namespace = if at % 3 == 0 { b.clone() } else { a.clone() };
        items.push(moved);
    }
    let docs: Vec<Doc<2>> = items
        .iter()
        .map(|item| {
            let fields = item.search_fields();
            analyze(&item.namespace, &item.id, [&fields[0], &fields[1]])
        })
        .collect();
    must(store.save_many(items), "save_many").await;
    let scopes: [(Scope, &str); 2] = [
        (one.exact(), "memory search"),
        (split.subtree(), "memory search over two namespaces"),
    ];
    for (scope, label) in scopes {
        for query in MEMORY_QUERIES {
            let mut expected: Vec<(f32, usize)> =
                reference_scores(&docs, &MEMORY_FIELD_WEIGHTS, query)
                    .into_iter()
                    .filter(|(_, at)| scope.contains(&docs[*at].ns))
                    .collect();
            expected.sort_by(|x, y| {
                let (dx, dy) = (&docs[x.1], &docs[y.1]);
                y.0.total_cmp(&x.0)
                    .then_with(|| dx.id.cmp(&dy.id))
                    .then_with(|| dx.ns.cmp(&dy.ns))
            });
            let scores: Vec<f32> = expected.iter().map(|(score, _)| *score).collect();
            assert_separated(label, query, &scores);
            let ranked = expected;
            let expected: Vec<(String, f32)> = ranked
                .iter()
                .take(TOP_K)
                .map(|(score, at)| (docs[*at].id.clone(), *score))
                .collect();
            // Asked where the hits' terms are, a search ranks the same.
            let hits = must(
                store.search(&SearchQuery::new(scope.clone(), query, TOP_K).with_own_words()),
                "search",
            )
            .await;
            let got: Vec<(String, f32)> = hits
                .iter()
                .map(|hit| (hit.item.id.clone(), hit.score))
                .collect();
            assert_same(label, query, &got, &expected);
            let terms = Analyzer::default().query_terms(query);
            for (hit, (_, at)) in hits.iter().zip(&ranked) {
                let doc = &docs[*at];
                let own = terms
                    .iter()
                    .any(|term| doc.tf.get(term).is_some_and(|tf| tf[0] > 0));
                if let Some(told) = hit.in_own_words {
                    assert_eq!(
                        told, own,
                        "conformance: {label} for {query:?}: {} holds a query term in its own \
                         words (content, tags), not only in its context: {own}",
                        doc.id
                    );
                }
            }
        }
    }
    must(store.clear(&ns.subtree()), "clear").await;
}

/// Page search: one namespace, then a subtree of two namespaces with their own statistics.
pub(super) async fn page_ranking(store: &dyn KnowledgeStore, ns: &Namespace) {
    let one = child(ns, "one");
    let split = child(ns, "split");
    let (a, b) = (child(&split, "a"), child(&split, "b"));
    let corpus = page_corpus(&one);
    let mut pages = corpus.clone();
    for (at, page) in corpus.iter().enumerate() {
        let mut moved = page.clone();
        moved.namespace = if at % 3 == 0 { b.clone() } else { a.clone() };
        pages.push(moved);
    }
    let docs: Vec<Doc<4>> = pages
        .iter()
        .map(|page| {
            let fields = page.search_fields();
            analyze(
                &page.namespace,
                &page.id,
                [&fields[0], &fields[1], &fields[2], &fields[3]],
            )
        })
        .collect();
    for page in pages.iter().cloned() {
        must(store.add_page(page), "add_page").await;
    }
    let scopes: [(Scope, &str); 2] = [
        (one.exact(), "page search"),
        (split.subtree(), "page search over two namespaces"),
    ];
    for (scope, label) in scopes {
        for query in PAGE_QUERIES {
            let keywords = crate::backend::page_rule_keywords(query);
            let mut expected: Vec<(f32, usize)> =
                reference_scores(&docs, &PAGE_FIELD_WEIGHTS, query)
                    .into_iter()
                    .filter(|(_, at)| scope.contains(&docs[*at].ns))
                    .map(|(score, at)| {
                        let page = &pages[at];
                        let signals = PageMatchSignals::compute(
                            &page.title,
                            &page.summary,
                            &page.tags,
                            &keywords,
                        );
                        (score * signals.boost(), at)
                    })
                    .collect();
            expected.sort_by(|x, y| {
                let (dx, dy) = (&docs[x.1], &docs[y.1]);
                y.0.total_cmp(&x.0)
                    .then_with(|| dx.ns.cmp(&dy.ns))
                    .then_with(|| dx.id.cmp(&dy.id))
            });
            let scores: Vec<f32> = expected.iter().map(|(score, _)| *score).collect();
            assert_separated(label, query, &scores);
            let expected: Vec<(String, f32)> = expected
                .iter()
                .take(TOP_K)
                .map(|(score, at)| (format!("{}/{}", docs[*at].ns, docs[*at].id), *score))
                .collect();
            let hits = must(
                store.search(&PageQuery::new(scope.clone(), query, TOP_K)),
                "search",
            )
            .await;
            let got: Vec<(String, f32)> = hits
                .iter()
                .map(|hit| (format!("{}/{}", hit.page.namespace, hit.page.id), hit.score))
                .collect();
            assert_same(label, query, &got, &expected);
        }
    }
    must(store.clear(&ns.subtree()), "clear").await;
}
