//! [`SqliteKnowledgeStore`]: knowledge pages with their index, references and full-text
//! search.

mod row;
mod search;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use memory_core::{
    AccessEvent, KnowledgePage, KnowledgeStore, MemoryError, Namespace, PageHit, PageIndexEntry,
    PageQuery, Result, Scope,
};
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use self::row::{COLUMNS, EncodedPage, RawPage, analyze, encode, read_raw, read_raw_at};
use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::fulltext;
use crate::sql::{Sql, decode_tags, decode_time, encode_time, namespaces, to_count};
use crate::terms::{Analyzed, QueryTerms};

/// A [`KnowledgeStore`] in an SQLite database.
///
/// Pages live in `pages`; their references in `page_refs` (one row per referring page and
/// referenced id, self references left out), so `referenced_by` is an indexed count. Search
/// goes through the postings tables `page_*` over the fields title, summary, tags and
/// content, holding the shared analyzer's terms with each namespace's statistics, and ranks
/// with [`memory_core::search`]'s BM25F
/// ([`PAGE_FIELD_WEIGHTS`](memory_core::search::PAGE_FIELD_WEIGHTS)); the score is then
/// multiplied by the boost of the seed's match rules
/// (`1 + 0.5 title_prefix + 0.5 tag_exact + 0.25 summary_contains`, every backend's rule),
/// reported in [`PageHit::signals`]. The same pages give the same hits in the same order as
/// in the in-memory backend. Every write changes a page, its references and its index
/// entry in one transaction.
///
/// Cheap to clone; clones share the connection.
#[derive(Clone, Debug)]
pub struct SqliteKnowledgeStore {
    db: Database,
}

impl SqliteKnowledgeStore {
    pub(crate) fn new(db: Database) -> Self {
        Self { db }
    }
}

const ORDER: &str = " ORDER BY p.ns, p.title_key, p.id";

/// Calls `each` with every page's row id, namespace and analyzed search fields, for the
/// rebuild and the check of the full-text index.
pub(crate) fn for_each_document(
    connection: &Connection,
    mut each: impl FnMut(i64, &str, &Analyzed<4>) -> Result<()>,
) -> Result<()> {
    let what = || "reading every page for the full-text index";
    let mut statement = connection
        .prepare(&format!("SELECT p.rid, {COLUMNS} FROM pages p"))
        .context(what)?;
    let mut rows = statement.query([]).context(what)?;
    while let Some(row) = rows.next().context(what)? {
        let rid: i64 = row.get(0).context(what)?;
        let page = read_raw_at(row, 1).context(what)?.into_page()?;
        each(rid, page.namespace.as_str(), &analyze(&page))?;
    }
    Ok(())
}

fn find_page(connection: &Connection, ns: &str, id: &str) -> Result<Option<i64>> {
    connection
        .prepare_cached("SELECT rid FROM pages WHERE ns = ?1 AND id = ?2")
        .and_then(|mut statement| {
            statement
                .query_row(params![ns, id], |row| row.get(0))
                .optional()
        })
        .context(|| format!("looking up page {id} in {ns}"))
}

/// Writes the page's index entry and references (after its row was inserted or updated).
fn write_index(transaction: &Transaction<'_>, rid: i64, page: &EncodedPage) -> Result<()> {
    let what = || format!("indexing page {} in {}", page.id, page.ns);
    fulltext::pages().put(transaction, rid, &page.ns, &page.doc)?;
    let mut insert = transaction
        .prepare_cached(
            "INSERT OR IGNORE INTO page_refs (ns, source_id, target_id) VALUES (?1, ?2, ?3)",
        )
        .context(what)?;
    for target in &page.refs {
        insert
            .execute(params![page.ns, page.id, target])
            .context(what)?;
    }
    Ok(())
}

/// Replaces the stored page at `rid` with `page`: its fields, references and index;
/// `created_at` and the access statistics are kept from the stored page.
fn replace_page(transaction: &Transaction<'_>, rid: i64, page: &EncodedPage) -> Result<()> {
    clear_refs(transaction, &page.ns, &page.id)?;
    transaction
        .prepare_cached(
            "UPDATE pages SET title = ?2, title_key = ?3, summary = ?4, content = ?5, \
             tags = ?6, refs = ?7, updated_at = ?8 WHERE rid = ?1",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                rid,
                page.title,
                page.title_key,
                page.summary,
                page.content,
                page.tags_json,
                page.refs_json,
                page.updated_at,
            ])
        })
        .context(|| format!("updating page {} in {}", page.id, page.ns))?;
    write_index(transaction, rid, page)
}

/// Removes the page's references (before its row is updated or deleted).
fn clear_refs(transaction: &Transaction<'_>, ns: &str, id: &str) -> Result<()> {
    transaction
        .prepare_cached("DELETE FROM page_refs WHERE ns = ?1 AND source_id = ?2")
        .and_then(|mut statement| statement.execute(params![ns, id]))
        .context(|| format!("removing the references of page {id} in {ns}"))?;
    Ok(())
}

fn query_pages(connection: &Connection, sql: &Sql, what: &str) -> Result<Vec<KnowledgePage>> {
    let raws = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), read_raw)?
                .collect::<rusqlite::Result<Vec<RawPage>>>()
        })
        .context(|| what.to_owned())?;
    raws.into_iter().map(RawPage::into_page).collect()
}

const REFERENCED_BY: &str =
    "(SELECT count(*) FROM page_refs r WHERE r.ns = p.ns AND r.target_id = p.id)";

/// Inserts the encoded page, its index entries and its references (it must not exist).
fn insert_page(transaction: &Transaction<'_>, page: &EncodedPage) -> Result<()> {
    let rid: i64 = transaction
        .prepare_cached(
            "INSERT INTO pages (ns, id, title, title_key, summary, content, tags, \
             refs, created_at, updated_at, access_count, last_accessed) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) RETURNING rid",
        )
        .and_then(|mut statement| {
            statement.query_row(
                params![
                    page.ns,
                    page.id,
                    page.title,
                    page.title_key,
                    page.summary,
                    page.content,
                    page.tags_json,
                    page.refs_json,
                    page.created_at,
                    page.updated_at,
                    page.access_count,
                    page.last_accessed,
                ],
                |row| row.get(0),
            )
        })
        .context(|| format!("adding page {} in {}", page.id, page.ns))?;
    write_index(transaction, rid, page)
}

/// Deletes page `id` of `ns` with its index entries and references; whether it existed.
fn remove_page(transaction: &Transaction<'_>, ns: &str, id: &str) -> Result<bool> {
    let Some(rid) = find_page(transaction, ns, id)? else {
        return Ok(false);
    };
    fulltext::pages().remove(transaction, rid)?;
    clear_refs(transaction, ns, id)?;
    transaction
        .prepare_cached("DELETE FROM pages WHERE rid = ?1")
        .and_then(|mut statement| statement.execute([rid]))
        .context(|| format!("deleting page {id} in {ns}"))?;
    Ok(true)
}

#[async_trait]
impl KnowledgeStore for SqliteKnowledgeStore {
    async fn add_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        self.db
            .write("adding a page", move |transaction| {
                if find_page(transaction, &page.ns, &page.id)?.is_some() {
                    return Err(MemoryError::AlreadyExists(format!(
                        "page {} in {}",
                        page.id, page.ns
                    )));
                }
                insert_page(transaction, &page)
            })
            .await
    }

    async fn get_page(&self, namespace: &Namespace, id: &str) -> Result<Option<KnowledgePage>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM pages p WHERE p.ns = "));
        sql.bind(namespace.as_str().to_owned())
            .push(" AND p.id = ")
            .bind(id.to_owned());
        let what = format!("reading page {id} in {namespace}");
        self.db
            .query(move |connection| query_pages(connection, &sql, &what))
            .await
            .map(|pages| pages.into_iter().next())
    }

    async fn update_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        self.db
            .write("updating a page", move |transaction| {
                let Some(rid) = find_page(transaction, &page.ns, &page.id)? else {
                    return Err(MemoryError::not_found("page", &page.ns, &page.id));
                };
                replace_page(transaction, rid, &page)
            })
            .await
    }

    /// One write transaction: the stored `updated_at` compared, then the page replaced.
    async fn update_page_if(&self, page: KnowledgePage, read_at: DateTime<Utc>) -> Result<bool> {
        let page = encode(page)?;
        // A time the store cannot hold is no stored page's.
        let Ok(read_at) = encode_time("read_at", read_at) else {
            return Ok(false);
        };
        self.db
            .write("updating a page", move |transaction| {
                let Some(rid) = find_page(transaction, &page.ns, &page.id)? else {
                    return Ok(false);
                };
                let stored: i64 = transaction
                    .prepare_cached("SELECT updated_at FROM pages WHERE rid = ?1")
                    .and_then(|mut statement| statement.query_row(params![rid], |row| row.get(0)))
                    .context(|| format!("reading page {} in {}", page.id, page.ns))?;
                if stored != read_at {
                    return Ok(false);
                }
                replace_page(transaction, rid, &page)?;
                Ok(true)
            })
            .await
    }

    /// One transaction: the stored page deleted and the new one added.
    async fn put_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        self.db
            .write("putting a page", move |transaction| {
                remove_page(transaction, &page.ns, &page.id)?;
                insert_page(transaction, &page)
            })
            .await
    }

    async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("deleting a page", move |transaction| {
                remove_page(transaction, &ns, &id)
            })
            .await
    }

    /// BM25F over each namespace's statistics, times the match rules' boost, computed for
    /// the best candidates only (`search.rs`).
    async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>> {
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let Some(terms) = QueryTerms::of(&query.analysed_terms()) else {
            return Ok(Vec::new());
        };
        let query = query.clone();
        self.db
            .read("searching pages", move |transaction| {
                search::search(transaction, &query, &terms)
            })
            .await
    }

    async fn get_index(&self, scope: &Scope) -> Result<Vec<PageIndexEntry>> {
        let mut sql = Sql::new(&format!(
            "SELECT p.ns, p.id, p.title, p.summary, p.tags, p.updated_at, {REFERENCED_BY} \
             FROM pages p WHERE 1"
        ));
        sql.and_scope("p.ns", scope).push(ORDER);
        self.db
            .query(move |connection| {
                let rows = connection
                    .prepare_cached(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| {
                                Ok((
                                    row.get::<_, String>(0)?,
                                    row.get::<_, String>(1)?,
                                    row.get::<_, String>(2)?,
                                    row.get::<_, String>(3)?,
                                    row.get::<_, String>(4)?,
                                    row.get::<_, i64>(5)?,
                                    row.get::<_, i64>(6)?,
                                ))
                            })?
                            .collect::<rusqlite::Result<Vec<_>>>()
                    })
                    .context(|| "reading the page index")?;
                rows.into_iter()
                    .map(
                        |(ns, id, title, summary, tags, updated_at, referenced_by)| {
                            let what = format!("page {id} in {ns}");
                            Ok(PageIndexEntry {
                                namespace: Namespace::parse(&ns)
                                    .map_err(|error| corrupt(&what, error))?,
                                tags: decode_tags(&what, &tags)?,
                                id,
                                title,
                                summary,
                                updated_at: decode_time(updated_at),
                                referenced_by: to_count(referenced_by),
                            })
                        },
                    )
                    .collect()
            })
            .await
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut sql = Sql::new("SELECT p.rid, p.ns, p.id FROM pages p WHERE 1");
        sql.and_scope("p.ns", scope);
        let scope = scope.clone();
        self.db
            .write("clearing pages", move |transaction| {
                let rows = transaction
                    .prepare(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| {
                                Ok((
                                    row.get::<_, i64>(0)?,
                                    row.get::<_, String>(1)?,
                                    row.get::<_, String>(2)?,
                                ))
                            })?
                            .collect::<rusqlite::Result<Vec<_>>>()
                    })
                    .context(|| "clearing pages")?;
                let rids: Vec<i64> = rows.iter().map(|(rid, _, _)| *rid).collect();
                fulltext::pages().clear(transaction, &scope, &rids)?;
                for (rid, ns, id) in &rows {
                    clear_refs(transaction, ns, id)?;
                    transaction
                        .prepare_cached("DELETE FROM pages WHERE rid = ?1")
                        .and_then(|mut statement| statement.execute([rid]))
                        .context(|| format!("deleting page {id} in {ns}"))?;
                }
                Ok(rows.len())
            })
            .await
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new("SELECT DISTINCT p.ns FROM pages p WHERE 1");
        sql.and_scope("p.ns", scope).push(" ORDER BY p.ns");
        self.db
            .query(move |connection| namespaces(connection, &sql, "listing page namespaces"))
            .await
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
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        // SQLite's LIMIT is a signed 64-bit integer; -1 is none.
        let limit = i64::try_from(limit).unwrap_or(-1);
        self.db
            .query(move |connection| {
                connection
                    .prepare_cached(
                        "SELECT source_id FROM page_refs WHERE ns = ?1 AND target_id = ?2 \
                         AND source_id <> ?2 ORDER BY source_id LIMIT ?3",
                    )
                    .and_then(|mut statement| {
                        statement
                            .query_map(params![ns, id, limit], |row| row.get::<_, String>(0))?
                            .collect::<rusqlite::Result<Vec<String>>>()
                    })
                    .context(|| format!("listing the pages that refer to page {id} in {ns}"))
            })
            .await
    }

    async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .query(move |connection| {
                connection
                    .prepare_cached(
                        "SELECT CASE WHEN EXISTS (SELECT 1 FROM pages WHERE ns = ?1 AND id = ?2) \
                         THEN (SELECT count(*) FROM page_refs WHERE ns = ?1 AND target_id = ?2) \
                         ELSE 0 END",
                    )
                    .and_then(|mut statement| {
                        statement.query_row(params![ns, id], |row| row.get::<_, i64>(0))
                    })
                    .map(to_count)
                    .context(|| format!("counting references to page {id} in {ns}"))
            })
            .await
    }

    /// One transaction for the batch: an `UPDATE` by `(ns, id)` per page it names.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let tallies = crate::sql::encode_accesses(events)?;
        if tallies.is_empty() {
            return Ok(());
        }
        self.db
            .write("recording page accesses", move |transaction| {
                crate::sql::apply_accesses(transaction, "pages", &tallies)
            })
            .await
    }

    async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM pages p WHERE 1"));
        sql.and_scope("p.ns", scope).push(ORDER);
        self.db
            .query(move |connection| query_pages(connection, &sql, "listing pages"))
            .await
    }
}
