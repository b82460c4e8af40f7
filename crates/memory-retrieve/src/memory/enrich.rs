//! The enrichment pipeline of a [`Memory`]: a bounded queue of stored memories and one
//! worker on the caller's tokio runtime that enriches them in batches, off the write path.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use memory_core::{KnowledgeGraph, MemoryError, MemoryItem, MemoryStore, Namespace, Result};
use tokio::sync::{mpsc, watch};

use super::Memory;
use crate::enrich::{Enricher, Enrichment, EnrichmentConfig, EnrichmentStats, TagCache};

/// A stored memory waiting for enrichment.
type Job = (Namespace, String);

/// The queue, the worker's share and the progress `flush` waits on.
#[derive(Debug)]
pub(super) struct Pipeline {
    sender: mpsc::Sender<Job>,
    /// Taken by the first enqueue, which spawns the worker on the caller's runtime.
    receiver: Mutex<Option<mpsc::Receiver<Job>>>,
    worker: Arc<Worker>,
}

/// What the worker reads and writes.
#[derive(Debug)]
struct Worker {
    enricher: Arc<dyn Enricher>,
    store: Arc<dyn MemoryStore>,
    graph: Arc<dyn KnowledgeGraph>,
    config: EnrichmentConfig,
    queued: AtomicU64,
    /// Memories finished (enriched, failed or missing): `flush` waits for it to reach what
    /// was queued.
    done: watch::Sender<u64>,
    stats: Mutex<EnrichmentStats>,
}

impl Pipeline {
    pub(super) fn new(
        enricher: Arc<dyn Enricher>,
        config: EnrichmentConfig,
        store: Arc<dyn MemoryStore>,
        graph: Arc<dyn KnowledgeGraph>,
    ) -> Self {
        let (sender, receiver) = mpsc::channel(config.queue_capacity.max(1));
        Self {
            sender,
            receiver: Mutex::new(Some(receiver)),
            worker: Arc::new(Worker {
                enricher,
                store,
                graph,
                config,
                queued: AtomicU64::new(0),
                done: watch::Sender::new(0),
                stats: Mutex::new(EnrichmentStats::default()),
            }),
        }
    }

    /// Queues memory `id` of `namespace`, waiting for room when the queue is full. Starts
    /// the worker on the current runtime the first time. Never fails: without a runtime the
    /// memory is left unenriched (logged).
    pub(super) async fn enqueue(&self, namespace: &Namespace, id: &str) {
        let receiver = self
            .receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(receiver) = receiver {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(run(Arc::clone(&self.worker), receiver));
                }
                Err(_) => {
                    tracing::warn!("no tokio runtime: enrichment is off");
                    return;
                }
            }
        }
        // Counted once in the queue: a caller that stops waiting for room (its future
        // dropped) leaves nothing for flush to wait on.
        if self
            .sender
            .send((namespace.clone(), id.to_owned()))
            .await
            .is_ok()
        {
            self.worker.queued.fetch_add(1, Ordering::SeqCst);
            self.worker.stats().queued += 1;
        } else {
            tracing::warn!(%namespace, id, "the enrichment worker is gone: memory not enriched");
        }
    }

    /// Waits until every memory queued before the call is enriched (or given up).
    pub(super) async fn flush(&self) {
        let target = self.worker.queued.load(Ordering::SeqCst);
        let mut done = self.worker.done.subscribe();
        // The sender lives in the worker's share, so waiting never fails while we hold it.
        let _ = done.wait_for(|finished| *finished >= target).await;
    }

    pub(super) fn stats(&self) -> EnrichmentStats {
        *self.worker.stats()
    }
}

impl Worker {
    fn stats(&self) -> std::sync::MutexGuard<'_, EnrichmentStats> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, memories: u64, count: impl FnOnce(&mut EnrichmentStats)) {
        count(&mut self.stats());
        self.done.send_modify(|finished| *finished += memories);
    }

    /// The stored memories of `jobs`, in queue order (forgotten ones left out), each once
    /// with the number of jobs that queued it (a memory written twice before the worker
    /// read it is enriched once, for both).
    async fn load(&self, jobs: &[Job]) -> Result<Vec<(MemoryItem, u64)>> {
        let mut by_namespace: BTreeMap<&Namespace, Vec<String>> = BTreeMap::new();
        let mut asked: HashSet<(&Namespace, &str)> = HashSet::new();
        for (namespace, id) in jobs {
            if asked.insert((namespace, id.as_str())) {
                by_namespace.entry(namespace).or_default().push(id.clone());
            }
        }
        let mut found = Vec::with_capacity(jobs.len());
        for (namespace, ids) in by_namespace {
            found.extend(self.store.get_many(namespace, &ids).await?);
        }
        let mut found: HashMap<(Namespace, String), MemoryItem> = found
            .into_iter()
            .map(|item| ((item.namespace.clone(), item.id.clone()), item))
            .collect();
        let mut at: HashMap<(&Namespace, &str), usize> = HashMap::new();
        let mut out: Vec<(MemoryItem, u64)> = Vec::with_capacity(found.len());
        for (namespace, id) in jobs {
            if let Some(&index) = at.get(&(namespace, id.as_str())) {
                out[index].1 += 1;
            } else if let Some(item) = found.remove(&(namespace.clone(), id.clone())) {
                at.insert((namespace, id.as_str()), out.len());
                out.push((item, 1));
            }
        }
        Ok(out)
    }

    /// Calls the enricher on `items`, retrying with backoff; `None` when every attempt failed.
    async fn enrich(&self, items: &[MemoryItem]) -> Option<Vec<Enrichment>> {
        let config = &self.config;
        let mut wait = config.backoff;
        for attempt in 1..=config.max_attempts {
            let call = AssertUnwindSafe(self.enricher.enrich(items)).catch_unwind();
            let error = match tokio::time::timeout(config.timeout, call).await {
                Ok(Ok(Ok(enrichments))) if enrichments.len() == items.len() => {
                    return Some(enrichments);
                }
                Ok(Ok(Ok(enrichments))) => MemoryError::invalid(
                    "enrichments",
                    format!(
                        "{} enrichments for {} memories",
                        enrichments.len(),
                        items.len()
                    ),
                ),
                Ok(Ok(Err(error))) => error,
                Ok(Err(_panic)) => MemoryError::invalid("enricher", "panicked"),
                Err(_elapsed) => MemoryError::invalid(
                    "enricher",
                    format!("no answer within {} ms", config.timeout.as_millis()),
                ),
            };
            if attempt == config.max_attempts {
                tracing::warn!(
                    %error,
                    attempts = attempt,
                    memories = items.len(),
                    "enrichment failed; the memories stay stored without links"
                );
                break;
            }
            tracing::debug!(%error, attempt, "enrichment failed; retrying");
            self.stats().retries += 1;
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
        None
    }

    async fn process(&self, jobs: Vec<Job>) {
        let total = jobs.len() as u64;
        let items = match self.load(&jobs).await {
            Ok(items) => items,
            Err(error) => {
                tracing::warn!(%error, "enrichment could not read the queued memories");
                self.finish(total, |stats| stats.failed += total);
                return;
            }
        };
        let missing = total - items.iter().map(|(_, queued)| queued).sum::<u64>();
        let (items, queued): (Vec<MemoryItem>, Vec<u64>) = items.into_iter().unzip();
        if items.is_empty() {
            self.finish(total, |stats| stats.missing += missing);
            return;
        }
        let Some(enrichments) = self.enrich(&items).await else {
            let failed = queued.iter().sum::<u64>();
            self.finish(total, |stats| {
                stats.missing += missing;
                stats.failed += failed;
            });
            return;
        };
        let (mut enriched, mut failed) = (0u64, 0u64);
        let mut applied: Vec<(&MemoryItem, u64)> = Vec::with_capacity(items.len());
        let mut tags = TagCache::new();
        for ((item, enrichment), &jobs) in items.iter().zip(&enrichments).zip(&queued) {
            // Writing is idempotent (entities reused, links set again), so a write that
            // fails on a recoverable error is tried again whole; one that still fails is
            // undone (the memory's node goes with its links), so the memory stays stored,
            // unlinked, as if it had not been enriched.
            let mut wait = self.config.backoff;
            let mut outcome = Ok(());
            for attempt in 1..=self.config.max_attempts {
                outcome = crate::enrich::apply(
                    &*self.graph,
                    &*self.store,
                    item,
                    enrichment,
                    self.config.update_memories,
                    &mut tags,
                )
                .await;
                match &outcome {
                    Err(error) if error.is_recoverable() && attempt < self.config.max_attempts => {
                        tokio::time::sleep(wait).await;
                        wait = wait.saturating_mul(2);
                    }
                    _ => break,
                }
            }
            match outcome {
                Ok(()) => applied.push((item, jobs)),
                Err(error) => {
                    failed += jobs;
                    tracing::warn!(%error, id = %item.id, namespace = %item.namespace, "enrichment not applied");
                    let node = crate::enrich::memory_node_id(&item.id);
                    if let Err(undo) = self.graph.remove_entity(&item.namespace, &node).await {
                        tracing::warn!(%undo, id = %item.id, "the node of a failed enrichment was not removed");
                    }
                }
            }
        }
        // Forgotten while their links were written: `forget` deletes a memory, then its
        // node, and a node written after that would keep the start of the text forgotten.
        // Read after the writes, a memory is gone only if the forget's delete came first;
        // its node is removed here (and by the forget, if the write came before that
        // removal).
        let gone = self.forgotten(&applied).await;
        let gone_jobs: u64 = applied
            .iter()
            .filter(|(item, _)| gone.contains(&(&item.namespace, item.id.as_str())))
            .map(|(_, jobs)| jobs)
            .sum();
        enriched += applied.iter().map(|(_, jobs)| jobs).sum::<u64>() - gone_jobs;
        self.finish(total, |stats| {
            stats.missing += missing + gone_jobs;
            stats.enriched += enriched;
            stats.failed += failed;
        });
    }

    /// Which of the memories `applied` are no longer stored (one read per namespace), their
    /// link nodes then removed. A read that fails counts them as stored: the next `maintain`
    /// of a `Memory` that enriches prunes the node of a memory that is gone.
    async fn forgotten<'a>(
        &self,
        applied: &[(&'a MemoryItem, u64)],
    ) -> HashSet<(&'a Namespace, &'a str)> {
        let mut by_namespace: BTreeMap<&Namespace, Vec<&'a MemoryItem>> = BTreeMap::new();
        for (item, _) in applied {
            by_namespace.entry(&item.namespace).or_default().push(item);
        }
        let mut gone = HashSet::new();
        for (namespace, items) in by_namespace {
            let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
            let stored: HashSet<String> = match self.store.get_many(namespace, &ids).await {
                Ok(items) => items.into_iter().map(|item| item.id).collect(),
                Err(error) => {
                    tracing::warn!(%error, %namespace, "whether enriched memories were forgotten meanwhile could not be read");
                    continue;
                }
            };
            for item in items {
                if !stored.contains(&item.id) {
                    let node = crate::enrich::memory_node_id(&item.id);
                    if let Err(error) = self.graph.remove_entity(namespace, &node).await {
                        tracing::warn!(%error, id = %item.id, "the node of a forgotten memory was not removed");
                    }
                    gone.insert((&item.namespace, item.id.as_str()));
                }
            }
        }
        gone
    }
}

/// Releases every `flush` when the worker ends, however it ends: the queue closed, or a
/// panic outside the enricher's call (a runtime without its time driver panics at the
/// first timeout), so that no caller waits for a worker that is gone.
struct Release(Arc<Worker>);

impl Drop for Release {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!("the enrichment worker stopped; memories stay stored, unenriched");
        }
        self.0.done.send_modify(|finished| *finished = u64::MAX);
    }
}

/// The worker: takes up to `batch_size` queued memories at a time until the queue closes
/// (the [`Memory`] is dropped).
async fn run(worker: Arc<Worker>, mut receiver: mpsc::Receiver<Job>) {
    let _release = Release(Arc::clone(&worker));
    let batch_size = worker.config.batch_size.max(1);
    while let Some(first) = receiver.recv().await {
        let mut jobs = Vec::with_capacity(batch_size);
        jobs.push(first);
        while jobs.len() < batch_size {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        worker.process(jobs).await;
    }
}

impl Memory {
    /// Removes the link nodes in `scope` whose memory no longer exists (a memory evicted,
    /// expired or decayed away goes without its node: eviction works on the memory store
    /// alone). One read of the link nodes and one batched read of their memories per
    /// namespace. Returns how many were removed.
    pub(super) async fn prune_links(&self, scope: &memory_core::Scope) -> Result<usize> {
        let mut pruned = 0;
        for namespace in self.graph.list_namespaces(scope).await? {
            let links: Vec<(String, String)> = self
                .graph
                .list_entities(&namespace.exact())
                .await?
                .into_iter()
                .filter(crate::enrich::is_link_node)
                .filter_map(|entity| {
                    let memory = crate::memory_of_node(&entity.id)?.to_owned();
                    Some((entity.id, memory))
                })
                .collect();
            if links.is_empty() {
                continue;
            }
            let ids: Vec<String> = links.iter().map(|(_, memory)| memory.clone()).collect();
            let alive: std::collections::HashSet<String> = self
                .store
                .get_many(&namespace, &ids)
                .await?
                .into_iter()
                .map(|item| item.id)
                .collect();
            for (node, memory) in links {
                if !alive.contains(&memory) && self.graph.remove_entity(&namespace, &node).await? {
                    pruned += 1;
                }
            }
        }
        Ok(pruned)
    }

    /// What the enrichment worker has done so far; `None` without an enricher (see
    /// [`MemoryBuilder::enricher`](crate::MemoryBuilder::enricher)).
    pub fn enrichment_stats(&self) -> Option<EnrichmentStats> {
        self.enrichment.as_ref().map(Pipeline::stats)
    }
}
