//! `InMemoryStore`: the default [`MemoryStore`], indexed for listing and full-text search.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::text::Analyzer;
use memory_core::{
    MemoryFilter, MemoryItem, MemoryStore, Namespace, RecallEvent, RecallStats, Result, Scope,
    SearchHit, SearchQuery,
};

use crate::bm25::{Bm25Index, top_k};
use crate::registry::{Registry, read, write};

/// The default [`MemoryStore`]: in process memory, one shard per namespace.
///
/// Each shard (behind its own lock, found through a `DashMap`) holds the items by id, a
/// time index ordered by `(created_at, id)` and a BM25 inverted index over content and tags.
/// Writers in different namespaces never contend.
///
/// Costs, with `n` items in the namespace and `m` results:
/// - `save`, `delete`: `O(log n + terms of the item)`.
/// - `get`: `O(1)`.
/// - `list`: `O(log n + m)` for scope, time range and limit (each namespace of a subtree
///   scope is merged); attribute filters (kind, tags, metadata, id prefix) skip the
///   non-matching entries of the time range.
/// - `search`: `O(Σ postings of the query terms + k log k)`; BM25 statistics are per namespace.
/// - `record_recall`, `recall_stats`: `O(1)`.
///
/// ```
/// use memory_core::{MemoryItem, MemoryStore, Namespace, SearchQuery};
/// use memory_inmem::InMemoryStore;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = InMemoryStore::new();
/// let ns = Namespace::parse("user-1")?;
/// store.save(MemoryItem::new(ns.clone(), "The user loves Rust programming")?).await?;
/// let hits = store.search(&SearchQuery::new(ns.exact(), "programming", 5)).await?;
/// assert_eq!(hits.len(), 1);
/// # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
/// ```
#[derive(Debug)]
pub struct InMemoryStore {
    registry: Registry<Shard>,
}

#[derive(Debug)]
struct Shard {
    by_id: HashMap<String, Entry>,
    by_time: BTreeSet<(DateTime<Utc>, String)>,
    slots: Vec<Option<String>>,
    free_slots: Vec<u32>,
    index: Bm25Index<1>,
}

#[derive(Debug)]
struct Entry {
    item: MemoryItem,
    stats: RecallStats,
    slot: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Self {
            by_id: HashMap::new(),
            by_time: BTreeSet::new(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            index: Bm25Index::new(Analyzer::default(), [1.0]),
        }
    }
}

fn indexed_text(item: &MemoryItem) -> String {
    if item.tags.is_empty() {
        return item.content.clone();
    }
    let mut text = item.content.clone();
    for tag in &item.tags {
        text.push(' ');
        text.push_str(tag.as_str());
    }
    text
}

impl Shard {
    fn insert(&mut self, item: MemoryItem) {
        let stats = match self.remove(&item.id) {
            Some(old) => old.stats,
            None => RecallStats::default(),
        };
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[slot as usize] = Some(item.id.clone());
        self.index.insert(slot, [&indexed_text(&item)]);
        self.by_time.insert((item.created_at, item.id.clone()));
        self.by_id
            .insert(item.id.clone(), Entry { item, stats, slot });
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.by_id.remove(id)?;
        self.by_time
            .remove(&(entry.item.created_at, entry.item.id.clone()));
        self.index.remove(entry.slot);
        self.slots[entry.slot as usize] = None;
        self.free_slots.push(entry.slot);
        Some(entry)
    }

    /// Items passing `filter`, in time order (or reverse), at most `limit`.
    fn list(&self, filter: &MemoryFilter, limit: usize) -> Vec<MemoryItem> {
        use std::ops::Bound;
        let lower = match filter.since {
            Some(since) => Bound::Included((since, String::new())),
            None => Bound::Unbounded,
        };
        let upper = match filter.until {
            Some(until) => Bound::Excluded((until, String::new())),
            None => Bound::Unbounded,
        };
        let range = self.by_time.range((lower, upper));
        let pick = |(_, id): &(DateTime<Utc>, String)| {
            self.by_id
                .get(id)
                .map(|entry| &entry.item)
                .filter(|item| filter.matches(item))
                .cloned()
        };
        if filter.newest_first {
            range.rev().filter_map(pick).take(limit).collect()
        } else {
            range.filter_map(pick).take(limit).collect()
        }
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            registry: Registry::new(),
        }
    }

    /// How many items the whole store holds, across namespaces. `O(namespaces)`.
    pub fn total_len(&self) -> usize {
        self.registry
            .shards(&Scope::all())
            .iter()
            .map(|(_, shard)| read(shard).by_id.len())
            .sum()
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

fn ordered(a: &MemoryItem, b: &MemoryItem, newest_first: bool) -> std::cmp::Ordering {
    let order = a
        .created_at
        .cmp(&b.created_at)
        .then_with(|| a.id.cmp(&b.id));
    if newest_first { order.reverse() } else { order }
}

#[async_trait]
impl MemoryStore for InMemoryStore {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        item.validate()?;
        let shard = self.registry.get_or_create(&item.namespace);
        write(&shard).insert(item);
        Ok(())
    }

    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
        Ok(self
            .registry
            .get(namespace)
            .and_then(|shard| read(&shard).by_id.get(id).map(|entry| entry.item.clone())))
    }

    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        Ok(self
            .registry
            .get(namespace)
            .is_some_and(|shard| write(&shard).remove(id).is_some()))
    }

    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let shards = self.registry.shards(&filter.scope);
        let single = shards.len() == 1;
        for (_, shard) in shards {
            out.extend(read(&shard).list(filter, limit));
        }
        if !single {
            out.sort_by(|a, b| ordered(a, b, filter.newest_first));
            out.truncate(limit);
        }
        Ok(out)
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let mut hits: Vec<(f32, (Namespace, String))> = Vec::new();
        let mut terms: Option<Vec<String>> = None;
        for (namespace, shard) in self.registry.shards(&query.filter.scope) {
            let shard = read(&shard);
            let terms = terms.get_or_insert_with(|| shard.index.query_terms(&query.text));
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let mut local: Vec<(f32, String)> = Vec::new();
            let filtered = query.filter.has_attribute_conditions()
                || query.filter.since.is_some()
                || query.filter.until.is_some();
            shard.index.score_terms(terms, |slot, score| {
                let Some(Some(id)) = shard.slots.get(slot as usize) else {
                    return;
                };
                if filtered
                    && !shard
                        .by_id
                        .get(id)
                        .is_some_and(|entry| query.filter.matches(&entry.item))
                {
                    return;
                }
                local.push((score, id.clone()));
            });
            hits.extend(
                top_k(local, query.top_k)
                    .into_iter()
                    .map(|(score, id)| (score, (namespace.clone(), id))),
            );
        }
        let best = top_k(hits, query.top_k);
        let mut out = Vec::with_capacity(best.len());
        for (score, (namespace, id)) in best {
            if let Some(shard) = self.registry.get(&namespace)
                && let Some(entry) = read(&shard).by_id.get(&id)
            {
                out.push(SearchHit {
                    item: entry.item.clone(),
                    score,
                });
            }
        }
        Ok(out)
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut removed = 0;
        for (_, shard) in self.registry.shards(scope) {
            let mut shard = write(&shard);
            removed += shard.by_id.len();
            *shard = Shard::default();
        }
        Ok(removed)
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        Ok(self
            .registry
            .shards(scope)
            .into_iter()
            .filter(|(_, shard)| !read(shard).by_id.is_empty())
            .map(|(namespace, _)| namespace)
            .collect())
    }

    async fn update(&self, item: MemoryItem) -> Result<()> {
        item.validate()?;
        let missing = || {
            memory_core::MemoryError::NotFound(format!("memory {} in {}", item.id, item.namespace))
        };
        let shard = self.registry.get(&item.namespace).ok_or_else(missing)?;
        let mut shard = write(&shard);
        if !shard.by_id.contains_key(&item.id) {
            return Err(missing());
        }
        shard.insert(item);
        Ok(())
    }

    async fn save_many(&self, items: Vec<MemoryItem>) -> Result<()> {
        for item in &items {
            item.validate()?;
        }
        for item in items {
            let shard = self.registry.get_or_create(&item.namespace);
            write(&shard).insert(item);
        }
        Ok(())
    }

    async fn count(&self, scope: &Scope) -> Result<usize> {
        Ok(self
            .registry
            .shards(scope)
            .iter()
            .map(|(_, shard)| read(shard).by_id.len())
            .sum())
    }

    async fn record_recall(
        &self,
        namespace: &Namespace,
        id: &str,
        score: f32,
        at: DateTime<Utc>,
    ) -> Result<()> {
        if let Some(shard) = self.registry.get(namespace)
            && let Some(entry) = write(&shard).by_id.get_mut(id)
        {
            entry.stats.record(score, at);
            entry.item.access_count = entry.item.access_count.saturating_add(1);
            entry.item.last_accessed =
                Some(entry.item.last_accessed.map_or(at, |last| last.max(at)));
        }
        Ok(())
    }

    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        for event in events {
            self.record_recall(&event.namespace, &event.id, event.score, event.at)
                .await?;
        }
        Ok(())
    }

    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        Ok(self
            .registry
            .get(namespace)
            .and_then(|shard| read(&shard).by_id.get(id).map(|entry| entry.stats)))
    }

    async fn set_recall_stats(
        &self,
        namespace: &Namespace,
        id: &str,
        stats: RecallStats,
    ) -> Result<()> {
        if let Some(shard) = self.registry.get(namespace)
            && let Some(entry) = write(&shard).by_id.get_mut(id)
        {
            entry.stats = stats;
        }
        Ok(())
    }
}
