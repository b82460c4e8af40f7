//! Stale memories in a recall: those no longer current at the recall's time (visible only
//! when the recall asks for every memory) and those a newer memory contradicts. Each is
//! scored [`STALE_FACTOR`] times its score, below the newer memory of its pair when both
//! are returned, and marked [`Signal::Stale`](memory_core::Signal::Stale).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use memory_core::{MemoryItem, Namespace, Result, RetrievalSource};

use super::RecallView;
use super::candidate::Candidate;
use super::request::Request;

/// The factor a stale memory's score is multiplied by.
pub const STALE_FACTOR: f32 = 0.5;

/// The stale memories of one recall: `(namespace, id)` to the ids of the newer memories
/// that contradict it (empty when it is stale only because it ended).
#[derive(Debug, Default)]
pub(super) struct StaleMarks {
    marks: HashMap<(Namespace, String), Vec<String>>,
}

impl StaleMarks {
    pub(super) fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The newer rivals of a stale memory, `None` when it is not stale.
    pub(super) fn get(&self, namespace: &Namespace, id: &str) -> Option<&[String]> {
        self.marks
            .get(&(namespace.clone(), id.to_owned()))
            .map(Vec::as_slice)
    }
}

/// The order of two statements of one fact: when they start to hold, then when they were
/// recorded, then id.
fn start(item: &MemoryItem) -> (DateTime<Utc>, DateTime<Utc>, &str) {
    (
        item.valid_from.unwrap_or(item.created_at),
        item.created_at,
        &item.id,
    )
}

/// Whether `item` was still believed at `at`.
fn believed_at(item: &MemoryItem, at: DateTime<Utc>) -> bool {
    item.ended.as_ref().is_none_or(|ended| ended.at > at)
}

/// Finds the stale memories among `memories`. Costs nothing unless a candidate ended or
/// has conflicts; then one `get_many` per namespace for rivals not among the candidates.
pub(super) async fn mark(memories: &[Candidate], request: &Request<'_>) -> Result<StaleMarks> {
    let at = match request.filter.view {
        RecallView::AsOf(at) => at,
        RecallView::Current | RecallView::All => request.now,
    };
    let items: Vec<&MemoryItem> = memories
        .iter()
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item)
                if item.ended.is_some() || !item.conflicts_with.is_empty() =>
            {
                Some(&**item)
            }
            _ => None,
        })
        .collect();
    let mut marks = StaleMarks::default();
    if items.is_empty() {
        return Ok(marks);
    }
    let known: HashMap<(&Namespace, &str), &MemoryItem> = memories
        .iter()
        .filter_map(|candidate| match &candidate.record {
            RetrievalSource::Memory(item) => Some(((&item.namespace, item.id.as_str()), &**item)),
            _ => None,
        })
        .collect();
    let mut missing: HashMap<&Namespace, Vec<String>> = HashMap::new();
    for item in &items {
        for rival in &item.conflicts_with {
            if !known.contains_key(&(&item.namespace, rival.as_str())) {
                missing
                    .entry(&item.namespace)
                    .or_default()
                    .push(rival.clone());
            }
        }
    }
    let mut fetched: HashMap<(Namespace, String), MemoryItem> = HashMap::new();
    for (namespace, mut ids) in missing {
        ids.sort();
        ids.dedup();
        for rival in request.memory.get_many(namespace, &ids).await? {
            fetched.insert((rival.namespace.clone(), rival.id.clone()), rival);
        }
    }
    let mut mark_newer = |item: &MemoryItem, newer: Option<&str>| {
        let entry = marks
            .marks
            .entry((item.namespace.clone(), item.id.clone()))
            .or_default();
        if let Some(newer) = newer
            && !entry.iter().any(|id| id == newer)
        {
            entry.push(newer.to_owned());
        }
    };
    for item in items {
        if !believed_at(item, at) {
            // Ranked below its successor when both are shown.
            let by = item
                .ended
                .as_ref()
                .and_then(memory_core::Ended::superseded_by)
                .filter(|by| known.contains_key(&(&item.namespace, *by)));
            mark_newer(item, by);
        }
        // A conflict link is kept by the memory written later; either end may be the
        // older statement (a replay of old messages writes older statements later).
        for rival_id in &item.conflicts_with {
            let rival = known
                .get(&(&item.namespace, rival_id.as_str()))
                .copied()
                .or_else(|| fetched.get(&(item.namespace.clone(), rival_id.clone())));
            let Some(rival) = rival else { continue };
            if start(item) > start(rival) {
                if believed_at(item, at)
                    && known.contains_key(&(&rival.namespace, rival.id.as_str()))
                {
                    mark_newer(rival, Some(&item.id));
                }
            } else if believed_at(rival, at) {
                mark_newer(item, Some(&rival.id));
            }
        }
    }
    Ok(marks)
}
