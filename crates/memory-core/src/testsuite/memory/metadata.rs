//! Listings by metadata value: every kind of JSON value, compared as JSON (`1` is not `"1"`
//! nor `true`), alone, together and with a limit, oldest or newest first.

use serde_json::json;

use super::{ids, item, must};
use crate::{MemoryFilter, MemoryStore, Namespace};

/// Metadata conditions: keys with the value each must hold.
type Conditions<'a> = &'a [(&'a str, serde_json::Value)];

pub(super) async fn metadata_values(store: &dyn MemoryStore, ns: &Namespace) {
    let stored = [
        ("a", json!({"v": "1"})),
        ("b", json!({"v": 1})),
        ("c", json!({"v": true})),
        ("d", json!({"v": null})),
        ("e", json!({"v": 1.5})),
        ("f", json!({"v": {"x": 1}})),
        ("g", json!({"v": [1, 2]})),
        ("h", json!({"q\"k": "x", "back\\slash": "y"})),
        ("i", json!({})),
        ("j", json!({"v": "1", "w": "z"})),
        ("k", json!({"v": -7})),
    ];
    for (at, (id, metadata)) in stored.into_iter().enumerate() {
        let memory = item(ns, id, &format!("memory {id}"), at as i64)
            .with_metadata(metadata)
            .unwrap_or_else(|error| panic!("conformance: metadata of {id}: {error}"));
        must(store.save(memory), "save").await;
    }
    let list = |conditions: Conditions<'_>, limit: Option<usize>, newest: bool| {
        let mut filter = MemoryFilter::new(ns.exact());
        for (key, value) in conditions {
            filter = filter.with_metadata(*key, value.clone());
        }
        if let Some(limit) = limit {
            filter = filter.with_limit(limit);
        }
        if newest {
            filter = filter.newest_first();
        }
        async move { must(store.list(&filter), "list").await }
    };
    let cases: [(Conditions<'_>, &[&str]); 11] = [
        (&[("v", json!("1"))], &["a", "j"]),
        (&[("v", json!(1))], &["b"]),
        (&[("v", json!(true))], &["c"]),
        (&[("v", json!(null))], &["d"]),
        (&[("v", json!(1.5))], &["e"]),
        (&[("v", json!({"x": 1}))], &["f"]),
        (&[("v", json!([1, 2]))], &["g"]),
        (&[("q\"k", json!("x"))], &["h"]),
        (&[("back\\slash", json!("y"))], &["h"]),
        (&[("v", json!("1")), ("w", json!("z"))], &["j"]),
        (&[("v", json!(-7))], &["k"]),
    ];
    for (conditions, expected) in cases {
        assert_eq!(
            ids(&list(conditions, None, false).await),
            expected,
            "conformance: metadata {conditions:?}"
        );
    }
    // A limit counts only what matches, in either order.
    assert_eq!(
        ids(&list(&[("v", json!("1"))], Some(1), false).await),
        ["a"]
    );
    assert_eq!(ids(&list(&[("v", json!("1"))], Some(1), true).await), ["j"]);
    assert_eq!(ids(&list(&[("v", json!(1.5))], Some(1), true).await), ["e"]);
    assert!(list(&[("v", json!(false))], None, false).await.is_empty());
    assert!(
        list(&[("absent", json!(null))], None, false)
            .await
            .is_empty()
    );
}
