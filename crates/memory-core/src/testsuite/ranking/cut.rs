//! Conformance checks for the edges of a memory search's ranking: ties at the cut, and a
//! search restricted to its rarest terms.

use super::{TOLERANCE, TOP_K, child, must};
use crate::{MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, SearchQuery};

/// Ties at the cut: many memories score the same (one text), saved so that their storage
/// order is the reverse of their id order. Every backend returns the `k` first ids, also
/// when a filter turns some of the best away: by kind (as every recall's filter does), by
/// metadata (checked on the decoded record), or both.
pub(in crate::testsuite) async fn memory_ties(store: &dyn MemoryStore, ns: &Namespace) {
    const TIED: usize = 60;
    let items: Vec<MemoryItem> = (0..TIED)
        .rev()
        .map(|at| {
            let kind = if at % 4 == 1 {
                MemoryKind::ShortTerm
            } else {
                MemoryKind::Episodic
            };
            MemoryItem::new(ns.clone(), "the tied note about the greenhouse")
                .and_then(|item| item.with_id(format!("t{at:02}")))
                .and_then(|item| item.with_metadata(serde_json::json!({"keep": at % 3 != 0})))
                .map(|item| item.with_kind(kind))
                .unwrap_or_else(|error| panic!("conformance: building tie {at}: {error}"))
        })
        .collect();
    must(store.save_many(items), "save_many").await;
    let ids = |keep: &dyn Fn(usize) -> bool, k: usize| -> Vec<String> {
        (0..TIED)
            .filter(|at| keep(*at))
            .take(k)
            .map(|at| format!("t{at:02}"))
            .collect()
    };
    let kinds = [
        MemoryKind::LongTerm,
        MemoryKind::Episodic,
        MemoryKind::Semantic,
    ];
    let cases: [(&str, MemoryFilter, Vec<String>); 4] = [
        (
            "no filter",
            MemoryFilter::new(ns.exact()),
            ids(&|_| true, 7),
        ),
        (
            "kinds",
            MemoryFilter::new(ns.exact()).with_kinds(kinds),
            ids(&|at| at % 4 != 1, 7),
        ),
        (
            "metadata",
            MemoryFilter::new(ns.exact()).with_metadata("keep", serde_json::json!(true)),
            ids(&|at| at % 3 != 0, 7),
        ),
        (
            "kinds and metadata",
            MemoryFilter::new(ns.exact())
                .with_kinds(kinds)
                .with_metadata("keep", serde_json::json!(true)),
            ids(&|at| at % 4 != 1 && at % 3 != 0, 7),
        ),
    ];
    for (label, filter, expected) in cases {
        let hits = must(
            store.search(&SearchQuery::new(ns.exact(), "greenhouse note", 7).with_filter(filter)),
            "search",
        )
        .await;
        let got: Vec<String> = hits.iter().map(|hit| hit.item.id.clone()).collect();
        assert_eq!(
            got, expected,
            "ties at the cut in id order, filter: {label}"
        );
        assert!(
            hits.windows(2).all(|pair| pair[0].score == pair[1].score),
            "tied memories score the same, filter: {label}"
        );
    }
    must(store.clear(&ns.subtree()), "clear").await;
}

/// A search restricted to its rarest terms ([`SearchQuery::rarest`]) keeps, in each
/// namespace of its scope, the terms the fewest of that namespace's memories hold (a term
/// no memory holds takes no place; equal counts keep the earlier term), counted over every
/// memory of the namespace whatever the filter, and ranks exactly as a search with those
/// terms alone.
pub(in crate::testsuite) async fn memory_rarest(store: &dyn MemoryStore, ns: &Namespace) {
    let first = child(ns, "a");
    let second = child(ns, "b");
    // In `a`, alpha is held by 1 memory, beta by 3, gamma by 5, delta by 8; in `b` the
    // other way round. The memory holding alpha in `a` is short-term, which the filter
    // below turns away: it still counts.
    let texts: [(&Namespace, &str, &[&str]); 2] = [
        (
            &first,
            "a",
            &[
                "alpha beta gamma delta",
                "beta gamma delta",
                "beta gamma delta river",
                "gamma delta",
                "gamma delta house",
                "delta market",
                "delta lunch",
                "delta sister",
            ],
        ),
        (
            &second,
            "b",
            &[
                "delta gamma beta alpha",
                "gamma beta alpha",
                "gamma beta alpha river",
                "beta alpha",
                "beta alpha house",
                "alpha market",
                "alpha lunch",
                "alpha sister",
            ],
        ),
    ];
    let mut items = Vec::new();
    for (namespace, prefix, docs) in texts {
        for (at, text) in docs.iter().enumerate() {
            let kind = if at == 0 && prefix == "a" {
                MemoryKind::ShortTerm
            } else {
                MemoryKind::Episodic
            };
            let item = MemoryItem::new(namespace.clone(), *text)
                .and_then(|item| item.with_id(format!("{prefix}{at}")))
                .map(|item| item.with_kind(kind))
                .unwrap_or_else(|error| panic!("conformance: building {prefix}{at}: {error}"));
            items.push(item);
        }
    }
    must(store.save_many(items), "save_many").await;
    let kinds = [MemoryKind::Episodic];
    let query = "delta gamma beta alpha zeta";
    // (rarest, the terms `a` keeps, the terms `b` keeps)
    let cases: [(usize, &str, &str); 4] = [
        (1, "alpha", "delta"),
        (2, "beta alpha", "delta gamma"),
        (4, "delta gamma beta alpha", "delta gamma beta alpha"),
        (9, "delta gamma beta alpha", "delta gamma beta alpha"),
    ];
    for (rarest, kept_first, kept_second) in cases {
        let got = must(
            store.search(
                &SearchQuery::new(ns.subtree(), query, TOP_K)
                    .with_filter(MemoryFilter::new(ns.subtree()).with_kinds(kinds))
                    .with_rarest(rarest),
            ),
            "search with the rarest terms",
        )
        .await;
        let mut expected = Vec::new();
        for (namespace, kept) in [(&first, kept_first), (&second, kept_second)] {
            expected.extend(
                must(
                    store.search(
                        &SearchQuery::new(namespace.exact(), kept, TOP_K)
                            .with_filter(MemoryFilter::new(namespace.exact()).with_kinds(kinds)),
                    ),
                    "search with the kept terms",
                )
                .await,
            );
        }
        expected.sort_by(crate::SearchHit::best_first);
        expected.truncate(TOP_K);
        let ids = |hits: &[crate::SearchHit]| -> Vec<String> {
            hits.iter()
                .map(|hit| format!("{}/{}", hit.item.namespace, hit.item.id))
                .collect()
        };
        assert_eq!(
            ids(&got),
            ids(&expected),
            "rarest {rarest}: the hits of the kept terms of each namespace"
        );
        for (got, expected) in got.iter().zip(&expected) {
            assert!(
                (got.score - expected.score).abs() <= TOLERANCE * expected.score.abs(),
                "rarest {rarest}: {} scores {} as with its kept terms, not {}",
                got.item.id,
                expected.score,
                got.score
            );
        }
    }
    // Repeats of a term take one place; the explicit terms are searched as given.
    let repeated = must(
        store.search(
            &SearchQuery::new(first.exact(), "", TOP_K)
                .with_terms(["alpha", "alpha", "beta"].map(String::from).to_vec())
                .with_rarest(2),
        ),
        "search with repeated terms",
    )
    .await;
    let plain = must(
        store.search(&SearchQuery::new(first.exact(), "alpha beta", TOP_K)),
        "search alpha beta",
    )
    .await;
    assert_eq!(
        ids_of(&repeated),
        ids_of(&plain),
        "a repeated term is one of the rarest, once"
    );
    must(store.clear(&ns.subtree()), "clear").await;
}

fn ids_of(hits: &[crate::SearchHit]) -> Vec<String> {
    hits.iter().map(|hit| hit.item.id.clone()).collect()
}
