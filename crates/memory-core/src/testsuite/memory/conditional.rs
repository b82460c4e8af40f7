//! Conformance of [`MemoryStore::update_if`] and the other conditional writes: an edit is
//! written only over the copy it was made from, and a refused one changes nothing.

use chrono::Duration;

use super::{item, must};
use crate::{ConditionalSave, MemoryError, MemoryStore, Namespace, RecallStats, SearchQuery};

async fn found(store: &dyn MemoryStore, ns: &Namespace, words: &str) -> Vec<String> {
    must(
        store.search(&SearchQuery::new(ns.exact(), words, 10)),
        "search",
    )
    .await
    .into_iter()
    .map(|hit| hit.item.id.clone())
    .collect()
}

pub(super) async fn conditional_updates(store: &dyn MemoryStore, ns: &Namespace) {
    must(
        store.save(item(ns, "a", "the violin lessons start in May", 0)),
        "save",
    )
    .await;
    must(
        store.record_recall(ns, "a", 0.5, item(ns, "x", "x", 5).created_at),
        "record_recall",
    )
    .await;
    let read = must(store.get(ns, "a"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: the saved memory is there"));

    // Two edits made from one copy: the first is written, with a later `updated_at`.
    let mut first = read.clone();
    first.content = "the cello lessons start in June".into();
    let first = first.revised(read.updated_at);
    assert_eq!(
        first.updated_at,
        read.updated_at + Duration::nanoseconds(1),
        "conformance: a revision moves updated_at by a nanosecond"
    );
    assert!(
        must(store.update_if(first.clone(), read.updated_at), "update_if").await,
        "conformance: an edit of the copy as stored is written"
    );
    let stored = must(store.get(ns, "a"), "get").await;
    assert_eq!(
        stored.as_ref().map(|item| (&item.content, item.updated_at)),
        Some((&first.content, first.updated_at)),
        "conformance: the edit is stored, with its updated_at"
    );
    assert_eq!(
        must(store.recall_stats(ns, "a"), "recall_stats")
            .await
            .map(|stats: RecallStats| stats.recall_count),
        Some(1),
        "conformance: a conditional update keeps the recall statistics"
    );
    assert_eq!(found(store, ns, "cello").await, ["a"]);

    // The second was made from the same copy: refused, and nothing of it written.
    let second = read.clone().with_pinned(true).revised(read.updated_at);
    assert!(
        !must(store.update_if(second, read.updated_at), "update_if").await,
        "conformance: an edit of a copy changed since is refused"
    );
    let stored = must(store.get(ns, "a"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: the memory is still there"));
    assert_eq!(stored.content, first.content);
    assert!(
        !stored.is_pinned(),
        "conformance: a refused edit writes nothing"
    );
    assert!(
        found(store, ns, "violin").await.is_empty(),
        "conformance: a refused edit leaves the index as the stored text"
    );

    // Made again from what is stored now, it is written.
    let again = stored.clone().with_pinned(true).revised(stored.updated_at);
    assert!(must(store.update_if(again, stored.updated_at), "update_if").await);
    assert!(
        must(store.get(ns, "a"), "get")
            .await
            .is_some_and(|item| item.is_pinned() && item.content == first.content)
    );

    // A memory that is not stored (deleted, or never saved) is not written.
    let gone = item(ns, "gone", "a memory forgotten before its edit", 1);
    assert!(
        !must(store.update_if(gone.clone(), gone.updated_at), "update_if").await,
        "conformance: a conditional update never creates a memory"
    );
    assert!(must(store.get(ns, "gone"), "get").await.is_none());
    let elsewhere = item(&super::child(ns, "never-written"), "b", "a memory", 2);
    assert!(
        !must(
            store.update_if(elsewhere.clone(), elsewhere.updated_at),
            "update_if"
        )
        .await
    );

    // An invalid item is refused as invalid, whatever is stored.
    let mut invalid = must(store.get(ns, "a"), "get")
        .await
        .unwrap_or_else(|| panic!("conformance: the memory is still there"));
    let at = invalid.updated_at;
    invalid.importance = f32::NAN;
    assert!(matches!(
        store.update_if(invalid, at).await,
        Err(MemoryError::InvalidInput { .. })
    ));
}

pub(super) async fn conditional_deletes(store: &dyn MemoryStore, ns: &Namespace) {
    for (id, text, second) in [
        ("a", "the harp recital", 0),
        ("b", "the harp concert", 1),
        ("c", "the harp lesson", 2),
    ] {
        must(store.save(item(ns, id, text, second)), "save").await;
    }
    let read = |item: Option<crate::MemoryItem>| {
        item.unwrap_or_else(|| panic!("conformance: the saved memory is there"))
    };
    let a = read(must(store.get(ns, "a"), "get").await);
    let b = read(must(store.get(ns, "b"), "get").await);
    let c = read(must(store.get(ns, "c"), "get").await);
    // `b` is pinned after it was read: the delete leaves it.
    let pinned = b.clone().with_pinned(true).revised(b.updated_at);
    assert!(must(store.update_if(pinned, b.updated_at), "update_if").await);
    let chosen = [
        (a.id.clone(), a.updated_at),
        (b.id.clone(), b.updated_at),
        (c.id.clone(), c.updated_at),
        ("gone".to_owned(), a.updated_at),
    ];
    assert_eq!(
        must(store.delete_many_if(ns, &chosen), "delete_many_if").await,
        None,
        "conformance: with one memory changed since it was read, none is deleted"
    );
    for id in ["a", "b", "c"] {
        assert!(must(store.get(ns, id), "get").await.is_some());
    }
    must(
        store.record_recall(ns, "a", 0.5, a.updated_at),
        "record_recall",
    )
    .await;
    let unchanged = [
        (a.id.clone(), a.updated_at),
        (c.id.clone(), c.updated_at),
        ("gone".to_owned(), a.updated_at),
    ];
    assert_eq!(
        must(store.delete_many_if(ns, &unchanged), "delete_many_if").await,
        Some(2),
        "conformance: memories as read are deleted, one gone already counts as unchanged"
    );
    assert!(must(store.get(ns, "a"), "get").await.is_none());
    assert!(must(store.get(ns, "c"), "get").await.is_none());
    assert!(
        must(store.get(ns, "b"), "get")
            .await
            .is_some_and(|item| item.is_pinned()),
        "conformance: a memory changed since it was read is not deleted"
    );
    // Saved again, it has no recall statistics of the one deleted.
    must(
        store.save(item(ns, "a", "the harp recital again", 3)),
        "save",
    )
    .await;
    assert!(
        must(store.recall_stats(ns, "a"), "recall_stats")
            .await
            .is_none_or(|stats| stats.recall_count == 0),
        "conformance: a conditional delete takes the recall statistics with it"
    );
    must(store.delete(ns, "a"), "delete").await;
    assert_eq!(found(store, ns, "harp").await, ["b"]);
    // Again, or elsewhere: nothing left to delete.
    assert_eq!(
        must(store.delete_many_if(ns, &unchanged), "delete_many_if").await,
        Some(0)
    );
    let elsewhere = super::child(ns, "never-written");
    assert_eq!(
        must(store.delete_many_if(&elsewhere, &chosen), "delete_many_if").await,
        Some(0)
    );
}

pub(super) async fn conditional_batches(store: &dyn MemoryStore, ns: &Namespace) {
    let other = super::child(ns, "other");
    must(
        store.save(item(ns, "a", "the oboe is in the attic", 0)),
        "save",
    )
    .await;
    must(
        store.save(item(&other, "b", "the flute is in the car", 1)),
        "save",
    )
    .await;
    let get = |namespace: &Namespace, id: &'static str| {
        let namespace = namespace.clone();
        async move {
            must(store.get(&namespace, id), "get")
                .await
                .unwrap_or_else(|| panic!("conformance: memory {id} is there"))
        }
    };
    let a = get(ns, "a").await;
    let b = get(&other, "b").await;

    // Two namespaces, both as read, and a new memory: all written.
    let mut a2 = a.clone().revised(a.updated_at);
    a2.content = "the oboe is in the cellar".into();
    let b2 = b.clone().with_pinned(true).revised(b.updated_at);
    let c = item(ns, "c", "a new memory about the oboe", 2);
    assert!(
        must(
            store.save_many_if(
                vec![c.clone(), a2.clone(), b2],
                &[(1, a.updated_at), (2, b.updated_at)]
            ),
            "save_many_if"
        )
        .await,
        "conformance: a batch whose memories are as read is written"
    );
    assert_eq!(get(ns, "a").await.content, a2.content);
    assert!(get(&other, "b").await.is_pinned());
    assert_eq!(get(ns, "c").await.content, c.content);

    // Made from the first copy of `a`: refused whole, the new memory with it.
    let stale = a.clone().with_pinned(true).revised(a.updated_at);
    let d = item(ns, "d", "a memory written with a stale one", 3);
    assert!(
        !must(
            store.save_many_if(vec![d, stale], &[(1, a.updated_at)]),
            "save_many_if"
        )
        .await,
        "conformance: a batch with a memory changed since is refused"
    );
    assert!(must(store.get(ns, "d"), "get").await.is_none());
    let now = get(ns, "a").await;
    assert!(!now.is_pinned() && now.content == a2.content);
    assert!(
        found(store, ns, "stale").await.is_empty(),
        "conformance: a refused batch leaves the index as it was"
    );

    // A memory expected but gone, in a namespace never written or in this one.
    let gone = item(&super::child(ns, "never-written"), "e", "a memory", 4);
    assert!(
        !must(
            store.save_many_if(vec![gone.clone()], &[(0, gone.updated_at)]),
            "save_many_if"
        )
        .await
    );
    let missing = item(ns, "missing", "a memory", 5);
    assert!(
        !must(
            store.save_many_if(vec![missing.clone()], &[(0, missing.updated_at)]),
            "save_many_if"
        )
        .await
    );
    assert!(must(store.get(ns, "missing"), "get").await.is_none());

    // An index past the items is refused as invalid.
    assert!(matches!(
        store.save_many_if(vec![], &[(0, a.updated_at)]).await,
        Err(MemoryError::InvalidInput { .. })
    ));
}

/// [`MemoryStore::save_each_if`]: each write on its own condition, compared after the
/// writes before it, a refused one leaving nothing (in the records or the index), an
/// invalid one refusing the call.
pub(super) async fn conditional_each(store: &dyn MemoryStore, ns: &Namespace) {
    for (id, words, at) in [
        ("a", "the harp is in the hall", 0),
        ("b", "the drum is in the shed", 1),
    ] {
        must(store.save(item(ns, id, words, at)), "save").await;
    }
    let get = |id: &'static str| async move {
        must(store.get(ns, id), "get")
            .await
            .unwrap_or_else(|| panic!("conformance: memory {id} is there"))
    };
    let (a, b) = (get("a").await, get("b").await);
    let mut a2 = a.clone().revised(a.updated_at);
    a2.content = "the harp is in the loft".into();
    let mut a3 = a2.clone().revised(a2.updated_at);
    a3.content = "the harp is in the garage".into();
    let stale = a.clone().with_pinned(true).revised(a.updated_at);
    let mut b2 = b.clone().revised(b.updated_at);
    b2.content = "the drum is in the van".into();
    let saved = must(
        store.save_each_if(vec![
            ConditionalSave::update(a2.clone(), a.updated_at),
            // Made from the copy the write before replaced: refused whole, the new memory
            // with it.
            ConditionalSave {
                items: vec![
                    item(ns, "c", "a new memory about the pinned harp", 2),
                    stale,
                ],
                expected: vec![(1, a.updated_at)],
            },
            // Made from what the first write wrote: written.
            ConditionalSave::update(a3.clone(), a2.updated_at),
            ConditionalSave::update(b2.clone(), b.updated_at),
            // A memory never stored.
            ConditionalSave::update(item(ns, "d", "a memory", 3), a.updated_at),
        ]),
        "save_each_if",
    )
    .await;
    assert_eq!(
        saved,
        [true, false, true, true, false],
        "conformance: each write on its own condition, after the ones before it"
    );
    let now = get("a").await;
    assert!(!now.is_pinned() && now.content == a3.content);
    assert_eq!(get("b").await.content, b2.content);
    for id in ["c", "d"] {
        assert!(must(store.get(ns, id), "get").await.is_none());
    }
    assert_eq!(found(store, ns, "garage").await, ["a"]);
    assert_eq!(found(store, ns, "van").await, ["b"]);
    assert!(
        found(store, ns, "loft pinned shed").await.is_empty(),
        "conformance: the index holds what was written last, and nothing refused"
    );
    assert_eq!(
        must(store.save_each_if(Vec::new()), "save_each_if").await,
        Vec::<bool>::new()
    );

    // A memory an earlier write of the batch creates is compared as that write made it.
    let e = item(ns, "e", "the flute is in the car", 4);
    let mut e2 = e.clone().revised(e.updated_at);
    e2.content = "the flute is in the attic".into();
    let saved = must(
        store.save_each_if(vec![
            ConditionalSave {
                items: vec![e.clone()],
                expected: Vec::new(),
            },
            ConditionalSave::update(e2.clone(), e.updated_at),
        ]),
        "save_each_if",
    )
    .await;
    assert_eq!(
        saved,
        [true, true],
        "conformance: a memory created by the write before is compared as it wrote it"
    );
    assert_eq!(get("e").await.content, e2.content);

    // An invalid item or index anywhere refuses the call: nothing written.
    let mut a4 = now.clone().revised(now.updated_at);
    a4.content = "the harp is in the boat".into();
    let mut invalid = b2.clone();
    invalid.content = String::new();
    for bad in [
        ConditionalSave::update(invalid, b2.updated_at),
        ConditionalSave {
            items: Vec::new(),
            expected: vec![(0, b2.updated_at)],
        },
    ] {
        assert!(matches!(
            store
                .save_each_if(vec![
                    ConditionalSave::update(a4.clone(), now.updated_at),
                    bad
                ])
                .await,
            Err(MemoryError::InvalidInput { .. })
        ));
        assert_eq!(get("a").await.content, a3.content);
    }
}
