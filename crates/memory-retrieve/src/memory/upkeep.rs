//! Eviction on the write path: each namespace is kept within the policy's capacity by the
//! writes made to it, whatever the interleaving of tenants.
//!
//! `Memory` keeps, per namespace it has written, an upper bound on the namespace's item
//! count (read from the store at the first write, then raised by one per write) and the
//! writes since its last full pass. A write that takes the bound over the capacity runs a
//! capacity pass on that namespace; every `check_interval` writes to a namespace run its
//! full pass (TTL included). A pass evicts down to `capacity - capacity / 16`, so at steady
//! state one pass serves the next `capacity / 16` writes and the cost of a pass (a count
//! and an ordered read of the victims) is shared among them. The bookkeeping is one map
//! lookup per write under a short lock, never held across an await, and independent of
//! the number of namespaces. Writes made while a pass runs are counted, not passed: when
//! the pass ends with them over the capacity again, the writer that ran it runs another
//! (a few at most; the namespace's next write asks for the rest), so a burst of
//! concurrent writes ends within the capacity too. A pass that cannot get under the
//! capacity with no write made meanwhile (pinned memories alone over it) asks for none, and
//! the namespace's next pass waits until a sixteenth more were written (of what the pass
//! left, or of the capacity): every write would otherwise read the whole namespace to free
//! its one memory.
//!
//! The map holds at most [`MAX_TRACKED`] namespaces: a server with many tenants would
//! otherwise keep an entry for every namespace it ever wrote. When a new namespace would go
//! over, the entries of namespaces with no pass running are let go; each is tracked again
//! from its next write, as a namespace written for the first time (its count read again by
//! a pass, its full-pass cadence restarted: `maintain` still covers it).
//!
//! A pass that fails after the write was committed does not fail the write: it is logged
//! (`tracing` at warn level), counted, and reported by the next `Memory::maintain`.
//!
//! Writes made through a store directly (not through `Memory`) are not counted and do not
//! evict: a store is storage, and the policy belongs to the `Memory` that owns it. Several
//! processes writing one database each enforce the bound for their own writes; the bound
//! each keeps is refreshed from the store at every pass, and `maintain` brings every
//! namespace of a scope under the capacity whatever wrote it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use memory_core::{EvictionConfig, Namespace};

/// Most namespaces the write path tracks at once (see the module's documentation).
pub(super) const MAX_TRACKED: usize = 16_384;

/// The per-namespace state of the write path's eviction.
#[derive(Debug, Default)]
pub(super) struct WriteTracker {
    namespaces: Mutex<HashMap<Namespace, Tracked>>,
    failed_passes: AtomicUsize,
}

impl Tracked {
    /// The count a namespace may reach before a write asks for a pass: the capacity, or,
    /// when the last pass could not get under it, that pass's floor and a sixteenth of it
    /// (or of the capacity, or one). A pass per write would read the whole namespace at
    /// every write and free one memory each time.
    fn bound(&self, capacity: usize) -> usize {
        self.floor.map_or(capacity, |floor| {
            floor
                .saturating_add((capacity / 16).max(floor / 16).max(1))
                .max(capacity)
        })
    }
}

#[derive(Debug, Default)]
struct Tracked {
    /// An upper bound on the namespace's items, once read from the store.
    items: Option<usize>,
    /// Writes since the last full pass.
    since_full: usize,
    /// A pass on this namespace is running; writes meanwhile are counted in `during`.
    busy: bool,
    /// Writes counted while the pass ran.
    during: usize,
    /// What the last pass could not evict below (its pinned memories alone over the
    /// capacity, say), when it ended over the capacity with no write made meanwhile.
    floor: Option<usize>,
}

/// A pass a write asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pass {
    /// Expire by TTL too (a full pass).
    pub(super) with_ttl: bool,
    /// Items the pass may free below the capacity at once.
    pub(super) headroom: usize,
}

impl WriteTracker {
    /// Counts one write to `namespace`; returns the pass it must run, if any. The caller
    /// must then call [`WriteTracker::finish`] whatever the pass's outcome.
    #[cfg(test)]
    pub(super) fn record_write(
        &self,
        namespace: &Namespace,
        config: &EvictionConfig,
    ) -> Option<Pass> {
        self.record_writes(namespace, config, 1)
    }

    /// Counts `count` writes to `namespace` at once (a bulk import's), as that many calls of
    /// `record_write` (one write, in the tests) would count them but asking for one pass at
    /// most; returns the pass it must run, if any. The caller must then call
    /// [`WriteTracker::finish`] whatever the pass's outcome.
    pub(super) fn record_writes(
        &self,
        namespace: &Namespace,
        config: &EvictionConfig,
        count: usize,
    ) -> Option<Pass> {
        let capacity = config.policy.capacity();
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if namespaces.len() >= MAX_TRACKED && !namespaces.contains_key(namespace) {
            // Once per MAX_TRACKED new namespaces at most: O(1) a write, amortised.
            namespaces.retain(|_, tracked| tracked.busy);
        }
        let tracked = match namespaces.get_mut(namespace) {
            Some(tracked) => tracked,
            None => namespaces.entry(namespace.clone()).or_default(),
        };
        if tracked.busy {
            tracked.during = tracked.during.saturating_add(count);
            return None;
        }
        tracked.since_full = tracked.since_full.saturating_add(count);
        tracked.items = tracked.items.map(|items| items.saturating_add(count));
        let full = tracked.since_full >= config.check_interval;
        let over = match (capacity, tracked.items) {
            (None, _) => false,
            // Not read yet: the pass reads the count.
            (Some(_), None) => true,
            // Past what the last pass could not go below, by a sixteenth of it (see
            // `Tracked::bound`).
            (Some(capacity), Some(items)) => items > tracked.bound(capacity),
        };
        if !full && !over {
            return None;
        }
        if full {
            tracked.since_full = 0;
        }
        tracked.busy = true;
        tracked.during = 0;
        Some(Pass {
            with_ttl: full,
            headroom: capacity.map_or(0, |capacity| capacity / 16),
        })
    }

    /// Ends the pass on `namespace`: `remaining` is the namespace's count after it, or
    /// `None` when the pass failed (the bound is then read again at the next write).
    /// Returns the pass to run next when the writes made while it ran took the namespace
    /// over `config`'s capacity again: the namespace stays busy, and the caller runs it (a
    /// burst that then goes quiet would otherwise stay over the bound until `maintain`).
    pub(super) fn finish(
        &self,
        namespace: &Namespace,
        remaining: Option<usize>,
        config: &EvictionConfig,
    ) -> Option<Pass> {
        if remaining.is_none() {
            self.failed_passes.fetch_add(1, Ordering::Relaxed);
        }
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tracked = namespaces.get_mut(namespace)?;
        let written_meanwhile = tracked.during;
        tracked.items = remaining.map(|items| items.saturating_add(written_meanwhile));
        tracked.since_full += written_meanwhile;
        tracked.during = 0;
        let capacity = config.policy.capacity();
        // `remaining` leaves out what was written meanwhile: over the capacity, the pass
        // freed all it could (pinned memories alone over it, say).
        tracked.floor = match (capacity, remaining) {
            (Some(capacity), Some(left)) if left > capacity => Some(left),
            _ => None,
        };
        match (capacity, tracked.items) {
            // Another pass for what was written meanwhile, past the floor's slack when the
            // pass could not get under the capacity (another would find the same).
            (Some(capacity), Some(items)) if items > tracked.bound(capacity) => Some(Pass {
                with_ttl: false,
                headroom: capacity / 16,
            }),
            _ => {
                tracked.busy = false;
                None
            }
        }
    }

    /// Applies `change` to `namespace`'s state, if it is tracked, under the lock.
    fn with_tracked(&self, namespace: &Namespace, change: impl FnOnce(&mut Tracked)) {
        let mut namespaces = self
            .namespaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(tracked) = namespaces.get_mut(namespace) {
            change(tracked);
        }
    }

    /// Lets `namespace` go with its bound as it is (see [`Running::release`]).
    fn release(&self, namespace: &Namespace) {
        self.with_tracked(namespace, |tracked| tracked.busy = false);
    }

    /// Ends the pass on `namespace` as failed (a write's future dropped while it ran): its
    /// bound is read again at the next write.
    fn abandon(&self, namespace: &Namespace) {
        self.failed_passes.fetch_add(1, Ordering::Relaxed);
        self.with_tracked(namespace, |tracked| {
            tracked.busy = false;
            tracked.items = None;
            tracked.since_full += tracked.during;
            tracked.during = 0;
        });
    }

    /// The pass [`record_writes`](Self::record_writes) just started on `namespace`, ended by
    /// [`Running::finish`], or as a failed pass when dropped before: a write whose future is
    /// dropped mid-pass (a client gone, a timeout) would otherwise leave the namespace busy
    /// for good, and no write to it would ever run a pass again.
    pub(super) fn running<'a>(&'a self, namespace: &'a Namespace) -> Running<'a> {
        Running {
            tracker: self,
            namespace,
            ended: false,
        }
    }

    /// Takes the number of write-path passes that failed since the last call.
    pub(super) fn take_failed_passes(&self) -> usize {
        self.failed_passes.swap(0, Ordering::Relaxed)
    }
}

/// A pass under way on one namespace (see [`WriteTracker::running`]).
pub(super) struct Running<'a> {
    tracker: &'a WriteTracker,
    namespace: &'a Namespace,
    ended: bool,
}

impl Running<'_> {
    /// Ends the pass: `remaining` and the answer as for [`WriteTracker::finish`]. When it
    /// answers a pass, the namespace is still busy and this guard still holds it: run the
    /// pass and finish again.
    pub(super) fn finish(
        &mut self,
        remaining: Option<usize>,
        config: &EvictionConfig,
    ) -> Option<Pass> {
        let next = self.tracker.finish(self.namespace, remaining, config);
        self.ended = next.is_none();
        next
    }
}

impl Running<'_> {
    /// Lets the namespace go with a pass still asked for: its bound stays over the
    /// capacity, so its next write asks again.
    pub(super) fn release(mut self) {
        self.ended = true;
        self.tracker.release(self.namespace);
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.tracker.abandon(self.namespace);
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_core::EvictionPolicy;

    use super::*;

    fn tracked(tracker: &WriteTracker) -> usize {
        tracker.namespaces.lock().map(|map| map.len()).unwrap_or(0)
    }

    /// Writes counted at once (a bulk import's) ask for one pass, a full one when they
    /// reach the check interval, and count while a pass runs as that many single writes.
    #[test]
    fn writes_counted_at_once_ask_for_one_pass() {
        let config = EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 100 },
            check_interval: 1_000,
        };
        let tracker = WriteTracker::default();
        let ns = Namespace::parse("bulk").expect("a namespace");
        let pass = tracker.record_writes(&ns, &config, 5_000).expect("a pass");
        assert!(pass.with_ttl, "past the check interval: a full pass");
        // Busy: later writes are counted, no second pass asked for.
        assert_eq!(tracker.record_writes(&ns, &config, 50), None);
        assert_eq!(
            tracker
                .namespaces
                .lock()
                .expect("not poisoned")
                .get(&ns)
                .map(|tracked| tracked.during),
            Some(50)
        );
    }

    /// Writes to more namespaces than the tracker holds keep it bounded; a namespace whose
    /// pass is running is kept, and one let go asks for a pass at its next write, as a new
    /// namespace does.
    #[test]
    fn the_tracked_namespaces_stay_bounded() {
        let config = EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 100 },
            ..EvictionConfig::default()
        };
        let tracker = WriteTracker::default();
        let namespace = |n: usize| Namespace::parse(&format!("tenant-{n}")).expect("a namespace");
        // The first namespace's pass is still running when the others are written.
        assert!(tracker.record_write(&namespace(0), &config).is_some());
        // The second's count is known, and its pass done.
        assert!(tracker.record_write(&namespace(1), &config).is_some());
        assert_eq!(tracker.finish(&namespace(1), Some(10), &config), None);
        assert_eq!(tracker.record_write(&namespace(1), &config), None);
        for n in 2..MAX_TRACKED + 100 {
            let pass = tracker.record_write(&namespace(n), &config);
            if pass.is_some() {
                assert_eq!(tracker.finish(&namespace(n), Some(1), &config), None);
            }
            assert!(
                tracked(&tracker) <= MAX_TRACKED,
                "{n}: {}",
                tracked(&tracker)
            );
        }
        let map = tracker.namespaces.lock().expect("not poisoned");
        assert!(
            map.get(&namespace(0)).is_some_and(|t| t.busy),
            "a running pass is kept"
        );
        assert!(
            !map.contains_key(&namespace(1)),
            "an idle namespace was let go"
        );
        drop(map);
        assert!(
            tracker.record_write(&namespace(1), &config).is_some(),
            "a namespace let go is read again by a pass"
        );
    }

    /// Writes counted while a pass ran that take the namespace over its capacity again ask
    /// the writer that ran it for another pass, the namespace busy meanwhile; within the
    /// capacity, it is let go.
    #[test]
    fn writes_during_a_pass_over_the_capacity_ask_for_another() {
        let config = EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 16 },
            check_interval: 1_000,
        };
        let tracker = WriteTracker::default();
        let ns = Namespace::parse("burst").expect("a namespace");
        assert!(tracker.record_write(&ns, &config).is_some());
        for _ in 0..30 {
            assert_eq!(tracker.record_write(&ns, &config), None, "busy: counted");
        }
        let again = tracker.finish(&ns, Some(15), &config);
        assert_eq!(
            again,
            Some(Pass {
                with_ttl: false,
                headroom: 1
            })
        );
        assert_eq!(tracker.record_write(&ns, &config), None, "still busy");
        // 15 and the one written meanwhile: within the capacity.
        assert_eq!(tracker.finish(&ns, Some(15), &config), None);
        assert!(tracker.record_write(&ns, &config).is_some(), "17 of 16");
    }

    /// A pass that cannot get under the capacity (pinned memories alone over it) asks for
    /// no other, and the next pass waits until a sixteenth more were written: a pass at
    /// every write would read the whole namespace each time.
    #[test]
    fn a_pass_that_cannot_get_under_the_capacity_is_not_run_at_every_write() {
        let config = EvictionConfig {
            policy: EvictionPolicy::Capacity { max_items: 32 },
            check_interval: 1_000,
        };
        let tracker = WriteTracker::default();
        let ns = Namespace::parse("pinned").expect("a namespace");
        assert!(tracker.record_write(&ns, &config).is_some());
        // 200 pinned: the pass could not go below.
        assert_eq!(tracker.finish(&ns, Some(200), &config), None, "no rerun");
        let passes = (0..64)
            .filter(|_| {
                let pass = tracker.record_write(&ns, &config);
                if pass.is_some() {
                    assert_eq!(tracker.finish(&ns, Some(200), &config), None);
                }
                pass.is_some()
            })
            .count();
        // A pass per 200 / 16 + 1 = 13 writes.
        assert_eq!(passes, 4, "a pass per 13 writes");
        // Writes made while a pass runs do not undo the floor: no rerun for a few.
        let busy = Namespace::parse("pinned-busy").expect("a namespace");
        assert!(tracker.record_write(&busy, &config).is_some());
        assert_eq!(tracker.finish(&busy, Some(200), &config), None);
        let mut passes = 0;
        for _ in 0..64 {
            if tracker.record_write(&busy, &config).is_some() {
                passes += 1;
                // One write lands while the pass runs.
                assert_eq!(tracker.record_write(&busy, &config), None);
                assert_eq!(tracker.finish(&busy, Some(200), &config), None, "no rerun");
            }
        }
        assert!(passes <= 64 / 12, "{passes} passes");
        // Once under the capacity again, every write over it asks.
        let pass = (0..13).find_map(|_| tracker.record_write(&ns, &config));
        assert!(pass.is_some());
        assert_eq!(tracker.finish(&ns, Some(30), &config), None);
        assert!(tracker.record_write(&ns, &config).is_none(), "31 of 32");
        assert!(tracker.record_write(&ns, &config).is_none(), "32 of 32");
        assert!(tracker.record_write(&ns, &config).is_some(), "33 of 32");
    }
}
