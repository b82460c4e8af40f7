//! Full-text search: user text is only ever analysed into terms, SQLite matches what the
//! in-memory backend matches, and the integrity check finds a damaged index.

use memory_core::text::Analyzer;
use memory_core::{
    KnowledgePage, KnowledgeStore, MemoryFilter, MemoryItem, MemoryStore, Namespace, PageQuery,
    SearchQuery,
};
use memory_inmem::InMemoryStore;
use memory_sqlite::SqliteBackend;

use crate::common::Xorshift;

/// Text that is FTS5 query syntax, or breaks naive quoting.
const HOSTILE: &[&str] = &[
    "AND OR NEAR( \"unbalanced",
    "title:x*",
    "terms:secret",
    "content: rowid:1",
    "\"",
    "\"\"\"",
    "'",
    "*",
    "^start",
    "-minus +plus",
    "NOT",
    "a OR b AND c NOT d",
    "NEAR(one two, 3)",
    "(((",
    ")",
    "{title summary}: x",
    "x\" OR \"y",
    "memories_fts",
    "'; DROP TABLE memories; --",
    "%_%",
    "\\",
    "\u{0}nul",
    "🙂 emoji",
    "状态:管理*",
    "ÇAFÉ résumé",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_query_text_searches_for_its_words() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/hostile").unwrap();
    // Text no store accepts (blank, or holding a NUL) is still searched for as a query.
    let mut saved = Vec::new();
    for (index, text) in HOSTILE.iter().enumerate() {
        if let Ok(item) = MemoryItem::new(ns.clone(), *text) {
            store
                .save(item.with_id(format!("h{index}")).unwrap())
                .await
                .unwrap();
            saved.push(index);
        }
    }
    store
        .save(
            MemoryItem::new(ns.clone(), "an unrelated note about gardening")
                .unwrap()
                .with_id("plain")
                .unwrap(),
        )
        .await
        .unwrap();
    for (index, text) in HOSTILE.iter().enumerate() {
        let hits = store
            .search(&SearchQuery::new(ns.exact(), *text, 50))
            .await
            .unwrap_or_else(|error| panic!("{text:?} failed: {error}"));
        let terms = Analyzer::default().terms(text);
        let ids: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
        if terms.is_empty() {
            assert!(ids.is_empty(), "{text:?} has no terms but found {ids:?}");
        } else {
            assert!(
                !saved.contains(&index) || ids.contains(&format!("h{index}").as_str()),
                "{text:?} (terms {terms:?}) does not find itself: {ids:?}"
            );
            assert!(!ids.contains(&"plain"), "{text:?} matched unrelated text");
        }
        let pages = backend
            .knowledge_store()
            .search(&PageQuery::new(ns.exact(), *text, 5))
            .await;
        assert!(pages.is_ok(), "page search failed on {text:?}: {pages:?}");
    }
    // The tables survived the SQL-looking input.
    assert_eq!(store.count(&ns.exact()).await.unwrap(), saved.len() + 1);
    backend.check_integrity().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_are_words_not_syntax() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let store = backend.memory_store();
    let ns = Namespace::parse("fts/ops").unwrap();
    for (id, text) in [
        ("near", "meet near the station"),
        ("unbalanced", "an unbalanced budget"),
        ("alpha", "alpha only"),
        ("beta", "beta only"),
    ] {
        store
            .save(
                MemoryItem::new(ns.clone(), text)
                    .unwrap()
                    .with_id(id)
                    .unwrap(),
            )
            .await
            .unwrap();
    }
    let ids = |hits: Vec<memory_core::SearchHit>| {
        let mut ids: Vec<String> = hits.into_iter().map(|hit| hit.item.id.clone()).collect();
        ids.sort();
        ids
    };
    // NEAR( and the stray quote are words; AND/OR are stop words.
    let hits = store
        .search(&SearchQuery::new(
            ns.exact(),
            "AND OR NEAR( \"unbalanced",
            10,
        ))
        .await
        .unwrap();
    assert_eq!(ids(hits), ["near", "unbalanced"]);
    // "alpha NOT beta" would exclude beta as FTS5 syntax; as words it finds both.
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "alpha NOT beta", 10))
        .await
        .unwrap();
    assert_eq!(ids(hits), ["alpha", "beta"]);
    // A prefix star is not a prefix query.
    let hits = store
        .search(&SearchQuery::new(ns.exact(), "alp*", 10))
        .await
        .unwrap();
    assert!(hits.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ranks_exactly_as_the_in_memory_backend() {
    let sqlite = SqliteBackend::open_in_memory().unwrap();
    let memory = InMemoryStore::new();
    let ns = Namespace::parse("fts/agree").unwrap();
    let corpus = [
        "Caroline went to the LGBTQ support group yesterday",
        "Melanie painted a sunrise over the lake last summer",
        "The support group met again; Caroline spoke about adoption agencies",
        "用户喜欢 Rust 编程语言，也在学习 LangGraph 的状态管理",
        "LangGraph StateGraph 状态管理原理",
        "Version 3.5 of GPT-4 was released; the user's cat is called Miso",
        "I'm running a marathon in Tokyo next spring",
        "東京で日本語を勉強しています",
        "Ünïcödé ÇAFÉ and naïve résumés",
    ];
    let mut items = Vec::new();
    for (index, text) in corpus.iter().enumerate() {
        let mut item = MemoryItem::new(ns.clone(), *text)
            .unwrap()
            .with_id(format!("c{index}"))
            .unwrap();
        // Tags and the context field are indexed too, in both backends.
        if index == 1 {
            item = item.with_tags(["Watercolour Hobby"]).unwrap();
        }
        if index == 5 {
            item = item.with_context("What pets does the user have?");
        }
        items.push(item);
    }
    sqlite
        .memory_store()
        .save_many(items.clone())
        .await
        .unwrap();
    memory.save_many(items).await.unwrap();
    for query in [
        "support groups",
        "Who painted sunrises?",
        "状态管理",
        "编程",
        "gpt 3.5",
        "cats",
        "runs marathons",
        "日本語",
        "cafe",
        "ÇAFÉ",
        "adoption agency",
        "watercolour hobbies",
        "which pets?",
        "nothing matches this",
    ] {
        let search = SearchQuery::new(ns.exact(), query, 20);
        // The same hits, in the same order, with the same scores to the bit.
        let from_sqlite: Vec<(String, u32)> = sqlite
            .memory_store()
            .search(&search)
            .await
            .unwrap()
            .into_iter()
            .map(|hit| (hit.item.id.clone(), hit.score.to_bits()))
            .collect();
        let from_memory: Vec<(String, u32)> = memory
            .search(&search)
            .await
            .unwrap()
            .into_iter()
            .map(|hit| (hit.item.id.clone(), hit.score.to_bits()))
            .collect();
        assert_eq!(from_sqlite, from_memory, "query {query:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_respects_scope_and_filters() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let store = backend.memory_store();
    let a = Namespace::parse("tenant-4").unwrap();
    let lookalike = Namespace::parse("tenant-42").unwrap();
    let child = Namespace::parse("tenant-4/session").unwrap();
    for (ns, id) in [(&a, "a"), (&lookalike, "l"), (&child, "c")] {
        store
            .save(
                MemoryItem::new(ns.clone(), "shared secret word")
                    .unwrap()
                    .with_id(id)
                    .unwrap()
                    .with_tags([id])
                    .unwrap(),
            )
            .await
            .unwrap();
    }
    let found = |scope: memory_core::Scope| async move {
        let mut ids: Vec<String> = store
            .search(&SearchQuery::new(scope, "secret", 10))
            .await
            .unwrap()
            .into_iter()
            .map(|hit| hit.item.id.clone())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(found(a.exact()).await, ["a"]);
    assert_eq!(found(a.subtree()).await, ["a", "c"]);
    assert_eq!(found(memory_core::Scope::all()).await, ["a", "c", "l"]);
    let tagged = SearchQuery::new(a.subtree(), "secret", 10)
        .with_filter(MemoryFilter::new(a.subtree()).with_tags(["c"]).unwrap());
    let hits = store.search(&tagged).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].item.id, "c");
    let by_meta = SearchQuery::new(a.subtree(), "secret", 10)
        .with_filter(MemoryFilter::new(a.subtree()).with_metadata("missing", serde_json::json!(1)));
    assert!(store.search(&by_meta).await.unwrap().is_empty());
}

/// Word `n` of a made-up vocabulary: consonants only, so stemming leaves every word whole.
fn made_up_word(mut n: usize) -> String {
    const LETTERS: &[u8] = b"bdfgkmptvz";
    let mut word = String::from("x");
    loop {
        word.push(char::from(LETTERS[n % LETTERS.len()]));
        n /= LETTERS.len();
        if n == 0 {
            return word;
        }
    }
}

/// 16 KiB of distinct words, the longest query the retriever passes on.
fn long_query() -> String {
    let mut query = String::new();
    for n in 0.. {
        let word = made_up_word(n);
        if query.len() + word.len() + 1 > 16 * 1024 {
            return query;
        }
        query.push_str(&word);
        query.push(' ');
    }
    query
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_query_of_distinct_words_is_searched_with_its_first_terms() {
    let backend = SqliteBackend::open_in_memory().unwrap();
    let ns = Namespace::parse("fts/long").unwrap();
    let mut items = Vec::new();
    for n in 0..300 {
        let text = format!("note {} and {}", made_up_word(n), made_up_word(n + 1));
        items.push(
            MemoryItem::new(ns.clone(), text.clone())
                .unwrap()
                .with_id(format!("m{n:03}"))
                .unwrap(),
        );
        backend
            .knowledge_store()
            .add_page(
                KnowledgePage::new(ns.clone(), format!("p{n:03}"), format!("Page {n}"))
                    .unwrap()
                    .with_content(text),
            )
            .await
            .unwrap();
    }
    backend.memory_store().save_many(items).await.unwrap();
    let query = long_query();
    assert!(query.len() > 16 * 1024 - 16, "{}", query.len());
    let terms = Analyzer::default().query_terms(&query);
    assert_eq!(terms.len(), memory_core::text::MAX_QUERY_TERMS);

    let hits = backend
        .memory_store()
        .search(&SearchQuery::new(ns.exact(), &query, 1_000))
        .await
        .unwrap();
    // The first 128 words are searched: memories 0 to 127 hold one of them.
    assert_eq!(hits.len(), memory_core::text::MAX_QUERY_TERMS);
    let pages = backend
        .knowledge_store()
        .search(&PageQuery::new(ns.exact(), &query, 1_000))
        .await
        .unwrap();
    assert_eq!(pages.len(), memory_core::text::MAX_QUERY_TERMS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_integrity_check_finds_a_damaged_index() {
    let file = crate::common::TempDb::new("damaged-index");
    let ns = Namespace::parse("fts/damaged").unwrap();
    {
        let backend = SqliteBackend::open(file.path()).unwrap();
        for (id, text) in [
            ("a", "the cat sat"),
            ("b", "a cat and a dog"),
            ("c", "dogs bark"),
        ] {
            backend
                .memory_store()
                .save(
                    MemoryItem::new(ns.clone(), text)
                        .unwrap()
                        .with_id(id)
                        .unwrap(),
                )
                .await
                .unwrap();
        }
        backend
            .knowledge_store()
            .add_page(KnowledgePage::new(ns.clone(), "p", "Cats").unwrap())
            .await
            .unwrap();
        backend.check_integrity().await.unwrap();
    }
    for damage in [
        "DELETE FROM memory_blocks WHERE (nid, term, first) IN \
         (SELECT nid, term, first FROM memory_blocks LIMIT 1)",
        "UPDATE memory_blocks SET max_tf0 = max_tf0 + 1 WHERE term = 'dog'",
        "UPDATE memory_blocks SET count = count + 1 WHERE term = 'cat'",
        "UPDATE memory_blocks SET data = substr(data, 1, length(data) - 1) WHERE term = 'dog'",
        "UPDATE memory_stats SET len0 = len0 + 1",
        "DELETE FROM memory_docs WHERE rid = (SELECT min(rid) FROM memory_docs)",
        "INSERT INTO memory_blocks SELECT nid, 'zzz', first, count, max_tf0, max_tf1, min_len0, \
         min_len1, data FROM memory_blocks LIMIT 1",
        "UPDATE memories SET content = 'changed behind the index' WHERE id = 'c'",
        "DELETE FROM page_blocks",
    ] {
        let connection = rusqlite::Connection::open(file.path()).unwrap();
        assert!(connection.execute(damage, []).unwrap() > 0, "{damage}");
        drop(connection);
        let backend = SqliteBackend::open(file.path()).unwrap();
        let error = backend.check_integrity().await.unwrap_err();
        assert!(
            error.to_string().contains("full-text index"),
            "{damage}: {error}"
        );
        drop(backend);
        // Undo: rebuild the index from the records.
        let connection = rusqlite::Connection::open(file.path()).unwrap();
        connection
            .execute_batch(
                "UPDATE memories SET content = 'dogs bark' WHERE id = 'c';
                 UPDATE meta SET value = 'damaged' WHERE key = 'index';",
            )
            .unwrap();
        drop(connection);
        SqliteBackend::open(file.path())
            .unwrap()
            .check_integrity()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_searches_over_several_namespaces_rank_as_in_memory() {
    use memory_core::{MemoryKind, Scope};
    const WORDS: [&str; 14] = [
        "apple", "river", "stone", "garden", "violin", "coffee", "winter", "letter", "bread",
        "market", "quiet", "bright", "travel", "sister",
    ];
    let sqlite = SqliteBackend::open_in_memory().unwrap();
    let memory = InMemoryStore::new();
    let spaces = ["t/a", "t/a/b", "t/c", "u"].map(|ns| Namespace::parse(ns).unwrap());
    let kinds = [
        MemoryKind::Episodic,
        MemoryKind::Semantic,
        MemoryKind::LongTerm,
    ];
    let mut rng = Xorshift(0x2545_F491_4F6C_DD1D);
    let start = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
    let mut items = Vec::new();
    for i in 0..240 {
        let ns = &spaces[rng.below(spaces.len())];
        let length = 1 + rng.below(if i % 5 == 0 { 40 } else { 8 });
        let text: Vec<&str> = (0..length).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let mut item = MemoryItem::new(ns.clone(), text.join(" "))
            .unwrap()
            .with_id(format!("{:02}-{i:03}", rng.below(30)))
            .unwrap()
            .with_kind(kinds[rng.below(kinds.len())])
            .with_created_at(start + chrono::Duration::seconds(rng.below(1000) as i64))
            .with_tags([WORDS[rng.below(4)]])
            .unwrap();
        if i % 3 == 0 {
            item = item.with_context(WORDS[rng.below(WORDS.len())]);
        }
        if i % 4 == 0 {
            item.metadata["speaker"] = serde_json::json!(if i % 8 == 0 { "ann" } else { "bo" });
        }
        items.push(item);
    }
    sqlite
        .memory_store()
        .save_many(items.clone())
        .await
        .unwrap();
    memory.save_many(items).await.unwrap();
    let t = Namespace::parse("t").unwrap();
    let filters = [
        MemoryFilter::new(t.subtree()),
        MemoryFilter::new(spaces[0].exact()),
        MemoryFilter::new(Scope::all()),
        MemoryFilter::new(t.subtree()).with_kinds([MemoryKind::Semantic]),
        MemoryFilter::new(t.subtree()).with_tags(["river"]).unwrap(),
        MemoryFilter::new(t.subtree()).with_time_range(
            Some(start + chrono::Duration::seconds(200)),
            Some(start + chrono::Duration::seconds(700)),
        ),
        MemoryFilter::new(t.subtree()).with_id_prefix("1"),
        MemoryFilter::new(Scope::all()).with_metadata("speaker", serde_json::json!("ann")),
    ];
    for filter in &filters {
        for text in [
            "apple",
            "river stone",
            "quiet winter letter",
            "coffee bread market travel",
            "sister",
        ] {
            for top_k in [1, 5, 50] {
                let query =
                    SearchQuery::new(filter.scope.clone(), text, top_k).with_filter(filter.clone());
                let hits = |hits: Vec<memory_core::SearchHit>| {
                    hits.into_iter()
                        .map(|hit| {
                            (
                                hit.item.namespace.to_string(),
                                hit.item.id.clone(),
                                hit.score.to_bits(),
                            )
                        })
                        .collect::<Vec<_>>()
                };
                assert_eq!(
                    hits(sqlite.memory_store().search(&query).await.unwrap()),
                    hits(memory.search(&query).await.unwrap()),
                    "{text:?} top {top_k} with {filter:?}"
                );
            }
        }
    }
}

/// Terms held by thousands of records span many blocks of postings, which saves in batches,
/// single saves, rewrites and deletes split, reshape and empty; the pruned search still
/// returns exactly the in-memory backend's hits, scores and order (ties by id included), for
/// small and large `top_k`, with and without filters that turn records away, and when it
/// keeps only the rarest terms (chosen from a few blocks of a frequent term, or all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_search_over_many_blocks_ranks_as_in_memory() {
    use memory_core::{MemoryKind, Scope};
    const WORDS: [&str; 12] = [
        "apple", "river", "stone", "garden", "violin", "coffee", "winter", "letter", "bread",
        "market", "quiet", "bright",
    ];
    let sqlite = SqliteBackend::open_in_memory().unwrap();
    let memory = InMemoryStore::new();
    let spaces = ["big/a", "big/b"].map(|ns| Namespace::parse(ns).unwrap());
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    let item = |rng: &mut Xorshift, i: usize| {
        let ns = &spaces[usize::from(rng.below(4) == 0)];
        // Skewed: low words are frequent, high ones rare.
        let length = 1 + rng.below(if i.is_multiple_of(7) { 30 } else { 6 });
        let text: Vec<&str> = (0..length)
            .map(|_| {
                let spread = 1 + rng.below(WORDS.len());
                WORDS[rng.below(spread)]
            })
            .collect();
        let kind = if rng.below(3) == 0 {
            MemoryKind::Semantic
        } else {
            MemoryKind::Episodic
        };
        MemoryItem::new(ns.clone(), text.join(" "))
            .unwrap()
            .with_id(format!("{:03}-{i:05}", rng.below(500)))
            .unwrap()
            .with_kind(kind)
    };
    let mut all: Vec<MemoryItem> = (0..3000).map(|i| item(&mut rng, i)).collect();
    for chunk in all.chunks(700) {
        sqlite
            .memory_store()
            .save_many(chunk.to_vec())
            .await
            .unwrap();
        memory.save_many(chunk.to_vec()).await.unwrap();
    }
    for i in 3000..3150 {
        let new = item(&mut rng, i);
        sqlite.memory_store().save(new.clone()).await.unwrap();
        memory.save(new.clone()).await.unwrap();
        all.push(new);
    }
    for _ in 0..400 {
        let at = rng.below(all.len());
        let old = &all[at];
        if rng.below(2) == 0 {
            sqlite
                .memory_store()
                .delete(&old.namespace, &old.id)
                .await
                .unwrap();
            memory.delete(&old.namespace, &old.id).await.unwrap();
        } else {
            let mut changed = old.clone();
            changed.content = format!("{} {}", WORDS[rng.below(WORDS.len())], old.content);
            sqlite.memory_store().save(changed.clone()).await.unwrap();
            memory.save(changed).await.unwrap();
        }
    }
    sqlite.check_integrity().await.unwrap();
    let big = Namespace::parse("big").unwrap();
    let filters = [
        MemoryFilter::new(spaces[0].exact()),
        MemoryFilter::new(big.subtree()),
        MemoryFilter::new(Scope::all()).with_kinds([MemoryKind::Semantic]),
        MemoryFilter::new(big.subtree()).with_id_prefix("0"),
    ];
    for filter in &filters {
        for text in [
            "apple",
            "bright",
            "river quiet",
            "apple river stone garden",
            "winter letter bread market",
        ] {
            for (top_k, rarest) in [
                (1, None),
                (10, None),
                (100, None),
                (usize::MAX, None),
                (10, Some(1)),
                (10, Some(2)),
                (100, Some(3)),
            ] {
                let mut query =
                    SearchQuery::new(filter.scope.clone(), text, top_k).with_filter(filter.clone());
                query.rarest = rarest;
                let hits = |hits: Vec<memory_core::SearchHit>| {
                    hits.into_iter()
                        .map(|hit| {
                            (
                                hit.item.namespace.to_string(),
                                hit.item.id.clone(),
                                hit.score.to_bits(),
                            )
                        })
                        .collect::<Vec<_>>()
                };
                let expected = hits(memory.search(&query).await.unwrap());
                assert!(!expected.is_empty(), "{text:?} with {filter:?}");
                assert_eq!(
                    hits(sqlite.memory_store().search(&query).await.unwrap()),
                    expected,
                    "{text:?} top {top_k}, rarest {rarest:?}, with {filter:?}"
                );
            }
        }
    }
}

/// A rarest-terms search that sees only a few blocks of a frequent term still counts a term
/// in full when its blocks were thinned by deletes: a term whose first blocks are nearly
/// empty can be rarer than one counted exactly, and is kept, as in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rarest_terms_count_thinned_blocks_in_full() {
    let sqlite = SqliteBackend::open_in_memory().unwrap();
    let memory = InMemoryStore::new();
    let ns = Namespace::parse("thinned").unwrap();
    let mut items = Vec::new();
    for at in 0..640 {
        items.push(
            MemoryItem::new(ns.clone(), format!("sparse filler{}", at % 7))
                .unwrap()
                .with_id(format!("s{at:03}"))
                .unwrap(),
        );
    }
    for at in 0..300 {
        items.push(
            MemoryItem::new(ns.clone(), "dense other")
                .unwrap()
                .with_id(format!("d{at:03}"))
                .unwrap(),
        );
    }
    sqlite
        .memory_store()
        .save_many(items.clone())
        .await
        .unwrap();
    memory.save_many(items).await.unwrap();
    // 40 of the 640 left, spread over the five blocks the 640 filled.
    let gone: Vec<String> = (0..640)
        .filter(|at| at % 16 != 0)
        .map(|at| format!("s{at:03}"))
        .collect();
    sqlite.memory_store().delete_many(&ns, &gone).await.unwrap();
    memory.delete_many(&ns, &gone).await.unwrap();
    sqlite.check_integrity().await.unwrap();
    let query = SearchQuery::new(ns.exact(), "dense sparse", 50).with_rarest(1);
    let ids = |hits: Vec<memory_core::SearchHit>| -> Vec<String> {
        hits.into_iter().map(|hit| hit.item.id.clone()).collect()
    };
    let expected = ids(memory.search(&query).await.unwrap());
    assert_eq!(expected.len(), 40, "the 40 left hold the rarer term");
    assert!(expected.iter().all(|id| id.starts_with('s')));
    assert_eq!(
        ids(sqlite.memory_store().search(&query).await.unwrap()),
        expected
    );
}
