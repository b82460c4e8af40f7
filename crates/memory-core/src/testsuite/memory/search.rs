//! Conformance checks for [`MemoryStore::search`] and [`MemoryStore::search_similar`]:
//! ranking, filters and scopes, the analysed query, and vector similarity.

use super::{child, item, must};
use crate::{MemoryError, MemoryFilter, MemoryStore, Namespace, SearchQuery};

pub(super) async fn search(store: &dyn MemoryStore, ns: &Namespace) {
    let docs = [
        ("s1", "Caroline went to the LGBTQ support group yesterday"),
        ("s2", "Melanie painted a sunrise over the lake"),
        (
            "s3",
            "The support group met again; Caroline spoke about support and adoption",
        ),
        ("s4", "用户喜欢 Rust 编程语言"),
        ("s5", "Completely unrelated text about cooking pasta"),
    ];
    for (i, (id, text)) in docs.iter().enumerate() {
        must(store.save(item(ns, id, text, i as i64)), "save").await;
    }
    let hits = must(
        store.search(&SearchQuery::new(ns.exact(), "support group", 10)),
        "search",
    )
    .await;
    let hit_ids: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
    assert_eq!(
        hit_ids.len(),
        2,
        "search returns only matching items: {hit_ids:?}"
    );
    assert!(hit_ids.contains(&"s1") && hit_ids.contains(&"s3"));
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "hits are best first"
    );
    assert!(
        hits.iter()
            .all(|hit| hit.score.is_finite() && hit.score > 0.0),
        "scores are positive"
    );
    let top1 = must(
        store.search(&SearchQuery::new(ns.exact(), "support group", 1)),
        "search",
    )
    .await;
    assert_eq!(top1.len(), 1, "top_k cuts");
    let cjk = must(
        store.search(&SearchQuery::new(ns.exact(), "编程", 10)),
        "search",
    )
    .await;
    assert_eq!(
        cjk.first().map(|hit| hit.item.id.as_str()),
        Some("s4"),
        "Chinese text is searchable"
    );
    let stemmed = must(
        store.search(&SearchQuery::new(ns.exact(), "painting sunrises", 10)),
        "search",
    )
    .await;
    assert_eq!(
        stemmed.first().map(|hit| hit.item.id.as_str()),
        Some("s2"),
        "search matches word forms"
    );
    // British and American spellings meet (the analyzer reads the one as the other), in
    // either direction, on every backend.
    let spelt = child(ns, "spelling");
    for (id, text, second) in [
        ("b1", "My favourite colour is teal", 0),
        ("b2", "The organized travelers met downtown", 1),
    ] {
        must(store.save(item(&spelt, id, text, second)), "save").await;
    }
    for (query, expected) in [("favorite color", "b1"), ("organised travellers", "b2")] {
        let hits = must(
            store.search(&SearchQuery::new(spelt.exact(), query, 10)),
            "search",
        )
        .await;
        let found: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
        assert_eq!(found, [expected], "{query}");
    }
    for text in [
        "",
        "   ",
        "the and of",
        "AND OR NEAR( \"unbalanced",
        "title:x*",
        "🙂",
    ] {
        let hits = store.search(&SearchQuery::new(ns.exact(), text, 10)).await;
        assert!(
            hits.is_ok(),
            "search never fails on odd text {text:?}: {hits:?}"
        );
    }
    let filtered = SearchQuery::new(ns.exact(), "caroline", 10)
        .with_filter(MemoryFilter::new(ns.exact()).with_id_prefix("s3"));
    let hits = must(store.search(&filtered), "search").await;
    assert_eq!(
        hits.iter().map(|h| h.item.id.as_str()).collect::<Vec<_>>(),
        ["s3"],
        "search applies filters"
    );

    // Several searches at once answer as each alone, in order: analysed terms, the rarest
    // of them, filters, no term, a top_k of 0.
    let queries = [
        SearchQuery::new(ns.exact(), "support group", 10),
        SearchQuery::new(ns.exact(), "", 10),
        filtered,
        SearchQuery::new(ns.exact(), "support group", 0),
        SearchQuery::new(ns.exact(), String::new(), 3)
            .with_terms(vec!["support".to_owned(), "caroline".to_owned()])
            .with_rarest(1),
        SearchQuery::new(ns.exact(), "编程", 10),
    ];
    let together = must(store.search_many(&queries), "search_many").await;
    assert_eq!(together.len(), queries.len(), "one answer per search");
    for (query, hits) in queries.iter().zip(&together) {
        let alone = must(store.search(query), "search").await;
        let ids = |hits: &[crate::SearchHit]| {
            hits.iter()
                .map(|hit| (hit.item.id.clone(), hit.score.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(hits),
            ids(&alone),
            "search_many answers {query:?} as search does"
        );
    }
    assert!(
        must(store.search_many(&[]), "search_many").await.is_empty(),
        "no search, no answer"
    );

    assert!(must(store.delete(ns, "s1"), "delete").await);
    let hits = must(
        store.search(&SearchQuery::new(ns.exact(), "yesterday", 10)),
        "search",
    )
    .await;
    assert!(
        hits.is_empty(),
        "a deleted item never comes back from search"
    );
    let mut changed = item(ns, "s5", "now this note is about quantum physics", 4);
    changed.importance = 0.7;
    must(store.save(changed), "save").await;
    assert!(
        must(
            store.search(&SearchQuery::new(ns.exact(), "pasta", 10)),
            "search"
        )
        .await
        .is_empty(),
        "replaced content is removed from the index"
    );
    let quantum = must(
        store.search(&SearchQuery::new(ns.exact(), "quantum", 10)),
        "search",
    )
    .await;
    assert_eq!(quantum.len(), 1, "replaced content is indexed");

    // Terms a caller analysed, repeated: each is searched once, so the hits and their
    // scores are those of the distinct terms, on every backend.
    let terms = |terms: &[&str]| {
        SearchQuery::new(ns.exact(), "", 10).with_terms(
            terms
                .iter()
                .map(|term| (*term).to_owned())
                .collect::<Vec<_>>(),
        )
    };
    let scored = |hits: Vec<crate::SearchHit>| {
        hits.into_iter()
            .map(|hit| (hit.item.id.clone(), hit.score))
            .collect::<Vec<_>>()
    };
    let once = scored(must(store.search(&terms(&["support", "caroline"])), "search").await);
    let repeated = scored(
        must(
            store.search(&terms(&["support", "support", "caroline", "support"])),
            "search",
        )
        .await,
    );
    assert_eq!(once.len(), 1, "{once:?}");
    assert_eq!(repeated.len(), once.len(), "{repeated:?}");
    for ((id, score), (same, repeated)) in once.iter().zip(&repeated) {
        assert_eq!(id, same);
        assert!(
            (score - repeated).abs() < 1e-5,
            "{score} against {repeated}"
        );
    }
}

pub(super) async fn similarity_search(store: &dyn MemoryStore, ns: &Namespace) {
    let embedded = |space: &Namespace, id: &str, vector: &[f32]| {
        item(space, id, "an embedded memory", 0)
            .with_embedding(vector.to_vec())
            .unwrap_or_else(|error| panic!("conformance: embedding {id}: {error}"))
    };
    let other = child(ns, "other");
    let tagged = embedded(ns, "north", &[0.0, 2.0, 0.0])
        .with_metadata(serde_json::json!({"topic": "north"}))
        .unwrap_or_else(|error| panic!("conformance: metadata: {error}"));
    // "east-too" is saved before "east": the tie between them must still go by id.
    for memory in [
        embedded(ns, "east-too", &[3.0, 0.0, 0.0]),
        embedded(ns, "east", &[1.0, 0.0, 0.0]),
        embedded(ns, "north-east", &[1.0, 1.0, 0.0]),
        tagged,
        embedded(ns, "west", &[-1.0, 0.0, 0.0]),
        embedded(ns, "zero", &[0.0, 0.0, 0.0]),
        embedded(ns, "short", &[1.0, 0.0]),
        item(ns, "plain", "a memory with no embedding", 0),
        embedded(&other, "east-elsewhere", &[1.0, 0.0, 0.0]),
    ] {
        must(store.save(memory), "save").await;
    }
    let exact = MemoryFilter::new(ns.exact());
    let hits = must(
        store.search_similar(&exact, &[2.0, 0.0, 0.0], 4),
        "search_similar",
    )
    .await;
    let found: Vec<&str> = hits.iter().map(|hit| hit.item.id.as_str()).collect();
    assert_eq!(
        found,
        ["east", "east-too", "north-east", "north"],
        "best cosine first, ties by id, other lengths and zero vectors skipped"
    );
    let scores: Vec<f32> = hits.iter().map(|hit| hit.score).collect();
    assert!((scores[0] - 1.0).abs() < 1e-6 && (scores[1] - 1.0).abs() < 1e-6);
    assert!((scores[2] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    assert!(scores[3].abs() < 1e-6, "orthogonal is 0: {scores:?}");
    let short = must(
        store.search_similar(&exact, &[0.5, 0.5], 10),
        "search_similar",
    )
    .await;
    assert_eq!(
        short
            .iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["short"],
        "a query compares with the embeddings of its own length only"
    );
    let first = must(
        store.search_similar(&exact, &[1.0, 0.0, 0.0], 1),
        "search_similar",
    )
    .await;
    assert_eq!(
        first
            .iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["east"],
        "a tie at the cut goes by id, whatever the order of saving"
    );
    let mut on_topic = exact.clone();
    on_topic.metadata = vec![("topic".into(), serde_json::json!("north"))];
    let topical = must(
        store.search_similar(&on_topic, &[1.0, 0.0, 0.0], 3),
        "search_similar",
    )
    .await;
    assert_eq!(
        topical
            .iter()
            .map(|hit| hit.item.id.as_str())
            .collect::<Vec<_>>(),
        ["north"],
        "filters apply, metadata included"
    );
    let all = must(
        store.search_similar(&exact, &[1.0, 0.0, 0.0], 100),
        "search_similar",
    )
    .await;
    assert_eq!(all.len(), 5, "every comparable item, and no more");
    assert_eq!(all.last().map(|hit| hit.item.id.as_str()), Some("west"));
    assert!(all.last().is_some_and(|hit| (hit.score + 1.0).abs() < 1e-6));
    let subtree = must(
        store.search_similar(&MemoryFilter::new(ns.subtree()), &[1.0, 0.0, 0.0], 10),
        "search_similar",
    )
    .await;
    assert!(
        subtree.iter().any(|hit| hit.item.id == "east-elsewhere"),
        "a subtree scope reaches child namespaces"
    );
    let elsewhere = must(
        store.search_similar(&MemoryFilter::new(other.exact()), &[1.0, 0.0, 0.0], 10),
        "search_similar",
    )
    .await;
    assert_eq!(elsewhere.len(), 1, "an exact scope sees only its namespace");
    assert!(
        must(
            store.search_similar(&exact, &[1.0, 0.0, 0.0], 0),
            "search_similar"
        )
        .await
        .is_empty()
    );
    for bad in [&[][..], &[f32::NAN, 0.0, 0.0][..]] {
        assert!(
            matches!(
                store.search_similar(&exact, bad, 3).await,
                Err(MemoryError::InvalidInput { .. })
            ),
            "a bad query vector is InvalidInput"
        );
    }
    must(store.clear(&ns.subtree()), "clear").await;
}
