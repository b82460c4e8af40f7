//! Conformance checks for listing a page at a time ([`MemoryFilter::after`]).

use chrono::{TimeZone, Utc};

use super::{child, ids, item, must};
use crate::{ListPosition, MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace};

/// Lists `filter` a page of `size` at a time, each page after the last item of the one
/// before, until a page comes back short.
async fn paged(store: &dyn MemoryStore, filter: &MemoryFilter, size: usize) -> Vec<MemoryItem> {
    let mut all: Vec<MemoryItem> = Vec::new();
    loop {
        let mut page_filter = filter.clone().with_limit(size);
        if let Some(last) = all.last() {
            page_filter = page_filter.after(ListPosition::of(last));
        }
        let page = must(store.list(&page_filter), "list a page").await;
        let full = page.len() == size;
        assert!(
            page.len() <= size,
            "a page holds at most its limit ({} > {size})",
            page.len()
        );
        all.extend(page);
        if !full || all.len() > 1_000 {
            return all;
        }
    }
}

fn keys(items: &[MemoryItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|item| (item.namespace.to_string(), item.id.clone()))
        .collect()
}

pub(super) async fn list_pages(store: &dyn MemoryStore, ns: &Namespace) {
    let a = child(ns, "a");
    let b = child(ns, "b");
    // Several memories share a time, and two namespaces share ids at one time: the order
    // is time, then id, then namespace.
    let mut items = vec![
        item(&a, "m3", "third", 3),
        item(&b, "m3", "third elsewhere", 3),
        item(&a, "m1", "one", 1),
        item(&a, "m2", "two", 1),
        item(&b, "m0", "zero", 1),
        item(&b, "m9", "nine", 0),
        item(&a, "m5", "five", 5),
        item(&b, "m4", "four", 5),
    ];
    items.push(item(&a, "s1", "short", 2).with_kind(MemoryKind::ShortTerm));
    for item in &items {
        must(store.save(item.clone()), "save").await;
    }

    for newest_first in [false, true] {
        let mut filter = MemoryFilter::new(ns.subtree());
        if newest_first {
            filter = filter.newest_first();
        }
        let whole = must(store.list(&filter), "list all").await;
        assert_eq!(whole.len(), items.len(), "the listing holds every memory");
        for size in [1, 2, 3, 4] {
            assert_eq!(
                keys(&paged(store, &filter, size).await),
                keys(&whole),
                "pages of {size} after the last of the page before give the whole listing \
                 in its order (newest first: {newest_first})"
            );
        }
        // One namespace of the two, and the other conditions alongside.
        let only_a = MemoryFilter::new(a.exact());
        let only_a = if newest_first {
            only_a.newest_first()
        } else {
            only_a
        };
        let whole_a = must(store.list(&only_a), "list a").await;
        assert_eq!(
            keys(&paged(store, &only_a, 2).await),
            keys(&whole_a),
            "pages of one namespace (newest first: {newest_first})"
        );
        let episodic = filter.clone().with_kinds([MemoryKind::Episodic]);
        let whole_episodic = must(store.list(&episodic), "list episodic").await;
        assert_eq!(
            keys(&paged(store, &episodic, 2).await),
            keys(&whole_episodic),
            "pages with a kind condition (newest first: {newest_first})"
        );
        assert!(
            whole_episodic.iter().all(|item| item.id != "s1"),
            "the kind condition holds"
        );
    }

    // A position between two memories (it names none) and one past the end.
    let at = |second: i64| {
        Utc.timestamp_opt(1_700_000_000 + second, 0)
            .single()
            .unwrap_or_default()
    };
    let between = ListPosition::new(at(1), "m1z", a.clone())
        .unwrap_or_else(|error| panic!("conformance: a position: {error}"));
    let after_between = must(
        store.list(&MemoryFilter::new(ns.subtree()).after(between.clone())),
        "list after a position no memory holds",
    )
    .await;
    assert_eq!(
        keys(&after_between),
        keys(&must(store.list(&MemoryFilter::new(ns.subtree())), "list").await[3..]),
        "a position no memory holds splits the listing where it would stand"
    );
    let before_between = must(
        store.list(
            &MemoryFilter::new(ns.subtree())
                .newest_first()
                .after(between),
        ),
        "list newest first after a position no memory holds",
    )
    .await;
    assert_eq!(
        ids(&before_between),
        vec!["m1", "m0", "m9"],
        "newest first, after a position is before it in time order"
    );
    let end = ListPosition::new(at(100), "m", a.clone())
        .unwrap_or_else(|error| panic!("conformance: a position: {error}"));
    assert!(
        must(
            store.list(&MemoryFilter::new(ns.subtree()).after(end)),
            "list after the end"
        )
        .await
        .is_empty(),
        "nothing comes after the last memory"
    );
    // With a time range too: whichever bound is tighter holds.
    let position = |second: i64, id: &str, ns: &Namespace| {
        ListPosition::new(at(second), id, ns.clone())
            .unwrap_or_else(|error| panic!("conformance: a position: {error}"))
    };
    for (filter, expected, what) in [
        (
            MemoryFilter::new(ns.subtree())
                .with_time_range(Some(at(3)), None)
                .after(position(1, "m0", &b)),
            vec!["m3", "m3", "m4", "m5"],
            "a time range starting after the position",
        ),
        (
            MemoryFilter::new(ns.subtree())
                .with_time_range(Some(at(1)), None)
                .after(position(3, "m3", &a)),
            vec!["m3", "m4", "m5"],
            "a position after the time range's start",
        ),
        (
            MemoryFilter::new(ns.subtree())
                .newest_first()
                .with_time_range(None, Some(at(5)))
                .after(position(3, "m3", &b)),
            vec!["m3", "s1", "m2", "m1", "m0", "m9"],
            "newest first, a position before the time range's end",
        ),
        (
            MemoryFilter::new(ns.subtree())
                .newest_first()
                .with_time_range(None, Some(at(3)))
                .after(position(5, "m4", &b)),
            vec!["s1", "m2", "m1", "m0", "m9"],
            "newest first, a time range ending before the position",
        ),
    ] {
        assert_eq!(
            ids(&must(store.list(&filter), what).await),
            expected,
            "{what}"
        );
    }

    // A time range that ends before it starts holds nothing (and is no error).
    for newest_first in [false, true] {
        let mut backwards =
            MemoryFilter::new(ns.subtree()).with_time_range(Some(at(5)), Some(at(1)));
        if newest_first {
            backwards = backwards.newest_first();
        }
        assert!(
            must(
                store.list(&backwards),
                "list a time range ending before it starts"
            )
            .await
            .is_empty(),
            "a time range ending before it starts holds nothing"
        );
    }

    // With a time range that ends before the position: nothing, and no error.
    let late = ListPosition::new(at(4), "m", b.clone())
        .unwrap_or_else(|error| panic!("conformance: a position: {error}"));
    assert!(
        must(
            store.list(
                &MemoryFilter::new(ns.subtree())
                    .with_time_range(None, Some(at(2)))
                    .after(late)
            ),
            "list after a position beyond the time range"
        )
        .await
        .is_empty(),
        "a position beyond the time range leaves nothing"
    );

    // Writes between two pages: a memory saved before the position is not listed again,
    // one saved after it is; a memory deleted from a later page is gone and takes no
    // other with it.
    let first_page = must(
        store.list(&MemoryFilter::new(ns.subtree()).with_limit(4)),
        "list the first page",
    )
    .await;
    let Some(last) = first_page.last() else {
        panic!("conformance: the first page is empty");
    };
    must(
        store.save(item(&a, "early", "saved late, created early", 0)),
        "save",
    )
    .await;
    must(
        store.save(item(&b, "late", "saved and created late", 9)),
        "save",
    )
    .await;
    assert!(must(store.delete(&a, "m5"), "delete").await);
    let rest = must(
        store.list(&MemoryFilter::new(ns.subtree()).after(ListPosition::of(last))),
        "list the rest",
    )
    .await;
    assert_eq!(
        ids(&rest),
        vec!["s1", "m3", "m3", "m4", "late"],
        "the rest of a listing after concurrent writes"
    );

    // A search keeps to the position too.
    let hits = must(
        store.search(
            &crate::SearchQuery::new(ns.subtree(), "third", 10).with_filter(
                MemoryFilter::new(ns.subtree()).after(
                    ListPosition::new(at(3), "m3", a.clone())
                        .unwrap_or_else(|error| panic!("conformance: a position: {error}")),
                ),
            ),
        ),
        "search after a position",
    )
    .await;
    let found: Vec<(String, String)> = hits
        .iter()
        .map(|hit| (hit.item.namespace.to_string(), hit.item.id.clone()))
        .collect();
    assert_eq!(
        found,
        vec![(b.to_string(), "m3".to_owned())],
        "a search lists only memories after the position"
    );
}

/// Pages over subtrees that span one to a dozen namespaces (a backend may read a few
/// namespaces one by one and merge them, and many in one statement): the same memories in
/// the same order as the listing's order says, whatever the page size.
pub(super) async fn subtree_pages(store: &dyn MemoryStore, ns: &Namespace) {
    let start = Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default();
    for spread in [1usize, 3, 8, 9, 12] {
        let top = child(ns, &format!("s{spread}"));
        // By namespace and id: a save of an id its namespace holds replaces the memory.
        let mut items = std::collections::BTreeMap::new();
        for n in 0..60usize {
            // The subtree's top, its children, a sibling outside it (`s3-x`) and children
            // nested deeper; ids repeat across namespaces, times in runs of four.
            let namespace = match n % (spread + 2) {
                0 => top.clone(),
                1 => child(ns, &format!("s{spread}-x")),
                k if n % 7 == 0 => child(&child(&top, &format!("c{}", k % spread)), "deep"),
                k => child(&top, &format!("c{}", k % spread)),
            };
            let kind = if n % 5 == 0 {
                MemoryKind::Semantic
            } else {
                MemoryKind::Episodic
            };
            let made = item(&namespace, &format!("m{}", n % 13), "a note", 0)
                .with_created_at(start + chrono::Duration::seconds(n as i64 / 4))
                .with_kind(kind);
            must(store.save(made.clone()), "save").await;
            items.insert((made.namespace.to_string(), made.id.clone()), made);
        }
        for scope in [top.subtree(), top.exact()] {
            for newest_first in [false, true] {
                for kinds in [vec![], vec![MemoryKind::Episodic]] {
                    let mut filter = MemoryFilter::new(scope.clone()).with_kinds(kinds);
                    if newest_first {
                        filter = filter.newest_first();
                    }
                    let mut expected: Vec<MemoryItem> = items
                        .values()
                        .filter(|item| filter.matches(item))
                        .cloned()
                        .collect();
                    expected.sort_by(|a, b| crate::memory::listing_order(a, b, newest_first));
                    let whole = must(store.list(&filter), "list").await;
                    assert_eq!(
                        keys(&whole),
                        keys(&expected),
                        "the listing of {scope:?} over {spread} namespaces, newest first \
                         {newest_first}"
                    );
                    for size in [1, 4, 7] {
                        assert_eq!(
                            keys(&paged(store, &filter, size).await),
                            keys(&expected),
                            "pages of {size} of {scope:?} over {spread} namespaces, newest \
                             first {newest_first}"
                        );
                    }
                }
            }
        }
    }
}

/// Pages of a listing with metadata conditions, SQL-decidable or not (a string, a float, an
/// array): each backend reads such a listing a chunk of rows at a time, and its pages must
/// be the model's, with matches sparse across chunks (one in 97 rows, one in 211) and three
/// memories sharing each creation time, in both orders.
pub(super) async fn metadata_pages(store: &dyn MemoryStore, ns: &Namespace) {
    let below = child(ns, "child");
    let mut saved = Vec::new();
    for n in 0..1_200i64 {
        let weight = if n % 97 == 5 { 1.5 } else { 2.0 };
        let role = if n % 211 == 7 { "user" } else { "assistant" };
        let tags = if n % 150 == 9 { vec![1, 2] } else { vec![3] };
        let namespace = if n % 2 == 0 { ns } else { &below };
        let entry = item(
            namespace,
            &format!("m{:04}", (n * 7) % 1_200),
            &format!("memory {n}"),
            n / 3,
        )
        .with_metadata(serde_json::json!({ "weight": weight, "role": role, "tags": tags }))
        .unwrap_or_else(|error| panic!("conformance: metadata of {n}: {error}"));
        saved.push(entry);
    }
    must(store.save_many(saved.clone()), "save_many").await;
    for (key, value) in [
        ("weight", serde_json::json!(1.5)),
        ("role", serde_json::json!("user")),
        ("tags", serde_json::json!([1, 2])),
        ("weight", serde_json::json!(9.5)),
    ] {
        for newest_first in [false, true] {
            let mut want: Vec<MemoryItem> = saved
                .iter()
                .filter(|entry| entry.metadata.get(key) == Some(&value))
                .cloned()
                .collect();
            want.sort_by(|a, b| crate::backend::listing_order(a, b, newest_first));
            for size in [1, 3, 300] {
                let mut filter = MemoryFilter::new(ns.subtree());
                filter.metadata = vec![(key.into(), value.clone())];
                filter.newest_first = newest_first;
                let got = paged(store, &filter, size).await;
                assert_eq!(
                    keys(&got),
                    keys(&want),
                    "conformance: pages of {size} where {key} = {value}, newest first {newest_first}"
                );
            }
        }
    }
}

/// Pages through a batch saved at once, so its memories share one creation time (as every
/// memory of one `save_many` may), with a few memories just before and after it: each page
/// must start right after the last memory of the one before, by id and then namespace, in
/// both orders, over one namespace and over a subtree of two namespaces sharing ids.
pub(super) async fn tied_pages(store: &dyn MemoryStore, ns: &Namespace) {
    let a = child(ns, "a");
    let b = child(ns, "b");
    let mut saved = Vec::new();
    for n in 0..250usize {
        // Saved out of order; the two namespaces share ids (id order first, then namespace).
        let scrambled = (n * 97) % 250;
        let namespace = if scrambled % 2 == 0 { &a } else { &b };
        saved.push(item(
            namespace,
            &format!("t{:03}", scrambled / 2),
            "tied",
            10,
        ));
    }
    for n in 0..5usize {
        let namespace = if n % 2 == 0 { &a } else { &b };
        saved.push(item(namespace, &format!("early{n}"), "before the batch", 9));
        saved.push(item(
            namespace,
            &format!("a-late{n}"),
            "after the batch",
            11,
        ));
    }
    must(store.save_many(saved.clone()), "save_many").await;
    for scope in [ns.subtree(), a.exact(), b.exact()] {
        for newest_first in [false, true] {
            let mut filter = MemoryFilter::new(scope.clone());
            filter.newest_first = newest_first;
            let mut want: Vec<MemoryItem> = saved
                .iter()
                .filter(|entry| filter.matches(entry))
                .cloned()
                .collect();
            want.sort_by(|x, y| crate::backend::listing_order(x, y, newest_first));
            for size in [7, 64] {
                let got = keys(&paged(store, &filter, size).await);
                let distinct: std::collections::BTreeSet<_> = got.iter().collect();
                assert_eq!(
                    distinct.len(),
                    got.len(),
                    "conformance: pages of {size} of a tied batch over {scope:?}, newest first \
                     {newest_first}, list a memory twice"
                );
                assert_eq!(
                    got,
                    keys(&want),
                    "conformance: pages of {size} of a tied batch over {scope:?}, newest first \
                     {newest_first}"
                );
            }
        }
    }
}
