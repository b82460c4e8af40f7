//! Conformance checks for facts that change: the fact fields of a memory round-trip, reads
//! filter by [`TimeView`] and fact key (list, count-free search, paging), and graph
//! relations keep their validity while traversals follow only current relations.

use chrono::{DateTime, Duration, TimeZone, Utc};

use super::child;
use crate::{
    EndReason, Ended, GraphEntity, GraphRelation, KnowledgeGraph, MemoryFilter, MemoryItem,
    MemoryStore, Namespace, SearchQuery, TimeView,
};

fn at(day: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default()
        + Duration::days(day)
}

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

fn fact(ns: &Namespace, id: &str, content: &str, day: i64) -> MemoryItem {
    MemoryItem::new(ns.clone(), content)
        .and_then(|item| item.with_id(id))
        .map(|item| item.with_created_at(at(day)))
        .and_then(|item| item.with_fact_key("user.city"))
        .unwrap_or_else(|error| panic!("conformance: building {id}: {error}"))
}

fn ids(items: &[MemoryItem]) -> Vec<&str> {
    items.iter().map(|item| item.id.as_str()).collect()
}

/// Runs every fact check under `base` (called by [`run_memory_store`](super::run_memory_store)).
pub(super) async fn run_memory_facts(store: &dyn MemoryStore, base: &Namespace) {
    round_trip(store, &child(base, "round-trip")).await;
    views(store, &child(base, "views")).await;
    key_is_searched(store, &child(base, "key-searched")).await;
}

async fn round_trip(store: &dyn MemoryStore, ns: &Namespace) {
    let mut item = fact(ns, "paris", "the user lives in Paris", 1)
        .with_validity(Some(at(0)), Some(at(30)))
        .unwrap_or_else(|error| panic!("conformance: validity: {error}"));
    item.ended = Some(Ended {
        at: at(30),
        reason: EndReason::Superseded {
            by: "berlin".into(),
        },
    });
    item.supersedes = vec!["lyon".into()];
    item.conflicts_with = vec!["rome".into(), "nice".into()];
    must(store.save(item.clone()), "save a fact").await;
    assert_eq!(
        must(store.get(ns, "paris"), "get a fact").await.as_ref(),
        Some(&item),
        "fact key, validity, end and links round-trip"
    );
    let mut retracted = fact(ns, "x", "the user lives in X", 2);
    retracted.ended = Some(Ended {
        at: at(3),
        reason: EndReason::Retracted {
            reason: "said in jest".into(),
        },
    });
    must(store.save(retracted.clone()), "save a retracted fact").await;
    assert_eq!(
        must(store.get(ns, "x"), "get").await,
        Some(retracted.clone())
    );
    // Clearing the end and the links round-trips too (no stale column left behind).
    retracted.ended = None;
    retracted.fact_key = None;
    must(store.save(retracted.clone()), "save again").await;
    assert_eq!(must(store.get(ns, "x"), "get").await, Some(retracted));
}

/// The words of a fact key are searched with the content
/// ([`memory_content_field`](crate::search::memory_content_field)), and leave the index when
/// the key does.
async fn key_is_searched(store: &dyn MemoryStore, ns: &Namespace) {
    let lisbon = fact(ns, "lisbon", "the user moved to Lisbon", 1);
    let plain = MemoryItem::new(ns.clone(), "the user moved a sofa")
        .and_then(|item| item.with_id("sofa"))
        .unwrap_or_else(|error| panic!("conformance: sofa: {error}"));
    must(store.save_many(vec![lisbon.clone(), plain]), "save keyed").await;
    let search = |text: &'static str| async move {
        let hits = must(
            store.search(&SearchQuery::new(ns.clone(), text, 10)),
            "search",
        )
        .await;
        hits.into_iter()
            .map(|hit| hit.item.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        search("which city?").await,
        ["lisbon"],
        "the key's attribute"
    );
    assert_eq!(search("user moved").await.len(), 2);
    let mut unkeyed = lisbon;
    unkeyed.fact_key = None;
    must(store.save(unkeyed), "save without the key").await;
    assert!(
        search("which city?").await.is_empty(),
        "the key left the index"
    );
}

async fn views(store: &dyn MemoryStore, ns: &Namespace) {
    // paris: recorded day 1, superseded by berlin on day 10.
    let mut paris = fact(ns, "paris", "the user lives in Paris", 1);
    paris.valid_until = Some(at(10));
    paris.ended = Some(Ended {
        at: at(10),
        reason: EndReason::Superseded {
            by: "berlin".into(),
        },
    });
    let mut berlin = fact(ns, "berlin", "the user lives in Berlin", 10);
    berlin.valid_from = Some(at(10));
    berlin.supersedes = vec!["paris".into()];
    // A lease that ended on day 20: not current after it, whatever its end.
    let lease = MemoryItem::new(ns.clone(), "the user rents a flat in Berlin")
        .and_then(|item| item.with_id("lease"))
        .map(|item| item.with_created_at(at(11)))
        .and_then(|item| item.with_validity(None, Some(at(20))))
        .unwrap_or_else(|error| panic!("conformance: lease: {error}"));
    // Unrelated and timeless.
    let tea = MemoryItem::new(ns.clone(), "the user lives on green tea")
        .and_then(|item| item.with_id("tea"))
        .map(|item| item.with_created_at(at(2)))
        .unwrap_or_else(|error| panic!("conformance: tea: {error}"));
    must(
        store.save_many(vec![paris, berlin, lease, tea]),
        "save_many facts",
    )
    .await;

    let list = |view: TimeView| {
        let filter = MemoryFilter::new(ns.clone()).with_view(view);
        async move { must(store.list(&filter), "list by view").await }
    };
    assert_eq!(
        ids(&list(TimeView::All).await),
        ["paris", "tea", "berlin", "lease"]
    );
    assert_eq!(
        ids(&list(TimeView::Current(at(15))).await),
        ["tea", "berlin", "lease"],
        "current: ended records leave"
    );
    assert_eq!(
        ids(&list(TimeView::Current(at(25))).await),
        ["tea", "berlin"],
        "current: past valid_until leaves"
    );
    assert_eq!(
        ids(&list(TimeView::AsOf(at(5))).await),
        ["paris", "tea"],
        "as of: recorded by then and not ended then"
    );
    assert_eq!(
        ids(&list(TimeView::AsOf(at(12))).await),
        ["tea", "berlin", "lease"]
    );
    assert_eq!(ids(&list(TimeView::AsOf(at(0))).await), Vec::<&str>::new());

    let keyed = MemoryFilter::new(ns.clone())
        .with_fact_key(" User.City ")
        .unwrap_or_else(|error| panic!("conformance: key: {error}"));
    assert_eq!(
        ids(&must(store.list(&keyed), "list by fact key").await),
        ["paris", "berlin"]
    );
    let keyed_current = keyed.clone().with_view(TimeView::Current(at(15)));
    assert_eq!(
        ids(&must(store.list(&keyed_current), "list current by key").await),
        ["berlin"]
    );
    let newest = keyed.clone().newest_first().with_limit(1);
    assert_eq!(
        ids(&must(store.list(&newest), "newest by key").await),
        ["berlin"]
    );

    let search = |view: TimeView| {
        let query = SearchQuery::new(ns.clone(), "where does the user live", 10)
            .with_filter(MemoryFilter::new(ns.clone()).with_view(view));
        async move {
            let mut found: Vec<String> = must(store.search(&query), "search by view")
                .await
                .into_iter()
                .map(|hit| hit.item.id.clone())
                .collect();
            found.sort();
            found
        }
    };
    assert_eq!(
        search(TimeView::All).await,
        ["berlin", "lease", "paris", "tea"]
    );
    assert_eq!(
        search(TimeView::Current(at(25))).await,
        ["berlin", "tea"],
        "search skips ended records in the current view"
    );
    assert_eq!(search(TimeView::AsOf(at(5))).await, ["paris", "tea"]);
    // top_k counts only admitted hits: a one-hit search in the current view still finds one.
    let one = SearchQuery::new(ns.clone(), "the user lives in Paris", 1)
        .with_filter(MemoryFilter::new(ns.clone()).with_view(TimeView::Current(at(15))));
    let hits = must(store.search(&one), "search top 1").await;
    assert_eq!(hits.len(), 1, "the cut comes after the view");
    assert_ne!(hits[0].item.id, "paris");
}

/// Relation validity round-trips and traversals follow only current relations (called by
/// [`run_knowledge_graph`](super::run_knowledge_graph)).
pub(super) async fn run_graph_facts(graph: &dyn KnowledgeGraph, base: &Namespace) {
    let ns = child(base, "validity");
    for (id, name) in [("u", "User"), ("paris", "Paris"), ("berlin", "Berlin")] {
        let entity = GraphEntity::new(ns.clone(), id, name, "thing")
            .unwrap_or_else(|error| panic!("conformance: entity: {error}"));
        must(graph.add_entity(entity), "add_entity").await;
    }
    let relation = |target: &str, from: Option<i64>, until: Option<i64>| {
        GraphRelation::new(ns.clone(), "u", target, "lives_in", 1.0)
            .and_then(|relation| relation.with_validity(from.map(at), until.map(at)))
            .unwrap_or_else(|error| panic!("conformance: relation: {error}"))
    };
    let closed = relation("paris", Some(0), Some(10));
    must(graph.add_relation(closed.clone()), "add closed relation").await;
    must(
        graph.add_relation(relation("berlin", Some(10), None)),
        "add open relation",
    )
    .await;
    let stored = must(graph.relations_of(&ns, "u"), "relations_of").await;
    assert!(
        stored.contains(&closed),
        "relation validity round-trips: {stored:?}"
    );
    assert_eq!(stored.len(), 2, "relations_of returns closed relations too");
    let reached: Vec<String> = must(graph.get_related(&ns, "u", 2), "get_related")
        .await
        .into_iter()
        .map(|scored| scored.entity.id.clone())
        .collect();
    assert_eq!(reached, ["berlin"], "traversal skips closed relations");
    // The graph as it was: each time walks the relations that held then.
    for (time, expected) in [(5, "paris"), (15, "berlin")] {
        let then: Vec<String> = must(
            crate::KnowledgeGraphExt::related_as_of(graph, &ns, "u", 2, at(time)),
            "related_as_of",
        )
        .await
        .into_iter()
        .map(|scored| scored.entity.id.clone())
        .collect();
        assert_eq!(then, [expected], "related_as_of at {time}");
    }
    let hop = must(
        graph.multi_hop(&ns, "u", &["lives_in".to_owned()]),
        "multi_hop",
    )
    .await;
    assert_eq!(hop.results, ["berlin"], "multi_hop skips closed relations");
    assert!(
        must(graph.shortest_path(&ns, "u", "paris"), "shortest_path")
            .await
            .is_none(),
        "shortest_path skips closed relations"
    );
    // Reopening: the same relation saved without an end is current again.
    must(
        graph.add_relation(relation("paris", Some(0), None)),
        "reopen",
    )
    .await;
    assert!(
        must(graph.shortest_path(&ns, "u", "paris"), "shortest_path")
            .await
            .is_some(),
        "a reopened relation is followed"
    );
}
