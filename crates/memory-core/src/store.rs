//! The `MemoryStore` trait: where memory items live.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{
    MemoryError, MemoryFilter, MemoryItem, Namespace, RecallStats, Result, Scope, SearchHit,
    SearchQuery,
};

/// One recall event, for [`MemoryStore::record_recalls`].
#[derive(Clone, Debug, PartialEq)]
pub struct RecallEvent {
    /// The namespace of the recalled item.
    pub namespace: Namespace,
    /// The recalled item's id.
    pub id: String,
    /// The score it was returned with, in `[0, 1]`.
    pub score: f32,
    /// When it was recalled.
    pub at: DateTime<Utc>,
}

/// One write of [`MemoryStore::save_each_if`]: items saved together, all of them or none,
/// only when every stored item `expected` names is still as read (the arguments of
/// [`MemoryStore::save_many_if`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionalSave {
    /// The items saved.
    pub items: Vec<MemoryItem>,
    /// An index into `items`, and the `updated_at` the stored item of that namespace and id
    /// was read with.
    pub expected: Vec<(usize, DateTime<Utc>)>,
}

impl ConditionalSave {
    /// The write of [`MemoryStore::update_if`]: `item` replaces the stored item of its
    /// namespace and id only when that is still as read at `read_at` (and exists).
    #[must_use]
    pub fn update(item: MemoryItem, read_at: DateTime<Utc>) -> Self {
        Self {
            items: vec![item],
            expected: vec![(0, read_at)],
        }
    }
}

/// Where a query's terms stand in one memory's content, by position: `(position, term)`
/// pairs, `term` an index into the query's terms ([`MemoryStore::term_positions`]).
pub type TermPositions = Vec<(u32, u32)>;

/// Storage of [`MemoryItem`]s, keyed by `(namespace, id)`.
///
/// Contracts every implementation keeps (the [`testsuite`](crate::testsuite) checks them):
/// - Every read takes a namespace or a [`Scope`] and never returns a record outside it.
/// - [`list`](Self::list) orders by `created_at`, then `id` (oldest first unless the filter
///   asks for newest first), and applies `limit` after filtering.
/// - Writes validate the item and return [`MemoryError::InvalidInput`] without storing
///   anything when it is invalid.
/// - A deleted item is gone from every read, list and search at once.
/// - A write that replaces an item keeps its recall statistics, and its access statistics
///   where the stored ones are further along: [`MemoryItem::access_count`] the larger of
///   the stored and the given, [`MemoryItem::last_accessed`] the later. A read-modify-write
///   (decay, compression, pinning, an edit) then never undoes a recall counted between its
///   read and its write; a write can still raise them (an import of a busier copy).
#[async_trait]
pub trait MemoryStore: Send + Sync + Debug + 'static {
    /// Inserts `item`, or replaces the item with the same namespace and id (keeping its
    /// recall statistics, and its access statistics where they are further along).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] when [`MemoryItem::validate`] fails; backend errors.
    async fn save(&self, item: MemoryItem) -> Result<()>;

    /// The item `id` of `namespace`, if it exists.
    ///
    /// # Errors
    /// Backend errors only; a missing item is `Ok(None)`.
    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>>;

    /// Deletes the item and its recall statistics. Returns whether it existed.
    ///
    /// # Errors
    /// Backend errors only.
    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool>;

    /// The items matching `filter`, ordered by `(created_at, id, namespace)` (reversed with
    /// [`newest_first`](MemoryFilter::newest_first)), at most `filter.limit`. A large scope
    /// is read a page at a time with [`MemoryFilter::after`], which a backend should answer
    /// by seeking its time index, not by reading the memories before the position.
    ///
    /// # Errors
    /// Backend errors only.
    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>>;

    /// Full-text search: the best `query.top_k` items matching `query.filter` for
    /// `query.text`, best first, ties broken by id. Query text is never interpreted as
    /// syntax; text with no searchable word returns no hits.
    ///
    /// A backend that scores by field should tell each hit's
    /// [`in_own_words`](SearchHit::in_own_words): whether a term it was scored by is in its
    /// own words, not only in the context indexed beside it. A recall weighs a memory found
    /// through its context alone a little less, and analyses the text of a hit whose
    /// backend did not tell.
    ///
    /// # Errors
    /// Backend errors only.
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>>;

    /// Several listings, each answered as [`list`](Self::list) answers it, in order, with
    /// the items shared. A backend with a fixed cost per call (a transaction, a switch to a
    /// blocking thread, a round trip) answers them together, and one that holds its items
    /// shared hands them out without copying them; the default asks them one after another.
    /// A recall reads the conversation around its best hits with it.
    ///
    /// # Errors
    /// Backend errors only; then no result is returned.
    async fn list_many(&self, filters: &[MemoryFilter]) -> Result<Vec<Vec<Arc<MemoryItem>>>> {
        let mut out = Vec::with_capacity(filters.len());
        for filter in filters {
            out.push(self.list(filter).await?.into_iter().map(Arc::new).collect());
        }
        Ok(out)
    }

    /// Several searches, each answered as [`search`](Self::search) answers it, in order. A
    /// backend with a fixed cost per call (a transaction, a switch to a blocking thread, a
    /// round trip) answers them together; the default asks them one after another. A batch
    /// of new memories (`Memory::remember_many`) looks for their duplicates and rivals with
    /// it.
    ///
    /// # Errors
    /// Backend errors only; then no result is returned.
    async fn search_many(&self, queries: &[SearchQuery]) -> Result<Vec<Vec<SearchHit>>> {
        let mut out = Vec::with_capacity(queries.len());
        for query in queries {
            out.push(self.search(query).await?);
        }
        Ok(out)
    }

    /// Where `terms` stand in the content of each memory of `memories` (namespace and id),
    /// read from the store's own index: for each, in order, `Some` list of `(position,
    /// term)` pairs by position, or `None` when the store cannot tell without reading the
    /// text (no such memory, or no forward index). `position` counts the content's terms as
    /// [`Analyzer::default`](crate::text::Analyzer::default) reads them (stop words not
    /// counted) from 0; `term` is the index in `terms` of the term found there (the first,
    /// when `terms` repeats one). A `Some` list must be exactly
    /// [`Analyzer::term_positions`](crate::text::Analyzer::term_positions) of the memory's
    /// `content` read by the default analyzer.
    ///
    /// A recall reorders its best few results by how much of the query each one's text
    /// holds and how close together (memory-retrieve's `TermReranker` measure), and a
    /// recall naming a time by its distance from now ("two weeks ago") asks which memories
    /// hold that expression as written; with this answer it does not analyse their text
    /// again. The default tells nothing, so the text is analysed; the in-memory store keeps
    /// each memory's terms in order and answers from them.
    ///
    /// # Errors
    /// Backend errors only; a recall then analyses the text instead.
    async fn term_positions(
        &self,
        memories: &[(&Namespace, &str)],
        terms: &[String],
    ) -> Result<Vec<Option<TermPositions>>> {
        let _ = terms;
        Ok(vec![None; memories.len()])
    }

    /// Deletes every item (and its statistics) in `scope`. Returns how many were deleted.
    ///
    /// # Errors
    /// Backend errors only.
    async fn clear(&self, scope: &Scope) -> Result<usize>;

    /// The distinct namespaces in `scope` that hold at least one item, sorted.
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>>;

    /// Replaces an existing item (keeping its recall statistics, and its access statistics
    /// where they are further along, as [`save`](Self::save) does).
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when no item has this namespace and id;
    /// [`MemoryError::InvalidInput`] for an invalid item.
    async fn update(&self, item: MemoryItem) -> Result<()> {
        item.validate()?;
        if self.get(&item.namespace, &item.id).await?.is_none() {
            return Err(MemoryError::not_found("memory", &item.namespace, &item.id));
        }
        self.save(item).await
    }

    /// Replaces the stored item of `item`'s namespace and id, as [`update`](Self::update)
    /// does, only when the stored item's `updated_at` is still `read_at`: the `updated_at`
    /// of the copy the change was made from. Returns `false`, writing nothing, when the item
    /// was changed or deleted since that copy was read.
    ///
    /// This is how a read-modify-write edit (a pin, a compression, a decay pass) keeps a
    /// concurrent write to the same memory: each edit writes a later `updated_at` than the
    /// one it read ([`MemoryItem::revised`]), so of two edits made from one copy only the
    /// first is written, and the second reads again or leaves the memory alone. The
    /// default reads, compares and updates in three steps, which is exact only when nothing
    /// else writes between them; every backend of this workspace does it in one step (under
    /// the shard's lock, in one transaction, in one conditional `UPDATE`).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for an invalid item; backend errors.
    async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
        item.validate()?;
        match self.get(&item.namespace, &item.id).await? {
            Some(stored) if stored.updated_at == read_at => match self.update(item).await {
                Ok(()) => Ok(true),
                Err(MemoryError::NotFound { .. }) => Ok(false),
                Err(error) => Err(error),
            },
            _ => Ok(false),
        }
    }

    /// Deletes the items of `namespace` that `read` names (each an id and the `updated_at`
    /// it was read with), with their recall statistics, all of them or none: none when one
    /// of them was changed since it was read (pinned, edited, merged into: every such write
    /// moves `updated_at`, see [`MemoryItem::revised`]). An item gone already counts as
    /// unchanged, as there is nothing of it to keep. Returns how many were deleted, or
    /// `None` when the call was refused. This is how an eviction pass deletes what it chose
    /// from a listing, a memory with the history it ends, without deleting a memory pinned
    /// in between or leaving a version whose successor is gone. The default reads, compares
    /// and deletes in steps, exact only when nothing else writes between them; every
    /// backend of this workspace does it in one (the shard's lock, one SQLite transaction,
    /// one PostgreSQL transaction that locks the rows it compares).
    ///
    /// # Errors
    /// Backend errors only.
    async fn delete_many_if(
        &self,
        namespace: &Namespace,
        read: &[(String, DateTime<Utc>)],
    ) -> Result<Option<usize>> {
        let expected: std::collections::HashMap<&str, DateTime<Utc>> =
            read.iter().map(|(id, at)| (id.as_str(), *at)).collect();
        let ids: Vec<String> = expected.keys().map(|id| (*id).to_owned()).collect();
        let stored = self.get_many(namespace, &ids).await?;
        if stored
            .iter()
            .any(|item| expected.get(item.id.as_str()) != Some(&item.updated_at))
        {
            return Ok(None);
        }
        if ids.is_empty() {
            return Ok(Some(0));
        }
        self.delete_many(namespace, &ids).await.map(Some)
    }

    /// Deletes the items `ids` of `namespace` (missing ones are skipped) with their recall
    /// statistics. Returns how many existed. The default deletes one by one; a backend may
    /// do it at once (the in-memory store updates its search index in one pass, which keeps
    /// an eviction pass of thousands of memories cheap).
    ///
    /// # Errors
    /// Backend errors only. On error, the items deleted before it stay deleted.
    async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
        let mut deleted = 0;
        for id in ids {
            if self.delete(namespace, id).await? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Saves many items; backends make this one transaction where they can. Every item is
    /// validated before any is written, so an invalid one stores none of them.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for the first invalid item (nothing written); backend
    /// errors (with the default body, the items saved before the failure stay saved).
    async fn save_many(&self, items: Vec<MemoryItem>) -> Result<()> {
        for item in &items {
            item.validate()?;
        }
        for item in items {
            self.save(item).await?;
        }
        Ok(())
    }

    /// Saves `items` as [`save_many`](Self::save_many) does, all of them or none, only when
    /// every stored item `expected` names is still as read: `expected` pairs an index into
    /// `items` with the `updated_at` the stored item of that namespace and id was read
    /// with. Returns `false`, writing nothing, when one of them was changed or deleted
    /// since. The items `expected` does not name are written whatever is stored. This is
    /// [`update_if`](Self::update_if) for a write that changes several memories at once:
    /// superseding a version while storing its successor, merging a duplicate. The default
    /// reads, compares and saves in steps, exact only when nothing else writes between
    /// them; every backend of this workspace does it in one (the shards' locks, one SQLite
    /// transaction, one PostgreSQL transaction that locks the rows it compares).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for the first invalid item, or naming `expected` for an
    /// index past `items` (nothing written); backend errors.
    async fn save_many_if(
        &self,
        items: Vec<MemoryItem>,
        expected: &[(usize, DateTime<Utc>)],
    ) -> Result<bool> {
        validate_expected(&items, expected)?;
        for (at, read_at) in expected {
            let item = &items[*at];
            match self.get(&item.namespace, &item.id).await? {
                Some(stored) if stored.updated_at == *read_at => {}
                _ => return Ok(false),
            }
        }
        self.save_many(items).await.map(|()| true)
    }

    /// Makes many [`save_many_if`](Self::save_many_if) writes at once: each of `writes` is
    /// saved whole or not at all, on its own condition, whatever becomes of the others, and
    /// each is compared after the writes before it are made (as when they are made one
    /// after another). Returns, in the order given, whether each was saved. This is how a
    /// maintenance pass writes a page of its edits (compressions, decays, consolidations):
    /// backends make all of them one transaction where they can, one commit and one sync
    /// for the page instead of one per memory. A single [`update_if`](Self::update_if) is
    /// the write [`ConditionalSave::update`] makes.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] for the first invalid item or index of any write
    /// (nothing written); backend errors (with the default body, which calls
    /// [`save_many_if`](Self::save_many_if) for each write in turn, the writes made before
    /// the failure stay made, as they do on the in-memory backend; the SQL backends then
    /// write none of them).
    async fn save_each_if(&self, writes: Vec<ConditionalSave>) -> Result<Vec<bool>> {
        for write in &writes {
            validate_expected(&write.items, &write.expected)?;
        }
        let mut saved = Vec::with_capacity(writes.len());
        for write in writes {
            saved.push(self.save_many_if(write.items, &write.expected).await?);
        }
        Ok(saved)
    }

    /// The items of `namespace` with these ids that exist, in the order asked.
    ///
    /// # Errors
    /// Backend errors only.
    async fn get_many(&self, namespace: &Namespace, ids: &[String]) -> Result<Vec<MemoryItem>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(item) = self.get(namespace, id).await? {
                out.push(item);
            }
        }
        Ok(out)
    }

    /// How many items `scope` holds.
    ///
    /// # Errors
    /// Backend errors only.
    async fn count(&self, scope: &Scope) -> Result<usize> {
        Ok(self.list(&MemoryFilter::new(scope.clone())).await?.len())
    }

    /// Records that the item was recalled with `score` at `at`: adds to its
    /// [`RecallStats`], increments `access_count` and sets `last_accessed`. Unknown ids are
    /// ignored (the item may have been deleted since the recall). The default does nothing.
    ///
    /// # Errors
    /// Backend errors only.
    async fn record_recall(
        &self,
        namespace: &Namespace,
        id: &str,
        score: f32,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let _ = (namespace, id, score, at);
        Ok(())
    }

    /// Records many recall events; backends batch them where they can, all or nothing: a
    /// batch that fails with [`MemoryError::Unavailable`], [`MemoryError::Timeout`] or
    /// [`MemoryError::Conflict`] is written again by the background writer. The default
    /// records one event at a time, and is all or nothing only for a backend whose
    /// [`record_recall`](Self::record_recall) never fails recoverably.
    ///
    /// # Errors
    /// Backend errors only.
    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        for event in events {
            self.record_recall(&event.namespace, &event.id, event.score, event.at)
                .await?;
        }
        Ok(())
    }

    /// Whether [`record_recalls`](Self::record_recalls) is cheap enough to run on the query
    /// path: no I/O, microseconds for a batch. A caller that batches recall events then
    /// writes a full batch in line instead of handing it to a background task, whose
    /// wake-up and cross-thread frees cost more than such a write. The default, `false`,
    /// suits a backend that commits or makes a round trip.
    fn records_recalls_inline(&self) -> bool {
        false
    }

    /// The recall statistics of an item; `None` when the item does not exist or the backend
    /// keeps none. The default keeps none.
    ///
    /// # Errors
    /// Backend errors only.
    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        let _ = (namespace, id);
        Ok(None)
    }

    /// The recall statistics of the items `ids` of `namespace`, in the order asked, as
    /// [`recall_stats`](Self::recall_stats) gives each. The default asks for each in turn; a
    /// backend reads them together (one statement on PostgreSQL, one connection on SQLite).
    ///
    /// # Errors
    /// Backend errors only.
    async fn recall_stats_many(
        &self,
        namespace: &Namespace,
        ids: &[String],
    ) -> Result<Vec<Option<RecallStats>>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(self.recall_stats(namespace, id).await?);
        }
        Ok(out)
    }

    /// The ids of the `count` items of `namespace` with the lowest recall value
    /// ([`RecallStats::value`] under `config` at `now`), least valuable first, ties broken by
    /// `(created_at, id)`: the victims of a recall-based eviction pass. A backend that can
    /// answer this faster than reading every item and its statistics overrides it; the
    /// default returns `None` and the evictor does the reading.
    ///
    /// # Errors
    /// Backend errors only.
    async fn least_valuable(
        &self,
        namespace: &Namespace,
        count: usize,
        config: &crate::RecallBasedConfig,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>> {
        let _ = (namespace, count, config, now);
        Ok(None)
    }

    /// Similarity search for the optional embedding channel: the `top_k` items matching
    /// `filter` whose [`embedding`](MemoryItem::embedding) is closest to `vector` by cosine
    /// similarity, best first (ties by id), each hit's score the cosine in `[-1, 1]`. Items
    /// without an embedding, with one of another length, or with a zero vector are skipped;
    /// `filter.limit` is ignored (`top_k` bounds the result).
    ///
    /// The default lists the matching items and compares each: exact, `O(n)` per query and a
    /// copy of every item, adequate for the thousands of memories of one agent. A backend
    /// with a vector index overrides it; the in-memory store compares in place without copies.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `embedding` for an empty or non-finite `vector`;
    /// backend errors.
    async fn search_similar(
        &self,
        filter: &MemoryFilter,
        vector: &[f32],
        top_k: usize,
    ) -> Result<Vec<SearchHit>> {
        crate::vector::validate_embedding(vector)?;
        if top_k == 0 {
            return Ok(Vec::new());
        }
        let mut all = filter.clone();
        all.limit = None;
        let query = crate::backend::CosineQuery::new(vector);
        let mut hits: Vec<SearchHit> = self
            .list(&all)
            .await?
            .into_iter()
            .filter_map(|item| {
                let score = query.similarity(item.embedding.as_deref()?)?;
                Some(SearchHit::new(Arc::new(item), score))
            })
            .collect();
        hits.sort_by(crate::SearchHit::best_first);
        hits.truncate(top_k);
        Ok(hits)
    }

    /// Replaces the recall statistics of an existing item (for imports and migrations).
    /// Unknown ids are ignored. The default does nothing, for backends that keep none.
    ///
    /// # Errors
    /// Backend errors only.
    async fn set_recall_stats(
        &self,
        namespace: &Namespace,
        id: &str,
        stats: RecallStats,
    ) -> Result<()> {
        let _ = (namespace, id, stats);
        Ok(())
    }
}

/// Checks a [`MemoryStore::save_many_if`] call before anything is read or written: every
/// item valid, every index of `expected` within `items`.
///
/// # Errors
/// [`MemoryError::InvalidInput`] for the first invalid item, or naming `expected` for an
/// index past `items`.
pub fn validate_expected(items: &[MemoryItem], expected: &[(usize, DateTime<Utc>)]) -> Result<()> {
    for item in items {
        item.validate()?;
    }
    match expected.iter().find(|(at, _)| *at >= items.len()) {
        Some((at, _)) => Err(MemoryError::invalid(
            "expected",
            format!("index {at} is past the {} items", items.len()),
        )),
        None => Ok(()),
    }
}

/// `expected` (indexes into a write's items, each with the `updated_at` it was read with) in
/// nanoseconds since the epoch, as the SQL backends store times; `None` when one is a time
/// they cannot hold, which no stored item has, so the write's condition fails.
pub fn expected_nanos(expected: &[(usize, DateTime<Utc>)]) -> Option<Vec<(usize, i64)>> {
    expected
        .iter()
        .map(|(at, read_at)| Some((*at, read_at.timestamp_nanos_opt()?)))
        .collect()
}

macro_rules! forward_memory_store {
    ($wrapper:ident) => {
        // Every method forwarded, the defaulted ones too: a wrapper that fell back to a
        // default would hide the wrapped store's own implementation.
        #[deny(clippy::missing_trait_methods)]
        #[async_trait]
        impl<T: MemoryStore + ?Sized> MemoryStore for $wrapper<T> {
            async fn save(&self, item: MemoryItem) -> Result<()> {
                (**self).save(item).await
            }
            async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
                (**self).get(namespace, id).await
            }
            async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
                (**self).delete(namespace, id).await
            }
            async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
                (**self).delete_many(namespace, ids).await
            }
            async fn delete_many_if(
                &self,
                namespace: &Namespace,
                read: &[(String, DateTime<Utc>)],
            ) -> Result<Option<usize>> {
                (**self).delete_many_if(namespace, read).await
            }
            async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
                (**self).list(filter).await
            }
            async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
                (**self).search(query).await
            }
            async fn search_many(&self, queries: &[SearchQuery]) -> Result<Vec<Vec<SearchHit>>> {
                (**self).search_many(queries).await
            }
            async fn list_many(
                &self,
                filters: &[MemoryFilter],
            ) -> Result<Vec<Vec<Arc<MemoryItem>>>> {
                (**self).list_many(filters).await
            }
            async fn clear(&self, scope: &Scope) -> Result<usize> {
                (**self).clear(scope).await
            }
            async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
                (**self).list_namespaces(scope).await
            }
            async fn term_positions(
                &self,
                memories: &[(&Namespace, &str)],
                terms: &[String],
            ) -> Result<Vec<Option<TermPositions>>> {
                (**self).term_positions(memories, terms).await
            }
            async fn update(&self, item: MemoryItem) -> Result<()> {
                (**self).update(item).await
            }
            async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
                (**self).update_if(item, read_at).await
            }
            async fn save_each_if(&self, writes: Vec<ConditionalSave>) -> Result<Vec<bool>> {
                (**self).save_each_if(writes).await
            }
            async fn save_many(&self, items: Vec<MemoryItem>) -> Result<()> {
                (**self).save_many(items).await
            }
            async fn save_many_if(
                &self,
                items: Vec<MemoryItem>,
                expected: &[(usize, DateTime<Utc>)],
            ) -> Result<bool> {
                (**self).save_many_if(items, expected).await
            }
            async fn get_many(
                &self,
                namespace: &Namespace,
                ids: &[String],
            ) -> Result<Vec<MemoryItem>> {
                (**self).get_many(namespace, ids).await
            }
            async fn count(&self, scope: &Scope) -> Result<usize> {
                (**self).count(scope).await
            }
            async fn record_recall(
                &self,
                namespace: &Namespace,
                id: &str,
                score: f32,
                at: DateTime<Utc>,
            ) -> Result<()> {
                (**self).record_recall(namespace, id, score, at).await
            }
            async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
                (**self).record_recalls(events).await
            }
            fn records_recalls_inline(&self) -> bool {
                (**self).records_recalls_inline()
            }
            async fn recall_stats(
                &self,
                namespace: &Namespace,
                id: &str,
            ) -> Result<Option<RecallStats>> {
                (**self).recall_stats(namespace, id).await
            }
            async fn recall_stats_many(
                &self,
                namespace: &Namespace,
                ids: &[String],
            ) -> Result<Vec<Option<RecallStats>>> {
                (**self).recall_stats_many(namespace, ids).await
            }
            async fn least_valuable(
                &self,
                namespace: &Namespace,
                count: usize,
                config: &crate::RecallBasedConfig,
                now: DateTime<Utc>,
            ) -> Result<Option<Vec<String>>> {
                (**self).least_valuable(namespace, count, config, now).await
            }
            async fn set_recall_stats(
                &self,
                namespace: &Namespace,
                id: &str,
                stats: RecallStats,
            ) -> Result<()> {
                (**self).set_recall_stats(namespace, id, stats).await
            }
            async fn search_similar(
                &self,
                filter: &MemoryFilter,
                vector: &[f32],
                top_k: usize,
            ) -> Result<Vec<SearchHit>> {
                (**self).search_similar(filter, vector, top_k).await
            }
        }
    };
}

forward_memory_store!(Arc);
forward_memory_store!(Box);
