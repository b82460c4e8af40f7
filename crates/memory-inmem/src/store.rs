//! `InMemoryStore`: the default [`MemoryStore`], indexed for listing and full-text search.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use foldhash::{HashMap, HashMapExt};
use memory_core::backend::listing_order;
use memory_core::search::MEMORY_FIELD_WEIGHTS;
use memory_core::text::Analyzer;
use memory_core::{
    MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, RecallEvent, RecallStats, Result,
    Scope, SearchHit, SearchQuery, TermPositions,
};

mod filter;
mod ids;
mod listing;
#[cfg(test)]
mod tests;

use self::filter::{KIND, LASTING, LIVE, SlotTest, slab_filter, slot_flags};
use self::ids::IdIndex;
use crate::bm25::Bm25Index;
use crate::registry::{Registry, read, write};
use crate::vectors::Vectors;

/// The default [`MemoryStore`]: in process memory, one shard per namespace.
///
/// Each shard (behind its own lock, found through a `DashMap`) holds the items by id, a
/// time index ordered by `(created_at, id)` and a BM25F inverted index over content with tags
/// (weight 1) and the memory's context (weight [`CONTEXT_FIELD_WEIGHT`](memory_core::CONTEXT_FIELD_WEIGHT)).
/// Writers in different namespaces never contend.
///
/// Costs, with `n` items in the namespace and `m` results:
/// - `save`, `delete`: `O(log n + terms of the item)`.
/// - `get`: `O(1)`.
/// - `list`: `O(log n + m)` for scope, time range and limit (each namespace of a subtree
///   scope is merged), and for a fact key over that fact's versions alone; attribute
///   filters (kind, tags, metadata, id prefix, time view) skip the non-matching entries.
/// - `search`: at most `O(Σ postings of the query terms)`, usually far less: MaxScore pruning
///   skips documents that hold only frequent terms once `k` better ones are known, and
///   stretches of documents whose blocks of postings cannot reach the `k`-th score
///   (block-max), or a dense pass on small shards; BM25 statistics are per namespace.
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

/// Free slots below which a shard is never compacted (see [`Shard::compact`]).
const COMPACT_AT: usize = 64;

#[derive(Debug)]
struct Shard {
    /// id -> slot in `entries`.
    by_id: IdIndex,
    by_time: BTreeSet<(DateTime<Utc>, String)>,
    /// fact key -> the `(created_at, id)` of the items stating it: a fact's versions are
    /// listed without a scan of the namespace.
    by_fact_key: HashMap<String, BTreeSet<(DateTime<Utc>, String)>>,
    /// The items by slot (a slab: the search index scores slots, so a hit needs no hashing).
    /// A new item takes a new slot at the end, so it joins the end of every posting list
    /// (a freed slot reused would insert in the middle of each, moving the rest); when half
    /// the slots are free, [`Shard::compact`] renumbers the live ones.
    entries: Vec<Option<Entry>>,
    /// Free slots in `entries`.
    free: usize,
    index: Bm25Index<2>,
    /// The items' embeddings by slot, contiguous (derived: follows `entries`).
    vectors: Vectors,
    /// One byte per slot (derived: follows `entries`) with what the commonest search
    /// filters ask: whether the slot holds an item, its kind, and whether it lasts (no end,
    /// no validity end), so every recall of what is current and every self-match search
    /// of a write decides on a dense array instead of reading each candidate's entry, a
    /// cache miss per scored document once a namespace outgrows the cache ([`SlotTest`]).
    flags: Vec<u8>,
}

#[derive(Debug)]
struct Entry {
    /// Shared with search results; a write replaces the `Arc` (copy on write).
    item: Arc<MemoryItem>,
    /// The item's kind and creation time, copied here so a search filters on the slab alone
    /// (recall feedback never changes them; an update replaces the whole entry).
    kind: MemoryKind,
    created_at: DateTime<Utc>,
    /// The item's validity and end, copied for the same reason: a recall of what is current
    /// (or held at a time) filters every candidate on them.
    valid_from: Option<DateTime<Utc>>,
    valid_until: Option<DateTime<Utc>>,
    ended_at: Option<DateTime<Utc>>,
    stats: RecallStats,
    slot: u32,
}

/// Reads, for every hit, the fields of its item that sharing it and ranking it read next
/// (the reference count, the times and counts of its signals, whether it ended or conflicts,
/// its fact key and metadata), in one pass of independent loads. Once a namespace outgrows
/// the cache these are misses; read in this pass they overlap, where the locked increment
/// of each `Arc::clone` would otherwise wait for its own before the next could start.
fn warm<'e>(best: impl Iterator<Item = &'e Entry>) {
    let mut seen = 0usize;
    for entry in best {
        let item = &*entry.item;
        seen ^= Arc::strong_count(&entry.item)
            ^ item.created_at.timestamp_subsec_nanos() as usize
            ^ item.updated_at.timestamp_subsec_nanos() as usize
            ^ item.access_count as usize
            ^ item.conflicts_with.len()
            ^ usize::from(item.ended.is_some())
            ^ item.fact_key.as_ref().map_or(0, String::len)
            ^ usize::from(item.metadata.is_object())
            ^ item.id.len();
    }
    std::hint::black_box(seen);
}

/// Whether the search index holds `a` and `b` alike: the same text in every field, and
/// the content's terms kept in order for both or for neither (see [`Shard::insert`]).
fn indexed_alike(a: &MemoryItem, b: &MemoryItem) -> bool {
    let [a_content, a_context] = a.search_fields();
    let [b_content, b_context] = b.search_fields();
    matches!(a_content, Cow::Borrowed(_)) == matches!(b_content, Cow::Borrowed(_))
        && a_content == b_content
        && a_context == b_context
}

impl Entry {
    /// The entry of `item` in `slot`, with its recall statistics.
    fn new(item: MemoryItem, stats: RecallStats, slot: u32) -> Self {
        Self {
            kind: item.kind,
            created_at: item.created_at,
            valid_from: item.valid_from,
            valid_until: item.valid_until,
            ended_at: item.ended.as_ref().map(|ended| ended.at),
            item: Arc::new(item),
            stats,
            slot,
        }
    }

    /// Counts one recall: the statistics, and the item's access count and last access time
    /// (copied on write if a search result still shares the item).
    fn record_recall(&mut self, score: f32, at: DateTime<Utc>) {
        // As the SQL stores keep it: a time past the storable range at its bound (the item
        // would otherwise hold a `last_accessed` its own checks refuse).
        let at = memory_core::storable_time(at);
        self.stats.record(score, at);
        let item = Arc::make_mut(&mut self.item);
        item.access_count = item
            .access_count
            .saturating_add(1)
            .min(memory_core::MAX_ACCESS_COUNT);
        item.last_accessed = Some(item.last_accessed.map_or(at, |last| last.max(at)));
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self {
            by_id: IdIndex::default(),
            by_time: BTreeSet::new(),
            by_fact_key: HashMap::new(),
            entries: Vec::new(),
            free: 0,
            index: Bm25Index::new(Analyzer::default(), MEMORY_FIELD_WEIGHTS),
            vectors: Vectors::default(),
            flags: Vec::new(),
        }
    }
}

impl Shard {
    fn insert(&mut self, mut item: MemoryItem) {
        // -0.0 is stored as 0.0, as on every backend (SQLite cannot keep the sign).
        item.importance += 0.0;
        item.credibility += 0.0;
        if let Some(slot) = self.by_id.get(&self.entries, &item.id)
            && let Some(Some(old)) = self.entries.get(slot as usize)
            && indexed_alike(&old.item, &item)
        {
            self.replace(slot, item);
            return;
        }
        let stats = match self.remove(&item.id) {
            Some(old) => {
                // Accesses only move forward (see `MemoryStore::save`).
                item.access_count = item.access_count.max(old.item.access_count);
                item.last_accessed = item.last_accessed.max(old.item.last_accessed);
                old.stats
            }
            None => RecallStats::default(),
        };
        if self.free >= COMPACT_AT.max(self.entries.len() / 2) {
            self.compact();
        }
        self.entries.push(None);
        self.flags.push(0);
        let slot = (self.entries.len() - 1) as u32;
        let [content, context] = item.search_fields();
        // The content's terms are kept in order when the field is the content alone (no
        // tags, no fact key), so a recall finds its terms' positions without reading the text.
        if matches!(content, Cow::Borrowed(_)) {
            self.index
                .insert_ordered(slot, &item.id, [&content, &context]);
        } else {
            self.index.insert(slot, &item.id, [&content, &context]);
        }
        self.vectors.set(slot, item.embedding.as_deref());
        self.by_time.insert((item.created_at, item.id.clone()));
        if let Some(key) = &item.fact_key {
            self.by_fact_key
                .entry(key.clone())
                .or_default()
                .insert((item.created_at, item.id.clone()));
        }
        let entry = Entry::new(item, stats, slot);
        self.flags[slot as usize] = slot_flags(&entry);
        self.entries[slot as usize] = Some(entry);
        self.by_id.insert(&self.entries, slot);
    }

    /// Puts `item` in `slot`, in place of the stored item of its id, whose indexed text
    /// (every field as [`MemoryItem::search_fields`] gives it) is the same: the search index
    /// keeps the slot's postings, and only what the item's other fields derive (its
    /// embedding's row, its flags, its place by creation time and by fact key) is updated.
    /// A maintenance pass rewrites every memory's importance: re-indexing each would shift
    /// the postings of every term it holds, `O(n)` for a word every memory holds, and the
    /// pass `O(n²)`.
    fn replace(&mut self, slot: u32, mut item: MemoryItem) {
        let Some(Some(entry)) = self.entries.get_mut(slot as usize) else {
            return;
        };
        let old = &*entry.item;
        // Accesses only move forward (see `MemoryStore::save`).
        item.access_count = item.access_count.max(old.access_count);
        item.last_accessed = item.last_accessed.max(old.last_accessed);
        if item.embedding != old.embedding {
            self.vectors.set(slot, item.embedding.as_deref());
        }
        if item.created_at != old.created_at || item.fact_key != old.fact_key {
            let was = (old.created_at, old.id.clone());
            let is = (item.created_at, item.id.clone());
            if let Some(fact_key) = &old.fact_key
                && let Some(versions) = self.by_fact_key.get_mut(fact_key)
            {
                versions.remove(&was);
                if versions.is_empty() {
                    self.by_fact_key.remove(fact_key);
                }
            }
            if let Some(fact_key) = &item.fact_key {
                self.by_fact_key
                    .entry(fact_key.clone())
                    .or_default()
                    .insert(is.clone());
            }
            self.by_time.remove(&was);
            self.by_time.insert(is);
        }
        *entry = Entry::new(item, entry.stats, slot);
        self.flags[slot as usize] = slot_flags(entry);
    }

    /// Renumbers the live slots in order (the slab, the id map, the search index and the
    /// embedding rows), freeing the rest: one pass over each, amortised over the removals
    /// that freed half the slots.
    fn compact(&mut self) {
        let mut map = vec![u32::MAX; self.entries.len()];
        let mut live = 0u32;
        for (old, entry) in self.entries.iter().enumerate() {
            if entry.is_some() {
                map[old] = live;
                live += 1;
            }
        }
        self.entries = std::mem::take(&mut self.entries)
            .into_iter()
            .flatten()
            .map(|mut entry| {
                entry.slot = map[entry.slot as usize];
                Some(entry)
            })
            .collect();
        self.flags = self.entries.iter().flatten().map(slot_flags).collect();
        self.by_id.remap(&map);
        self.index.remap(&map, live as usize);
        self.vectors.remap(&map);
        self.free = 0;
    }

    fn remove(&mut self, id: &str) -> Option<Entry> {
        let entry = self.detach(id)?;
        self.index.remove(entry.slot);
        Some(entry)
    }

    /// Removes the memories `ids`, the search index's postings in one pass over their
    /// terms; returns how many existed.
    fn remove_many(&mut self, ids: &[String]) -> usize {
        let slots: Vec<u32> = ids
            .iter()
            .filter_map(|id| self.detach(id).map(|entry| entry.slot))
            .collect();
        self.index.remove_many(&slots);
        slots.len()
    }

    /// Removes memory `id` from everything but the search index.
    fn detach(&mut self, id: &str) -> Option<Entry> {
        let slot = self.by_id.remove(&self.entries, id)?;
        let entry = self.entries.get_mut(slot as usize).and_then(Option::take)?;
        if let Some(flags) = self.flags.get_mut(slot as usize) {
            *flags = 0;
        }
        let key = (entry.item.created_at, entry.item.id.clone());
        if let Some(fact_key) = &entry.item.fact_key
            && let Some(versions) = self.by_fact_key.get_mut(fact_key)
        {
            versions.remove(&key);
            if versions.is_empty() {
                self.by_fact_key.remove(fact_key);
            }
        }
        self.by_time.remove(&key);
        self.vectors.clear(entry.slot);
        self.free += 1;
        Some(entry)
    }

    fn entry(&self, id: &str) -> Option<&Entry> {
        let slot = self.by_id.get(&self.entries, id)?;
        self.entries.get(slot as usize).and_then(Option::as_ref)
    }

    fn entry_mut(&mut self, id: &str) -> Option<&mut Entry> {
        let slot = self.by_id.get(&self.entries, id)?;
        self.entries.get_mut(slot as usize).and_then(Option::as_mut)
    }

    fn len(&self) -> usize {
        self.by_id.len()
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
            .map(|(_, shard)| read(shard).len())
            .sum()
    }
}

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl MemoryStore for InMemoryStore {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        item.validate()?;
        let shard = self.registry.get_or_create(&item.namespace);
        write(&shard).insert(item);
        Ok(())
    }

    /// Answered from the terms each memory's content was indexed with, kept in order: for a
    /// memory with tags or a fact key (whose indexed text is more than its content), and for
    /// one not found, `None`.
    async fn term_positions(
        &self,
        memories: &[(&Namespace, &str)],
        terms: &[String],
    ) -> Result<Vec<Option<TermPositions>>> {
        // The terms' ids are a shard's own: looked up once for each run of memories of one
        // namespace (a recall's hits are mostly one), under the one read lock.
        let mut out = Vec::with_capacity(memories.len());
        let mut at = 0;
        while let Some((namespace, _)) = memories.get(at) {
            let run = &memories[at..];
            let run = &run[..run.iter().take_while(|(of, _)| of == namespace).count()];
            at += run.len();
            let Some(shard) = self.registry.get(namespace) else {
                out.extend(run.iter().map(|_| None));
                continue;
            };
            let shard = read(&shard);
            let sought = shard.index.sought(terms);
            out.extend(run.iter().map(|(_, id)| {
                let slot = shard.by_id.get(&shard.entries, id)?;
                shard.index.term_positions(slot, &sought)
            }));
        }
        Ok(out)
    }

    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
        Ok(self
            .registry
            .get(namespace)
            .and_then(|shard| read(&shard).entry(id).map(|entry| (*entry.item).clone())))
    }

    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        Ok(self
            .registry
            .get(namespace)
            .is_some_and(|shard| write(&shard).remove(id).is_some()))
    }

    async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
        Ok(self
            .registry
            .get(namespace)
            .map_or(0, |shard| write(&shard).remove_many(ids)))
    }

    async fn delete_many_if(
        &self,
        namespace: &Namespace,
        read: &[(String, DateTime<Utc>)],
    ) -> Result<Option<usize>> {
        let Some(shard) = self.registry.get(namespace) else {
            return Ok(Some(0));
        };
        // Compared and removed under one lock: no write comes between them.
        let mut shard = write(&shard);
        let changed = read.iter().any(|(id, at)| {
            shard
                .entry(id)
                .is_some_and(|entry| entry.item.updated_at != *at)
        });
        if changed {
            return Ok(None);
        }
        let ids: Vec<String> = read.iter().map(|(id, _)| id.clone()).collect();
        Ok(Some(shard.remove_many(&ids)))
    }

    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let limit = filter.limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let shards = self.registry.shards(&filter.scope);
        let single = shards.len() == 1;
        for (namespace, shard) in shards {
            out.extend(read(&shard).list(&namespace, filter, limit));
        }
        if !single {
            out.sort_by(|a, b| listing_order(a, b, filter.newest_first));
            out.truncate(limit);
        }
        Ok(out)
    }

    /// The items shared, not copied: one read of each namespace's shard per listing.
    async fn list_many(&self, filters: &[MemoryFilter]) -> Result<Vec<Vec<Arc<MemoryItem>>>> {
        Ok(filters
            .iter()
            .map(|filter| {
                let limit = filter.limit.unwrap_or(usize::MAX);
                let shards = self.registry.shards(&filter.scope);
                let single = shards.len() == 1;
                let mut out: Vec<Arc<MemoryItem>> = Vec::new();
                for (namespace, shard) in shards {
                    out.extend(read(&shard).list_shared(&namespace, filter, limit).cloned());
                }
                if !single {
                    out.sort_by(|a, b| listing_order(a, b, filter.newest_first));
                    out.truncate(limit);
                }
                out
            })
            .collect())
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let filter = &query.filter;
        let test = SlotTest::of(filter);
        let passes = slab_filter(filter);
        let shards = self.registry.shards(&filter.scope);
        let single = shards.len() == 1;
        let mut out: Vec<SearchHit> = Vec::new();
        let mut terms: Option<std::borrow::Cow<'_, [String]>> = None;
        for (_, shard) in shards {
            let shard = read(&shard);
            let terms: &[String] = terms.get_or_insert_with(|| query.analysed_terms());
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let entry_at = |slot: u32| shard.entries.get(slot as usize).and_then(Option::as_ref);
            let accept = |slot: u32| match test {
                SlotTest::Flags { kinds, current } => {
                    let flags = shard.flags.get(slot as usize).copied().unwrap_or(0);
                    flags & LIVE != 0
                        && kinds & (1 << (flags & KIND)) != 0
                        && (!current || flags & LASTING != 0 || entry_at(slot).is_some_and(passes))
                }
                SlotTest::Entry => entry_at(slot).is_some_and(passes),
            };
            let id_of = |slot| entry_at(slot).map(|e| e.item.id.as_str());
            // The rarest terms borrowed from `terms`, not copied.
            let rarest: Option<Vec<&str>> = query.rarest.map(|n| {
                memory_core::search::rarest_terms(terms, n, |_, term| shard.index.doc_freq(term))
                    .into_iter()
                    .map(|index| terms[index].as_str())
                    .collect()
            });
            let best = match &rarest {
                Some(rarest) => shard.index.top_k(rarest, query.top_k, accept, id_of),
                None => shard.index.top_k(terms, query.top_k, accept, id_of),
            };
            // Where the hits' terms are, looked up only when asked (empty otherwise).
            let own: Vec<bool> = if query.own_words {
                let slots = best.iter().map(|(_, slot)| *slot);
                match &rarest {
                    Some(rarest) => shard.index.first_field_holds(rarest, slots),
                    None => shard.index.first_field_holds(terms, slots),
                }
            } else {
                Vec::new()
            };
            let mut entries: Vec<(f32, Option<bool>, &Entry)> = Vec::with_capacity(best.len());
            entries.extend(
                best.into_iter()
                    .enumerate()
                    .filter_map(|(at, (score, slot))| {
                        entry_at(slot).map(|entry| (score, own.get(at).copied(), entry))
                    }),
            );
            warm(entries.iter().map(|(_, _, entry)| *entry));
            out.extend(entries.into_iter().map(|(score, own, entry)| SearchHit {
                in_own_words: own,
                ..SearchHit::new(Arc::clone(&entry.item), score)
            }));
        }
        if !single {
            out.sort_by(|a, b| {
                b.score
                    .total_cmp(&a.score)
                    .then_with(|| a.item.id.cmp(&b.item.id))
            });
            out.truncate(query.top_k);
        }
        Ok(out)
    }

    /// Compares in place under each shard's read lock: no item is copied, and only the
    /// `top_k` best of each shard are shared out (`O(n·d)` for `n` embedded items of length
    /// `d`, plus `O(n log k)` to select).
    async fn search_similar(
        &self,
        filter: &MemoryFilter,
        vector: &[f32],
        top_k: usize,
    ) -> Result<Vec<SearchHit>> {
        memory_core::backend::validate_embedding(vector)?;
        if top_k == 0 {
            return Ok(Vec::new());
        }
        let best_first = |a: &(f32, &Entry), b: &(f32, &Entry)| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.item.id.cmp(&b.1.item.id))
                .then_with(|| a.1.item.namespace.cmp(&b.1.item.namespace))
        };
        let query = memory_core::backend::CosineQuery::new(vector);
        let passes = slab_filter(filter);
        let mut out: Vec<SearchHit> = Vec::new();
        for (_, shard) in self.registry.shards(&filter.scope) {
            let shard = read(&shard);
            let entry_at = |slot: u32| shard.entries.get(slot as usize).and_then(Option::as_ref);
            let mut scored: Vec<(f32, &Entry)> = if shard.vectors.covers(vector.len()) {
                // Contiguous rows: the scan streams memory.
                shard
                    .vectors
                    .scores(&query)
                    .filter_map(|(slot, score)| Some((score, entry_at(slot)?)))
                    .filter(|(_, entry)| passes(entry))
                    .collect()
            } else {
                // Some items hold embeddings of the query's length outside the rows.
                shard
                    .entries
                    .iter()
                    .flatten()
                    .filter_map(|entry| {
                        let embedding = entry.item.embedding.as_deref()?;
                        let score = query.similarity(embedding)?;
                        passes(entry).then_some((score, entry))
                    })
                    .collect()
            };
            if scored.len() > top_k {
                scored.select_nth_unstable_by(top_k - 1, best_first);
                scored.truncate(top_k);
            }
            out.extend(
                scored
                    .into_iter()
                    .map(|(score, entry)| SearchHit::new(Arc::clone(&entry.item), score)),
            );
        }
        out.sort_by(SearchHit::best_first);
        out.truncate(top_k);
        Ok(out)
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut removed = 0;
        for (_, shard) in self.registry.shards(scope) {
            let mut shard = write(&shard);
            removed += shard.len();
            *shard = Shard::default();
        }
        Ok(removed)
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        Ok(self
            .registry
            .shards(scope)
            .into_iter()
            .filter(|(_, shard)| read(shard).len() > 0)
            .map(|(namespace, _)| namespace)
            .collect())
    }

    async fn update(&self, item: MemoryItem) -> Result<()> {
        item.validate()?;
        let missing = || memory_core::MemoryError::not_found("memory", &item.namespace, &item.id);
        let shard = self.registry.get(&item.namespace).ok_or_else(missing)?;
        let mut shard = write(&shard);
        if shard.entry(&item.id).is_none() {
            return Err(missing());
        }
        shard.insert(item);
        Ok(())
    }

    async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
        item.validate()?;
        let Some(shard) = self.registry.get(&item.namespace) else {
            return Ok(false);
        };
        // The comparison and the write under one lock: no write comes between them.
        let mut shard = write(&shard);
        if shard
            .entry(&item.id)
            .is_none_or(|entry| entry.item.updated_at != read_at)
        {
            return Ok(false);
        }
        shard.insert(item);
        Ok(true)
    }

    async fn save_many_if(
        &self,
        items: Vec<MemoryItem>,
        expected: &[(usize, DateTime<Utc>)],
    ) -> Result<bool> {
        memory_core::backend::validate_expected(&items, expected)?;
        // A memory expected in a namespace that holds none has been deleted.
        if expected
            .iter()
            .any(|(at, _)| self.registry.get(&items[*at].namespace).is_none())
        {
            return Ok(false);
        }
        // Every namespace written locked at once, in namespace order (two such writes lock
        // in the same order, so neither waits on the other forever): the comparisons and the
        // writes see no other write between them.
        let namespaces: std::collections::BTreeSet<Namespace> =
            items.iter().map(|item| item.namespace.clone()).collect();
        let shards: Vec<(Namespace, _)> = namespaces
            .into_iter()
            .map(|namespace| {
                let shard = self.registry.get_or_create(&namespace);
                (namespace, shard)
            })
            .collect();
        let mut locked: Vec<_> = shards.iter().map(|(_, shard)| write(shard)).collect();
        let position = |namespace: &Namespace| {
            shards
                .binary_search_by(|(held, _)| held.cmp(namespace))
                .ok()
        };
        for (at, read_at) in expected {
            let item = &items[*at];
            let unchanged = position(&item.namespace)
                .and_then(|held| locked[held].entry(&item.id))
                .is_some_and(|entry| entry.item.updated_at == *read_at);
            if !unchanged {
                return Ok(false);
            }
        }
        for item in items {
            if let Some(held) = position(&item.namespace) {
                locked[held].insert(item);
            }
        }
        Ok(true)
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
            .map(|(_, shard)| read(shard).len())
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
            && let Some(entry) = write(&shard).entry_mut(id)
        {
            entry.record_recall(score, at);
        }
        Ok(())
    }

    /// One registry lookup and one write lock per run of consecutive events in the same
    /// namespace, instead of one per event. A recall's events for one namespace come
    /// together, so a batch usually takes each shard's lock a few times rather than once per
    /// event, and searches on it wait for a few short writes, not for a queue of them.
    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        for run in events.chunk_by(|a, b| a.namespace == b.namespace) {
            let Some(shard) = self.registry.get(&run[0].namespace) else {
                continue;
            };
            let mut shard = write(&shard);
            for event in run {
                if let Some(entry) = shard.entry_mut(&event.id) {
                    entry.record_recall(event.score, event.at);
                }
            }
        }
        Ok(())
    }

    /// A batch is a few hash lookups under each namespace's lock.
    fn records_recalls_inline(&self) -> bool {
        true
    }

    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        Ok(self
            .registry
            .get(namespace)
            .and_then(|shard| read(&shard).entry(id).map(|entry| entry.stats)))
    }

    /// Under one read lock.
    async fn recall_stats_many(
        &self,
        namespace: &Namespace,
        ids: &[String],
    ) -> Result<Vec<Option<RecallStats>>> {
        let Some(shard) = self.registry.get(namespace) else {
            return Ok(vec![None; ids.len()]);
        };
        let shard = read(&shard);
        Ok(ids
            .iter()
            .map(|id| shard.entry(id).map(|entry| entry.stats))
            .collect())
    }

    /// One pass over the namespace's entries under its read lock, a bounded heap of `count`,
    /// no copies of the items: `O(n log count)`.
    async fn least_valuable(
        &self,
        namespace: &Namespace,
        count: usize,
        config: &memory_core::RecallBasedConfig,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>> {
        let Some(shard) = self.registry.get(namespace) else {
            return Ok(Some(Vec::new()));
        };
        let shard = read(&shard);
        let entries = shard.entries.iter().flatten().map(|entry| {
            (
                entry.stats.value(now, config),
                entry.item.created_at,
                entry.item.id.as_str(),
            )
        });
        Ok(Some(
            memory_core::backend::least_valuable(entries, count)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ))
    }

    async fn set_recall_stats(
        &self,
        namespace: &Namespace,
        id: &str,
        stats: RecallStats,
    ) -> Result<()> {
        // Checked as the SQL stores check them, before the id is looked up.
        stats.validate()?;
        if let Some(shard) = self.registry.get(namespace)
            && let Some(entry) = write(&shard).entry_mut(id)
        {
            entry.stats = stats;
        }
        Ok(())
    }
}
