//! Recall statistics: recording a recall in place, and ranking the victims of a
//! recall-based eviction pass from the recall columns alone.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use chrono::{DateTime, Utc};
use memory_core::{RecallBasedConfig, RecallStats, Result};
use rusqlite::{Connection, Transaction, params};

use crate::error::Context;
use crate::sql::{decode_time, time_bound};

/// The recalls of one memory in a batch, encoded for [`apply_recalls`]: how many, the sum
/// of their scores (clamped as [`RecallStats::record`] clamps them) and the latest time.
pub(super) struct RecalledMemory {
    ns: String,
    id: String,
    count: i64,
    total: f64,
    latest: i64,
}

impl RecalledMemory {
    /// The recalls of memory `id` in `namespace`, each a `(score, at)`; `None` when there are
    /// none. A time outside what the backend stores (years 1678 to 2261) is held at the
    /// range's end, as PostgreSQL holds it: these are statistics, and failing the batch
    /// would lose every other memory's recalls in it.
    pub(super) fn new(namespace: &str, id: &str, recalls: &[(f32, DateTime<Utc>)]) -> Option<Self> {
        let mut stats = RecallStats::default();
        for (score, at) in recalls {
            stats.record(*score, *at);
        }
        let latest = stats.last_recall_at?;
        Some(Self {
            ns: namespace.to_owned(),
            id: id.to_owned(),
            count: i64::try_from(stats.recall_count).unwrap_or(i64::MAX),
            total: stats.total_score,
            latest: time_bound(latest),
        })
    }
}

/// Adds `recalled` to the memories' statistics, one `UPDATE` by `(ns, id)` each: recall
/// count and access count (saturating at `i64::MAX`), score total, and the latest recall and
/// access times. Memories that do not exist are not touched. A batch's scores for one
/// memory are summed before they are added, as PostgreSQL's statement does.
pub(super) fn apply_recalls(
    transaction: &Transaction<'_>,
    recalled: &[RecalledMemory],
) -> Result<()> {
    let what = || format!("recording the recalls of {} memories", recalled.len());
    let mut statement = transaction
        .prepare_cached(
            "UPDATE memories SET \
             recall_count = CASE WHEN recall_count > 9223372036854775807 - ?3 \
                 THEN 9223372036854775807 ELSE recall_count + ?3 END, \
             recall_total = recall_total + ?4, \
             last_recall_at = max(coalesce(last_recall_at, ?5), ?5), \
             access_count = CASE WHEN access_count > 9223372036854775807 - ?3 \
                 THEN 9223372036854775807 ELSE access_count + ?3 END, \
             last_accessed = max(coalesce(last_accessed, ?5), ?5) \
             WHERE ns = ?1 AND id = ?2",
        )
        .context(what)?;
    for memory in recalled {
        statement
            .execute(params![
                memory.ns,
                memory.id,
                memory.count,
                memory.total,
                memory.latest
            ])
            .context(what)?;
    }
    Ok(())
}

/// A candidate victim: its recall value, creation time (stored nanoseconds, which order as
/// the times do) and id. Ordered by value ([`f64::total_cmp`]), then time, then id, so a
/// max-heap's top is the most valuable held.
struct Victim {
    value: f64,
    created_at: i64,
    id: String,
}

impl Victim {
    fn cmp_key(&self, value: f64, created_at: i64, id: &str) -> Ordering {
        self.value
            .total_cmp(&value)
            .then(self.created_at.cmp(&created_at))
            .then_with(|| self.id.as_str().cmp(id))
    }
}

impl Ord for Victim {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_key(other.value, other.created_at, &other.id)
    }
}

impl PartialOrd for Victim {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Victim {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Victim {}

/// The ids of the `count` memories of namespace `ns` with the lowest
/// [`RecallStats::value`] at `now`, least valuable first, ties by creation time then id:
/// the order of [`MemoryStore::least_valuable`](memory_core::MemoryStore::least_valuable).
///
/// One statement reads each row's id, creation time and recall columns (no content); the
/// values are computed in Rust with memory-core's formula, so they are the same bits as every
/// other backend's, and kept in a heap bounded to `count`: `O(n log count)`, and an id is
/// copied only when its row enters the heap.
pub(super) fn least_valuable(
    connection: &Connection,
    ns: &str,
    count: usize,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let what = || format!("ranking the memories of {ns} by recall value");
    let mut statement = connection
        .prepare_cached(
            "SELECT id, created_at, recall_count, recall_total, last_recall_at \
             FROM memories WHERE ns = ?1",
        )
        .context(what)?;
    let mut rows = statement.query([ns]).context(what)?;
    let mut heap: BinaryHeap<Victim> = BinaryHeap::with_capacity(count.min(4096) + 1);
    while let Some(row) = rows.next().context(what)? {
        let stats = RecallStats {
            recall_count: u64::try_from(row.get::<_, i64>(2).context(what)?).unwrap_or(0),
            total_score: row.get(3).context(what)?,
            last_recall_at: row.get::<_, Option<i64>>(4).context(what)?.map(decode_time),
        };
        let value = stats.value(now, config);
        let created_at: i64 = row.get(1).context(what)?;
        let id = row
            .get_ref(0)
            .and_then(|value| value.as_str().map_err(Into::into))
            .context(what)?;
        if heap.len() == count {
            let enters = heap
                .peek()
                .is_some_and(|top| top.cmp_key(value, created_at, id).is_gt());
            if !enters {
                continue;
            }
            heap.pop();
        }
        heap.push(Victim {
            value,
            created_at,
            id: id.to_owned(),
        });
    }
    Ok(heap
        .into_sorted_vec()
        .into_iter()
        .map(|victim| victim.id)
        .collect())
}
