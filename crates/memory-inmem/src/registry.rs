//! Per-namespace shards and the sorted registry that resolves a scope to its shards.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use dashmap::DashMap;
use memory_core::{Namespace, Scope};

/// Shards keyed by namespace: a lock per namespace, so tenants never contend, plus a sorted
/// set of namespaces so a subtree scope finds its shards by a range scan. Namespaces hash
/// with `foldhash`, seeded per process, like the other maps keyed by user text (a recall
/// looks its namespace up a dozen times; SipHash made that 1% of it).
#[derive(Debug)]
pub(crate) struct Registry<S> {
    shards: DashMap<Namespace, Arc<RwLock<S>>, foldhash::fast::RandomState>,
    names: RwLock<BTreeSet<Namespace>>,
}

impl<S: Default> Registry<S> {
    pub(crate) fn new() -> Self {
        Self {
            shards: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            names: RwLock::new(BTreeSet::new()),
        }
    }

    /// The shard of `namespace`, if it exists.
    pub(crate) fn get(&self, namespace: &Namespace) -> Option<Arc<RwLock<S>>> {
        self.shards
            .get(namespace)
            .map(|shard| Arc::clone(shard.value()))
    }

    /// The shard of `namespace`, created when missing.
    pub(crate) fn get_or_create(&self, namespace: &Namespace) -> Arc<RwLock<S>> {
        if let Some(shard) = self.get(namespace) {
            return shard;
        }
        let shard = self
            .shards
            .entry(namespace.clone())
            .or_insert_with(|| Arc::new(RwLock::new(S::default())))
            .value()
            .clone();
        write(&self.names).insert(namespace.clone());
        shard
    }

    /// The namespaces in `scope` that have a shard, sorted. `O(log n + matches)`.
    pub(crate) fn namespaces(&self, scope: &Scope) -> Vec<Namespace> {
        let names = read(&self.names);
        if !scope.descendants {
            return names.get(&scope.namespace).cloned().into_iter().collect();
        }
        let prefix = scope.namespace.as_str();
        names
            .range(scope.namespace.clone()..)
            .take_while(|namespace| namespace.as_str().starts_with(prefix))
            .filter(|namespace| scope.contains(namespace))
            .cloned()
            .collect()
    }

    /// The shards in `scope`, in namespace order.
    pub(crate) fn shards(&self, scope: &Scope) -> Vec<(Namespace, Arc<RwLock<S>>)> {
        self.namespaces(scope)
            .into_iter()
            .filter_map(|namespace| self.get(&namespace).map(|shard| (namespace, shard)))
            .collect()
    }
}

/// Read-locks, recovering from a poisoned lock (a panic elsewhere must not take the store down;
/// every critical section leaves the shard consistent before it can panic).
pub(crate) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Write-locks, recovering from a poisoned lock.
pub(crate) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock poisoned by a panic while it was held still reads and writes.
    #[test]
    fn a_poisoned_lock_is_recovered() {
        let lock = Arc::new(RwLock::new(vec![1]));
        let held = Arc::clone(&lock);
        let panicked = std::thread::spawn(move || {
            let mut guard = held.write().expect("not poisoned yet");
            guard.push(2);
            panic!("a panic while the lock is held");
        })
        .join();
        assert!(panicked.is_err());
        assert!(lock.is_poisoned());
        assert_eq!(*read(&lock), [1, 2]);
        write(&lock).push(3);
        assert_eq!(*read(&lock), [1, 2, 3]);
    }
}
