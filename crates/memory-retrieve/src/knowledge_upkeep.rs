//! The lifecycle of knowledge pages and graph entities: recall records their accesses
//! ([`KnowledgeUpkeep::record`], batched like recall feedback), and a [`KnowledgePolicy`]
//! bounds them by TTL and capacity, per namespace, in `Memory::maintain`
//! ([`KnowledgeUpkeep::enforce`]). The rules are in [`KnowledgePolicy`]'s documentation.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use memory_core::{
    AccessEvent, GraphEntity, KnowledgeGraph, KnowledgePage, KnowledgeStore, MemoryError, Result,
    RetrievalSource, Scope, ScoredItem,
};
use serde::{Deserialize, Serialize};

use crate::background::{BackgroundWrites, RETRIES, retried};
use crate::eviction::MaintenanceReport;

/// Bounds on the knowledge pages and graph entities of each namespace, applied by
/// [`Memory::maintain`](crate::Memory::maintain). Every bound is optional; the default
/// bounds nothing.
///
/// The rules:
/// - **An access is a recall that returned the record.** [`Memory::recall`](crate::Memory::recall)
///   (and what is built on it, `recall_context` included) queues one
///   [`AccessEvent`] per page and entity it returns, as it queues recall events for
///   memories; a full batch (the builder's `recall_batch`) is written by a task on the
///   caller's runtime ([`KnowledgeStore::record_accesses`],
///   [`KnowledgeGraph::record_accesses`]: one transaction or statement per batch on the SQL
///   backends), and [`Memory::flush`](crate::Memory::flush) and `maintain` write what is
///   pending first. Reading a page or an entity through a store directly is not an access.
///   Accesses are recorded with or without a policy.
/// - **TTL counts from the last sign of use**: a page expires when neither a recall nor a
///   change touched it for `page_ttl_days` ([`KnowledgePage::last_active`]: the later of
///   `last_accessed` and `updated_at`); an entity when neither a recall nor its creation did
///   for `entity_ttl_days` ([`GraphEntity::last_active`]). An entity with neither a creation
///   time nor a recorded access (one stored before entities had a creation time) is never
///   expired by TTL, since nothing says how old it is; it still counts against a capacity.
/// - **Capacity keeps the most used.** Above `max_pages` (`max_entities`) in a namespace,
///   the least valuable go, down to the capacity: fewest accesses, then least recently
///   active (an entity of unknown age first), then id. Pages carry no importance, and what
///   recall returns is what an agent uses, so the access count is the value.
/// - **Removing an entity removes its relations** (the graph's contract), so a pass never
///   leaves a relation dangling.
/// - **Per namespace, in `maintain` only.** Pages and entities are written through the
///   stores, not through `Memory`'s write path, so only `maintain` (and
///   [`Memory::spawn_maintenance`](crate::Memory::spawn_maintenance), which runs it) bounds
///   them: each namespace of the scope that holds pages (entities) is listed, expired, then
///   cut to its capacity; other namespaces are never read. A pass costs `O(n log n)` per
///   namespace of `n` records and one delete per record removed; the counts go to
///   [`MaintenanceReport`] and to `tracing` (debug).
///
/// ```
/// use memory_retrieve::{KnowledgePolicy, Memory};
/// let memory = Memory::builder()
///     .knowledge_policy(KnowledgePolicy {
///         page_ttl_days: Some(90),
///         max_pages: Some(500),
///         entity_ttl_days: None,
///         max_entities: Some(2_000),
///     })
///     .build()?;
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgePolicy {
    /// Days a page is kept without being recalled or changed; at least 1.
    pub page_ttl_days: Option<u32>,
    /// Most pages per namespace; at least 1. The least accessed go first.
    pub max_pages: Option<usize>,
    /// Days an entity is kept without being recalled since its creation or its last
    /// recall; at least 1.
    pub entity_ttl_days: Option<u32>,
    /// Most entities per namespace; at least 1. The least accessed go first, with their
    /// relations.
    pub max_entities: Option<usize>,
}

impl KnowledgePolicy {
    /// Checks that every bound that is set is at least 1.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `page_ttl_days`, `max_pages`, `entity_ttl_days`
    /// or `max_entities`.
    pub fn validate(&self) -> Result<()> {
        let bounds = [
            ("page_ttl_days", self.page_ttl_days.map(u64::from)),
            ("max_pages", self.max_pages.map(|n| n as u64)),
            ("entity_ttl_days", self.entity_ttl_days.map(u64::from)),
            ("max_entities", self.max_entities.map(|n| n as u64)),
        ];
        for (field, value) in bounds {
            if value == Some(0) {
                return Err(MemoryError::invalid(
                    field,
                    "must be at least 1 (leave it unset for no bound)",
                ));
            }
        }
        Ok(())
    }

    /// Whether the policy bounds pages.
    fn bounds_pages(&self) -> bool {
        self.page_ttl_days.is_some() || self.max_pages.is_some()
    }

    /// Whether the policy bounds entities.
    fn bounds_entities(&self) -> bool {
        self.entity_ttl_days.is_some() || self.max_entities.is_some()
    }
}

/// The time before which a record last active is expired: `now - days`; `None` when that
/// is before any representable time (nothing expires).
fn cutoff(now: DateTime<Utc>, days: Option<u32>) -> Option<DateTime<Utc>> {
    crate::compression::days_before(now, days?)
}

/// The capacity order, least valuable first: fewest accesses, then least recently active,
/// then id.
fn least_valuable_first<T>(
    records: &mut [T],
    key: impl Fn(&T) -> (u64, Option<DateTime<Utc>>, &str),
) {
    records.sort_by(|a, b| {
        let (a, b) = (key(a), key(b));
        a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then_with(|| a.2.cmp(b.2))
    });
}

/// Pages and entities accessed by recalls, waiting for a batch to fill.
#[derive(Debug, Default)]
struct Pending {
    pages: Vec<AccessEvent>,
    entities: Vec<AccessEvent>,
}

impl Pending {
    fn len(&self) -> usize {
        self.pages.len() + self.entities.len()
    }
}

/// What [`Memory`](crate::Memory) keeps for the lifecycle of pages and entities: the
/// batched access recorder and the policy.
#[derive(Debug)]
pub(crate) struct KnowledgeUpkeep {
    knowledge: Arc<dyn KnowledgeStore>,
    graph: Arc<dyn KnowledgeGraph>,
    policy: KnowledgePolicy,
    pending: Mutex<Pending>,
    in_flight: BackgroundWrites,
    batch_size: usize,
}

impl KnowledgeUpkeep {
    /// Upkeep over these stores, writing accesses every `batch_size` (at least 1).
    pub(crate) fn new(
        knowledge: Arc<dyn KnowledgeStore>,
        graph: Arc<dyn KnowledgeGraph>,
        policy: KnowledgePolicy,
        batch_size: usize,
    ) -> Self {
        Self {
            knowledge,
            graph,
            policy,
            pending: Mutex::new(Pending::default()),
            in_flight: BackgroundWrites::new("page and entity access task"),
            batch_size: batch_size.max(1),
        }
    }

    /// Queues an access at `at` for every page and entity among `items`; starts a
    /// background write when a batch is full.
    ///
    /// # Errors
    /// Store errors, only when there is no runtime and the write happens inline.
    pub(crate) async fn record(&self, items: &[ScoredItem], at: DateTime<Utc>) -> Result<()> {
        let mut pages = Vec::new();
        let mut entities = Vec::new();
        for scored in items {
            match &scored.record {
                RetrievalSource::KnowledgePage(page) => {
                    pages.push(AccessEvent::new(page.namespace.clone(), &page.id, at));
                }
                RetrievalSource::GraphEntity(entity) => {
                    entities.push(AccessEvent::new(entity.namespace.clone(), &entity.id, at));
                }
                RetrievalSource::Memory(_) => {}
            }
        }
        if pages.is_empty() && entities.is_empty() {
            return Ok(());
        }
        let batch = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.pages.extend(pages);
            pending.entities.extend(entities);
            if pending.len() < self.batch_size {
                return Ok(());
            }
            std::mem::take(&mut *pending)
        };
        self.write_batch(batch).await
    }

    /// Writes `batch`: as a background task on a tokio runtime (tried again while it fails
    /// for a reason that may pass, and not lost when the caller stops waiting), else once,
    /// here.
    async fn write_batch(&self, batch: Pending) -> Result<()> {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let (knowledge, graph) = (Arc::clone(&self.knowledge), Arc::clone(&self.graph));
                self.in_flight.spawn(&handle, async move {
                    write(&*knowledge, &*graph, batch, RETRIES).await
                });
                Ok(())
            }
            Err(_) => write(&*self.knowledge, &*self.graph, batch, 0).await,
        }
    }

    /// Writes every pending access and waits for background writes. On a tokio runtime the
    /// pending batch is written as a background one (tried again as it is), so a flush
    /// whose caller stops waiting (a request's deadline) does not lose it.
    ///
    /// # Errors
    /// The first store error of the pending write or of a background write since the last
    /// flush.
    pub(crate) async fn flush(&self) -> Result<()> {
        let batch =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let written = self.write_batch(batch).await;
        let waited = self.in_flight.wait().await;
        written.and(waited)
    }

    /// Applies the policy to every namespace of `scope` at `now`, adding what it removed to
    /// `report`. Accesses still pending should be flushed first.
    ///
    /// # Errors
    /// Store errors (what was removed before the error stays removed).
    pub(crate) async fn enforce(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
        report: &mut MaintenanceReport,
    ) -> Result<()> {
        let policy = self.policy;
        if policy.bounds_pages() {
            let expire_before = cutoff(now, policy.page_ttl_days);
            for namespace in self.knowledge.list_namespaces(scope).await? {
                let mut kept = Vec::new();
                for page in self.knowledge.list_pages(&namespace.exact()).await? {
                    if expire_before.is_some_and(|cutoff| page.last_active() < cutoff) {
                        report.pages_expired +=
                            usize::from(self.knowledge.delete_page(&namespace, &page.id).await?);
                    } else {
                        kept.push(page);
                    }
                }
                if let Some(max) = policy.max_pages
                    && kept.len() > max
                {
                    least_valuable_first(&mut kept, |page: &KnowledgePage| {
                        (page.access_count, Some(page.last_active()), &page.id)
                    });
                    let excess = kept.len() - max;
                    for page in &kept[..excess] {
                        report.pages_evicted +=
                            usize::from(self.knowledge.delete_page(&namespace, &page.id).await?);
                    }
                }
            }
        }
        if policy.bounds_entities() {
            let expire_before = cutoff(now, policy.entity_ttl_days);
            for namespace in self.graph.list_namespaces(scope).await? {
                let mut kept = Vec::new();
                for entity in self.graph.list_entities(&namespace.exact()).await? {
                    // A memory's link node lives and dies with its memory (see `enrich`),
                    // not by the entities' TTL or capacity.
                    if crate::enrich::is_link_node(&entity) {
                        continue;
                    }
                    let expired = match (expire_before, entity.last_active()) {
                        (Some(cutoff), Some(active)) => active < cutoff,
                        // Unknown age: never expired by TTL.
                        _ => false,
                    };
                    if expired {
                        report.entities_expired +=
                            usize::from(self.graph.remove_entity(&namespace, &entity.id).await?);
                    } else {
                        kept.push(entity);
                    }
                }
                if let Some(max) = policy.max_entities
                    && kept.len() > max
                {
                    least_valuable_first(&mut kept, |entity: &GraphEntity| {
                        (entity.access_count, entity.last_active(), &entity.id)
                    });
                    let excess = kept.len() - max;
                    for entity in &kept[..excess] {
                        report.entities_evicted +=
                            usize::from(self.graph.remove_entity(&namespace, &entity.id).await?);
                    }
                }
            }
        }
        tracing::debug!(
            pages_expired = report.pages_expired,
            pages_evicted = report.pages_evicted,
            entities_expired = report.entities_expired,
            entities_evicted = report.entities_evicted,
            "knowledge lifecycle pass"
        );
        Ok(())
    }
}

/// Writes a batch: pages and entities together, each store's write tried again up to
/// `retries` times while it fails for a reason that may pass ([`retried`]), so one store's
/// retries never write the other's accesses twice.
async fn write(
    knowledge: &dyn KnowledgeStore,
    graph: &dyn KnowledgeGraph,
    batch: Pending,
    retries: u32,
) -> Result<()> {
    let pages = async {
        if batch.pages.is_empty() {
            Ok(())
        } else {
            retried(retries, || knowledge.record_accesses(&batch.pages)).await
        }
    };
    let entities = async {
        if batch.entities.is_empty() {
            Ok(())
        } else {
            retried(retries, || graph.record_accesses(&batch.entities)).await
        }
    };
    let (pages, entities) = tokio::join!(pages, entities);
    pages.and(entities)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_bounds_are_refused_by_name() {
        assert!(KnowledgePolicy::default().validate().is_ok());
        for (policy, field) in [
            (
                KnowledgePolicy {
                    page_ttl_days: Some(0),
                    ..KnowledgePolicy::default()
                },
                "page_ttl_days",
            ),
            (
                KnowledgePolicy {
                    max_pages: Some(0),
                    ..KnowledgePolicy::default()
                },
                "max_pages",
            ),
            (
                KnowledgePolicy {
                    entity_ttl_days: Some(0),
                    ..KnowledgePolicy::default()
                },
                "entity_ttl_days",
            ),
            (
                KnowledgePolicy {
                    max_entities: Some(0),
                    ..KnowledgePolicy::default()
                },
                "max_entities",
            ),
        ] {
            match policy.validate() {
                Err(MemoryError::InvalidInput { field: named, .. }) => assert_eq!(named, field),
                other => panic!("{policy:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_least_used_then_least_recent_then_id_go_first() {
        let at = |s| DateTime::from_timestamp(s, 0);
        let mut records = vec![
            (2, at(10), "a"),
            (1, at(30), "b"),
            (1, at(20), "d"),
            (1, at(20), "c"),
            (1, None, "e"),
        ];
        least_valuable_first(&mut records, |r| (r.0, r.1, r.2));
        let order: Vec<&str> = records.iter().map(|r| r.2).collect();
        assert_eq!(order, ["e", "c", "d", "b", "a"]);
        let now = DateTime::from_timestamp(100 * 86_400, 0).unwrap();
        assert_eq!(cutoff(now, None), None);
        assert_eq!(
            cutoff(now, Some(1)),
            DateTime::from_timestamp(99 * 86_400, 0)
        );
        assert_eq!(
            cutoff(now, Some(u32::MAX)),
            None,
            "before any time: nothing expires"
        );
    }
}
