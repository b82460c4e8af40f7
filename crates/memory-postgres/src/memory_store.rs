//! [`PostgresStore`]: memory items with recall statistics, searched by BM25 over a GIN index.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use memory_core::{
    ConditionalSave, MemoryError, MemoryFilter, MemoryItem, MemoryStore, Namespace,
    RecallBasedConfig, RecallEvent, RecallStats, Result, Scope, SearchHit, SearchQuery,
};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::bm25;
use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::{count, decode_time, encode_time, limit_value, namespaces, nonempty, time_bound};

mod conditional;
mod filter;
mod least_valuable;
mod listing;
mod planner;
mod reindex;
mod row;
mod similar;

use self::filter::{and_conditions, filter_is_satisfiable, storable};
pub(crate) use self::reindex::reindex;
use self::row::{COLUMN_COUNT, COLUMNS, decode, encode};

/// A [`MemoryStore`] in PostgreSQL.
///
/// Items live in the table `memories`, keyed by `(ns, id)`, with their recall statistics in
/// the same row. Every write is one statement (an upsert, a conditional update) or one
/// transaction, so concurrent writers from any number of processes never see a half-written
/// item.
///
/// # Search
///
/// The column `terms` holds the distinct terms (a `text[]`) of the shared
/// [`Analyzer`](memory_core::text::Analyzer)'s analysis of two fields, as the in-memory
/// backend indexes them: the content with the tags, and the item's
/// [context](MemoryItem::context) (weighted
/// [`CONTEXT_FIELD_WEIGHT`](memory_core::search::CONTEXT_FIELD_WEIGHT)); `term_freqs` holds
/// each term's frequency per field. Both are written in the same statement as the row;
/// `terms` is GIN-indexed, so content of any vocabulary up to the content limit is indexed. A
/// query is analysed the same way and its terms are bound as one array (`terms && $1`), so no
/// user text is query syntax. Hits are ranked by BM25F as [`memory_core::search`] defines it
/// (its constants, computed in SQL): term frequencies and field lengths come from the row;
/// document counts, document frequencies and mean field lengths from the hit's own
/// namespace, so a scope of several namespaces ranks each as the in-memory backend does and
/// merges the hits by score, then id. The scores equal the in-memory backend's up to
/// rounding. The cost is one GIN lookup per query term, one key
/// lookup per matching row and query term, and an index-only aggregate over the scope's rows:
/// linear in the number of terms, which the analyzer caps at
/// [`MAX_QUERY_TERMS`](memory_core::text::MAX_QUERY_TERMS) (a 16 KiB query over 5,000
/// matching memories takes about 90 ms on a 2-core machine).
///
/// # Facts and time views
///
/// The fact fields of an item ([`fact_key`](MemoryItem::fact_key),
/// [`valid_from`](MemoryItem::valid_from), [`valid_until`](MemoryItem::valid_until) and the
/// end, with the links of [`Lineage`](memory_core::Lineage) as its JSON text) are columns of
/// the row, with a copy of the end's time (`ended_at`) to filter on. A filter's
/// [`view`](MemoryFilter::view) and [`fact_key`](MemoryFilter::fact_key) are conditions of
/// the statement, exactly [`TimeView::admits_parts`](memory_core::TimeView::admits_parts) with the view's time bound as a parameter
/// (never the database's clock): a list's limit and a search's `top_k` count only the items
/// they admit, and a search's statistics still cover the whole namespace, ended items
/// included, as every backend's do. Listing by fact key is served by a partial index on
/// `(ns, fact_key, created_at, id)`. The default filter ([`TimeView::All`](memory_core::TimeView::All), no key) adds no
/// condition.
///
/// # Recall statistics
///
/// [`record_recall`](MemoryStore::record_recall) is one `UPDATE ... SET recall_count =
/// recall_count + 1, ...`: the row lock makes concurrent increments from any number of tasks or
/// processes add up, none lost. [`record_recalls`](MemoryStore::record_recalls) is one
/// statement for the whole batch. [`least_valuable`](MemoryStore::least_valuable), the
/// victims of a recall-based eviction pass, is one query over the namespace's rows and their
/// statistics (the value approximated in SQL to pick a few candidates, then computed exactly
/// on them), so it returns exactly the victims the in-memory backend picks from the same
/// statistics, instead of one round trip per item.
///
/// Cheap to clone; clones share the pool.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    db: Database,
}

impl PostgresStore {
    pub(crate) fn new(db: Database) -> Self {
        Self { db }
    }
}

/// Inserts or replaces an item, keeping the recall statistics of the row it replaces.
const UPSERT: &str = "INSERT INTO {s}.memories AS m (ns, id, content, kind, importance, metadata, \
     tags, source, credibility, created_at, updated_at, last_accessed, access_count, embedding, \
     terms, term_freqs, doc_len, context_len, metadata_exact, fact_key, valid_from, valid_until, \
     ended_at, lineage) \
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::real, $6::jsonb, $7::text[], $8::text, \
     $9::real, $10::bigint, $11::bigint, $12::bigint, $13::bigint, $14::bytea, \
     $15::text[], $16::jsonb, $17::integer, $18::integer, $19::text, $20::text, $21::bigint, \
     $22::bigint, $23::bigint, $24::text) \
     ON CONFLICT (ns, id) DO UPDATE SET content = EXCLUDED.content, kind = EXCLUDED.kind, \
     importance = EXCLUDED.importance, metadata = EXCLUDED.metadata, tags = EXCLUDED.tags, \
     source = EXCLUDED.source, credibility = EXCLUDED.credibility, \
     created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, \
     last_accessed = greatest(m.last_accessed, EXCLUDED.last_accessed), \
     access_count = greatest(m.access_count, EXCLUDED.access_count), \
     embedding = EXCLUDED.embedding, terms = EXCLUDED.terms, \
     term_freqs = EXCLUDED.term_freqs, doc_len = EXCLUDED.doc_len, \
     context_len = EXCLUDED.context_len, metadata_exact = EXCLUDED.metadata_exact, \
     fact_key = EXCLUDED.fact_key, valid_from = EXCLUDED.valid_from, \
     valid_until = EXCLUDED.valid_until, ended_at = EXCLUDED.ended_at, \
     lineage = EXCLUDED.lineage";

/// Replaces an existing item (its recall statistics kept); changes no row when it is missing.
const UPDATE: &str = "UPDATE {s}.memories SET content = $3::text, kind = $4::text, \
     importance = $5::real, metadata = $6::jsonb, tags = $7::text[], source = $8::text, \
     credibility = $9::real, created_at = $10::bigint, updated_at = $11::bigint, \
     last_accessed = greatest(last_accessed, $12::bigint), \
     access_count = greatest(access_count, $13::bigint), embedding = $14::bytea, \
     terms = $15::text[], term_freqs = $16::jsonb, doc_len = $17::integer, \
     context_len = $18::integer, metadata_exact = $19::text, fact_key = $20::text, \
     valid_from = $21::bigint, valid_until = $22::bigint, ended_at = $23::bigint, \
     lineage = $24::text \
     WHERE ns = $1::text AND id = $2::text";

impl PostgresStore {
    /// Upserts `encoded` in `transaction` ([`UPSERT`]): the statements go out together
    /// (pipelined) and run in order.
    async fn upsert_all(
        &self,
        transaction: &deadpool_postgres::Transaction<'_>,
        encoded: &[row::Encoded],
    ) -> Result<()> {
        let what = || format!("saving {} memories", encoded.len());
        let statement = transaction
            .prepare_cached(&self.db.qualify(UPSERT))
            .await
            .context(what)?;
        try_join_all(encoded.iter().map(|item| {
            let statement = &statement;
            async move {
                transaction
                    .execute(statement, &item.params())
                    .await
                    .context(|| format!("saving memory {} in {}", item.id, item.ns))
            }
        }))
        .await?;
        Ok(())
    }
}

/// Adds recall events to the rows they name, in one statement. Events of one item are summed
/// first: an `UPDATE ... FROM` changes each row at most once. The counts saturate at the
/// largest `bigint`, as every other store's do: one memory at its most must not fail the
/// batch (and lose the other memories' recalls).
const RECORD_RECALLS: &str = "UPDATE {s}.memories AS m SET \
     recall_count = CASE WHEN m.recall_count > 9223372036854775807 - e.n \
         THEN 9223372036854775807 ELSE m.recall_count + e.n END, \
     recall_total = m.recall_total + e.total, \
     last_recall_at = greatest(m.last_recall_at, e.last), \
     access_count = CASE WHEN m.access_count > 9223372036854775807 - e.n \
         THEN 9223372036854775807 ELSE m.access_count + e.n END, \
     last_accessed = greatest(m.last_accessed, e.last) \
     FROM (SELECT ns, id, count(*) AS n, sum(score) AS total, max(at) AS last \
           FROM unnest($1::text[], $2::text[], $3::float8[], $4::bigint[]) AS e (ns, id, score, at) \
           GROUP BY ns, id) AS e \
     WHERE m.ns = e.ns AND m.id = e.id";

fn decode_all(rows: &[Row]) -> Result<Vec<MemoryItem>> {
    rows.iter().map(decode).collect()
}

#[async_trait]
impl MemoryStore for PostgresStore {
    async fn save(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        let what = || format!("saving memory {} in {}", encoded.id, encoded.ns);
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(UPSERT))
            .await
            .context(what)?;
        client
            .execute(&statement, &encoded.params())
            .await
            .context(what)?;
        Ok(())
    }

    async fn get(&self, namespace: &Namespace, id: &str) -> Result<Option<MemoryItem>> {
        if !storable(id) {
            return Ok(None);
        }
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.memories m WHERE m.ns = "
        ));
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND m.id = ")
            .bind(id.to_owned(), "text");
        let rows = self
            .db
            .query(&sql, || format!("reading memory {id} in {namespace}"))
            .await?;
        rows.first().map(decode).transpose()
    }

    async fn delete(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        if !storable(id) {
            return Ok(false);
        }
        let mut sql = self.db.sql("DELETE FROM {s}.memories WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        let deleted = self
            .db
            .execute(&sql, || format!("deleting memory {id} in {namespace}"))
            .await?;
        Ok(deleted > 0)
    }

    /// One statement: the memories go together or not at all, and an eviction pass makes
    /// one round trip instead of one per memory.
    async fn delete_many(&self, namespace: &Namespace, ids: &[String]) -> Result<usize> {
        let wanted: Vec<String> = ids.iter().filter(|id| storable(id)).cloned().collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        let mut sql = self.db.sql("DELETE FROM {s}.memories WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ANY(")
            .bind(wanted, "text[]")
            .push(")");
        let deleted = self
            .db
            .execute(&sql, || format!("deleting memories in {namespace}"))
            .await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }

    /// One transaction: the rows compared locked (`FOR UPDATE`), then deleted.
    async fn delete_many_if(
        &self,
        namespace: &Namespace,
        read: &[(String, DateTime<Utc>)],
    ) -> Result<Option<usize>> {
        conditional::delete_many_if(self, namespace, read).await
    }

    /// The listings concurrently, each on a connection of the pool: one round trip of
    /// latency for all of them, as a recall's reads of its hits' neighbours had before
    /// they were asked together.
    async fn list_many(&self, filters: &[MemoryFilter]) -> Result<Vec<Vec<Arc<MemoryItem>>>> {
        let listed =
            futures::future::try_join_all(filters.iter().map(|filter| self.list(filter))).await?;
        Ok(listed
            .into_iter()
            .map(|items| items.into_iter().map(Arc::new).collect())
            .collect())
    }

    /// A page of a subtree that spans at most 8 namespaces is read as one page of each,
    /// merged in the listing's order: the time index leads with the namespace, so one
    /// statement over the subtree sorts all of its memories (24.5 ms for a page 40,000 deep
    /// of 50,000, against 0.64 ms for the namespace alone).
    async fn list(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        self.listing(filter).await
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let Some(terms) = nonempty(query.analysed_terms().into_owned()) else {
            return Ok(Vec::new());
        };
        let filter = &query.filter;
        if query.top_k == 0 || !filter_is_satisfiable(filter) {
            return Ok(Vec::new());
        }
        // With metadata conditions, a row the SQL keeps may fail the decoded item's check
        // (jsonb compares numbers by value, serde_json by form): the search is asked again
        // for four times as many until enough pass or no more rows come, never for all.
        let mut asked = query.top_k;
        loop {
            let mut sql = bm25::scored(
                &self.db,
                &bm25::MEMORIES,
                terms.clone(),
                query.rarest,
                &filter.scope,
                |sql| {
                    and_conditions(sql, filter);
                },
            );
            sql.push(&format!(
                "SELECT {COLUMNS}, s.score, s.own_words FROM scored s JOIN {{s}}.memories m ON m.rid = s.rid \
                 ORDER BY s.score DESC, m.id, m.ns"
            ));
            sql.push(" LIMIT ").bind(limit_value(asked), "bigint");
            let rows = self
                .db
                .query(&sql, || "searching memories".to_owned())
                .await?;
            let mut hits = Vec::with_capacity(rows.len().min(query.top_k));
            for row in &rows {
                let item = decode(row)?;
                if !filter.matches(&item) {
                    continue;
                }
                let score: f32 = row
                    .try_get(COLUMN_COUNT)
                    .map_err(|error| corrupt("a search score", error))?;
                let own_words: bool = row
                    .try_get(COLUMN_COUNT + 1)
                    .map_err(|error| corrupt("where a hit's terms are", error))?;
                hits.push(
                    SearchHit::new(std::sync::Arc::new(item), score.max(f32::MIN_POSITIVE))
                        .with_own_words(own_words),
                );
                if hits.len() == query.top_k {
                    break;
                }
            }
            if hits.len() == query.top_k || rows.len() < asked || asked == usize::MAX {
                return Ok(hits);
            }
            asked = asked.saturating_mul(4);
        }
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut sql = self.db.sql("DELETE FROM {s}.memories AS m WHERE true");
        sql.and_scope("m.ns", scope);
        let deleted = self
            .db
            .execute(&sql, || "clearing memories".to_owned())
            .await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = self
            .db
            .sql("SELECT DISTINCT m.ns FROM {s}.memories m WHERE true");
        sql.and_scope("m.ns", scope).push(" ORDER BY m.ns");
        namespaces(&self.db, &sql, "listing memory namespaces").await
    }

    async fn update(&self, item: MemoryItem) -> Result<()> {
        let encoded = encode(item)?;
        let what = || format!("updating memory {} in {}", encoded.id, encoded.ns);
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(UPDATE))
            .await
            .context(what)?;
        let changed = client
            .execute(&statement, &encoded.params())
            .await
            .context(what)?;
        if changed == 0 {
            return Err(MemoryError::not_found("memory", &encoded.ns, &encoded.id));
        }
        Ok(())
    }

    /// One statement: `UPDATE ... AND updated_at = $25`.
    async fn update_if(&self, item: MemoryItem, read_at: DateTime<Utc>) -> Result<bool> {
        conditional::update_if(self, item, read_at).await
    }

    /// One transaction: the rows compared locked (`FOR UPDATE`), then the batch upserted.
    async fn save_many_if(
        &self,
        items: Vec<MemoryItem>,
        expected: &[(usize, DateTime<Utc>)],
    ) -> Result<bool> {
        conditional::save_many_if(self, items, expected).await
    }

    /// One transaction for the batch (see `conditional::save_each_if`).
    async fn save_each_if(&self, writes: Vec<ConditionalSave>) -> Result<Vec<bool>> {
        conditional::save_each_if(self, writes).await
    }

    async fn save_many(&self, items: Vec<MemoryItem>) -> Result<()> {
        let encoded = items.into_iter().map(encode).collect::<Result<Vec<_>>>()?;
        if encoded.is_empty() {
            return Ok(());
        }
        let what = || format!("saving {} memories", encoded.len());
        let mut client = self.db.client(&what()).await?;
        let transaction = client.transaction().await.context(what)?;
        self.upsert_all(&transaction, &encoded).await?;
        transaction.commit().await.context(what)?;
        // Back to the pool before the statistics refresh takes one of its own.
        drop(client);
        if encoded.len() >= planner::ANALYZE_BATCH {
            planner::refresh_statistics(&self.db, encoded.len()).await;
        }
        Ok(())
    }

    /// In two passes, in one read-only repeatable-read transaction: each comparable row's
    /// key and embedding ranked, then the best rows read whole and decoded.
    async fn search_similar(
        &self,
        filter: &MemoryFilter,
        vector: &[f32],
        top_k: usize,
    ) -> Result<Vec<SearchHit>> {
        similar::search_similar(&self.db, filter, vector, top_k).await
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[String]) -> Result<Vec<MemoryItem>> {
        let wanted: Vec<String> = ids.iter().filter(|id| storable(id)).cloned().collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.memories m WHERE m.ns = "
        ));
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND m.id = ANY(")
            .bind(wanted, "text[]")
            .push(")");
        let rows = self
            .db
            .query(&sql, || format!("reading memories in {namespace}"))
            .await?;
        let mut by_id: HashMap<String, MemoryItem> = decode_all(&rows)?
            .into_iter()
            .map(|item| (item.id.clone(), item))
            .collect();
        // How many times each id is asked for: the last request for an id takes the item,
        // earlier ones get a clone (counted once, not by scanning the rest of the list for
        // each id, which made a pass over 200,000 ids quadratic).
        let mut asked: HashMap<&str, usize> = HashMap::with_capacity(by_id.len());
        for id in ids {
            if by_id.contains_key(id.as_str()) {
                *asked.entry(id.as_str()).or_default() += 1;
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(left) = asked.get_mut(id.as_str()) else {
                continue;
            };
            *left -= 1;
            out.extend(if *left > 0 {
                by_id.get(id.as_str()).cloned()
            } else {
                by_id.remove(id.as_str())
            });
        }
        Ok(out)
    }

    async fn count(&self, scope: &Scope) -> Result<usize> {
        let mut sql = self
            .db
            .sql("SELECT count(*) FROM {s}.memories m WHERE true");
        sql.and_scope("m.ns", scope);
        count(&self.db, &sql, "counting memories").await
    }

    async fn record_recall(
        &self,
        namespace: &Namespace,
        id: &str,
        score: f32,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.record_recalls(&[RecallEvent {
            namespace: namespace.clone(),
            id: id.to_owned(),
            score,
            at,
        }])
        .await
    }

    async fn record_recalls(&self, events: &[RecallEvent]) -> Result<()> {
        let mut namespaces = Vec::with_capacity(events.len());
        let mut ids = Vec::with_capacity(events.len());
        let mut scores = Vec::with_capacity(events.len());
        let mut times = Vec::with_capacity(events.len());
        for event in events {
            if !storable(&event.id) {
                continue;
            }
            namespaces.push(event.namespace.as_str().to_owned());
            ids.push(event.id.clone());
            // The same clamping as RecallStats::record, which every backend follows.
            let score = if event.score.is_nan() {
                0.0
            } else {
                event.score.clamp(0.0, 1.0)
            };
            scores.push(f64::from(score));
            times.push(time_bound(event.at));
        }
        if ids.is_empty() {
            return Ok(());
        }
        let what = || format!("recording {} recalls", ids.len());
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(RECORD_RECALLS))
            .await
            .context(what)?;
        let params: [&(dyn ToSql + Sync); 4] = [&namespaces, &ids, &scores, &times];
        client.execute(&statement, &params).await.context(what)?;
        Ok(())
    }

    async fn recall_stats(&self, namespace: &Namespace, id: &str) -> Result<Option<RecallStats>> {
        if !storable(id) {
            return Ok(None);
        }
        let mut sql = self
            .db
            .sql("SELECT recall_count, recall_total, last_recall_at FROM {s}.memories WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        let what = || format!("reading recall statistics of memory {id} in {namespace}");
        let rows = self.db.query(&sql, what).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let field = |error| corrupt(what(), error);
        let count: i64 = row.try_get(0).map_err(field)?;
        let last: Option<i64> = row.try_get(2).map_err(field)?;
        Ok(Some(RecallStats {
            recall_count: u64::try_from(count).unwrap_or(0),
            total_score: row.try_get(1).map_err(field)?,
            last_recall_at: last.map(decode_time),
        }))
    }

    /// One statement for all of them.
    async fn recall_stats_many(
        &self,
        namespace: &Namespace,
        ids: &[String],
    ) -> Result<Vec<Option<RecallStats>>> {
        let wanted: Vec<String> = ids.iter().filter(|id| storable(id)).cloned().collect();
        if wanted.is_empty() {
            return Ok(vec![None; ids.len()]);
        }
        let mut sql = self.db.sql(
            "SELECT id, recall_count, recall_total, last_recall_at FROM {s}.memories WHERE ns = ",
        );
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ANY(")
            .bind(wanted, "text[]")
            .push(")");
        let what = || format!("reading recall statistics in {namespace}");
        let rows = self.db.query(&sql, what).await?;
        let mut found: HashMap<String, RecallStats> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let field = |error| corrupt(what(), error);
            let id: String = row.try_get(0).map_err(field)?;
            let count: i64 = row.try_get(1).map_err(field)?;
            let last: Option<i64> = row.try_get(3).map_err(field)?;
            found.insert(
                id,
                RecallStats {
                    recall_count: u64::try_from(count).unwrap_or(0),
                    total_score: row.try_get(2).map_err(field)?,
                    last_recall_at: last.map(decode_time),
                },
            );
        }
        Ok(ids.iter().map(|id| found.get(id).copied()).collect())
    }

    /// One query over the rows' own recall statistics (see the type's documentation).
    async fn least_valuable(
        &self,
        namespace: &Namespace,
        count: usize,
        config: &RecallBasedConfig,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>> {
        least_valuable::least_valuable(&self.db, namespace, count, config, now)
            .await
            .map(Some)
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
        if !storable(id) {
            return Ok(());
        }
        let mut sql = self.db.sql("UPDATE {s}.memories SET recall_count = ");
        sql.bind(recall_count, "bigint")
            .push(", recall_total = ")
            .bind(stats.total_score, "float8")
            .push(", last_recall_at = ")
            .bind(last_recall_at, "bigint")
            .push(" WHERE ns = ")
            .bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        self.db
            .execute(&sql, || {
                format!("setting recall statistics of memory {id} in {namespace}")
            })
            .await?;
        Ok(())
    }
}
