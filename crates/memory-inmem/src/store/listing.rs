//! A shard's listing: a range of its time index (or of one fact's versions), narrowed by
//! the filter's time range and list position, then filtered and cut to the limit.

use std::ops::Bound;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use memory_core::{MemoryFilter, MemoryItem, Namespace};

use super::Shard;

impl Shard {
    /// Items passing `filter`, in time order (or reverse), at most `limit`.
    pub(super) fn list(
        &self,
        namespace: &Namespace,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Vec<MemoryItem> {
        self.list_shared(namespace, filter, limit)
            .map(|item| item.as_ref().clone())
            .collect()
    }

    /// The items `filter` matches, in its order, at most `limit`, shared. `namespace` is
    /// the shard's: a [list position](MemoryFilter::after) orders namespaces last.
    pub(super) fn list_shared<'s>(
        &'s self,
        namespace: &Namespace,
        filter: &'s MemoryFilter,
        limit: usize,
    ) -> Box<dyn Iterator<Item = &'s Arc<MemoryItem>> + 's> {
        let mut lower = match filter.since {
            Some(since) => Bound::Included((since, String::new())),
            None => Bound::Unbounded,
        };
        let mut upper = match filter.until {
            Some(until) => Bound::Excluded((until, String::new())),
            None => Bound::Unbounded,
        };
        // The position as a bound on `(created_at, id)`: the memory at it is listed from a
        // namespace that comes after the position's (before it, newest first).
        if let Some(after) = &filter.after {
            let key = (after.created_at(), after.id().to_owned());
            let later_namespace = namespace.as_str() > after.namespace().as_str();
            let earlier_namespace = namespace.as_str() < after.namespace().as_str();
            if filter.newest_first {
                let bound = if earlier_namespace {
                    Bound::Included(key)
                } else {
                    Bound::Excluded(key)
                };
                upper = tighter(upper, bound, false);
            } else {
                let bound = if later_namespace {
                    Bound::Included(key)
                } else {
                    Bound::Excluded(key)
                };
                lower = tighter(lower, bound, true);
            }
        }
        if range_is_empty(&lower, &upper) {
            return Box::new(std::iter::empty());
        }
        let index = match &filter.fact_key {
            Some(key) => match self.by_fact_key.get(key) {
                Some(versions) => versions,
                None => return Box::new(std::iter::empty()),
            },
            None => &self.by_time,
        };
        let range = index.range((lower, upper));
        let pick = move |(_, id): &(DateTime<Utc>, String)| {
            self.entry(id)
                .map(|entry| &entry.item)
                .filter(|item| filter.matches_within_scope(item))
        };
        if filter.newest_first {
            Box::new(range.rev().filter_map(pick).take(limit))
        } else {
            Box::new(range.filter_map(pick).take(limit))
        }
    }
}

/// A range's key: creation time, then id.
type TimeKey = (DateTime<Utc>, String);

/// The tighter of two bounds on one side of a range: the greater of two lower bounds
/// (`lower`), or the lesser of two upper ones; of two at one key, the one excluding it.
fn tighter(a: Bound<TimeKey>, b: Bound<TimeKey>, lower: bool) -> Bound<TimeKey> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            let order = if lower { x.cmp(y) } else { y.cmp(x) };
            match order {
                std::cmp::Ordering::Greater => a,
                std::cmp::Ordering::Less => b,
                std::cmp::Ordering::Equal if matches!(a, Bound::Excluded(_)) => a,
                std::cmp::Ordering::Equal => b,
            }
        }
    }
}

/// Whether no key lies within the bounds (`BTreeSet::range` panics on such a range).
fn range_is_empty(lower: &Bound<TimeKey>, upper: &Bound<TimeKey>) -> bool {
    match (lower, upper) {
        (Bound::Included(x), Bound::Included(y)) => x > y,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            x >= y
        }
        _ => false,
    }
}
