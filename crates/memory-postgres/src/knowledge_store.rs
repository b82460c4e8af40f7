//! [`PostgresKnowledgeStore`]: knowledge pages with their index, references and BM25F search.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::{
    AccessEvent, KnowledgePage, KnowledgeStore, MemoryError, Namespace, PageHit, PageIndexEntry,
    PageMatchSignals, PageQuery, PageRuleKeywords, PageRuleText, Result, Scope,
};

mod reindex;
mod row;

pub(crate) use reindex::reindex;
pub(crate) use row::decode_tags;
use row::{DELETE_OLD_REFS, INSERT, INSERT_NEW_REFS, UPDATE, UPDATE_IF, decode, encode};

use crate::bm25;
use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::{count, decode_time, encode_time, namespaces, nonempty, to_count};

/// How many times [`put_page`](KnowledgeStore::put_page) makes its transaction again when a
/// concurrent put of the same page came between its delete and its insert.
const PUT_ATTEMPTS: usize = 8;

/// A [`KnowledgeStore`] in PostgreSQL.
///
/// Pages live in `pages`; their references in `page_refs` (one row per referring page and
/// referenced id, self references left out, removed with the referring page by a cascading
/// foreign key), so `referenced_by` is an indexed count. Adding a page is one statement;
/// updating one (the row, then its references) is one transaction.
///
/// Search: the column `terms` holds the distinct terms (a `text[]`) of the shared analyzer's
/// analysis of title, summary, tags and content, under a GIN index, and `term_freqs` each
/// term's frequency per field; a query's terms are bound as one array (`terms && $1`). Hits
/// are ranked by BM25F as [`memory_core::search`] defines it, with
/// [`PAGE_FIELD_WEIGHTS`](memory_core::search::PAGE_FIELD_WEIGHTS) (per-field term
/// frequencies and lengths from the row; document counts, document frequencies and mean
/// lengths from the page's own namespace, as the in-memory backend ranks each namespace of a
/// scope on its own), computed in SQL, then
/// multiplied by the boost of the seed's match rules (`1 + 0.5 title_prefix + 0.5 tag_exact +
/// 0.25 summary_contains`, also the in-memory rule), reported in [`PageHit::signals`].
///
/// Cheap to clone; clones share the pool.
#[derive(Clone, Debug)]
pub struct PostgresKnowledgeStore {
    db: Database,
}

impl PostgresKnowledgeStore {
    /// One transaction: the page's row updated (only if its `updated_at` is still
    /// `read_at`, when given), then its references no longer listed deleted and the new ones
    /// inserted, each a statement of its own so that it sees every write of the page that
    /// committed before the row's lock was granted. Returns whether the row was updated.
    async fn update_encoded(&self, page: &row::EncodedPage, read_at: Option<i64>) -> Result<bool> {
        let what = || format!("updating page {} in {}", page.id, page.ns);
        let mut client = self.db.client(&what()).await?;
        let transaction = client.transaction().await.context(what)?;
        let (sql, mut params) = match &read_at {
            None => (UPDATE, page.update_params().to_vec()),
            Some(read_at) => {
                let mut params = page.update_params().to_vec();
                params.push(read_at);
                (UPDATE_IF, params)
            }
        };
        let update = transaction
            .prepare_cached(&self.db.qualify(sql))
            .await
            .context(what)?;
        let updated = transaction.execute(&update, &params).await.context(what)?;
        params.clear();
        if updated == 0 {
            return Ok(false);
        }
        for sql in [DELETE_OLD_REFS, INSERT_NEW_REFS] {
            let statement = transaction
                .prepare_cached(&self.db.qualify(sql))
                .await
                .context(what)?;
            transaction
                .execute(&statement, &page.refs_params())
                .await
                .context(what)?;
        }
        transaction.commit().await.context(what)?;
        Ok(true)
    }

    pub(crate) fn new(db: Database) -> Self {
        Self { db }
    }
}

const COLUMNS: &str = "p.ns, p.id, p.title, p.summary, p.content, p.tags, p.refs, \
     p.created_at, p.updated_at, p.access_count, p.last_accessed";
const ORDER: &str = " ORDER BY p.ns, p.title_key, p.id";
const REFERENCED_BY: &str =
    "(SELECT count(*) FROM {s}.page_refs r WHERE r.ns = p.ns AND r.target_id = p.id)";

struct Candidate {
    rid: i64,
    ns: String,
    id: String,
    score: f32,
    signals: PageMatchSignals,
}

fn storable(text: &str) -> bool {
    !text.contains('\0')
}

#[async_trait]
impl KnowledgeStore for PostgresKnowledgeStore {
    async fn add_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        let what = || format!("adding page {} in {}", page.id, page.ns);
        let client = self.db.client(&what()).await?;
        let statement = client
            .prepare_cached(&self.db.qualify(INSERT))
            .await
            .context(what)?;
        let inserted: i64 = client
            .query_one(&statement, &page.insert_params())
            .await
            .and_then(|row| row.try_get(0))
            .context(what)?;
        if inserted == 0 {
            return Err(MemoryError::AlreadyExists(format!(
                "page {} in {}",
                page.id, page.ns
            )));
        }
        Ok(())
    }

    async fn get_page(&self, namespace: &Namespace, id: &str) -> Result<Option<KnowledgePage>> {
        if !storable(id) {
            return Ok(None);
        }
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS} FROM {{s}}.pages p WHERE p.ns = "
        ));
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND p.id = ")
            .bind(id.to_owned(), "text");
        let rows = self
            .db
            .query(&sql, || format!("reading page {id} in {namespace}"))
            .await?;
        rows.first().map(decode).transpose()
    }

    async fn update_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        if !self.update_encoded(&page, None).await? {
            return Err(MemoryError::not_found("page", &page.ns, &page.id));
        }
        Ok(())
    }

    /// The `UPDATE` of [`update_page`](KnowledgeStore::update_page) with the stored
    /// `updated_at` in its `WHERE`, so the comparison and the write are one step.
    async fn update_page_if(&self, page: KnowledgePage, read_at: DateTime<Utc>) -> Result<bool> {
        let page = encode(page)?;
        // A time the store cannot hold is no stored page's.
        let Ok(read_at) = encode_time("read_at", read_at) else {
            return Ok(false);
        };
        self.update_encoded(&page, Some(read_at)).await
    }

    /// One transaction: the stored page deleted (its references with it) and the new one
    /// inserted.
    async fn put_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        let what = || format!("putting page {} in {}", page.id, page.ns);
        // The delete reads the row as it was when it began: a put of the same page that
        // committed meanwhile leaves a row it did not see, the insert then finds it taken
        // and inserts nothing. Such a transaction is rolled back and made again, which sees
        // that row.
        for _ in 0..PUT_ATTEMPTS {
            let mut client = self.db.client(&what()).await?;
            let transaction = client.transaction().await.context(what)?;
            let delete = transaction
                .prepare_cached(
                    &self
                        .db
                        .qualify("DELETE FROM {s}.pages WHERE ns = $1::text AND id = $2::text"),
                )
                .await
                .context(what)?;
            transaction
                .execute(&delete, &[&page.ns, &page.id])
                .await
                .context(what)?;
            let insert = transaction
                .prepare_cached(&self.db.qualify(INSERT))
                .await
                .context(what)?;
            let inserted: i64 = transaction
                .query_one(&insert, &page.insert_params())
                .await
                .and_then(|row| row.try_get(0))
                .context(what)?;
            if inserted > 0 {
                return transaction.commit().await.context(what);
            }
        }
        Err(MemoryError::Conflict {
            message: format!(
                "{}: other writes of the page came between each of {PUT_ATTEMPTS} attempts",
                what()
            ),
            source: None,
        })
    }

    async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        if !storable(id) {
            return Ok(false);
        }
        // Its references go with it (ON DELETE CASCADE).
        let mut sql = self.db.sql("DELETE FROM {s}.pages WHERE ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND id = ")
            .bind(id.to_owned(), "text");
        let deleted = self
            .db
            .execute(&sql, || format!("deleting page {id} in {namespace}"))
            .await?;
        Ok(deleted > 0)
    }

    async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>> {
        let Some(terms) = nonempty(query.analysed_terms().into_owned()) else {
            return Ok(Vec::new());
        };
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let mut sql = bm25::scored(&self.db, &bm25::PAGES, terms, None, &query.scope, |sql| {
            if !query.tags.is_empty() {
                let wanted: Vec<String> =
                    query.tags.iter().map(|t| t.as_str().to_owned()).collect();
                sql.push(" AND p.tags @> ").bind(wanted, "text[]");
            }
        });
        sql.push(
            "SELECT p.rid, p.ns, p.id, p.title, p.summary, p.tags, s.score \
             FROM scored s JOIN {s}.pages p ON p.rid = s.rid",
        );
        let rows = self.db.query(&sql, || "searching pages".to_owned()).await?;
        let keywords = query.rule_keywords().into_owned();
        let rules = PageRuleKeywords::new(&keywords);
        let mut candidates = Vec::with_capacity(rows.len());
        for row in &rows {
            let field = |error: tokio_postgres::Error| corrupt("a page search hit", error);
            let ns: String = row.try_get(1).map_err(field)?;
            let id: String = row.try_get(2).map_err(field)?;
            let title: String = row.try_get(3).map_err(field)?;
            let summary: String = row.try_get(4).map_err(field)?;
            let tags: Vec<String> = row.try_get(5).map_err(field)?;
            let relevance: f32 = row.try_get(6).map_err(field)?;
            let tags = decode_tags(&format!("page {id} in {ns}"), &tags)?;
            let signals = rules.signals(&PageRuleText::new(&title, &summary), &tags);
            candidates.push(Candidate {
                rid: row.try_get(0).map_err(field)?,
                ns,
                id,
                score: relevance.max(f32::MIN_POSITIVE) * signals.boost(),
                signals,
            });
        }
        // Ties by namespace, then id, as the other backends break them.
        candidates.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.ns.cmp(&b.ns))
                .then_with(|| a.id.cmp(&b.id))
        });
        candidates.truncate(query.top_k);
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let rids: Vec<i64> = candidates.iter().map(|c| c.rid).collect();
        let mut sql = self.db.sql(&format!(
            "SELECT {COLUMNS}, {REFERENCED_BY}, p.rid FROM {{s}}.pages p WHERE p.rid = ANY("
        ));
        sql.bind(rids, "bigint[]").push(")");
        let rows = self
            .db
            .query(&sql, || "reading page hits".to_owned())
            .await?;
        let mut pages: HashMap<i64, (KnowledgePage, i64)> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let field = |error: tokio_postgres::Error| corrupt("a page search hit", error);
            let referenced_by: i64 = row.try_get(11).map_err(field)?;
            let rid: i64 = row.try_get(12).map_err(field)?;
            pages.insert(rid, (decode(row)?, referenced_by));
        }
        // A page deleted between the two statements is left out.
        Ok(candidates
            .into_iter()
            .filter_map(|candidate| {
                pages
                    .remove(&candidate.rid)
                    .map(|(page, referenced_by)| PageHit {
                        page: std::sync::Arc::new(page),
                        score: candidate.score,
                        signals: candidate.signals,
                        referenced_by: to_count(referenced_by),
                    })
            })
            .collect())
    }

    async fn get_index(&self, scope: &Scope) -> Result<Vec<PageIndexEntry>> {
        let mut sql = self.db.sql(&format!(
            "SELECT p.ns, p.id, p.title, p.summary, p.tags, p.updated_at, {REFERENCED_BY} \
             FROM {{s}}.pages p WHERE true"
        ));
        sql.and_scope("p.ns", scope).push(ORDER);
        let rows = self
            .db
            .query(&sql, || "reading the page index".to_owned())
            .await?;
        rows.iter()
            .map(|row| {
                let field = |error: tokio_postgres::Error| corrupt("a page index entry", error);
                let ns: String = row.try_get(0).map_err(field)?;
                let id: String = row.try_get(1).map_err(field)?;
                let what = format!("page {id} in {ns}");
                let tags: Vec<String> = row.try_get(4).map_err(field)?;
                let referenced_by: i64 = row.try_get(6).map_err(field)?;
                Ok(PageIndexEntry {
                    namespace: Namespace::parse(&ns).map_err(|error| corrupt(&what, error))?,
                    tags: decode_tags(&what, &tags)?,
                    title: row.try_get(2).map_err(field)?,
                    summary: row.try_get(3).map_err(field)?,
                    updated_at: decode_time(row.try_get(5).map_err(field)?),
                    referenced_by: to_count(referenced_by),
                    id,
                })
            })
            .collect()
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut sql = self.db.sql("DELETE FROM {s}.pages AS p WHERE true");
        sql.and_scope("p.ns", scope);
        let deleted = self
            .db
            .execute(&sql, || "clearing pages".to_owned())
            .await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = self
            .db
            .sql("SELECT DISTINCT p.ns FROM {s}.pages p WHERE true");
        sql.and_scope("p.ns", scope).push(" ORDER BY p.ns");
        namespaces(&self.db, &sql, "listing page namespaces").await
    }

    async fn referrers(&self, namespace: &Namespace, id: &str) -> Result<Vec<String>> {
        self.referrers_at_most(namespace, id, usize::MAX).await
    }

    /// One index read: `page_refs` is keyed by `(ns, target_id, source_id)`, so the first
    /// `limit` are read in order and no more.
    async fn referrers_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<String>> {
        if !storable(id) {
            return Ok(Vec::new());
        }
        let mut sql = self
            .db
            .sql("SELECT r.source_id FROM {s}.page_refs r WHERE r.ns = ");
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND r.target_id = ")
            .bind(id.to_owned(), "text")
            .push(" AND r.source_id <> r.target_id ORDER BY r.source_id LIMIT ")
            .bind(i64::try_from(limit).unwrap_or(i64::MAX), "bigint");
        let rows = self
            .db
            .query(&sql, || {
                format!("listing the pages that refer to page {id} in {namespace}")
            })
            .await?;
        rows.iter()
            .map(|row| {
                row.try_get::<_, String>(0)
                    .map_err(|error| corrupt("a page reference", error))
            })
            .collect()
    }

    async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        if !storable(id) {
            return Ok(0);
        }
        let mut sql = self.db.sql(&format!(
            "SELECT coalesce((SELECT {REFERENCED_BY} FROM {{s}}.pages p WHERE p.ns = "
        ));
        sql.bind(namespace.as_str().to_owned(), "text")
            .push(" AND p.id = ")
            .bind(id.to_owned(), "text")
            .push("), 0)");
        count(
            &self.db,
            &sql,
            &format!("counting references to page {id} in {namespace}"),
        )
        .await
    }

    /// One statement for the whole batch: an `UPDATE ... FROM unnest(...)` of the batch's
    /// accesses tallied per record, so concurrent batches add up.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        crate::sql::record_accesses(&self.db, "pages", events).await
    }

    async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
        let mut sql = self
            .db
            .sql(&format!("SELECT {COLUMNS} FROM {{s}}.pages p WHERE true"));
        sql.and_scope("p.ns", scope).push(ORDER);
        let rows = self.db.query(&sql, || "listing pages".to_owned()).await?;
        rows.iter().map(decode).collect()
    }
}
