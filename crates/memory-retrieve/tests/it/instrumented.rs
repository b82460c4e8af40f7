//! An in-memory store that counts what is asked of it, and fails recall writes on demand:
//! the tests that check how much a pass reads, or what becomes of a failed write, run on it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::{
    ConditionalSave, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace,
    RecallBasedConfig, RecallEvent, RecallStats, Result, Scope, SearchHit, SearchQuery,
};
use memory_inmem::InMemoryStore;

/// The in-memory store, instrumented. Every method it answers is the in-memory store's,
/// `least_valuable` included, except that the first `failing_recall_writes` calls of
/// `record_recalls` fail.
#[derive(Debug, Default)]
pub(crate) struct Instrumented {
    /// The store behind it (read it directly to look without being counted).
    pub(crate) inner: InMemoryStore,
    /// Each listing's limit and how many memories it returned.
    pub(crate) lists: Mutex<Vec<(Option<usize>, usize)>>,
    /// Each keyword search's `top_k`.
    pub(crate) searches: Mutex<Vec<usize>>,
    /// Reads of one memory's recall statistics.
    pub(crate) stats_reads: AtomicUsize,
    /// How many `record_recalls` calls fail before they go through.
    pub(crate) failing_recall_writes: usize,
    /// Whether they fail for good (a storage error) rather than for a while (a timeout).
    pub(crate) recall_writes_fail_for_good: bool,
    recall_writes: AtomicUsize,
    /// How many `count` calls never answer, from the first (a slow database).
    pub(crate) stalled_counts: usize,
    counts: AtomicUsize,
    /// Writes another writer makes right after the next reads (`get`, `list`, `search`)
    /// answer.
    pub(crate) after_reads: Interleaved,
    /// Whether a conditional delete of more than one memory is refused, as it is when
    /// other writes keep changing one of them (a busy namespace).
    pub(crate) refuses_group_deletes: bool,
    /// How many memories each conditional delete was asked to delete.
    pub(crate) conditional_deletes: Mutex<Vec<usize>>,
    /// How many memories each conditional write (`update_if`, `save_many_if`,
    /// `save_each_if`) was asked to write: on SQLite, each is one transaction and one sync.
    pub(crate) conditional_writes: Mutex<Vec<usize>>,
}

/// A change of one stored memory.
type Change = Box<dyn FnOnce(MemoryItem) -> MemoryItem + Send>;

/// Writes of another writer, each made right after one read of the store answers (in
/// order, one per read): the race of an edit's read and its write, made to happen.
#[derive(Default)]
pub(crate) struct Interleaved(Mutex<VecDeque<(Namespace, String, Change)>>);

impl fmt::Debug for Interleaved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pending = self.0.lock().map(|queue| queue.len()).unwrap_or_default();
        f.debug_struct("Interleaved")
            .field("pending", &pending)
            .finish()
    }
}

impl Interleaved {
    /// After a later read, memory `id` of `namespace` is changed by `change`, as an edit
    /// changes it (its `updated_at` moved on).
    pub(crate) fn push(
        &self,
        namespace: &Namespace,
        id: &str,
        change: impl FnOnce(MemoryItem) -> MemoryItem + Send + 'static,
    ) {
        if let Ok(mut queue) = self.0.lock() {
            queue.push_back((namespace.clone(), id.to_owned(), Box::new(change)));
        }
    }

    /// Makes the next write, if any.
    async fn write_next(&self, store: &InMemoryStore) -> Result<()> {
        let next = self.0.lock().ok().and_then(|mut queue| queue.pop_front());
        if let Some((namespace, id, change)) = next
            && let Some(item) = store.get(&namespace, &id).await?
        {
            let read_at = item.updated_at;
            store.save(change(item).revised(read_at)).await?;
        }
        Ok(())
    }
}

impl Instrumented {
    /// A store that refuses every conditional delete of more than one memory.
    pub(crate) fn refusing_group_deletes() -> Self {
        Self {
            refuses_group_deletes: true,
            ..Self::default()
        }
    }

    /// A store whose first `count` batch writes of recall statistics fail.
    pub(crate) fn failing_recall_writes(count: usize) -> Self {
        Self {
            failing_recall_writes: count,
            ..Self::default()
        }
    }

    /// A store whose first `count` batch writes of recall statistics fail with a storage
    /// error, which no retry mends.
    pub(crate) fn failing_recall_writes_for_good(count: usize) -> Self {
        Self {
            failing_recall_writes: count,
            recall_writes_fail_for_good: true,
            ..Self::default()
        }
    }

    /// A store whose first `count` calls never answer (a database too slow to wait for).
    pub(crate) fn stalling_counts(count: usize) -> Self {
        Self {
            stalled_counts: count,
            ..Self::default()
        }
    }

    /// How many batch writes of recall statistics were tried, failed ones included.
    pub(crate) fn recall_writes(&self) -> usize {
        self.recall_writes.load(Ordering::SeqCst)
    }

    /// The listings made so far: each one's limit and how many memories it returned.
    pub(crate) fn listings(&self) -> Vec<(Option<usize>, usize)> {
        self.lists
            .lock()
            .map(|lists| lists.clone())
            .unwrap_or_default()
    }

    /// How many listings had no limit (read everything in their scope).
    pub(crate) fn whole_listings(&self) -> usize {
        self.listings()
            .iter()
            .filter(|(limit, _)| limit.is_none())
            .count()
    }

    /// The keyword searches made so far: each one's `top_k`.
    pub(crate) fn searches(&self) -> Vec<usize> {
        self.searches
            .lock()
            .map(|searches| searches.clone())
            .unwrap_or_default()
    }

    /// The conditional writes made so far: how many memories each was asked to write.
    pub(crate) fn conditional_writes(&self) -> Vec<usize> {
        self.conditional_writes
            .lock()
            .map(|writes| writes.clone())
            .unwrap_or_default()
    }

    fn wrote(&self, memories: usize) {
        if let Ok(mut writes) = self.conditional_writes.lock() {
            writes.push(memories);
        }
    }

    /// How many times one memory's recall statistics were read.
    pub(crate) fn stats_reads(&self) -> usize {
        self.stats_reads.load(Ordering::Relaxed)
    }

    /// How many times a scope's memories were counted (an eviction pass starts so).
    pub(crate) fn counts(&self) -> usize {
        self.counts.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl MemoryStore for Instrumented {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        self.inner.save(item).await
    }
    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
        let item = self.inner.get(namespace, id).await?;
        self.after_reads.write_next(&self.inner).await?;
        Ok(item)
    }
    async fn get_many(&self, namespace: &Namespace, ids: &[String]) -> Result<Vec<MemoryItem>> {
        self.inner.get_many(namespace, ids).await
    }
    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        self.inner.delete(namespace, id).await
    }
    async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
        self.inner.delete_many(namespace, ids).await
    }
    // The conditional writes are the in-memory store's own, in one step: the interleaved
    // writes come after the caller's reads, never inside these.
    async fn update(&self, item: MemoryItem) -> Result<()> {
        self.inner.update(item).await
    }
    async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
        self.wrote(1);
        self.inner.update_if(item, read_at).await
    }
    async fn save_many_if(
        &self,
        items: Vec<MemoryItem>,
        expected: &[(usize, DateTime<Utc>)],
    ) -> Result<bool> {
        self.wrote(items.len());
        self.inner.save_many_if(items, expected).await
    }
    async fn save_each_if(&self, writes: Vec<ConditionalSave>) -> Result<Vec<bool>> {
        self.wrote(writes.iter().map(|write| write.items.len()).sum());
        self.inner.save_each_if(writes).await
    }
    async fn delete_many_if(
        &self,
        namespace: &Namespace,
        read: &[(String, DateTime<Utc>)],
    ) -> Result<Option<usize>> {
        if let Ok(mut sizes) = self.conditional_deletes.lock() {
            sizes.push(read.len());
        }
        if self.refuses_group_deletes && read.len() > 1 {
            return Ok(None);
        }
        self.inner.delete_many_if(namespace, read).await
    }
    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let items = self.inner.list(filter).await?;
        if let Ok(mut lists) = self.lists.lock() {
            lists.push((filter.limit, items.len()));
        }
        self.after_reads.write_next(&self.inner).await?;
        Ok(items)
    }
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        if let Ok(mut searches) = self.searches.lock() {
            searches.push(query.top_k);
        }
        let hits = self.inner.search(query).await?;
        self.after_reads.write_next(&self.inner).await?;
        Ok(hits)
    }
    async fn clear(&self, scope: &Scope) -> Result<usize> {
        self.inner.clear(scope).await
    }
    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        self.inner.list_namespaces(scope).await
    }
    async fn count(&self, scope: &Scope) -> Result<usize> {
        if self.counts.fetch_add(1, Ordering::SeqCst) < self.stalled_counts {
            std::future::pending::<()>().await;
        }
        self.inner.count(scope).await
    }
    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        if self.recall_writes.fetch_add(1, Ordering::SeqCst) < self.failing_recall_writes {
            return Err(if self.recall_writes_fail_for_good {
                MemoryError::Storage {
                    message: "the disk is full".into(),
                    source: None,
                }
            } else {
                MemoryError::Timeout("the store is down".into())
            });
        }
        self.inner.record_recalls(events).await
    }
    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        self.stats_reads.fetch_add(1, Ordering::Relaxed);
        self.inner.recall_stats(namespace, id).await
    }
    async fn least_valuable(
        &self,
        namespace: &Namespace,
        count: usize,
        config: &RecallBasedConfig,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>> {
        self.inner
            .least_valuable(namespace, count, config, now)
            .await
    }
}
