//! [`SqliteStore`]: memory items with recall statistics, searched through the full-text
//! index with BM25F.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::{
    ConditionalSave, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace,
    RecallBasedConfig, RecallEvent, RecallStats, Result, Scope, SearchHit, SearchQuery,
};
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::database::Database;
use crate::error::Context;
use crate::fulltext::{self, Pending};
use crate::sql::{Sql, count, decode_time, encode_time, namespaces};
use crate::terms::{Analyzed, QueryTerms};
use crate::{SqliteBackend, SqliteOptions};

/// A [`MemoryStore`] in an SQLite database.
///
/// Items live in the `memories` table, keyed by `(ns, id)`, with their recall statistics in
/// the same row. Full-text search goes through the postings tables `memory_*`, which hold
/// the terms of the shared [`Analyzer`](memory_core::text::Analyzer) with each namespace's
/// statistics and are written in the same transaction as the row, so search agrees with the
/// in-memory backend (stemming, stop words, Chinese bigrams) and is never out of step. Like
/// the in-memory backend it indexes the content with the tags, and the item's
/// [context](MemoryItem::context) as a second field, and ranks with
/// [`memory_core::search`]'s BM25F over the statistics of each hit's namespace: the same
/// records give the same hits in the same order, with the same scores. The query text is
/// only ever analysed into terms, never interpreted.
///
/// The fields of facts that change (fact key, validity, end time) are columns of the row,
/// with the rest of the lineage as JSON ([`Lineage`](memory_core::Lineage)), so a filter's
/// [`TimeView`](memory_core::TimeView) and fact key are SQL conditions: in a search they
/// turn rows away before the `top_k` cut, like tags and kinds, and the default view adds no
/// condition. Listing one fact's versions in a namespace reads an index on
/// `(ns, fact_key, created_at, id)`.
///
/// Costs, with `n` items in a namespace:
/// - `save`, `delete`: `O(terms of the item × log n)`; rewriting an item whose indexed text
///   did not change leaves the index alone.
/// - `search`: one row per block of postings of the query's terms in each namespace in
///   scope, pruned to the items that can make the cut (MaxScore over per-block score
///   bounds), then only the best rows are read and decoded.
/// - `least_valuable`: one pass over the namespace's recall columns, `O(n log count)`.
///
/// [`save_many`](MemoryStore::save_many) and [`record_recalls`](MemoryStore::record_recalls)
/// are one transaction each: all or nothing.
///
/// Cheap to clone; clones share the connection.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    db: Database,
}

impl SqliteStore {
    pub(crate) fn new(db: Database) -> Self {
        Self { db }
    }

    /// Opens the database file at `path` (creating it if needed) with default options and
    /// returns its memory store. Use [`SqliteBackend::open`] for the other stores too.
    ///
    /// # Errors
    /// As [`SqliteBackend::open_with`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Ok(SqliteBackend::open_with(path, SqliteOptions::default())?
            .memory_store()
            .clone())
    }

    /// A memory store in a private in-memory database.
    ///
    /// # Errors
    /// As [`SqliteBackend::open_in_memory`].
    pub fn open_in_memory() -> Result<Self> {
        Ok(SqliteBackend::open_in_memory()?.memory_store().clone())
    }
}

mod filter;
mod ranked;
mod recall;
mod row;
mod similar;

use self::filter::{and_filter, first_ask, list_items, list_sql, query_items};
use self::row::{COLUMNS, Encoded, analyze, encode, read_raw, read_raw_at};

fn find_rid(connection: &Connection, ns: &str, id: &str) -> Result<Option<i64>> {
    connection
        .prepare_cached("SELECT rid FROM memories WHERE ns = ?1 AND id = ?2")
        .and_then(|mut statement| {
            statement
                .query_row(params![ns, id], |row| row.get(0))
                .optional()
        })
        .context(|| format!("looking up memory {id} in {ns}"))
}

/// Inserts or replaces the item's row (keeping its recall statistics), its terms and its tags;
/// its new postings are left in `pending`, for one [`Pending::flush`] per transaction.
fn write_item(
    transaction: &Transaction<'_>,
    item: &Encoded,
    pending: &mut Pending<2>,
) -> Result<()> {
    let what = || format!("saving memory {} in {}", item.id, item.ns);
    let (rid, new) = match find_rid(transaction, &item.ns, &item.id)? {
        Some(rid) => {
            transaction
                .prepare_cached(
                    "UPDATE memories SET content = ?2, kind = ?3, importance = ?4, metadata = ?5, \
                     tags = ?6, source = ?7, credibility = ?8, created_at = ?9, updated_at = ?10, \
                     last_accessed = max(coalesce(last_accessed, ?11), coalesce(?11, last_accessed)), \
                     access_count = max(access_count, ?12), embedding = ?13, fact_key = ?14, \
                     valid_from = ?15, valid_until = ?16, ended_at = ?17, lineage = ?18 \
                     WHERE rid = ?1",
                )
                .and_then(|mut statement| {
                    statement.execute(params![
                        rid,
                        item.content,
                        item.kind,
                        item.importance,
                        item.metadata,
                        item.tags_json,
                        item.source,
                        item.credibility,
                        item.created_at,
                        item.updated_at,
                        item.last_accessed,
                        item.access_count,
                        item.embedding,
                        item.fact_key,
                        item.valid_from,
                        item.valid_until,
                        item.ended_at,
                        item.lineage,
                    ])
                })
                .context(what)?;
            transaction
                .prepare_cached("DELETE FROM memory_tags WHERE rid = ?1")
                .and_then(|mut statement| statement.execute([rid]))
                .context(what)?;
            (rid, false)
        }
        None => transaction
            .prepare_cached(
                "INSERT INTO memories (ns, id, content, kind, importance, metadata, tags, source, \
                 credibility, created_at, updated_at, last_accessed, access_count, embedding, \
                 fact_key, valid_from, valid_until, ended_at, lineage) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19) RETURNING rid",
            )
            .and_then(|mut statement| {
                statement.query_row(
                    params![
                        item.ns,
                        item.id,
                        item.content,
                        item.kind,
                        item.importance,
                        item.metadata,
                        item.tags_json,
                        item.source,
                        item.credibility,
                        item.created_at,
                        item.updated_at,
                        item.last_accessed,
                        item.access_count,
                        item.embedding,
                        item.fact_key,
                        item.valid_from,
                        item.valid_until,
                        item.ended_at,
                        item.lineage,
                    ],
                    |row| row.get::<_, i64>(0),
                )
            })
            .map(|rid| (rid, true))
            .context(what)?,
    };
    if new {
        fulltext::memories().put_new_pending(transaction, rid, &item.ns, &item.doc, pending)?;
    } else {
        fulltext::memories().put_pending(transaction, rid, &item.ns, &item.doc, pending)?;
    }
    let mut insert_tag = transaction
        .prepare_cached("INSERT OR IGNORE INTO memory_tags (rid, tag) VALUES (?1, ?2)")
        .context(what)?;
    for tag in &item.tags {
        insert_tag.execute(params![rid, tag]).context(what)?;
    }
    Ok(())
}

/// Writes `items` in order ([`write_item`]), then their postings, each term's once.
fn write_items(transaction: &Transaction<'_>, items: &[Encoded]) -> Result<()> {
    let mut pending = Pending::default();
    write_items_pending(transaction, items, &mut pending)?;
    pending.flush(transaction, fulltext::memories())
}

/// Writes `items` in order ([`write_item`]), their postings left in `pending`, for one
/// [`Pending::flush`] per transaction.
fn write_items_pending(
    transaction: &Transaction<'_>,
    items: &[Encoded],
    pending: &mut Pending<2>,
) -> Result<()> {
    for item in items {
        write_item(transaction, item, pending)?;
    }
    Ok(())
}

/// Whether every stored item `expected` names (an index into `items`, and the `updated_at`
/// it was read with, in nanoseconds) still has that `updated_at`; a missing one has not.
fn unchanged(
    transaction: &Transaction<'_>,
    items: &[Encoded],
    expected: &[(usize, i64)],
) -> Result<bool> {
    for (at, read_at) in expected {
        let Some(item) = items.get(*at) else {
            return Ok(false);
        };
        let stored: Option<i64> = transaction
            .prepare_cached("SELECT updated_at FROM memories WHERE ns = ?1 AND id = ?2")
            .and_then(|mut statement| {
                statement
                    .query_row(params![item.ns, item.id], |row| row.get(0))
                    .optional()
            })
            .context(|| format!("reading memory {} in {}", item.id, item.ns))?;
        if stored != Some(*read_at) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Calls `each` with every memory's row id, namespace and analyzed search fields, for the
/// rebuild and the check of the full-text index.
pub(crate) fn for_each_document(
    connection: &Connection,
    mut each: impl FnMut(i64, &str, &Analyzed<2>) -> Result<()>,
) -> Result<()> {
    let what = || "reading every memory for the full-text index";
    let mut statement = connection
        .prepare(&format!("SELECT m.rid, {COLUMNS} FROM memories m"))
        .context(what)?;
    let mut rows = statement.query([]).context(what)?;
    while let Some(row) = rows.next().context(what)? {
        let rid: i64 = row.get(0).context(what)?;
        let item = read_raw_at(row, 1).context(what)?.into_item()?;
        each(rid, item.namespace.as_str(), &analyze(&item))?;
    }
    Ok(())
}

/// A [`SearchQuery`] as the index reads it, owned so it can move to a blocking call.
struct Search {
    filter: MemoryFilter,
    terms: QueryTerms,
    top_k: usize,
}

impl Search {
    /// `None` when the query can find nothing: a `top_k` of 0, or no searchable term.
    fn of(query: &SearchQuery) -> Option<Self> {
        if query.top_k == 0 {
            return None;
        }
        let terms = QueryTerms::of(&query.analysed_terms())?;
        Some(Self {
            filter: query.filter.clone(),
            terms: terms.with_rarest(query.rarest),
            top_k: query.top_k,
        })
    }

    /// The best `top_k` memories in `transaction`: the k best rows of the full-text index
    /// read and filtered, asking the index for four times as many whenever the filter
    /// turned too many away.
    fn run(&self, transaction: &Transaction<'_>) -> Result<Vec<SearchHit>> {
        let mut asked = first_ask(&self.filter, self.top_k);
        loop {
            let mut top =
                fulltext::memories().top(transaction, &self.filter.scope, &self.terms, asked)?;
            let complete = top.complete;
            let own_words = std::mem::take(&mut top.own_words);
            let hits = ranked::best_hits(
                transaction,
                top.candidates,
                &self.filter,
                self.top_k,
                |rid| Some(own_words.binary_search(&rid).is_ok()),
                "searching memories",
            )?;
            if hits.len() >= self.top_k || complete {
                return Ok(hits);
            }
            asked = asked.saturating_mul(4);
        }
    }
}

/// Deletes the row with this rid and its index entries (tags go by cascade).
fn delete_rid(transaction: &Transaction<'_>, rid: i64) -> Result<()> {
    fulltext::memories().remove(transaction, rid)?;
    transaction
        .prepare_cached("DELETE FROM memories WHERE rid = ?1")
        .and_then(|mut statement| statement.execute([rid]))
        .context(|| format!("deleting memory row {rid}"))?;
    Ok(())
}

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        self.db
            .write("saving a memory", move |transaction| {
                write_items(transaction, std::slice::from_ref(&encoded))
            })
            .await
    }

    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM memories m WHERE m.ns = "));
        sql.bind(namespace.as_str().to_owned())
            .push(" AND m.id = ")
            .bind(id.to_owned());
        let what = format!("reading memory {id} in {namespace}");
        self.db
            .query(move |connection| query_items(connection, &sql, &what))
            .await
            .map(|items| items.into_iter().next())
    }

    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("deleting a memory", move |transaction| {
                let Some(rid) = find_rid(transaction, &ns, &id)? else {
                    return Ok(false);
                };
                delete_rid(transaction, rid)?;
                Ok(true)
            })
            .await
    }

    /// One transaction: the memories go together or not at all, with one sync for the
    /// whole eviction pass instead of one per memory.
    async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let (ns, ids) = (namespace.as_str().to_owned(), ids.to_vec());
        self.db
            .write("deleting memories", move |transaction| {
                let mut deleted = 0;
                for id in &ids {
                    if let Some(rid) = find_rid(transaction, &ns, id)? {
                        delete_rid(transaction, rid)?;
                        deleted += 1;
                    }
                }
                Ok(deleted)
            })
            .await
    }

    async fn delete_many_if(
        &self,
        namespace: &Namespace,
        read: &[(String, DateTime<Utc>)],
    ) -> Result<Option<usize>> {
        if read.is_empty() {
            return Ok(Some(0));
        }
        let read: Vec<(String, Option<i64>)> = read
            .iter()
            .map(|(id, at)| (id.clone(), at.timestamp_nanos_opt()))
            .collect();
        let ns = namespace.as_str().to_owned();
        self.db
            .write("deleting memories", move |transaction| {
                // Compared, all of them, then deleted, in one write transaction: no writer
                // comes between.
                let mut rids = Vec::with_capacity(read.len());
                for (id, at) in &read {
                    let stored: Option<(i64, i64)> = transaction
                        .prepare_cached(
                            "SELECT rid, updated_at FROM memories WHERE ns = ?1 AND id = ?2",
                        )
                        .and_then(|mut statement| {
                            statement
                                .query_row(params![ns, id], |row| Ok((row.get(0)?, row.get(1)?)))
                                .optional()
                        })
                        .context(|| format!("looking up memory {id} in {ns}"))?;
                    match stored {
                        None => {}
                        Some((rid, updated_at)) if Some(updated_at) == *at => rids.push(rid),
                        Some(_) => return Ok(None),
                    }
                }
                rids.sort_unstable();
                rids.dedup();
                for rid in &rids {
                    delete_rid(transaction, *rid)?;
                }
                Ok(Some(rids.len()))
            })
            .await
    }

    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let filter = filter.clone();
        self.db
            .query(move |connection| list_items(connection, &filter))
            .await
    }

    /// Every listing on one connection, in one switch to the blocking pool.
    async fn list_many(&self, filters: &[MemoryFilter]) -> Result<Vec<Vec<Arc<MemoryItem>>>> {
        if filters.is_empty() {
            return Ok(Vec::new());
        }
        let listings: Vec<(Sql, MemoryFilter)> = filters
            .iter()
            .map(|filter| (list_sql(filter), filter.clone()))
            .collect();
        self.db
            .query(move |connection| {
                listings
                    .iter()
                    .map(|(sql, filter)| {
                        let mut items = query_items(connection, sql, "listing memories")?;
                        items.retain(|item| filter.matches(item));
                        if let Some(limit) = filter.limit {
                            items.truncate(limit);
                        }
                        Ok(items.into_iter().map(Arc::new).collect())
                    })
                    .collect()
            })
            .await
    }

    /// BM25F over each namespace's statistics, pruned to the records that can make the cut
    /// (`fulltext`), then the best rows are read and decoded until `top_k` pass the filter
    /// (`ranked.rs`). A filter that can turn records away asks the index for more than
    /// `top_k` (and four times more again while too few pass and more matched).
    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let Some(search) = Search::of(query) else {
            return Ok(Vec::new());
        };
        self.db
            .read("searching memories", move |transaction| {
                search.run(transaction)
            })
            .await
    }

    /// Every search in one read transaction on one connection, in one call off the async
    /// workers: a batch of searches pays the transaction and the thread switches once.
    async fn search_many(&self, queries: &[SearchQuery]) -> Result<Vec<Vec<SearchHit>>> {
        let searches: Vec<Option<Search>> = queries.iter().map(Search::of).collect();
        if searches.iter().all(Option::is_none) {
            return Ok(vec![Vec::new(); queries.len()]);
        }
        self.db
            .read("searching memories", move |transaction| {
                searches
                    .iter()
                    .map(|search| match search {
                        Some(search) => search.run(transaction),
                        None => Ok(Vec::new()),
                    })
                    .collect()
            })
            .await
    }

    /// Ranks from the embedding blobs alone, then decodes only the best rows (see
    /// `similar.rs`): no copy of every item, unlike the trait's default.
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
        let (filter, vector) = (filter.clone(), vector.to_vec());
        self.db
            .query(move |connection| similar::search_similar(connection, &filter, &vector, top_k))
            .await
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut sql = Sql::new("SELECT m.rid FROM memories m WHERE 1");
        sql.and_scope("m.ns", scope);
        let scope = scope.clone();
        self.db
            .write("clearing memories", move |transaction| {
                let what = || "clearing memories";
                let rids = transaction
                    .prepare(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| {
                                row.get::<_, i64>(0)
                            })?
                            .collect::<rusqlite::Result<Vec<i64>>>()
                    })
                    .context(what)?;
                fulltext::memories().clear(transaction, &scope, &rids)?;
                let mut delete = transaction
                    .prepare_cached("DELETE FROM memories WHERE rid = ?1")
                    .context(what)?;
                for rid in &rids {
                    delete.execute([rid]).context(what)?;
                }
                Ok(rids.len())
            })
            .await
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new("SELECT DISTINCT m.ns FROM memories m WHERE 1");
        sql.and_scope("m.ns", scope).push(" ORDER BY m.ns");
        self.db
            .query(move |connection| namespaces(connection, &sql, "listing memory namespaces"))
            .await
    }

    async fn update(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        self.db
            .write("updating a memory", move |transaction| {
                if find_rid(transaction, &encoded.ns, &encoded.id)?.is_none() {
                    return Err(MemoryError::not_found("memory", &encoded.ns, &encoded.id));
                }
                write_items(transaction, std::slice::from_ref(&encoded))
            })
            .await
    }

    async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
        let encoded = encode(item)?;
        // A time the store cannot hold is no stored item's.
        let Some(read_at) = read_at.timestamp_nanos_opt() else {
            return Ok(false);
        };
        self.db
            .write("updating a memory", move |transaction| {
                // Read and written in one write transaction: no writer comes between.
                let stored: Option<i64> = transaction
                    .prepare_cached("SELECT updated_at FROM memories WHERE ns = ?1 AND id = ?2")
                    .and_then(|mut statement| {
                        statement
                            .query_row(params![encoded.ns, encoded.id], |row| row.get(0))
                            .optional()
                    })
                    .context(|| format!("reading memory {} in {}", encoded.id, encoded.ns))?;
                if stored != Some(read_at) {
                    return Ok(false);
                }
                write_items(transaction, std::slice::from_ref(&encoded))?;
                Ok(true)
            })
            .await
    }

    /// One transaction: a maintenance pass's page of edits commits (and syncs) once, its
    /// postings written once per term, instead of once per memory. A write refused writes
    /// nothing; a failure rolls back every one of them.
    async fn save_each_if(&self, writes: Vec<ConditionalSave>) -> Result<Vec<bool>> {
        let writes = writes
            .into_iter()
            .map(|write| {
                memory_core::backend::validate_expected(&write.items, &write.expected)?;
                let items = write
                    .items
                    .into_iter()
                    .map(encode)
                    .collect::<Result<Vec<_>>>()?;
                // A time the store cannot hold is no stored item's.
                let expected = memory_core::backend::expected_nanos(&write.expected);
                Ok((items, expected))
            })
            .collect::<Result<Vec<_>>>()?;
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        self.db
            .write("saving memories", move |transaction| {
                let mut pending = Pending::default();
                let mut saved = Vec::with_capacity(writes.len());
                // Compared and written in one write transaction: no writer comes between, and
                // each write is compared after the ones before it are made.
                for (items, expected) in &writes {
                    let unchanged = match expected {
                        Some(expected) => unchanged(transaction, items, expected)?,
                        None => false,
                    };
                    if unchanged && !items.is_empty() {
                        write_items_pending(transaction, items, &mut pending)?;
                    }
                    saved.push(unchanged);
                }
                pending.flush(transaction, fulltext::memories())?;
                Ok(saved)
            })
            .await
    }

    async fn save_many_if(
        &self,
        items: Vec<MemoryItem>,
        expected: &[(usize, DateTime<Utc>)],
    ) -> Result<bool> {
        memory_core::backend::validate_expected(&items, expected)?;
        let encoded = items.into_iter().map(encode).collect::<Result<Vec<_>>>()?;
        // A time the store cannot hold is no stored item's.
        let Some(expected) = memory_core::backend::expected_nanos(expected) else {
            return Ok(false);
        };
        if encoded.is_empty() {
            return Ok(true);
        }
        self.db
            .write("saving memories", move |transaction| {
                // Compared and written in one write transaction: no writer comes between.
                if !unchanged(transaction, &encoded, &expected)? {
                    return Ok(false);
                }
                write_items(transaction, &encoded)?;
                Ok(true)
            })
            .await
    }

    async fn save_many(&self, items: Vec<MemoryItem>) -> Result<()> {
        let encoded = items.into_iter().map(encode).collect::<Result<Vec<_>>>()?;
        if encoded.is_empty() {
            return Ok(());
        }
        self.db
            .write("saving memories", move |transaction| {
                write_items(transaction, &encoded)
            })
            .await
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[String]) -> Result<Vec<MemoryItem>> {
        let ns = namespace.as_str().to_owned();
        let ids = ids.to_vec();
        self.db
            .query(move |connection| {
                let mut statement = connection
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM memories m WHERE m.ns = ?1 AND m.id = ?2"
                    ))
                    .context(|| "reading memories")?;
                let mut out = Vec::with_capacity(ids.len());
                for id in &ids {
                    let raw = statement
                        .query_row(params![ns, id], read_raw)
                        .optional()
                        .context(|| format!("reading memory {id} in {ns}"))?;
                    if let Some(raw) = raw {
                        out.push(raw.into_item()?);
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn count(&self, scope: &Scope) -> Result<usize> {
        let mut sql = Sql::new("SELECT count(*) FROM memories m WHERE 1");
        sql.and_scope("m.ns", scope);
        self.db
            .query(move |connection| count(connection, &sql, "counting memories"))
            .await
    }

    async fn record_recall(
        &self,
        namespace: &Namespace,
        id: &str,
        score: f32,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let recalled = recall::RecalledMemory::new(namespace.as_str(), id, &[(score, at)]);
        self.db
            .write_statistics("recording a recall", move |transaction| {
                recall::apply_recalls(transaction, recalled.as_slice())
            })
            .await
    }

    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        // The recalls of each memory, in order, become one row of the batch's one update (a
        // batch often holds the same memories many times over).
        let mut groups: Vec<(&str, &str, Vec<(f32, DateTime<Utc>)>)> = Vec::new();
        let mut group_of: HashMap<(&str, &str), usize> = HashMap::new();
        for event in events {
            let key = (event.namespace.as_str(), event.id.as_str());
            let at = *group_of.entry(key).or_insert_with(|| {
                groups.push((key.0, key.1, Vec::new()));
                groups.len() - 1
            });
            groups[at].2.push((event.score, event.at));
        }
        let mut recalled = Vec::with_capacity(groups.len());
        for (ns, id, recalls) in groups {
            recalled.extend(recall::RecalledMemory::new(ns, id, &recalls));
        }
        self.db
            .write_statistics("recording recalls", move |transaction| {
                recall::apply_recalls(transaction, &recalled)
            })
            .await
    }

    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .query(move |connection| {
                connection
                    .prepare_cached(
                        "SELECT recall_count, recall_total, last_recall_at FROM memories \
                         WHERE ns = ?1 AND id = ?2",
                    )
                    .and_then(|mut statement| {
                        statement
                            .query_row(params![ns, id], |row| {
                                Ok(RecallStats {
                                    recall_count: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                                    total_score: row.get(1)?,
                                    last_recall_at: row.get::<_, Option<i64>>(2)?.map(decode_time),
                                })
                            })
                            .optional()
                    })
                    .context(|| format!("reading recall statistics of memory {id} in {ns}"))
            })
            .await
    }

    /// One statement, prepared once, run for each id on one reader connection.
    async fn recall_stats_many(
        &self,
        namespace: &Namespace,
        ids: &[String],
    ) -> Result<Vec<Option<RecallStats>>> {
        let ns = namespace.as_str().to_owned();
        let ids = ids.to_vec();
        self.db
            .query(move |connection| {
                let mut statement = connection
                    .prepare_cached(
                        "SELECT recall_count, recall_total, last_recall_at FROM memories \
                         WHERE ns = ?1 AND id = ?2",
                    )
                    .context(|| "reading recall statistics")?;
                let mut out = Vec::with_capacity(ids.len());
                for id in &ids {
                    let stats = statement
                        .query_row(params![ns, id], |row| {
                            Ok(RecallStats {
                                recall_count: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                                total_score: row.get(1)?,
                                last_recall_at: row.get::<_, Option<i64>>(2)?.map(decode_time),
                            })
                        })
                        .optional()
                        .context(|| format!("reading recall statistics of memory {id} in {ns}"))?;
                    out.push(stats);
                }
                Ok(out)
            })
            .await
    }

    /// One statement over the namespace's recall columns, ranked in a bounded heap
    /// (`eviction.rs`): `O(n log count)`, no item decoded.
    async fn least_valuable(
        &self,
        namespace: &Namespace,
        count: usize,
        config: &RecallBasedConfig,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>> {
        let (ns, config) = (namespace.as_str().to_owned(), *config);
        self.db
            .query(move |connection| {
                recall::least_valuable(connection, &ns, count, &config, now).map(Some)
            })
            .await
    }

    async fn set_recall_stats(
        &self,
        namespace: &Namespace,
        id: &str,
        stats: RecallStats,
    ) -> Result<()> {
        // Checked as every backend checks them, before the id is looked up.
        stats.validate()?;
        let recall_count = i64::try_from(stats.recall_count)
            .map_err(|_| MemoryError::invalid("recall_count", "larger than 2^63 - 1"))?;
        let last_recall_at = match stats.last_recall_at {
            Some(at) => Some(encode_time("last_recall_at", at)?),
            None => None,
        };
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("setting recall statistics", move |transaction| {
                transaction
                    .prepare_cached(
                        "UPDATE memories SET recall_count = ?3, recall_total = ?4, \
                         last_recall_at = ?5 WHERE ns = ?1 AND id = ?2",
                    )
                    .and_then(|mut statement| {
                        statement.execute(params![
                            ns,
                            id,
                            recall_count,
                            stats.total_score,
                            last_recall_at
                        ])
                    })
                    .context(|| format!("setting recall statistics of memory {id} in {ns}"))?;
                Ok(())
            })
            .await
    }
}
