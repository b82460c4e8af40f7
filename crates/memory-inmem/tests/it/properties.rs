//! Property tests: after any sequence of saves, updates and deletes across namespaces, the
//! store agrees with a simple model in every read channel.

use std::collections::BTreeMap;

use memory_core::{MemoryFilter, MemoryItem, MemoryStore, Namespace, SearchQuery};
use memory_inmem::InMemoryStore;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Save { ns: usize, id: usize, word: usize },
    Delete { ns: usize, id: usize },
    Clear { ns: usize },
}

const WORDS: [&str; 6] = ["apple", "banana", "cherry", "damson", "elder", "fig"];
const SPACES: [&str; 3] = ["t1", "t1/s", "t2"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3usize, 0..8usize, 0..6usize).prop_map(|(ns, id, word)| Op::Save { ns, id, word }),
        3 => (0..3usize, 0..8usize).prop_map(|(ns, id)| Op::Delete { ns, id }),
        1 => (0..3usize).prop_map(|ns| Op::Clear { ns }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn index_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let store = InMemoryStore::new();
            let mut model: BTreeMap<(usize, usize), usize> = BTreeMap::new();
            let spaces: Vec<Namespace> = SPACES.iter().map(|s| Namespace::parse(s).unwrap()).collect();
            for op in &ops {
                match *op {
                    Op::Save { ns, id, word } => {
                        let item = MemoryItem::new(spaces[ns].clone(), format!("{} note", WORDS[word])).unwrap().with_id(format!("m{id}")).unwrap();
                        store.save(item).await.unwrap();
                        model.insert((ns, id), word);
                    }
                    Op::Delete { ns, id } => {
                        let existed = store.delete(&spaces[ns], &format!("m{id}")).await.unwrap();
                        assert_eq!(existed, model.remove(&(ns, id)).is_some());
                    }
                    Op::Clear { ns } => {
                        store.clear(&spaces[ns].exact()).await.unwrap();
                        model.retain(|(n, _), _| *n != ns);
                    }
                }
            }
            for (n, space) in spaces.iter().enumerate() {
                let listed = store.list(&MemoryFilter::new(space.exact())).await.unwrap();
                let expected = model.keys().filter(|(m, _)| *m == n).count();
                assert_eq!(listed.len(), expected, "list agrees with the model");
                assert!(listed.iter().all(|item| item.namespace == *space), "isolation");
                for (w, word) in WORDS.iter().enumerate() {
                    let hits = store.search(&SearchQuery::new(space.exact(), *word, 100)).await.unwrap();
                    let mut got: Vec<String> = hits.iter().map(|h| h.item.id.clone()).collect();
                    got.sort();
                    let mut want: Vec<String> = model.iter().filter(|((m, _), v)| *m == n && **v == w).map(|((_, id), _)| format!("m{id}")).collect();
                    want.sort();
                    assert_eq!(got, want, "search finds exactly the live records holding the word");
                    assert!(hits.iter().all(|h| h.item.namespace == *space), "search isolation");
                }
            }
        });
    }
}
