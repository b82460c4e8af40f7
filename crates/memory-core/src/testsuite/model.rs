//! Model-based checks: apply any sequence of operations to a store and to a simple model,
//! then compare every read channel. Backends drive this from property tests (proptest) with
//! random operation sequences; see [`MemoryOp`].

use std::collections::BTreeMap;

use chrono::{TimeZone, Utc};

use super::child;
use crate::{MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery};

/// Words the operations write; each memory holds exactly one of them, so a search for a word
/// must return exactly the live memories holding it.
pub const MODEL_WORDS: [&str; 6] = ["apple", "banana", "cherry", "damson", "elder", "fig"];
/// Namespaces (children of the base) the operations touch; `t1/s` sits under `t1` so subtree
/// scopes are exercised.
pub const MODEL_SPACES: [&str; 3] = ["t1", "t1/s", "t2"];

/// One operation on a memory store. Indexes are taken modulo the sizes of
/// [`MODEL_SPACES`], eight ids and [`MODEL_WORDS`], so any numbers are valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryOp {
    /// Save (insert or replace) memory `id` in namespace `space` holding word `word`.
    Save {
        /// Namespace index.
        space: usize,
        /// Id index.
        id: usize,
        /// Word index.
        word: usize,
    },
    /// Replace an existing memory (a no-op in the model when it does not exist).
    Update {
        /// Namespace index.
        space: usize,
        /// Id index.
        id: usize,
        /// Word index.
        word: usize,
    },
    /// Delete a memory.
    Delete {
        /// Namespace index.
        space: usize,
        /// Id index.
        id: usize,
    },
    /// Record one recall of a memory.
    Recall {
        /// Namespace index.
        space: usize,
        /// Id index.
        id: usize,
    },
    /// Delete a whole namespace (exact scope).
    Clear {
        /// Namespace index.
        space: usize,
    },
    /// Save memories `id`, `id + 1` and `id + 2` (of the eight) in one `save_many`, each
    /// holding word `word`.
    SaveMany {
        /// Namespace index.
        space: usize,
        /// Index of the first id.
        id: usize,
        /// Word index.
        word: usize,
    },
    /// Delete memories `id`, `id + 1` and `id + 2` in one `delete_many`.
    DeleteMany {
        /// Namespace index.
        space: usize,
        /// Index of the first id.
        id: usize,
    },
    /// Delete a namespace and every namespace under it (subtree scope).
    ClearSubtree {
        /// Namespace index.
        space: usize,
    },
}

#[derive(Clone, Copy, Debug, Default)]
struct Model {
    word: usize,
    recalls: u64,
}

fn spaces(base: &Namespace) -> Vec<Namespace> {
    MODEL_SPACES
        .iter()
        .map(|space| {
            space
                .split('/')
                .fold(base.clone(), |ns, segment| child(&ns, segment))
        })
        .collect()
}

fn item(ns: &Namespace, id: usize, word: usize, tick: i64) -> MemoryItem {
    let at = Utc
        .timestamp_opt(1_700_000_000 + tick, 0)
        .single()
        .unwrap_or_default();
    MemoryItem::new(
        ns.clone(),
        format!("a note about {}", MODEL_WORDS[word % MODEL_WORDS.len()]),
    )
    .and_then(|item| item.with_id(format!("m{}", id % 8)))
    .map(|item| item.with_created_at(at))
    .unwrap_or_else(|error| panic!("model: building item: {error}"))
}

/// Applies `ops` to `store` under `base` and to a model, checking each acknowledged result
/// and, after each operation, the memory it touched (`get` and its recall count). Every
/// eighth operation and at the end it checks that every read agrees with the model: `get`
/// of every id in every namespace, `list` (exact and subtree), `list_namespaces`, `count`,
/// `search` for every word (index consistency, delete completeness, isolation), and recall
/// and access counts. `base` must be empty when called.
pub async fn check_memory_operations(store: &dyn MemoryStore, base: &Namespace, ops: &[MemoryOp]) {
    let spaces = spaces(base);
    let mut model: BTreeMap<(usize, usize), Model> = BTreeMap::new();
    let recall_at = Utc
        .timestamp_opt(1_800_000_000, 0)
        .single()
        .unwrap_or_default();
    for (tick, op) in ops.iter().enumerate() {
        let touched = apply(store, &spaces, &mut model, op, tick as i64, recall_at).await;
        if let Some((s, id)) = touched {
            check_one(store, &spaces, &model, s, id).await;
        }
        if tick % 8 == 7 {
            check_all(store, base, &spaces, &model).await;
        }
    }
    check_all(store, base, &spaces, &model).await;
}

/// Applies one operation to the store and the model; returns the memory it touched.
async fn apply(
    store: &dyn MemoryStore,
    spaces: &[Namespace],
    model: &mut BTreeMap<(usize, usize), Model>,
    op: &MemoryOp,
    tick: i64,
    recall_at: chrono::DateTime<Utc>,
) -> Option<(usize, usize)> {
    {
        match *op {
            MemoryOp::Save { space, id, word } => {
                let (space, id, word) = (space % spaces.len(), id % 8, word % MODEL_WORDS.len());
                if let Err(error) = store.save(item(&spaces[space], id, word, tick)).await {
                    panic!("model: save failed: {error}");
                }
                let entry = model.entry((space, id)).or_default();
                entry.word = word;
                Some((space, id))
            }
            MemoryOp::Update { space, id, word } => {
                let (space, id, word) = (space % spaces.len(), id % 8, word % MODEL_WORDS.len());
                let result = store.update(item(&spaces[space], id, word, tick)).await;
                match model.get_mut(&(space, id)) {
                    Some(entry) => {
                        assert!(
                            result.is_ok(),
                            "model: update of an existing memory failed: {result:?}"
                        );
                        entry.word = word;
                    }
                    None => assert!(
                        matches!(result, Err(crate::MemoryError::NotFound { .. })),
                        "model: update of a missing memory must be NotFound, got {result:?}"
                    ),
                }
                Some((space, id))
            }
            MemoryOp::Delete { space, id } => {
                let (space, id) = (space % spaces.len(), id % 8);
                let existed = match store.delete(&spaces[space], &format!("m{id}")).await {
                    Ok(existed) => existed,
                    Err(error) => panic!("model: delete failed: {error}"),
                };
                assert_eq!(
                    existed,
                    model.remove(&(space, id)).is_some(),
                    "model: delete reports existence"
                );
                Some((space, id))
            }
            MemoryOp::Recall { space, id } => {
                let (space, id) = (space % spaces.len(), id % 8);
                if let Err(error) = store
                    .record_recall(&spaces[space], &format!("m{id}"), 0.5, recall_at)
                    .await
                {
                    panic!("model: record_recall failed: {error}");
                }
                if let Some(entry) = model.get_mut(&(space, id)) {
                    entry.recalls += 1;
                }
                Some((space, id))
            }
            MemoryOp::Clear { space } => {
                let space = space % spaces.len();
                let removed = match store.clear(&spaces[space].exact()).await {
                    Ok(removed) => removed,
                    Err(error) => panic!("model: clear failed: {error}"),
                };
                let before = model.len();
                model.retain(|(s, _), _| *s != space);
                assert_eq!(
                    removed,
                    before - model.len(),
                    "model: clear reports what it deleted"
                );
                None
            }
            MemoryOp::SaveMany { space, id, word } => {
                let (space, id, word) = (space % spaces.len(), id % 8, word % MODEL_WORDS.len());
                let ids: Vec<usize> = (0..3).map(|k| (id + k) % 8).collect();
                let items = ids
                    .iter()
                    .map(|id| item(&spaces[space], *id, word, tick))
                    .collect();
                if let Err(error) = store.save_many(items).await {
                    panic!("model: save_many failed: {error}");
                }
                for id in ids {
                    model.entry((space, id)).or_default().word = word;
                }
                Some((space, id))
            }
            MemoryOp::DeleteMany { space, id } => {
                let (space, id) = (space % spaces.len(), id % 8);
                let ids: Vec<usize> = (0..3).map(|k| (id + k) % 8).collect();
                let names: Vec<String> = ids.iter().map(|id| format!("m{id}")).collect();
                let deleted = match store.delete_many(&spaces[space], &names).await {
                    Ok(deleted) => deleted,
                    Err(error) => panic!("model: delete_many failed: {error}"),
                };
                let existed = ids
                    .iter()
                    .filter(|id| model.remove(&(space, **id)).is_some())
                    .count();
                assert_eq!(deleted, existed, "model: delete_many counts what existed");
                Some((space, id))
            }
            MemoryOp::ClearSubtree { space } => {
                let space = space % spaces.len();
                let scope = spaces[space].subtree();
                let removed = match store.clear(&scope).await {
                    Ok(removed) => removed,
                    Err(error) => panic!("model: clear failed: {error}"),
                };
                let before = model.len();
                model.retain(|(s, _), _| !scope.contains(&spaces[*s]));
                assert_eq!(
                    removed,
                    before - model.len(),
                    "model: clear of a subtree reports what it deleted"
                );
                None
            }
        }
    }
}

/// `get` of memory `id` in namespace `s` agrees with the model, recall count included.
async fn check_one(
    store: &dyn MemoryStore,
    spaces: &[Namespace],
    model: &BTreeMap<(usize, usize), Model>,
    s: usize,
    id: usize,
) {
    let space = &spaces[s];
    let name = format!("m{id}");
    let got = match store.get(space, &name).await {
        Ok(got) => got,
        Err(error) => panic!("model: get failed: {error}"),
    };
    match (got, model.get(&(s, id))) {
        (None, None) => {}
        (Some(item), Some(expected)) => {
            assert_eq!(item.namespace, *space, "model: get isolation");
            assert!(
                item.content.ends_with(MODEL_WORDS[expected.word]),
                "model: content of {name} in {space}"
            );
            let stats = match store.recall_stats(space, &name).await {
                Ok(stats) => stats.map_or(0, |stats| stats.recall_count),
                Err(error) => panic!("model: recall_stats failed: {error}"),
            };
            assert_eq!(
                stats, expected.recalls,
                "model: recall count of {name} in {space}"
            );
            // Each recall is an access, and writes over the memory (whose copies hold
            // none) keep them.
            assert_eq!(
                item.access_count, expected.recalls,
                "model: accesses of {name} in {space}"
            );
        }
        (got, expected) => panic!(
            "model: get of {name} in {space} is {:?}, the model has {expected:?}",
            got.map(|item| item.content)
        ),
    }
}

/// Every read agrees with the model.
async fn check_all(
    store: &dyn MemoryStore,
    base: &Namespace,
    spaces: &[Namespace],
    model: &BTreeMap<(usize, usize), Model>,
) {
    for s in 0..spaces.len() {
        for id in 0..8 {
            check_one(store, spaces, model, s, id).await;
        }
    }
    let held = match store.list_namespaces(&base.subtree()).await {
        Ok(held) => held,
        Err(error) => panic!("model: list_namespaces failed: {error}"),
    };
    let mut want: Vec<Namespace> = spaces
        .iter()
        .enumerate()
        .filter(|(s, _)| model.keys().any(|(m, _)| m == s))
        .map(|(_, space)| space.clone())
        .collect();
    want.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(
        held, want,
        "model: list_namespaces holds the namespaces with memories"
    );
    for (s, space) in spaces.iter().enumerate() {
        // The subtree list holds this namespace's memories and those of every namespace
        // under it.
        let subtree = match store.list(&MemoryFilter::new(space.subtree())).await {
            Ok(listed) => listed,
            Err(error) => panic!("model: list failed: {error}"),
        };
        let mut got: Vec<(String, String)> = subtree
            .iter()
            .map(|item| (item.namespace.to_string(), item.id.clone()))
            .collect();
        got.sort();
        let mut want: Vec<(String, String)> = model
            .keys()
            .filter(|(m, _)| space.subtree().contains(&spaces[*m]))
            .map(|(m, id)| (spaces[*m].to_string(), format!("m{id}")))
            .collect();
        want.sort();
        assert_eq!(got, want, "model: subtree list of {space}");
        let listed = match store.list(&MemoryFilter::new(space.exact())).await {
            Ok(listed) => listed,
            Err(error) => panic!("model: list failed: {error}"),
        };
        let mut got: Vec<String> = listed.iter().map(|item| item.id.clone()).collect();
        got.sort();
        let want: Vec<String> = model
            .keys()
            .filter(|(m, _)| *m == s)
            .map(|(_, id)| format!("m{id}"))
            .collect();
        assert_eq!(got, want, "model: list of {space} agrees with the model");
        assert!(
            listed.iter().all(|item| item.namespace == *space),
            "model: list isolation"
        );
        for item in &listed {
            let id: usize = item.id[1..].parse().unwrap_or(usize::MAX);
            let expected = model.get(&(s, id)).copied().unwrap_or_default();
            assert!(
                item.content.ends_with(MODEL_WORDS[expected.word]),
                "model: content of {}",
                item.id
            );
            let stats = match store.recall_stats(space, &item.id).await {
                Ok(stats) => stats.map_or(0, |stats| stats.recall_count),
                Err(error) => panic!("model: recall_stats failed: {error}"),
            };
            assert_eq!(
                stats, expected.recalls,
                "model: recall count of {} in {space}",
                item.id
            );
        }
        for (w, word) in MODEL_WORDS.iter().enumerate() {
            for scope in [space.exact(), space.subtree()] {
                let hits = match store
                    .search(&SearchQuery::new(scope.clone(), *word, 100))
                    .await
                {
                    Ok(hits) => hits,
                    Err(error) => panic!("model: search failed: {error}"),
                };
                assert!(
                    hits.iter().all(|hit| scope.contains(&hit.item.namespace)),
                    "model: search isolation"
                );
                let mut got: Vec<(String, String)> = hits
                    .iter()
                    .map(|h| (h.item.namespace.to_string(), h.item.id.clone()))
                    .collect();
                got.sort();
                let mut want: Vec<(String, String)> = model
                    .iter()
                    .filter(|((m, _), entry)| scope.contains(&spaces[*m]) && entry.word == w)
                    .map(|((m, id), _)| (spaces[*m].to_string(), format!("m{id}")))
                    .collect();
                want.sort();
                assert_eq!(
                    got, want,
                    "model: search for {word} in {scope:?} finds exactly the live memories holding it"
                );
            }
        }
    }
    let total = match store.count(&base.subtree()).await {
        Ok(total) => total,
        Err(error) => panic!("model: count failed: {error}"),
    };
    assert_eq!(total, model.len(), "model: count over the subtree");
}
