//! Conformance checks for [`MemoryStore`].

use chrono::{Duration, TimeZone, Utc};

use super::child;
use crate::{
    MemoryError, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, RecallEvent,
    RecallStats, Scope, SearchQuery,
};

mod conditional;
mod metadata;
mod paging;
mod positions;
mod search;

use self::search::{search, similarity_search};

fn item(ns: &Namespace, id: &str, content: &str, second: i64) -> MemoryItem {
    let at = Utc
        .timestamp_opt(1_700_000_000 + second, 0)
        .single()
        .unwrap_or_default();
    MemoryItem::new(ns.clone(), content)
        .and_then(|item| item.with_id(id))
        .map(|item| item.with_created_at(at))
        .unwrap_or_else(|error| panic!("conformance: building item {id}: {error}"))
}

fn ids(items: &[MemoryItem]) -> Vec<&str> {
    items.iter().map(|item| item.id.as_str()).collect()
}

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

/// Runs every [`MemoryStore`] check under `base`.
pub async fn run_memory_store(store: &dyn MemoryStore, base: &Namespace) {
    crud(store, &child(base, "crud")).await;
    validation(store, &child(base, "validation")).await;
    isolation(store, &child(base, "isolation")).await;
    ordering_and_filters(store, &child(base, "filters")).await;
    paging::list_pages(store, &child(base, "pages")).await;
    paging::subtree_pages(store, &child(base, "subtrees")).await;
    paging::metadata_pages(store, &child(base, "metadata-pages")).await;
    paging::tied_pages(store, &child(base, "tied-pages")).await;
    metadata::metadata_values(store, &child(base, "metadata")).await;
    search(store, &child(base, "search")).await;
    recall_statistics(store, &child(base, "recall")).await;
    recall_statistics_at_their_limits(store, &child(base, "recall-limits")).await;
    conditional::conditional_updates(store, &child(base, "conditional")).await;
    conditional::conditional_deletes(store, &child(base, "conditional-deletes")).await;
    conditional::conditional_batches(store, &child(base, "conditional-batches")).await;
    conditional::conditional_each(store, &child(base, "conditional-each")).await;
    similarity_search(store, &child(base, "similar")).await;
    positions::term_positions(store, &child(base, "positions")).await;
    positions::own_words(store, &child(base, "own-words")).await;
    namespaces_and_clear(store, &child(base, "admin")).await;
    super::ranking::memory_ranking(store, &child(base, "ranking")).await;
    super::ranking::memory_ties(store, &child(base, "ties")).await;
    super::ranking::memory_rarest(store, &child(base, "rarest")).await;
    super::eviction::least_valuable(store, &child(base, "eviction")).await;
    super::facts::run_memory_facts(store, &child(base, "facts")).await;
}

async fn crud(store: &dyn MemoryStore, ns: &Namespace) {
    let first = item(ns, "m1", "the user likes green tea", 0);
    must(store.save(first.clone()), "save").await;
    let got = must(store.get(ns, "m1"), "get").await;
    assert_eq!(
        got.as_ref(),
        Some(&first),
        "get returns the saved item unchanged"
    );
    assert_eq!(must(store.get(ns, "missing"), "get missing").await, None);

    let mut replaced = first.clone();
    replaced.content = "the user likes black coffee".into();
    must(store.save(replaced.clone()), "save replace").await;
    assert_eq!(
        must(store.get(ns, "m1"), "get").await,
        Some(replaced.clone()),
        "save replaces"
    );
    assert_eq!(
        must(store.count(&ns.exact()), "count").await,
        1,
        "replace does not duplicate"
    );

    let mut updated = replaced.clone();
    updated.importance = 0.9;
    must(store.update(updated.clone()), "update").await;
    assert_eq!(
        must(store.get(ns, "m1"), "get").await,
        Some(updated),
        "update replaces"
    );
    let missing = item(ns, "nope", "x", 0);
    assert!(
        matches!(
            store.update(missing).await,
            Err(MemoryError::NotFound { .. })
        ),
        "update of a missing item is NotFound"
    );
    assert_eq!(
        must(store.get(ns, "nope"), "get").await,
        None,
        "failed update stores nothing"
    );

    assert!(
        must(store.delete(ns, "m1"), "delete").await,
        "delete reports an existing item"
    );
    assert!(
        !must(store.delete(ns, "m1"), "delete again").await,
        "second delete reports false"
    );
    assert_eq!(
        must(store.get(ns, "m1"), "get").await,
        None,
        "deleted item is gone"
    );

    let batch: Vec<MemoryItem> = (0..5)
        .map(|i| item(ns, &format!("b{i}"), &format!("batch item {i}"), i))
        .collect();
    must(store.save_many(batch), "save_many").await;
    let wanted = vec!["b3".to_owned(), "zz".to_owned(), "b1".to_owned()];
    let got = must(store.get_many(ns, &wanted), "get_many").await;
    assert_eq!(
        ids(&got),
        ["b3", "b1"],
        "get_many keeps the asked order and skips missing ids"
    );
    let repeated = ["b1", "b3", "b1", "zz", "b1", "b3"].map(str::to_owned);
    let got = must(store.get_many(ns, &repeated), "get_many").await;
    assert_eq!(
        ids(&got),
        ["b1", "b3", "b1", "b1", "b3"],
        "get_many answers each request of a repeated id"
    );
    assert!(
        got.iter().all(|item| item.content.starts_with("batch")),
        "each copy whole: {got:?}"
    );

    // delete_many counts what existed, skips missing and repeated ids, and touches no other
    // namespace.
    let other = child(ns, "other");
    must(
        store.save(item(&other, "b0", "same id elsewhere", 0)),
        "save",
    )
    .await;
    let doomed = ["b0", "zz", "b2", "b0", "bad\0id"].map(str::to_owned);
    assert_eq!(
        must(store.delete_many(ns, &doomed), "delete_many").await,
        2,
        "delete_many counts the memories it deleted"
    );
    let left = must(store.list(&MemoryFilter::new(ns.exact())), "list").await;
    assert_eq!(ids(&left), ["b1", "b3", "b4"], "delete_many deleted those");
    assert!(
        must(store.get(&other, "b0"), "get").await.is_some(),
        "delete_many stays in its namespace"
    );
    assert_eq!(must(store.delete_many(ns, &[]), "delete_many").await, 0);
}

async fn validation(store: &dyn MemoryStore, ns: &Namespace) {
    let good = item(ns, "v1", "valid", 0);
    must(store.save(good.clone()), "save").await;
    let mut bad_cases = Vec::new();
    let mut empty = good.clone();
    empty.content = "   ".into();
    bad_cases.push(("content", empty));
    let mut nan = good.clone();
    nan.importance = f32::NAN;
    bad_cases.push(("importance", nan));
    let mut bad_id = good.clone();
    bad_id.id = String::new();
    bad_cases.push(("id", bad_id));
    let mut root = good.clone();
    root.namespace = Namespace::root();
    bad_cases.push(("namespace", root));
    let refused = |field: &str, outcome: crate::Result<()>, how: &str| match outcome {
        Err(MemoryError::InvalidInput { field: named, .. }) => {
            assert_eq!(named, field, "{how}: the error names the field")
        }
        other => {
            panic!("conformance: {how} of an invalid {field} must be InvalidInput, got {other:?}")
        }
    };
    let fresh = item(ns, "v2", "valid and new", 1);
    for (field, bad) in bad_cases {
        refused(field, store.save(bad.clone()).await, "save");
        if bad.namespace == good.namespace && !bad.id.is_empty() {
            refused(field, store.update(bad.clone()).await, "update");
        }
        // One invalid item among valid ones stores none of them.
        refused(
            field,
            store.save_many(vec![fresh.clone(), bad]).await,
            "save_many",
        );
    }
    assert_eq!(
        must(store.get(ns, "v1"), "get").await,
        Some(good),
        "rejected writes change nothing"
    );
    assert_eq!(
        must(store.get(ns, "v2"), "get").await,
        None,
        "a refused save_many stores none of its items"
    );
    assert_eq!(must(store.count(&ns.exact()), "count").await, 1);
}

async fn isolation(store: &dyn MemoryStore, ns: &Namespace) {
    let a = child(ns, "tenant-a");
    let b = child(ns, "tenant-b");
    let a_child = child(&a, "session");
    must(store.save(item(&a, "same", "alpha secret plan", 0)), "save").await;
    must(store.save(item(&b, "same", "beta secret plan", 1)), "save").await;
    must(
        store.save(item(&a_child, "deep", "alpha session secret", 2)),
        "save",
    )
    .await;

    let got = must(store.get(&a, "same"), "get").await.map(|i| i.content);
    assert_eq!(
        got.as_deref(),
        Some("alpha secret plan"),
        "same id in two namespaces is two records"
    );
    let listed = must(store.list(&MemoryFilter::new(a.exact())), "list").await;
    assert_eq!(
        ids(&listed),
        ["same"],
        "exact scope excludes children and siblings"
    );
    let listed = must(store.list(&MemoryFilter::new(a.subtree())), "list").await;
    assert_eq!(
        ids(&listed),
        ["same", "deep"],
        "subtree scope includes children"
    );
    for scope in [a.exact(), a.subtree()] {
        let hits = must(
            store.search(&SearchQuery::new(scope.clone(), "secret", 10)),
            "search",
        )
        .await;
        assert!(!hits.is_empty(), "search finds the tenant's own records");
        assert!(
            hits.iter().all(|hit| scope.contains(&hit.item.namespace)),
            "search never leaves its scope"
        );
    }
    let lookalike = Namespace::parse(&format!("{}/tenant-", ns.as_str()))
        .unwrap_or_else(|error| panic!("conformance: a namespace under {ns}: {error}"));
    let listed = must(store.list(&MemoryFilter::new(lookalike.subtree())), "list").await;
    assert!(
        listed.is_empty(),
        "scopes match whole segments, not string prefixes"
    );
    assert!(must(store.delete(&b, "same"), "delete").await);
    assert!(
        must(store.get(&a, "same"), "get").await.is_some(),
        "delete in one namespace spares the other"
    );
    assert_eq!(must(store.count(&ns.subtree()), "count").await, 2);
}

async fn ordering_and_filters(store: &dyn MemoryStore, ns: &Namespace) {
    // Saved out of order; two share a timestamp to test the id tie-break.
    let specs = [
        ("c", 30, MemoryKind::Semantic),
        ("a", 10, MemoryKind::Episodic),
        ("b2", 20, MemoryKind::Episodic),
        ("b1", 20, MemoryKind::LongTerm),
        ("d", 40, MemoryKind::Semantic),
    ];
    for (id, second, kind) in specs {
        let mut entry = item(ns, id, &format!("note {id}"), second).with_kind(kind);
        if id == "c" || id == "d" {
            entry = entry.with_tags(["Work"]).unwrap_or_else(|e| panic!("{e}"));
        }
        if id == "d" {
            entry = entry
                .with_metadata(serde_json::json!({"speaker": "ann", "turn": 4}))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        must(store.save(entry), "save").await;
    }
    let all = must(store.list(&MemoryFilter::new(ns.exact())), "list").await;
    assert_eq!(
        ids(&all),
        ["a", "b1", "b2", "c", "d"],
        "list orders by created_at, then id"
    );
    let newest = must(
        store.list(&MemoryFilter::new(ns.exact()).newest_first().with_limit(2)),
        "list",
    )
    .await;
    assert_eq!(ids(&newest), ["d", "c"], "newest_first with limit");
    let limited = must(
        store.list(&MemoryFilter::new(ns.exact()).with_limit(2)),
        "list",
    )
    .await;
    assert_eq!(ids(&limited), ["a", "b1"], "limit keeps the oldest");
    let t = |s: i64| {
        Utc.timestamp_opt(1_700_000_000 + s, 0)
            .single()
            .unwrap_or_default()
    };
    let ranged = must(
        store.list(&MemoryFilter::new(ns.exact()).with_time_range(Some(t(20)), Some(t(40)))),
        "list",
    )
    .await;
    assert_eq!(
        ids(&ranged),
        ["b1", "b2", "c"],
        "since is inclusive, until exclusive"
    );
    let kinds = must(
        store.list(&MemoryFilter::new(ns.exact()).with_kinds([MemoryKind::Semantic])),
        "list",
    )
    .await;
    assert_eq!(ids(&kinds), ["c", "d"], "kind filter");
    let tagged = MemoryFilter::new(ns.exact())
        .with_tags(["work"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ids(&must(store.list(&tagged), "list").await),
        ["c", "d"],
        "tag filter"
    );
    let meta = MemoryFilter::new(ns.exact()).with_metadata("speaker", serde_json::json!("ann"));
    assert_eq!(
        ids(&must(store.list(&meta), "list").await),
        ["d"],
        "metadata filter"
    );
    let prefix = MemoryFilter::new(ns.exact()).with_id_prefix("b");
    assert_eq!(
        ids(&must(store.list(&prefix), "list").await),
        ["b1", "b2"],
        "id prefix filter"
    );
    let combined = MemoryFilter::new(ns.exact())
        .with_kinds([MemoryKind::Semantic])
        .with_limit(1);
    assert_eq!(
        ids(&must(store.list(&combined), "list").await),
        ["c"],
        "limit applies after filtering"
    );
    // Several listings at once answer as one listing each, in order.
    let filters = [
        MemoryFilter::new(ns.exact()).newest_first().with_limit(2),
        tagged,
        MemoryFilter::new(ns.exact()).with_time_range(Some(t(20)), Some(t(40))),
        combined,
        MemoryFilter::new(ns.exact()).with_id_prefix("missing"),
    ];
    let together = must(store.list_many(&filters), "list_many").await;
    assert_eq!(together.len(), filters.len(), "one listing per filter");
    for (filter, listed) in filters.iter().zip(&together) {
        let alone = must(store.list(filter), "list").await;
        let shared: Vec<MemoryItem> = listed.iter().map(|item| item.as_ref().clone()).collect();
        assert_eq!(shared, alone, "list_many answers {filter:?} as list does");
    }
    assert!(
        must(store.list_many(&[]), "list_many").await.is_empty(),
        "no filters, no listings"
    );
}

async fn recall_statistics(store: &dyn MemoryStore, ns: &Namespace) {
    must(store.save(item(ns, "r1", "recalled memory", 0)), "save").await;
    let at = Utc
        .timestamp_opt(1_800_000_000, 0)
        .single()
        .unwrap_or_default();
    must(store.record_recall(ns, "r1", 0.5, at), "record_recall").await;
    let events = vec![
        RecallEvent {
            namespace: ns.clone(),
            id: "r1".into(),
            score: 1.0,
            at: at + Duration::seconds(5),
        },
        RecallEvent {
            namespace: ns.clone(),
            id: "ghost".into(),
            score: 1.0,
            at,
        },
    ];
    must(
        store.record_recalls(&events),
        "record_recalls ignores unknown ids",
    )
    .await;
    let stats = must(store.recall_stats(ns, "r1"), "recall_stats").await;
    let stats = stats.unwrap_or_else(|| panic!("conformance: recall_stats must be kept"));
    assert_eq!(stats.recall_count, 2, "recall count accumulates");
    assert!((stats.total_score - 1.5).abs() < 1e-6, "scores accumulate");
    assert_eq!(
        stats.last_recall_at,
        Some(at + Duration::seconds(5)),
        "last recall time"
    );
    let touched = must(store.get(ns, "r1"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: r1 vanished"));
    assert_eq!(
        touched.access_count, 2,
        "record_recall increments access_count"
    );
    assert_eq!(
        touched.last_accessed,
        Some(at + Duration::seconds(5)),
        "record_recall sets last_accessed"
    );
    assert_eq!(
        must(store.recall_stats(ns, "ghost"), "recall_stats").await,
        None
    );
    let other = child(ns, "other");
    must(
        store.record_recall(&other, "r1", 1.0, at),
        "record_recall other namespace",
    )
    .await;
    let stats = must(store.recall_stats(ns, "r1"), "recall_stats").await;
    assert_eq!(
        stats.map(|s| s.recall_count),
        Some(2),
        "recall in another namespace does not count"
    );
    let mut resaved = touched.clone();
    resaved.content = "recalled memory, edited".into();
    must(store.save(resaved), "save").await;
    let stats = must(store.recall_stats(ns, "r1"), "recall_stats").await;
    assert_eq!(
        stats.map(|s| s.recall_count),
        Some(2),
        "saving again keeps recall statistics"
    );
    // One batch across namespaces, interleaved: each event counts in its own namespace only.
    must(
        store.save(item(&other, "r1", "a namesake elsewhere", 0)),
        "save",
    )
    .await;
    let event = |namespace: &Namespace| RecallEvent {
        namespace: namespace.clone(),
        id: "r1".into(),
        score: 0.25,
        at,
    };
    let missing = child(ns, "missing");
    must(
        store.record_recalls(&[event(ns), event(&other), event(&missing), event(ns)]),
        "record_recalls across namespaces",
    )
    .await;
    let count = |stats: Option<RecallStats>| stats.map(|s| s.recall_count);
    assert_eq!(
        count(must(store.recall_stats(ns, "r1"), "recall_stats").await),
        Some(4),
        "a batch counts each event in its own namespace"
    );
    assert_eq!(
        count(must(store.recall_stats(&other, "r1"), "recall_stats").await),
        Some(1),
        "a batch counts each event in its own namespace"
    );
    let stats = must(store.recall_stats(ns, "r1"), "recall_stats").await;
    let stats = stats.unwrap_or_else(|| panic!("conformance: recall_stats must be kept"));
    assert!(
        (stats.total_score - 2.0).abs() < 1e-6,
        "a batch adds the score of each of its events"
    );
    assert_eq!(
        stats.last_recall_at,
        Some(at + Duration::seconds(5)),
        "earlier recalls in a batch leave the last recall time"
    );
    let touched = must(store.get(ns, "r1"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: r1 vanished"));
    assert_eq!(
        (touched.access_count, touched.last_accessed),
        (4, Some(at + Duration::seconds(5))),
        "a batch counts each access, and keeps the latest access time"
    );
    // A copy read before those accesses and written back (a decay pass, an edit) keeps them:
    // by update, save and save_many, with an older count and time, or none.
    let accesses = |item: &MemoryItem| (item.access_count, item.last_accessed);
    let mut stale = touched.clone();
    stale.access_count = 1;
    stale.last_accessed = Some(at);
    stale.importance = 0.25;
    must(store.update(stale.clone()), "update").await;
    let read = must(store.get(ns, "r1"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: r1 vanished"));
    assert_eq!(read.importance, 0.25, "the update is written");
    assert_eq!(
        accesses(&read),
        accesses(&touched),
        "an update keeps the accesses counted since its copy was read"
    );
    stale.access_count = 0;
    stale.last_accessed = None;
    must(store.save(stale.clone()), "save").await;
    must(store.save_many(vec![stale]), "save_many").await;
    let read = must(store.get(ns, "r1"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: r1 vanished"));
    assert_eq!(
        accesses(&read),
        accesses(&touched),
        "a save keeps the accesses counted since its copy was read"
    );
    // A copy further along raises them.
    let mut busier = touched.clone();
    busier.access_count = 9;
    busier.last_accessed = Some(at + Duration::seconds(60));
    must(store.save(busier.clone()), "save").await;
    let read = must(store.get(ns, "r1"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: r1 vanished"));
    assert_eq!(
        accesses(&read),
        accesses(&busier),
        "a busier copy raises them"
    );
    // Together, in the order asked, as one by one; a missing id has none.
    let asked: Vec<String> = ["r1", "ghost", "r1"].map(String::from).to_vec();
    let one = must(store.recall_stats(ns, "r1"), "recall_stats").await;
    assert!(one.is_some(), "r1 was recalled");
    assert_eq!(
        must(store.recall_stats_many(ns, &asked), "recall_stats_many").await,
        vec![one, None, one],
        "recall_stats_many answers as recall_stats, in the order asked"
    );
    assert_eq!(
        must(
            store.recall_stats_many(&other, &asked[..1]),
            "recall_stats_many"
        )
        .await,
        vec![must(store.recall_stats(&other, "r1"), "recall_stats").await],
        "recall_stats_many stays in its namespace"
    );
    assert!(
        must(store.recall_stats_many(ns, &[]), "recall_stats_many")
            .await
            .is_empty()
    );
    assert!(must(store.delete(&other, "r1"), "delete").await);
    assert!(must(store.delete(ns, "r1"), "delete").await);
    assert_eq!(
        must(store.recall_stats(ns, "r1"), "recall_stats").await,
        None,
        "delete drops statistics"
    );
}

/// A batch of recall events is recorded whole at the edges of what a store holds: counts
/// already at their most saturate, and a time past the store's range is held at its end,
/// rather than failing the batch and losing every other memory's recalls with it.
async fn recall_statistics_at_their_limits(store: &dyn MemoryStore, ns: &Namespace) {
    let mut hot = item(ns, "hot", "recalled without end", 0);
    hot.access_count = crate::MAX_ACCESS_COUNT;
    must(store.save(hot), "save").await;
    must(store.save(item(ns, "cold", "recalled once", 1)), "save").await;
    let most = RecallStats {
        recall_count: crate::MAX_ACCESS_COUNT,
        total_score: 1.0,
        last_recall_at: None,
    };
    must(store.set_recall_stats(ns, "hot", most), "set_recall_stats").await;
    let at = Utc
        .timestamp_opt(1_800_000_000, 0)
        .single()
        .unwrap_or_default();
    let far = Utc
        .with_ymd_and_hms(3237, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    let event = |id: &str, at| RecallEvent {
        namespace: ns.clone(),
        id: id.into(),
        score: 0.5,
        at,
    };
    must(
        store.record_recalls(&[event("hot", at), event("cold", at), event("cold", far)]),
        "record_recalls with a count at its most and a time past the range",
    )
    .await;
    must(
        store.record_recall(ns, "hot", 0.5, at),
        "record_recall on a count at its most",
    )
    .await;
    let hot = must(store.get(ns, "hot"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: hot vanished"));
    assert_eq!(
        hot.access_count,
        crate::MAX_ACCESS_COUNT,
        "an access count at its most stays there"
    );
    let hot_stats = must(store.recall_stats(ns, "hot"), "recall_stats").await;
    assert!(
        hot_stats.is_some_and(|stats| stats.recall_count >= crate::MAX_ACCESS_COUNT),
        "a recall count at its most stays there: {hot_stats:?}"
    );
    let cold = must(store.recall_stats(ns, "cold"), "recall_stats").await;
    let cold = cold.unwrap_or_else(|| panic!("conformance: cold has no statistics"));
    assert_eq!(
        cold.recall_count, 2,
        "the batch's other recalls are recorded"
    );
    assert!(
        cold.last_recall_at.is_some_and(|last| last > at),
        "a time past the range counts as the latest: {cold:?}"
    );
    assert_eq!(
        cold.last_recall_at,
        Some(crate::storable_time(far)),
        "kept at the storable range's bound, on every backend"
    );
    // The item a recall past the range touched reads back as a valid item (its last access
    // within the range), so an edit of it is not refused.
    let touched = must(store.get(ns, "cold"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: cold vanished"));
    assert!(touched.validate().is_ok(), "{:?}", touched.last_accessed);
    // Statistics given whole are checked alike, before the id is looked up.
    for (bad, field) in [
        (
            RecallStats {
                recall_count: 1,
                total_score: f64::NAN,
                last_recall_at: None,
            },
            "total_score",
        ),
        (
            RecallStats {
                recall_count: u64::MAX,
                total_score: 1.0,
                last_recall_at: None,
            },
            "recall_count",
        ),
        (
            RecallStats {
                recall_count: 1,
                total_score: 1.0,
                last_recall_at: Some(far),
            },
            "last_recall_at",
        ),
    ] {
        for id in ["cold", "unknown"] {
            let refused = store.set_recall_stats(ns, id, bad).await;
            assert!(
                matches!(&refused, Err(crate::MemoryError::InvalidInput { field: f, .. }) if f == field),
                "set_recall_stats refuses a bad {field} for {id}: {refused:?}"
            );
        }
    }
}

async fn namespaces_and_clear(store: &dyn MemoryStore, ns: &Namespace) {
    let a = child(ns, "a");
    let a1 = child(&a, "s1");
    let b = child(ns, "b");
    for (space, id) in [(&a, "1"), (&a1, "2"), (&a1, "3"), (&b, "4")] {
        must(
            store.save(item(space, id, &format!("clearable note {id}"), 0)),
            "save",
        )
        .await;
    }
    let spaces = must(store.list_namespaces(&ns.subtree()), "list_namespaces").await;
    assert_eq!(
        spaces,
        vec![a.clone(), a1.clone(), b.clone()],
        "list_namespaces is sorted and distinct"
    );
    assert_eq!(must(store.count(&a.subtree()), "count").await, 3);
    assert_eq!(must(store.count(&a.exact()), "count").await, 1);
    assert_eq!(
        must(store.clear(&a.subtree()), "clear").await,
        3,
        "clear reports what it deleted"
    );
    assert_eq!(
        must(store.count(&ns.subtree()), "count").await,
        1,
        "clear spares other namespaces"
    );
    let hits = must(
        store.search(&SearchQuery::new(ns.subtree(), "clearable", 10)),
        "search",
    )
    .await;
    assert_eq!(hits.len(), 1, "cleared items leave the search index");
    let spaces = must(
        store.list_namespaces(&Scope::from(ns.clone()).namespace.subtree()),
        "list_namespaces",
    )
    .await;
    assert_eq!(spaces, vec![b.clone()]);
    assert_eq!(must(store.clear(&b.exact()), "clear").await, 1);
}
