//! Conformance checks for [`KnowledgeStore`].

use chrono::{DateTime, Duration, Utc};

use super::child;
use crate::{AccessEvent, KnowledgePage, KnowledgeStore, MemoryError, Namespace, PageQuery};

fn page(
    ns: &Namespace,
    id: &str,
    title: &str,
    summary: &str,
    tags: &[&str],
    refs: &[&str],
) -> KnowledgePage {
    KnowledgePage::new(ns.clone(), id, title)
        .and_then(|page| page.with_tags(tags.iter().copied()))
        .and_then(|page| page.with_references(refs.iter().copied()))
        .map(|page| {
            page.with_summary(summary)
                .with_content(format!("{title}. {summary}."))
        })
        .unwrap_or_else(|error| panic!("conformance: building page {id}: {error}"))
}

async fn must<T>(future: impl Future<Output = crate::Result<T>>, what: &str) -> T {
    match future.await {
        Ok(value) => value,
        Err(error) => panic!("conformance: {what} failed: {error}"),
    }
}

/// Runs every [`KnowledgeStore`] check under `base`.
pub async fn run_knowledge_store(store: &dyn KnowledgeStore, base: &Namespace) {
    crud_and_index(store, &child(base, "crud")).await;
    references(store, &child(base, "refs")).await;
    search(store, &child(base, "search")).await;
    isolation_and_clear(store, &child(base, "isolation")).await;
    access_statistics(store, &child(base, "access")).await;
    put_page(store, &child(base, "put")).await;
    conditional_update(store, &child(base, "conditional")).await;
    super::ranking::page_ranking(store, &child(base, "ranking")).await;
}

/// A time with nanoseconds, so a store that rounds times fails.
pub(super) fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + seconds, 123_456_789)
        .unwrap_or_else(|| panic!("conformance: bad time {seconds}"))
}

/// A time no backend can store (the year 3000).
pub(super) fn unstorable() -> DateTime<Utc> {
    DateTime::from_timestamp(32_503_680_000, 0).unwrap_or_else(|| panic!("conformance: bad time"))
}

async fn stats(
    store: &dyn KnowledgeStore,
    ns: &Namespace,
    id: &str,
) -> (u64, Option<DateTime<Utc>>) {
    let page = must(store.get_page(ns, id), "get_page")
        .await
        .unwrap_or_else(|| panic!("conformance: page {id} vanished"));
    (page.access_count, page.last_accessed)
}

async fn access_statistics(store: &dyn KnowledgeStore, ns: &Namespace) {
    let other = child(ns, "other");
    // Statistics given to add_page are stored and read back exactly, by every read.
    let mut used = page(ns, "used", "Used page", "statistics", &[], &[]);
    used.access_count = 5;
    used.last_accessed = Some(at(10));
    must(store.add_page(used.clone()), "add_page").await;
    assert_eq!(
        must(store.get_page(ns, "used"), "get_page").await,
        Some(used.clone()),
        "add_page stores access_count and last_accessed"
    );
    assert_eq!(
        must(store.list_pages(&ns.exact()), "list_pages").await,
        vec![used.clone()],
        "list_pages carries the access statistics"
    );
    let hits = must(
        store.search(&PageQuery::new(ns.exact(), "statistics", 5)),
        "search",
    )
    .await;
    assert_eq!(
        hits.first().map(|hit| hit.page.as_ref()),
        Some(&used),
        "search hits carry the access statistics"
    );

    let fresh = page(ns, "fresh", "Fresh page", "", &[], &[]);
    must(store.add_page(fresh.clone()), "add_page").await;
    must(
        store.add_page(page(&other, "fresh", "Other fresh page", "", &[], &[])),
        "add_page",
    )
    .await;
    assert_eq!(
        stats(store, ns, "fresh").await,
        (0, None),
        "a new page was never accessed"
    );
    must(store.record_accesses(&[]), "record_accesses of nothing").await;
    must(
        store.record_accesses(&[
            AccessEvent::new(ns.clone(), "fresh", at(100)),
            AccessEvent::new(ns.clone(), "ghost", at(100)),
            AccessEvent::new(ns.clone(), "fresh", at(300)),
            AccessEvent::new(other.clone(), "fresh", at(400)),
            AccessEvent::new(ns.clone(), "fresh", at(200)),
            AccessEvent::new(ns.clone(), "used", at(5)),
        ]),
        "record_accesses",
    )
    .await;
    assert_eq!(
        stats(store, ns, "fresh").await,
        (3, Some(at(300))),
        "accesses add up and last_accessed is the latest"
    );
    assert_eq!(
        stats(store, ns, "used").await,
        (6, Some(at(10))),
        "an earlier access never moves last_accessed back"
    );
    assert_eq!(
        stats(store, &other, "fresh").await,
        (1, Some(at(400))),
        "accesses stay in their namespace"
    );
    assert_eq!(
        must(store.get_page(ns, "ghost"), "get_page").await,
        None,
        "an access to a missing page is ignored and creates nothing"
    );
    must(
        store.record_accesses(&[AccessEvent::new(ns.clone(), "fresh", at(50))]),
        "record_accesses",
    )
    .await;
    assert_eq!(stats(store, ns, "fresh").await, (4, Some(at(300))));

    // update_page keeps what the store counted.
    let mut changed = fresh.clone();
    changed.title = "Fresh page, edited".into();
    changed.updated_at = fresh.updated_at + Duration::seconds(1);
    must(store.update_page(changed), "update_page").await;
    let stored = must(store.get_page(ns, "fresh"), "get_page")
        .await
        .unwrap_or_else(|| panic!("conformance: page fresh vanished"));
    assert_eq!(stored.title, "Fresh page, edited");
    assert_eq!(
        (stored.access_count, stored.last_accessed),
        (4, Some(at(300))),
        "update_page keeps access_count and last_accessed"
    );

    // A batch holding a time no backend stores is refused whole.
    let refused = store
        .record_accesses(&[
            AccessEvent::new(ns.clone(), "fresh", at(500)),
            AccessEvent::new(ns.clone(), "fresh", unstorable()),
        ])
        .await;
    assert!(
        matches!(refused, Err(MemoryError::InvalidInput { ref field, .. }) if field == "at"),
        "an unstorable access time is InvalidInput naming at: {refused:?}"
    );
    assert_eq!(
        stats(store, ns, "fresh").await,
        (4, Some(at(300))),
        "a refused batch changes nothing"
    );
    // Deleted pages take their statistics with them.
    assert!(must(store.delete_page(ns, "fresh"), "delete_page").await);
    must(
        store.record_accesses(&[AccessEvent::new(ns.clone(), "fresh", at(600))]),
        "record_accesses",
    )
    .await;
    assert_eq!(must(store.get_page(ns, "fresh"), "get_page").await, None);
    must(store.clear(&ns.subtree()), "clear").await;
}

async fn crud_and_index(store: &dyn KnowledgeStore, ns: &Namespace) {
    let first = page(
        ns,
        "p1",
        "Rust ownership",
        "Who frees memory",
        &["rust"],
        &[],
    );
    must(store.add_page(first.clone()), "add_page").await;
    assert_eq!(
        must(store.get_page(ns, "p1"), "get_page").await,
        Some(first.clone())
    );
    assert!(
        matches!(
            store.add_page(first.clone()).await,
            Err(MemoryError::AlreadyExists(_))
        ),
        "adding an existing id is AlreadyExists"
    );
    let mut bad = first.clone();
    bad.title = " ".into();
    assert!(
        matches!(
            store.update_page(bad).await,
            Err(MemoryError::InvalidInput { .. })
        ),
        "invalid update"
    );
    let missing = page(ns, "zz", "Missing", "", &[], &[]);
    assert!(
        matches!(
            store.update_page(missing).await,
            Err(MemoryError::NotFound { .. })
        ),
        "update missing"
    );

    let mut changed = first.clone();
    changed.title = "Rust borrowing".into();
    changed.created_at = first.created_at + chrono::Duration::days(1);
    changed.updated_at = first.updated_at + chrono::Duration::days(1);
    must(store.update_page(changed.clone()), "update_page").await;
    let stored = must(store.get_page(ns, "p1"), "get_page")
        .await
        .unwrap_or_else(|| panic!("p1 vanished"));
    assert_eq!(stored.title, "Rust borrowing");
    assert_eq!(
        stored.created_at, first.created_at,
        "update keeps created_at"
    );
    let index = must(store.get_index(&ns.exact()), "get_index").await;
    assert_eq!(index.len(), 1);
    assert_eq!(index[0].title, "Rust borrowing", "index follows updates");

    must(
        store.add_page(page(ns, "p2", "alpha guide", "", &[], &[])),
        "add_page",
    )
    .await;
    must(
        store.add_page(page(ns, "p3", "Beta notes", "", &[], &[])),
        "add_page",
    )
    .await;
    let titles: Vec<String> = must(store.get_index(&ns.exact()), "get_index")
        .await
        .into_iter()
        .map(|e| e.title)
        .collect();
    assert_eq!(
        titles,
        ["alpha guide", "Beta notes", "Rust borrowing"],
        "index ordered by title, case-insensitive"
    );
    assert!(must(store.delete_page(ns, "p2"), "delete_page").await);
    assert!(!must(store.delete_page(ns, "p2"), "delete_page").await);
    assert_eq!(
        must(store.get_index(&ns.exact()), "get_index").await.len(),
        2,
        "index follows deletes"
    );
    assert_eq!(
        must(store.list_pages(&ns.exact()), "list_pages")
            .await
            .len(),
        2
    );
}

/// `put_page` adds a page, or replaces the stored one whole (creation time and access
/// statistics as given), with its index and references; an invalid page changes nothing.
async fn put_page(store: &dyn KnowledgeStore, ns: &Namespace) {
    let mut first = page(ns, "p", "Tea notes", "green tea", &["tea"], &["other"]);
    first.created_at = at(5);
    first.updated_at = at(5);
    first.access_count = 3;
    first.last_accessed = Some(at(20));
    must(store.put_page(first.clone()), "put_page of a new page").await;
    assert_eq!(
        must(store.get_page(ns, "p"), "get_page").await,
        Some(first.clone())
    );
    must(
        store.add_page(page(ns, "other", "Other", "", &[], &["p"])),
        "add_page",
    )
    .await;
    let mut second = page(ns, "p", "Coffee notes", "espresso", &["coffee"], &[]);
    second.created_at = at(1);
    second.updated_at = at(50);
    second.access_count = 1;
    second.last_accessed = None;
    must(store.put_page(second.clone()), "put_page over a page").await;
    assert_eq!(
        must(store.get_page(ns, "p"), "get_page").await,
        Some(second.clone()),
        "put_page replaces the page whole, its creation time and statistics too"
    );
    let found = |text: &'static str| async move {
        must(store.search(&PageQuery::new(ns.exact(), text, 5)), "search")
            .await
            .into_iter()
            .map(|hit| hit.page.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(found("espresso").await, ["p"], "the new text is searched");
    assert!(found("green").await.is_empty(), "the old text is gone");
    assert_eq!(
        must(store.reference_count(ns, "other"), "reference_count").await,
        0,
        "the old page's references went with it"
    );
    assert_eq!(
        must(store.reference_count(ns, "p"), "reference_count").await,
        1,
        "the references to the page stay"
    );
    let mut bad = second.clone();
    bad.title = String::new();
    let error = store.put_page(bad).await.expect_err("an empty title");
    assert!(
        matches!(error, MemoryError::InvalidInput { .. }),
        "conformance: put_page of an invalid page: {error}"
    );
    assert_eq!(
        must(store.get_page(ns, "p"), "get_page").await,
        Some(second),
        "a refused put_page changes nothing"
    );
}

async fn references(store: &dyn KnowledgeStore, ns: &Namespace) {
    must(
        store.add_page(page(ns, "hub", "Hub", "", &[], &["hub"])),
        "add_page",
    )
    .await;
    must(
        store.add_page(page(ns, "a", "A", "", &[], &["hub", "future"])),
        "add_page",
    )
    .await;
    must(
        store.add_page(page(ns, "b", "B", "", &[], &["hub"])),
        "add_page",
    )
    .await;
    assert_eq!(
        must(store.reference_count(ns, "hub"), "reference_count").await,
        2,
        "self references do not count"
    );
    assert_eq!(
        must(store.referrers(ns, "hub"), "referrers").await,
        ["a", "b"],
        "referrers lists the citing pages, sorted, the page itself excepted"
    );
    for (limit, first) in [
        (0, &[][..]),
        (1, &["a"][..]),
        (2, &["a", "b"][..]),
        (9, &["a", "b"]),
    ] {
        assert_eq!(
            must(
                store.referrers_at_most(ns, "hub", limit),
                "referrers_at_most"
            )
            .await,
            first,
            "referrers_at_most keeps the first {limit} of referrers, in its order"
        );
    }
    assert_eq!(
        must(store.referrers(ns, "future"), "referrers").await,
        ["a"],
        "a page not written yet has its referrers"
    );
    assert!(
        must(store.referrers(&child(ns, "elsewhere"), "hub"), "referrers")
            .await
            .is_empty(),
        "referrers stay in their namespace"
    );
    assert_eq!(
        must(store.reference_count(ns, "future"), "reference_count").await,
        0,
        "a page that does not exist is referenced by no existing page's count"
    );
    must(
        store.add_page(page(ns, "future", "Future", "", &[], &[])),
        "add_page",
    )
    .await;
    assert_eq!(
        must(store.reference_count(ns, "future"), "reference_count").await,
        1,
        "references to pages added later count"
    );
    let mut a = must(store.get_page(ns, "a"), "get_page")
        .await
        .unwrap_or_else(|| panic!("a vanished"));
    a.references = vec!["future".into()];
    must(store.update_page(a), "update_page").await;
    assert_eq!(
        must(store.reference_count(ns, "hub"), "reference_count").await,
        1,
        "updates drop old references"
    );
    assert_eq!(
        must(store.referrers(ns, "hub"), "referrers").await,
        ["b"],
        "an update drops the referrer"
    );
    assert!(must(store.delete_page(ns, "b"), "delete_page").await);
    assert_eq!(
        must(store.reference_count(ns, "hub"), "reference_count").await,
        0,
        "deletes drop references"
    );
    let index = must(store.get_index(&ns.exact()), "get_index").await;
    let future = index
        .iter()
        .find(|e| e.id == "future")
        .map(|e| e.referenced_by);
    assert_eq!(future, Some(1), "index carries referenced_by");
}

async fn search(store: &dyn KnowledgeStore, ns: &Namespace) {
    let pages = [
        page(
            ns,
            "sg",
            "StateGraph 状态管理",
            "LangGraph 的核心状态机",
            &["langgraph", "state-graph"],
            &[],
        ),
        page(
            ns,
            "lc",
            "LangChain overview",
            "Chains of LLM calls",
            &["langchain"],
            &[],
        ),
        page(
            ns,
            "rs",
            "Rust async",
            "Futures and executors; mentions graph once",
            &["rust"],
            &[],
        ),
        page(
            ns,
            "pg",
            "Graph theory basics",
            "Nodes and edges",
            &["graph"],
            &[],
        ),
    ];
    for p in pages {
        must(store.add_page(p), "add_page").await;
    }
    let hits = must(
        store.search(&PageQuery::new(
            ns.exact(),
            "LangGraph 的 StateGraph 状态管理原理？",
            5,
        )),
        "search",
    )
    .await;
    assert_eq!(
        hits.first().map(|h| h.page.id.as_str()),
        Some("sg"),
        "the seed's Chinese query finds its page"
    );
    let hits = must(
        store.search(&PageQuery::new(ns.exact(), "graph", 5)),
        "search",
    )
    .await;
    assert_eq!(
        hits.first().map(|h| h.page.id.as_str()),
        Some("pg"),
        "title and tag matches outrank a body mention"
    );
    assert!(
        hits.iter().any(|h| h.page.id == "rs"),
        "content matches are found too"
    );
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );
    let top = &hits[0];
    assert!(
        top.signals.title_prefix && top.signals.tag_exact,
        "signals report title prefix and tag match"
    );
    let hits = must(
        store.search(&PageQuery::new(ns.exact(), "chains", 5)),
        "search",
    )
    .await;
    assert!(
        hits.first().is_some_and(|h| h.signals.summary_contains),
        "summary signal"
    );
    for text in ["", "the of", "AND OR NEAR( \"x", "🙂"] {
        assert!(
            store
                .search(&PageQuery::new(ns.exact(), text, 5))
                .await
                .is_ok(),
            "odd text {text:?}"
        );
    }
    assert!(must(store.delete_page(ns, "pg"), "delete_page").await);
    let hits = must(
        store.search(&PageQuery::new(ns.exact(), "nodes edges", 5)),
        "search",
    )
    .await;
    assert!(hits.is_empty(), "a deleted page never comes back");
    let mut tagged = PageQuery::new(ns.exact(), "graph", 5);
    tagged.tags = vec![crate::Tag::new("rust").unwrap_or_else(|e| panic!("{e}"))];
    let hits = must(store.search(&tagged), "search").await;
    assert_eq!(
        hits.iter().map(|h| h.page.id.as_str()).collect::<Vec<_>>(),
        ["rs"],
        "tag filter"
    );
    // Equal scores are broken by namespace, then id, on every backend: the same pages give
    // the same top k.
    for (namespace, id) in [("y", "y"), ("x", "z")] {
        must(
            store.add_page(page(
                &child(ns, namespace),
                id,
                "Alpha notes",
                "alpha",
                &[],
                &[],
            )),
            "add_page",
        )
        .await;
    }
    let hits = must(
        store.search(&PageQuery::new(child(ns, "x").exact(), "alpha", 1)),
        "search",
    )
    .await;
    assert_eq!(hits.len(), 1, "one namespace alone");
    let hits = must(
        store.search(&PageQuery::new(ns.subtree(), "alpha", 2)),
        "search",
    )
    .await;
    let order: Vec<(&str, &str)> = hits
        .iter()
        .map(|hit| (hit.page.namespace.as_str(), hit.page.id.as_str()))
        .collect();
    let (x, y) = (child(ns, "x"), child(ns, "y"));
    assert_eq!(
        order,
        [(x.as_str(), "z"), (y.as_str(), "y")],
        "ties by namespace, then id"
    );
    assert_eq!(
        hits[0].score, hits[1].score,
        "the same page scores the same"
    );
}

async fn isolation_and_clear(store: &dyn KnowledgeStore, ns: &Namespace) {
    let a = child(ns, "a");
    let b = child(ns, "b");
    must(
        store.add_page(page(&a, "same", "Alpha secrets", "", &[], &[])),
        "add_page",
    )
    .await;
    must(
        store.add_page(page(&b, "same", "Beta secrets", "", &[], &["same"])),
        "add_page",
    )
    .await;
    assert_eq!(
        must(store.get_page(&a, "same"), "get_page")
            .await
            .map(|p| p.title)
            .as_deref(),
        Some("Alpha secrets")
    );
    assert_eq!(
        must(store.reference_count(&a, "same"), "reference_count").await,
        0,
        "references stay in their namespace"
    );
    let hits = must(
        store.search(&PageQuery::new(a.exact(), "secrets", 5)),
        "search",
    )
    .await;
    assert!(
        hits.iter().all(|h| h.page.namespace == a),
        "search stays in scope"
    );
    assert_eq!(
        must(store.get_index(&a.exact()), "get_index").await.len(),
        1
    );
    assert_eq!(
        must(store.get_index(&ns.subtree()), "get_index")
            .await
            .len(),
        2
    );
    assert_eq!(
        must(store.list_namespaces(&ns.subtree()), "list_namespaces").await,
        vec![a.clone(), b.clone()]
    );
    assert_eq!(must(store.clear(&a.subtree()), "clear").await, 1);
    assert!(
        must(
            store.search(&PageQuery::new(ns.subtree(), "alpha", 5)),
            "search"
        )
        .await
        .is_empty()
    );
    assert_eq!(
        must(store.get_index(&ns.subtree()), "get_index")
            .await
            .len(),
        1
    );
    assert_eq!(must(store.clear(&ns.subtree()), "clear").await, 1);
}

/// `update_page_if` writes only over the copy it names: of two edits from one copy the first
/// is written and the second refused with nothing changed (content, index, references); a
/// deleted page refuses it; the stored bookkeeping is kept as `update_page` keeps it.
async fn conditional_update(store: &dyn KnowledgeStore, ns: &Namespace) {
    let mut first = page(ns, "p", "Tea notes", "green tea", &["tea"], &["a"]);
    first.created_at = at(5);
    first.updated_at = at(5);
    first.access_count = 2;
    must(store.add_page(first.clone()), "add_page").await;
    let read = must(store.get_page(ns, "p"), "get_page")
        .await
        .unwrap_or_else(|| panic!("conformance: p vanished"));
    let mut edit = page(ns, "p", "Coffee notes", "espresso", &["coffee"], &["b"]);
    edit.updated_at = at(6);
    assert!(
        must(
            store.update_page_if(edit.clone(), read.updated_at),
            "update_page_if"
        )
        .await,
        "an edit from the stored copy is written"
    );
    let stored = must(store.get_page(ns, "p"), "get_page")
        .await
        .unwrap_or_else(|| panic!("conformance: p vanished"));
    assert_eq!(stored.title, "Coffee notes");
    assert_eq!(stored.updated_at, at(6));
    assert_eq!(stored.created_at, at(5), "the creation time is kept");
    assert_eq!(stored.access_count, 2, "the access statistics are kept");
    let mut late = page(ns, "p", "Herbal notes", "chamomile", &["herbal"], &["c"]);
    late.updated_at = at(7);
    assert!(
        !must(
            store.update_page_if(late.clone(), read.updated_at),
            "update_page_if"
        )
        .await,
        "a second edit from the same copy is refused"
    );
    assert_eq!(
        must(store.get_page(ns, "p"), "get_page").await,
        Some(stored.clone()),
        "a refused edit changes nothing"
    );
    let found = |text: &'static str| async move {
        must(store.search(&PageQuery::new(ns.exact(), text, 5)), "search")
            .await
            .into_iter()
            .map(|hit| hit.page.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found("espresso").await,
        ["p"],
        "the written text is searched"
    );
    assert!(
        found("chamomile").await.is_empty(),
        "the refused text is not"
    );
    assert_eq!(must(store.referrers(ns, "b"), "referrers").await, ["p"]);
    assert!(
        must(store.referrers(ns, "c"), "referrers").await.is_empty(),
        "a refused edit adds no reference"
    );
    assert!(
        must(store.referrers(ns, "a"), "referrers").await.is_empty(),
        "the written edit dropped the old reference"
    );
    // A time no backend can store is no stored page's: refused as changed, not an error.
    assert!(
        !must(
            store.update_page_if(late.clone(), unstorable()),
            "update_page_if"
        )
        .await,
        "a copy read at a time no store holds is not the stored one"
    );
    // From the copy now stored, it is written.
    assert!(
        must(
            store.update_page_if(late, stored.updated_at),
            "update_page_if"
        )
        .await
    );
    assert!(must(store.delete_page(ns, "p"), "delete_page").await);
    let mut gone = page(ns, "p", "Gone", "", &[], &[]);
    gone.updated_at = at(9);
    assert!(
        !must(store.update_page_if(gone, at(7)), "update_page_if").await,
        "a deleted page is not written back"
    );
    assert_eq!(must(store.get_page(ns, "p"), "get_page").await, None);
    let mut bad = page(ns, "q", "Q", "", &[], &[]);
    bad.title = String::new();
    let error = store
        .update_page_if(bad, at(1))
        .await
        .expect_err("an empty title");
    assert!(
        matches!(error, MemoryError::InvalidInput { .. }),
        "conformance: update_page_if of an invalid page: {error}"
    );
}
