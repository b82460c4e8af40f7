//! Recall statistics: recording a recall in place, and ranking the victims of a
//! recall-based eviction pass from the recall columns alone.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use chrono::{DateTime, Utc};
use memory_core::{RecallBasedConfig, RecallStats, Result};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::error::Context;
use crate::sql::{decode_time, encode_time, time_bound};

/// Counts recalls of memory `id` in `namespace`, each a `(score, at)` in the order they
/// happened: its statistics ([`RecallStats::record`] per recall, the arithmetic every backend
/// uses), access count and last access time, in one read and one write of its row however
/// many recalls there are. An unknown memory is ignored.
pub(super) fn apply_recalls(
    transaction: &Transaction<'_>,
    namespace: &str,
    id: &str,
    recalls: &[(f32, DateTime<Utc>)],
) -> Result<()> {
    let Some(latest) = recalls.iter().map(|(_, at)| *at).max() else {
        return Ok(());
    };
    let what = || format!("recording a recall of memory {id} in {namespace}");
    let latest = encode_time("at", latest)?;
    let row = transaction
        .prepare_cached(
            "SELECT rid, recall_count, recall_total, last_recall_at, access_count, last_accessed \
             FROM memories WHERE ns = ?1 AND id = ?2",
        )
        .and_then(|mut statement| {
            statement
                .query_row(params![namespace, id], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, f64>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                        row.get::<_, i64>(4)?,
                        row.get::<_, Option<i64>>(5)?,
                    ))
                })
                .optional()
        })
        .context(what)?;
    let Some((rid, count, total, last_recall, access_count, last_accessed)) = row else {
        return Ok(());
    };
    let mut stats = RecallStats {
        recall_count: u64::try_from(count).unwrap_or(0),
        total_score: total,
        last_recall_at: last_recall.map(decode_time),
    };
    for (score, at) in recalls {
        encode_time("at", *at)?;
        stats.record(*score, *at);
    }
    let last_recall = stats.last_recall_at.map_or(latest, time_bound);
    let recalled = i64::try_from(recalls.len()).unwrap_or(i64::MAX);
    transaction
        .prepare_cached(
            "UPDATE memories SET recall_count = ?2, recall_total = ?3, last_recall_at = ?4, \
             access_count = ?5, last_accessed = ?6 WHERE rid = ?1",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                rid,
                i64::try_from(stats.recall_count).unwrap_or(i64::MAX),
                stats.total_score,
                last_recall,
                access_count.saturating_add(recalled),
                last_accessed.map_or(latest, |last| last.max(latest)),
            ])
        })
        .context(what)?;
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
