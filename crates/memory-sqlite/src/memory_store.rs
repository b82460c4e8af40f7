//! [`SqliteStore`]: memory items with recall statistics, searched through FTS5.

use std::path::Path;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::{
    CONTEXT_FIELD_WEIGHT, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace,
    RecallEvent, RecallStats, Result, Scope, SearchHit, SearchQuery,
};
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::{
    Sql, decode_time, encode_time, fts_document, fts_match, scope_tokens, time_bound, to_count,
};
use crate::{SqliteBackend, SqliteOptions};

/// A [`MemoryStore`] in an SQLite database.
///
/// Items live in the `memories` table, keyed by `(ns, id)`, with their recall statistics in
/// the same row. Full-text search goes through the contentless FTS5 table `memories_fts`,
/// which holds the terms of the shared [`Analyzer`](memory_core::text::Analyzer) and is
/// written in the same transaction as the row, so search agrees with the in-memory backend
/// (stemming, stop words, Chinese bigrams) and is never out of step. Like the in-memory
/// backend it indexes the content with the tags, and the item's
/// [context](MemoryItem::context) as a second field. Hits are ranked by `bm25()` (context
/// weighted [`CONTEXT_FIELD_WEIGHT`]); the query text is reduced to quoted terms, so it is
/// never FTS5 syntax.
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

mod row;
mod similar;

use self::row::{COLUMN_COUNT, COLUMNS, Encoded, Raw, encode, indexed_text, read_raw, read_raw_at};

/// The ranking of a memory hit: `bm25()` over the content-and-tags column (weight 1) and the
/// context column ([`CONTEXT_FIELD_WEIGHT`]); the scope column has weight 0.
fn rank() -> String {
    format!("bm25(memories_fts, 1.0, {CONTEXT_FIELD_WEIGHT:?}, 0.0)")
}

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

/// Inserts or replaces the item's row (keeping its recall statistics), its terms and its tags.
fn write_item(transaction: &Transaction<'_>, item: &Encoded) -> Result<()> {
    let what = || format!("saving memory {} in {}", item.id, item.ns);
    let rid = match find_rid(transaction, &item.ns, &item.id)? {
        Some(rid) => {
            transaction
                .prepare_cached(
                    "UPDATE memories SET content = ?2, kind = ?3, importance = ?4, metadata = ?5, \
                     tags = ?6, source = ?7, credibility = ?8, created_at = ?9, updated_at = ?10, \
                     last_accessed = ?11, access_count = ?12, embedding = ?13 WHERE rid = ?1",
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
                    ])
                })
                .context(what)?;
            transaction
                .prepare_cached("DELETE FROM memories_fts WHERE rowid = ?1")
                .and_then(|mut statement| statement.execute([rid]))
                .context(what)?;
            transaction
                .prepare_cached("DELETE FROM memory_tags WHERE rid = ?1")
                .and_then(|mut statement| statement.execute([rid]))
                .context(what)?;
            rid
        }
        None => transaction
            .prepare_cached(
                "INSERT INTO memories (ns, id, content, kind, importance, metadata, tags, source, \
                 credibility, created_at, updated_at, last_accessed, access_count, embedding) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING rid",
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
                    ],
                    |row| row.get::<_, i64>(0),
                )
            })
            .context(what)?,
    };
    insert_terms(transaction, rid, [&item.terms, &item.context, &item.scope]).context(what)?;
    let mut insert_tag = transaction
        .prepare_cached("INSERT OR IGNORE INTO memory_tags (rid, tag) VALUES (?1, ?2)")
        .context(what)?;
    for tag in &item.tags {
        insert_tag.execute(params![rid, tag]).context(what)?;
    }
    Ok(())
}

/// Writes the FTS row `[terms, context, scope]` of the memory `rid`.
fn insert_terms(
    transaction: &Transaction<'_>,
    rid: i64,
    [terms, context, scope]: [&str; 3],
) -> rusqlite::Result<usize> {
    transaction
        .prepare_cached(
            "INSERT INTO memories_fts (rowid, terms, context, scope) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![rid, terms, context, scope])
}

/// Fills the (empty) full-text index from the `memories` table, when the index is rebuilt.
pub(crate) fn reindex(transaction: &Transaction<'_>) -> Result<()> {
    let what = || "rebuilding the memory full-text index";
    let rows = transaction
        .prepare(&format!("SELECT m.rid, {COLUMNS} FROM memories m"))
        .and_then(|mut statement| {
            statement
                .query_map([], |row| Ok((row.get::<_, i64>(0)?, read_raw_at(row, 1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .context(what)?;
    for (rid, raw) in rows {
        let item = raw.into_item()?;
        let terms = fts_document(&indexed_text(&item));
        let context = fts_document(item.context());
        let scope = scope_tokens(&item.namespace);
        insert_terms(transaction, rid, [&terms, &context, &scope]).context(what)?;
    }
    Ok(())
}

/// Deletes the row with this rid and its index entries (tags go by cascade).
fn delete_rid(transaction: &Transaction<'_>, rid: i64) -> rusqlite::Result<()> {
    transaction
        .prepare_cached("DELETE FROM memories_fts WHERE rowid = ?1")?
        .execute([rid])?;
    transaction
        .prepare_cached("DELETE FROM memories WHERE rid = ?1")?
        .execute([rid])?;
    Ok(())
}

/// Appends every condition of `filter` that SQL can check: scope, time range, kinds, id
/// prefix, tags. Metadata conditions are checked on the decoded item.
fn and_filter(sql: &mut Sql, filter: &MemoryFilter) {
    sql.and_scope("m.ns", &filter.scope);
    if let Some(since) = filter.since {
        sql.push(" AND m.created_at >= ").bind(time_bound(since));
    }
    if let Some(until) = filter.until {
        sql.push(" AND m.created_at < ").bind(time_bound(until));
    }
    if !filter.kinds.is_empty() {
        sql.push(" AND m.kind IN (");
        for (index, kind) in filter.kinds.iter().enumerate() {
            if index > 0 {
                sql.push(", ");
            }
            sql.bind(kind.as_str().to_owned());
        }
        sql.push(")");
    }
    if let Some(prefix) = &filter.id_prefix {
        sql.and_prefix("m.id", prefix);
    }
    for tag in &filter.tags {
        sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.rid = m.rid AND t.tag = ")
            .bind(tag.as_str().to_owned())
            .push(")");
    }
}

fn apply_recall(
    transaction: &Transaction<'_>,
    namespace: &str,
    id: &str,
    score: f32,
    at: DateTime<Utc>,
) -> Result<()> {
    let what = || format!("recording a recall of memory {id} in {namespace}");
    let at_nanos = encode_time("at", at)?;
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
    // The same arithmetic as every backend: RecallStats::record.
    let mut stats = RecallStats {
        recall_count: u64::try_from(count).unwrap_or(0),
        total_score: total,
        last_recall_at: last_recall.map(decode_time),
    };
    stats.record(score, at);
    let last_recall = stats.last_recall_at.map_or(at_nanos, time_bound);
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
                access_count.saturating_add(1),
                last_accessed.map_or(at_nanos, |last| last.max(at_nanos)),
            ])
        })
        .context(what)?;
    Ok(())
}

fn query_items(connection: &Connection, sql: &Sql, what: &str) -> Result<Vec<MemoryItem>> {
    let raws = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), read_raw)?
                .collect::<rusqlite::Result<Vec<Raw>>>()
        })
        .context(|| what.to_owned())?;
    raws.into_iter().map(Raw::into_item).collect()
}

fn limit_value(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

#[async_trait]
impl MemoryStore for SqliteStore {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        self.db
            .write("saving a memory", move |transaction| {
                write_item(transaction, &encoded)
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
            .call(move |connection| query_items(connection, &sql, &what))
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
                delete_rid(transaction, rid).context(|| format!("deleting memory {id} in {ns}"))?;
                Ok(true)
            })
            .await
    }

    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM memories m WHERE 1"));
        and_filter(&mut sql, filter);
        sql.push(if filter.newest_first {
            " ORDER BY m.created_at DESC, m.id DESC, m.ns DESC"
        } else {
            " ORDER BY m.created_at, m.id, m.ns"
        });
        // Metadata is checked after decoding, so the limit can only go to SQL without it.
        if let (Some(limit), true) = (filter.limit, filter.metadata.is_empty()) {
            sql.push(" LIMIT ").bind(limit_value(limit));
        }
        let filter = filter.clone();
        self.db
            .call(move |connection| {
                let mut items = query_items(connection, &sql, "listing memories")?;
                items.retain(|item| filter.matches(item));
                if let Some(limit) = filter.limit {
                    items.truncate(limit);
                }
                Ok(items)
            })
            .await
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let Some(expression) = fts_match("terms context", &query.text, &query.filter.scope) else {
            return Ok(Vec::new());
        };
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(&format!(
            "SELECT {COLUMNS}, {} FROM memories_fts \
             CROSS JOIN memories m ON m.rid = memories_fts.rowid WHERE memories_fts MATCH ",
            rank()
        ));
        sql.bind(expression);
        and_filter(&mut sql, &query.filter);
        sql.push(&format!(" ORDER BY {}, m.id, m.ns", rank()));
        if query.filter.metadata.is_empty() {
            sql.push(" LIMIT ").bind(limit_value(query.top_k));
        }
        let (filter, top_k) = (query.filter.clone(), query.top_k);
        self.db
            .call(move |connection| {
                let rows = connection
                    .prepare_cached(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| {
                                Ok((read_raw(row)?, row.get::<_, f64>(COLUMN_COUNT)?))
                            })?
                            .collect::<rusqlite::Result<Vec<_>>>()
                    })
                    .context(|| "searching memories")?;
                let mut hits = Vec::with_capacity(rows.len().min(top_k));
                for (raw, rank) in rows {
                    let item = raw.into_item()?;
                    if !filter.matches(&item) {
                        continue;
                    }
                    // bm25() is negative, lower is better; its IDF is floored above zero, so
                    // every match has a positive score.
                    let score = (-rank as f32).max(f32::MIN_POSITIVE);
                    hits.push(SearchHit {
                        item: std::sync::Arc::new(item),
                        score,
                    });
                    if hits.len() == top_k {
                        break;
                    }
                }
                Ok(hits)
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
        memory_core::validate_embedding(vector)?;
        if top_k == 0 {
            return Ok(Vec::new());
        }
        let (filter, vector) = (filter.clone(), vector.to_vec());
        self.db
            .call(move |connection| similar::search_similar(connection, &filter, &vector, top_k))
            .await
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut sql = Sql::new("SELECT m.rid FROM memories m WHERE 1");
        sql.and_scope("m.ns", scope);
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
                for rid in &rids {
                    delete_rid(transaction, *rid).context(what)?;
                }
                Ok(rids.len())
            })
            .await
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new("SELECT DISTINCT m.ns FROM memories m WHERE 1");
        sql.and_scope("m.ns", scope).push(" ORDER BY m.ns");
        self.db
            .call(move |connection| namespaces(connection, &sql, "listing memory namespaces"))
            .await
    }

    async fn update(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        self.db
            .write("updating a memory", move |transaction| {
                if find_rid(transaction, &encoded.ns, &encoded.id)?.is_none() {
                    return Err(MemoryError::NotFound(format!(
                        "memory {} in {}",
                        encoded.id, encoded.ns
                    )));
                }
                write_item(transaction, &encoded)
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
                encoded
                    .iter()
                    .try_for_each(|item| write_item(transaction, item))
            })
            .await
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[String]) -> Result<Vec<MemoryItem>> {
        let ns = namespace.as_str().to_owned();
        let ids = ids.to_vec();
        self.db
            .call(move |connection| {
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
            .call(move |connection| count(connection, &sql, "counting memories"))
            .await
    }

    async fn record_recall(
        &self,
        namespace: &Namespace,
        id: &str,
        score: f32,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("recording a recall", move |transaction| {
                apply_recall(transaction, &ns, &id, score, at)
            })
            .await
    }

    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let events = events.to_vec();
        self.db
            .write("recording recalls", move |transaction| {
                events.iter().try_for_each(|event| {
                    apply_recall(
                        transaction,
                        event.namespace.as_str(),
                        &event.id,
                        event.score,
                        event.at,
                    )
                })
            })
            .await
    }

    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .call(move |connection| {
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

    async fn set_recall_stats(
        &self,
        namespace: &Namespace,
        id: &str,
        stats: RecallStats,
    ) -> Result<()> {
        if !stats.total_score.is_finite() || stats.total_score < 0.0 {
            return Err(MemoryError::invalid(
                "total_score",
                format!("{} is not a finite number >= 0", stats.total_score),
            ));
        }
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

/// Runs a `SELECT DISTINCT ns ...` statement.
pub(crate) fn namespaces(connection: &Connection, sql: &Sql, what: &str) -> Result<Vec<Namespace>> {
    let texts = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), |row| {
                    row.get::<_, String>(0)
                })?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .context(|| what.to_owned())?;
    texts
        .iter()
        .map(|text| {
            Namespace::parse(text)
                .map_err(|error| corrupt(format_args!("namespace {text:?}"), error))
        })
        .collect()
}

/// Runs a `SELECT count(*) ...` statement.
pub(crate) fn count(connection: &Connection, sql: &Sql, what: &str) -> Result<usize> {
    connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement.query_row(params_from_iter(sql.params.iter()), |row| {
                row.get::<_, i64>(0)
            })
        })
        .map(to_count)
        .context(|| what.to_owned())
}
