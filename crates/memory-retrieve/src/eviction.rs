//! Eviction and decay over any [`MemoryStore`]: what to forget, and when.
//!
//! Policies apply per namespace: a capacity of 1 000 means each namespace (tenant, agent or
//! session) keeps at most 1 000 items, so one tenant's writes never evict another's memories.
//!
//! Pinned memories ([`MemoryItem::is_pinned`]) are exempt from every policy and from decay:
//! only `forget` removes them, so a namespace whose memories are all pinned may exceed its
//! capacity.
//!
//! A memory deleted by a policy or by decay takes the history it ends with it: the ended
//! memories it superseded or that were consolidated into it, and theirs in turn (as
//! `Memory::forget` does), so no ended memory names a successor that is gone.
//!
//! Costs per pass and namespace (`n` items, `e` evicted): TTL and Capacity use the store's
//! time-ordered `list` (for the in-memory store `O(log n + e)`); RecallBased and ValueBased
//! rank every item and keep the `e` least valuable in a bounded heap, `O(n log e)`. A backend
//! supplies a faster RecallBased pass through [`MemoryStore::least_valuable`] (the in-memory
//! store ranks its entries in place; the SQL backends rank in one query). Through `Memory`,
//! a pass frees a sixteenth of the capacity at once, so its cost is shared by the writes
//! that follow.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use memory_core::{
    ConditionalSave, DecayConfig, EvictionPolicy, ListPosition, MemoryFilter, MemoryItem,
    MemoryStore, Namespace, RecallBasedConfig, Result, Scope, ValueBasedConfig,
};
use serde::{Deserialize, Serialize};

use crate::compression::write_each;

/// What one maintenance pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaintenanceReport {
    /// Items deleted because their TTL passed.
    pub expired: usize,
    /// Items whose importance decay lowered.
    pub decayed: usize,
    /// Items deleted by capacity or recall value, or because decay took them under the threshold.
    pub evicted: usize,
    /// Stale memories compressed (with a compression configured).
    pub compressed: usize,
    /// Eviction passes run by writes since the last maintenance that failed (each logged
    /// when it happened); the writes themselves succeeded. This maintenance pass redoes
    /// their work.
    pub failed_write_passes: usize,
    /// Pairs of current memories flagged as contradicting each other (the consistency
    /// check; [`Memory::conflicts`](crate::Memory::conflicts) lists them).
    pub conflicts_found: usize,
    /// Memories folded into summaries by consolidation (with a consolidation configured).
    pub consolidated: usize,
    /// Summary memories written by consolidation.
    pub summaries: usize,
    /// Knowledge pages deleted because no recall or change touched them within the
    /// [`KnowledgePolicy`](crate::KnowledgePolicy)'s `page_ttl_days`.
    #[serde(default)]
    pub pages_expired: usize,
    /// Knowledge pages deleted to bring a namespace down to `max_pages`.
    #[serde(default)]
    pub pages_evicted: usize,
    /// Graph entities (with their relations) removed because no recall touched them within
    /// `entity_ttl_days` of their creation or last recall.
    #[serde(default)]
    pub entities_expired: usize,
    /// Graph entities (with their relations) removed to bring a namespace down to
    /// `max_entities`.
    #[serde(default)]
    pub entities_evicted: usize,
    /// Link nodes of enrichment (see [`MEMORY_NODE_TYPE`](crate::MEMORY_NODE_TYPE)) removed
    /// because their memory is gone (evicted, expired or decayed away; a consolidated
    /// memory keeps its node as history).
    #[serde(default)]
    pub links_pruned: usize,
    /// Background statistics writes (recall statistics, page and entity accesses) found
    /// failed when the pass wrote what was pending: each was logged and its statistics are
    /// lost; the pass went on (the statistics only order eviction by value).
    #[serde(default)]
    pub failed_statistics_writes: usize,
}

impl MaintenanceReport {
    fn add(&mut self, other: MaintenanceReport) {
        self.expired += other.expired;
        self.decayed += other.decayed;
        self.evicted += other.evicted;
        self.compressed += other.compressed;
        self.failed_write_passes += other.failed_write_passes;
        self.failed_statistics_writes += other.failed_statistics_writes;
        self.conflicts_found += other.conflicts_found;
        self.consolidated += other.consolidated;
        self.summaries += other.summaries;
    }
}

/// Runs `policy` over every namespace in `scope` at time `now`.
///
/// # Errors
/// [`memory_core::MemoryError::InvalidInput`] for an invalid policy; store errors.
pub async fn evict(
    store: &dyn MemoryStore,
    scope: &Scope,
    policy: &EvictionPolicy,
    now: DateTime<Utc>,
) -> Result<MaintenanceReport> {
    policy.validate()?;
    let mut report = MaintenanceReport::default();
    if *policy == EvictionPolicy::None {
        return Ok(report);
    }
    for namespace in store.list_namespaces(scope).await? {
        report.add(evict_namespace(store, &namespace, policy, now).await?);
    }
    Ok(report)
}

/// Runs `policy` over one namespace: TTL, then capacity down to the policy's `max_items`.
///
/// # Errors
/// Store errors.
pub async fn evict_namespace(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    policy: &EvictionPolicy,
    now: DateTime<Utc>,
) -> Result<MaintenanceReport> {
    let (report, _) = namespace_pass(store, namespace, policy, now, true, 0).await?;
    Ok(report)
}

/// One namespace's pass: TTL when `with_ttl`, then, when the namespace holds more than the
/// policy's capacity, eviction down to `capacity - headroom` (at least one item is kept).
/// Returns the report and how many items the namespace held after the pass.
pub(crate) async fn namespace_pass(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    policy: &EvictionPolicy,
    now: DateTime<Utc>,
    with_ttl: bool,
    headroom: usize,
) -> Result<(MaintenanceReport, usize)> {
    let mut report = MaintenanceReport::default();
    if with_ttl && let Some(ttl) = policy.ttl_secs() {
        report.expired = expire(store, namespace, ttl, now).await?;
    }
    let count = store.count(&namespace.exact()).await?;
    let Some(capacity) = policy.capacity() else {
        return Ok((report, count));
    };
    if count <= capacity {
        return Ok((report, count));
    }
    let keep = capacity.saturating_sub(headroom).max(1);
    let excess = count - keep;
    report.evicted = match (policy, policy.recall_config()) {
        (EvictionPolicy::ValueBased(config), _) => {
            evict_lowest_value(store, namespace, config, now, excess).await?
        }
        (_, Some(config)) => evict_least_valuable(store, namespace, config, now, excess).await?,
        _ => evict_oldest(store, namespace, excess).await?,
    };
    Ok((report, count.saturating_sub(report.evicted)))
}

/// Deletes `items`, namespace by namespace through [`MemoryStore::delete_many_if`] (the
/// in-memory store then updates its index once per pass, not once per memory), with the
/// history they end (see [`with_history`]). Each is deleted only if it and its history are
/// still as the pass read them: a memory pinned, edited or merged into since is left with
/// its history, so a pin made while a pass chose its victims still saves the memory, and no
/// version is left naming a successor that is gone. When a group's deletion is refused for
/// one of them, each memory is deleted with its own history, and those changed stay.
///
/// A namespace's memories go [`DELETE_GROUP`] at a time (each with its history), so a pass
/// that expires a large namespace never holds a store's write lock for long: on SQLite
/// another process's write waits for one group, not for the whole pass, and would
/// otherwise give up after the busy timeout.
async fn delete_all(store: &dyn MemoryStore, items: Vec<MemoryItem>) -> Result<usize> {
    let mut by_namespace: BTreeMap<Namespace, Vec<MemoryItem>> = BTreeMap::new();
    for item in items {
        by_namespace
            .entry(item.namespace.clone())
            .or_default()
            .push(item);
    }
    let mut deleted = 0;
    for (namespace, items) in by_namespace {
        for group in items.chunks(DELETE_GROUP) {
            deleted += delete_group(store, &namespace, group).await?;
        }
    }
    Ok(deleted)
}

/// How many memories of a namespace an eviction or decay pass deletes in one conditional
/// delete (one transaction on SQLite and PostgreSQL), their history aside. A thousand
/// SQLite deletes with their full-text rows take tens of milliseconds, well under the
/// 5-second busy timeout another writer waits for.
pub const DELETE_GROUP: usize = 1_000;

/// Deletes `items` of `namespace` with their history in one conditional delete, or one at a
/// time when that is refused (see [`delete_all`]).
async fn delete_group(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    items: &[MemoryItem],
) -> Result<usize> {
    let read = with_history(store, items.to_vec())
        .await?
        .remove(namespace)
        .unwrap_or_default();
    if let Some(count) = store.delete_many_if(namespace, &read).await? {
        return Ok(count);
    }
    let mut deleted = 0;
    for item in items {
        let read = with_history(store, vec![item.clone()])
            .await?
            .remove(namespace)
            .unwrap_or_default();
        deleted += store.delete_many_if(namespace, &read).await?.unwrap_or(0);
    }
    Ok(deleted)
}

/// The ids of `items` by namespace, each with the `updated_at` it was read with, and the
/// history they end: the memories each names in [`supersedes`](MemoryItem::supersedes)
/// that ended into it (versions it superseded, sources consolidated into it), and theirs
/// in turn. A deleted memory takes its history with it, as
/// [`Memory::forget`](crate::Memory::forget) does, so no ended memory is left naming a
/// successor that no longer exists (a summary evicted before the last of its sources, whose
/// time it shares, left that source pointing at nothing). A memory whose history holds a
/// pinned version is left out with its history: pinned, that version is kept, and it
/// would name a successor that is gone (the pin keeps what it ended too); and so, in turn,
/// is a memory that one left out was ended into. Each
/// predecessor is read once; a memory without predecessors costs nothing more. A pass may
/// so delete more memories than it set out to, and may empty a namespace whose last
/// memory was history.
async fn with_history(
    store: &dyn MemoryStore,
    items: Vec<MemoryItem>,
) -> Result<BTreeMap<Namespace, Vec<(String, DateTime<Utc>)>>> {
    let mut out: BTreeMap<Namespace, Vec<(String, DateTime<Utc>)>> = BTreeMap::new();
    if items.iter().all(|item| item.supersedes.is_empty()) {
        for item in items {
            out.entry(item.namespace)
                .or_default()
                .push((item.id, item.updated_at));
        }
        return Ok(out);
    }
    // Each memory read with the index of the victim whose history it is (a memory has one
    // successor, so the histories are apart).
    let mut seen: HashSet<(Namespace, String)> = HashSet::new();
    let mut kept_back: HashSet<usize> = HashSet::new();
    let mut levels: Vec<Vec<(MemoryItem, usize)>> = Vec::new();
    let mut level: Vec<(MemoryItem, usize)> = items.into_iter().zip(0..).collect();
    while !level.is_empty() {
        // Each predecessor wanted with its victim and the memory that names it.
        let mut wanted: BTreeMap<Namespace, Vec<(String, usize, String)>> = BTreeMap::new();
        let mut kept = Vec::with_capacity(level.len());
        for (item, victim) in level {
            if !seen.insert((item.namespace.clone(), item.id.clone())) {
                continue;
            }
            for id in &item.supersedes {
                if !seen.contains(&(item.namespace.clone(), id.clone())) {
                    wanted.entry(item.namespace.clone()).or_default().push((
                        id.clone(),
                        victim,
                        item.id.clone(),
                    ));
                }
            }
            kept.push((item, victim));
        }
        levels.push(kept);
        level = Vec::new();
        for (namespace, wanted) in wanted {
            // Every memory naming each predecessor (a stray one-way link beside the real
            // successor's).
            let mut named: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
            for (id, victim, by) in &wanted {
                named
                    .entry(id.as_str())
                    .or_default()
                    .push((*victim, by.as_str()));
            }
            let ids: Vec<String> = named.keys().map(|id| (*id).to_owned()).collect();
            for old in store.get_many(&namespace, &ids).await? {
                // History only where the older memory confirms the link (it ended into
                // the memory that names it), as `Memory::forget` reads links.
                let successor = old.ended.as_ref().and_then(memory_core::Ended::successor);
                let Some(&(victim, _)) = named
                    .get(old.id.as_str())
                    .and_then(|namers| namers.iter().find(|(_, by)| Some(*by) == successor))
                else {
                    continue;
                };
                if old.is_pinned() {
                    kept_back.insert(victim);
                    continue;
                }
                level.push((old, victim));
            }
        }
    }
    // A victim kept back keeps its successor's victim too, when that is being deleted (a
    // victim ended into another: a source chosen with its summary): each victim's memories
    // are looked at once.
    let mut of_victim: HashMap<usize, Vec<&MemoryItem>> = HashMap::new();
    let mut victim_of: HashMap<(&Namespace, &str), usize> = HashMap::new();
    for (item, victim) in levels.iter().flatten() {
        of_victim.entry(*victim).or_default().push(item);
        victim_of.insert((&item.namespace, item.id.as_str()), *victim);
    }
    let mut pending: Vec<usize> = kept_back.iter().copied().collect();
    while let Some(victim) = pending.pop() {
        for item in of_victim.get(&victim).into_iter().flatten() {
            let successor = item.ended.as_ref().and_then(memory_core::Ended::successor);
            if let Some(&next) = successor.and_then(|id| victim_of.get(&(&item.namespace, id)))
                && kept_back.insert(next)
            {
                pending.push(next);
            }
        }
    }
    drop((of_victim, victim_of));
    // The oldest history first: a store that deletes one memory at a time and stops
    // half-way leaves memories whose predecessors are gone, never a predecessor naming a
    // successor that is gone.
    for (item, victim) in levels.into_iter().rev().flatten() {
        if kept_back.contains(&victim) {
            continue;
        }
        out.entry(item.namespace)
            .or_default()
            .push((item.id, item.updated_at));
    }
    Ok(out)
}

async fn expire(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    ttl_secs: u64,
    now: DateTime<Utc>,
) -> Result<usize> {
    let ttl = Duration::seconds(i64::try_from(ttl_secs).unwrap_or(i64::MAX).min(1 << 40));
    let cutoff = now - ttl;
    let filter = MemoryFilter::new(namespace.exact()).with_time_range(None, Some(cutoff));
    let mut expired = store.list(&filter).await?;
    expired.retain(|item| !item.is_pinned());
    delete_all(store, expired).await
}

/// Deletes the `excess` oldest unpinned memories of `namespace`, read from the oldest a page
/// of `excess` at a time (each after the last of the one before), pinned ones skipped: one
/// page when none of the oldest is pinned, and never the whole namespace at once.
async fn evict_oldest(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    excess: usize,
) -> Result<usize> {
    let mut victims: Vec<MemoryItem> = Vec::new();
    let mut after: Option<ListPosition> = None;
    while victims.len() < excess {
        let mut filter = MemoryFilter::new(namespace.exact()).with_limit(excess);
        if let Some(position) = after.take() {
            filter = filter.after(position);
        }
        let page = store.list(&filter).await?;
        let last_page = page.len() < excess;
        after = page.last().map(ListPosition::of);
        let wanted = excess - victims.len();
        victims.extend(
            page.into_iter()
                .filter(|item| !item.is_pinned())
                .take(wanted),
        );
        if last_page {
            break;
        }
    }
    delete_all(store, victims).await
}

/// Deletes the `excess` unpinned memories of lowest [`memory_core::memory_value`].
async fn evict_lowest_value(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    config: &ValueBasedConfig,
    now: DateTime<Utc>,
    excess: usize,
) -> Result<usize> {
    let items = store.list(&MemoryFilter::new(namespace.exact())).await?;
    let entries = items
        .iter()
        .enumerate()
        .filter(|(_, item)| !item.is_pinned())
        .map(|(at, item)| {
            (
                memory_core::memory_value(item, now, config.decay_rate),
                item.created_at,
                (&*item.id, at),
            )
        });
    let victims: Vec<usize> = memory_core::backend::least_valuable(entries, excess)
        .into_iter()
        .map(|(_, at)| at)
        .collect();
    let mut items: Vec<Option<MemoryItem>> = items.into_iter().map(Some).collect();
    let victims = victims
        .into_iter()
        .filter_map(|at| items.get_mut(at).and_then(Option::take))
        .collect();
    delete_all(store, victims).await
}

/// The items of `namespace` that a recall-based pass would evict, least valuable first.
///
/// # Errors
/// Store errors.
pub async fn eviction_order(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
) -> Result<Vec<MemoryItem>> {
    let count = store.count(&namespace.exact()).await?;
    if count <= config.max_items {
        return Ok(Vec::new());
    }
    least_valuable_of(store, namespace, config, now, count - config.max_items).await
}

/// The `excess` least valuable items of `namespace`, least valuable first, from every item
/// and its statistics (for stores without their own [`MemoryStore::least_valuable`]).
async fn least_valuable_of(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
    excess: usize,
) -> Result<Vec<MemoryItem>> {
    let items = store.list(&MemoryFilter::new(namespace.exact())).await?;
    let candidates: Vec<usize> = (0..items.len())
        .filter(|at| !items[*at].is_pinned())
        .collect();
    let ids: Vec<String> = candidates.iter().map(|at| items[*at].id.clone()).collect();
    let stats = store.recall_stats_many(namespace, &ids).await?;
    let entries = candidates.into_iter().zip(stats).map(|(at, stats)| {
        let item = &items[at];
        let value = stats.unwrap_or_default().value(now, config);
        (value, item.created_at, (&*item.id, at))
    });
    let victims: Vec<usize> = memory_core::backend::least_valuable(entries, excess)
        .into_iter()
        .map(|(_, at)| at)
        .collect();
    let mut items: Vec<Option<MemoryItem>> = items.into_iter().map(Some).collect();
    Ok(victims
        .into_iter()
        .filter_map(|at| items.get_mut(at).and_then(Option::take))
        .collect())
}

async fn evict_least_valuable(
    store: &dyn MemoryStore,
    namespace: &Namespace,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
    excess: usize,
) -> Result<usize> {
    // The backend's own pass when it has one, else read every item and its statistics.
    // Pinned memories are never victims: when the backend's pass names some, it is asked
    // for more (the pinned ones named, and as many again), until `excess` unpinned ones are
    // known or the namespace has no more; its order is a total one, so the first `excess`
    // unpinned of a longer answer are those of the namespace without its pinned memories.
    let mut asked = excess;
    while let Some(ids) = store.least_valuable(namespace, asked, config, now).await? {
        let named = ids.len();
        let victims = store.get_many(namespace, &ids).await?;
        let pinned = victims.iter().filter(|item| item.is_pinned()).count();
        // (A memory deleted meanwhile is missing from `victims`.)
        if pinned == 0 || victims.len() - pinned >= excess || named < asked {
            let victims = victims
                .into_iter()
                .filter(|item| !item.is_pinned())
                .take(excess)
                .collect();
            return delete_all(store, victims).await;
        }
        asked = asked.saturating_add(pinned).saturating_mul(2);
    }
    let victims = least_valuable_of(store, namespace, config, now, excess).await?;
    delete_all(store, victims).await
}

/// The decayed memories a decay pass writes at a time.
const DECAY_BATCH: usize = 256;

/// Metadata key holding an item's decay state: `{"base": importance, "since": rfc3339}`.
pub const DECAY_METADATA_KEY: &str = "_decay";

/// Makes `item`'s decay start again from `base` at `since`: an importance set by hand or
/// raised by a merge decays from then, not from what an earlier pass had stored.
pub(crate) fn restart_decay(item: &mut MemoryItem, base: f32, since: DateTime<Utc>) {
    if let Some(metadata) = item.metadata.as_object_mut() {
        metadata.insert(
            DECAY_METADATA_KEY.to_owned(),
            serde_json::json!({"base": base, "since": since.to_rfc3339()}),
        );
    }
}

/// Applies importance decay to every item in `scope` but pinned memories and short-term
/// memories (conversation messages): after the grace period, importance is
/// `base × (1 − daily_rate)^(days − grace)` where `base` is the importance when the item was
/// last reinforced (created, or last recalled). Items that fall under `min_threshold` are
/// deleted when `forget_below_threshold` is set. Idempotent for a given `now`.
///
/// # Errors
/// [`memory_core::MemoryError::InvalidInput`] for an invalid config; store errors.
pub async fn decay(
    store: &dyn MemoryStore,
    scope: &Scope,
    config: &DecayConfig,
    now: DateTime<Utc>,
    forget_below_threshold: bool,
) -> Result<MaintenanceReport> {
    config.validate()?;
    let mut report = MaintenanceReport::default();
    // Deleted after the walk, with their history (see `with_history`): a predecessor read
    // later in the walk is then never updated after it was deleted.
    let mut forgotten: Vec<MemoryItem> = Vec::new();
    // Written a batch at a time: one transaction per batch, not one per memory.
    let mut edits: Vec<ConditionalSave> = Vec::new();
    for item in store.list(&MemoryFilter::new(scope.clone())).await? {
        // Pinned memories never decay; nor do conversation messages (short-term memory),
        // which their conversation's own window and capacity govern.
        if item.is_pinned() || item.kind == memory_core::MemoryKind::ShortTerm {
            continue;
        }
        let state = item.metadata.get(DECAY_METADATA_KEY);
        // Metadata a caller wrote may hold anything under this key: a base outside [0, 1]
        // is read as its nearest bound, so one such memory never stops a pass.
        let stored_base = state
            .and_then(|s| s.get("base"))
            .and_then(|b| b.as_f64())
            .filter(|b| b.is_finite())
            .map(|b| b.clamp(0.0, 1.0) as f32);
        let stored_since = state
            .and_then(|s| s.get("since"))
            .and_then(|s| s.as_str())
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .map(|s| s.with_timezone(&Utc));
        let reinforced = item.last_accessed.unwrap_or(item.created_at);
        let (base, since) = match (stored_base, stored_since) {
            (Some(base), Some(since)) if reinforced <= since => (base, since),
            // first pass, or recalled since the last pass: restart from today's importance
            _ => (item.importance, reinforced),
        };
        let decayed = config.decayed(base, since, now);
        if forget_below_threshold && decayed < config.min_threshold {
            forgotten.push(item);
            continue;
        }
        if (decayed - item.importance).abs() > 1e-6 {
            let read_at = item.updated_at;
            let mut updated = item.clone().revised(read_at);
            updated.importance = decayed;
            updated.metadata[DECAY_METADATA_KEY] =
                serde_json::json!({"base": base, "since": since.to_rfc3339()});
            // Written only over the copy listed: a memory changed since (an edit, a pin) or
            // forgotten is left as it is now, for the next pass.
            edits.push(ConditionalSave::update(updated, read_at));
            if edits.len() == DECAY_BATCH {
                report.decayed += write_each(store, std::mem::take(&mut edits)).await?;
            }
        }
    }
    report.decayed += write_each(store, edits).await?;
    report.evicted += delete_all(store, forgotten).await?;
    Ok(report)
}
