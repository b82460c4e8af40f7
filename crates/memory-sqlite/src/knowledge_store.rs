//! [`SqliteKnowledgeStore`]: knowledge pages with their index, references and FTS5 search.

use async_trait::async_trait;
use memory_core::{
    KnowledgePage, KnowledgeStore, MemoryError, Namespace, PageHit, PageIndexEntry,
    PageMatchSignals, PageQuery, Result, Scope, Tag,
};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params, params_from_iter};

use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::memory_store::namespaces;
use crate::sql::{
    Sql, decode_strings, decode_tags, decode_time, encode_strings, encode_tags, encode_time,
    fts_document, fts_match, scope_tokens, to_count,
};

/// BM25 weights of the FTS columns title, summary, tags and content: the same as the
/// in-memory backend's BM25F field weights.
pub const PAGE_COLUMN_WEIGHTS: [f64; 4] = [3.0, 2.0, 3.0, 1.0];

/// A [`KnowledgeStore`] in an SQLite database.
///
/// Pages live in `pages`; their references in `page_refs` (one row per referring page and
/// referenced id, self references left out), so `referenced_by` is an indexed count. Search
/// goes through the contentless FTS5 table `pages_fts` with the columns title, summary, tags
/// and content, holding the shared analyzer's terms and ranked by `bm25()` with
/// [`PAGE_COLUMN_WEIGHTS`]; the score is then multiplied by the boost of the seed's match rules
/// (`1 + 0.5 title_prefix + 0.5 tag_exact + 0.25 summary_contains`, the in-memory backend's
/// rule), reported in [`PageHit::signals`]. Every write changes a page, its references and
/// its FTS row in one transaction.
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

const COLUMNS: &str =
    "p.ns, p.id, p.title, p.summary, p.content, p.tags, p.refs, p.created_at, p.updated_at";
const ORDER: &str = " ORDER BY p.ns, p.title_key, p.id";

struct EncodedPage {
    ns: String,
    id: String,
    title: String,
    title_key: String,
    summary: String,
    content: String,
    tags_json: String,
    refs_json: String,
    /// References other than to the page itself.
    refs: Vec<String>,
    created_at: i64,
    updated_at: i64,
    fts: [String; 4],
    scope: String,
}

fn encode(page: KnowledgePage) -> Result<EncodedPage> {
    page.validate()?;
    let mut refs: Vec<String> = Vec::new();
    for reference in &page.references {
        if *reference != page.id && !refs.contains(reference) {
            refs.push(reference.clone());
        }
    }
    Ok(EncodedPage {
        fts: fts_columns(&page.title, &page.summary, &page.tags, &page.content),
        scope: scope_tokens(&page.namespace),
        title_key: page.title.to_lowercase(),
        tags_json: encode_tags(&page.tags),
        refs_json: encode_strings(&page.references),
        refs,
        created_at: encode_time("created_at", page.created_at)?,
        updated_at: encode_time("updated_at", page.updated_at)?,
        ns: page.namespace.as_str().to_owned(),
        id: page.id,
        title: page.title,
        summary: page.summary,
        content: page.content,
    })
}

/// The analyzed terms of the FTS columns title, summary, tags, content.
fn fts_columns(title: &str, summary: &str, tags: &[Tag], content: &str) -> [String; 4] {
    let tag_text = tags.iter().map(Tag::as_str).collect::<Vec<_>>().join(" ");
    [
        fts_document(title),
        fts_document(summary),
        fts_document(&tag_text),
        fts_document(content),
    ]
}

fn insert_terms(
    transaction: &Transaction<'_>,
    rid: i64,
    fts: &[String; 4],
    scope: &str,
) -> rusqlite::Result<usize> {
    transaction
        .prepare_cached(
            "INSERT INTO pages_fts (rowid, title, summary, tags, content, scope) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![rid, fts[0], fts[1], fts[2], fts[3], scope])
}

/// Fills the (empty) full-text index from the `pages` table, when the index is rebuilt.
pub(crate) fn reindex(transaction: &Transaction<'_>) -> Result<()> {
    let what = || "rebuilding the page full-text index";
    let mut select = transaction
        .prepare("SELECT rid, ns, id, title, summary, tags, content FROM pages")
        .context(what)?;
    let mut rows = select.query([]).context(what)?;
    while let Some(row) = rows.next().context(what)? {
        let rid: i64 = row.get(0).context(what)?;
        let (ns, id): (String, String) = (row.get(1).context(what)?, row.get(2).context(what)?);
        let page = format!("page {id} in {ns}");
        let namespace = Namespace::parse(&ns).map_err(|error| corrupt(&page, error))?;
        let tags = decode_tags(&page, &row.get::<_, String>(5).context(what)?)?;
        let fts = fts_columns(
            &row.get::<_, String>(3).context(what)?,
            &row.get::<_, String>(4).context(what)?,
            &tags,
            &row.get::<_, String>(6).context(what)?,
        );
        insert_terms(transaction, rid, &fts, &scope_tokens(&namespace)).context(what)?;
    }
    Ok(())
}

struct RawPage {
    ns: String,
    id: String,
    title: String,
    summary: String,
    content: String,
    tags: String,
    refs: String,
    created_at: i64,
    updated_at: i64,
}

fn read_raw(row: &Row<'_>) -> rusqlite::Result<RawPage> {
    Ok(RawPage {
        ns: row.get(0)?,
        id: row.get(1)?,
        title: row.get(2)?,
        summary: row.get(3)?,
        content: row.get(4)?,
        tags: row.get(5)?,
        refs: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
    })
}

impl RawPage {
    fn into_page(self) -> Result<KnowledgePage> {
        let what = format!("page {} in {}", self.id, self.ns);
        Ok(KnowledgePage {
            namespace: Namespace::parse(&self.ns).map_err(|error| corrupt(&what, error))?,
            tags: decode_tags(&what, &self.tags)?,
            references: decode_strings(&format_args!("references of {what}"), &self.refs)?,
            id: self.id,
            title: self.title,
            summary: self.summary,
            content: self.content,
            created_at: decode_time(self.created_at),
            updated_at: decode_time(self.updated_at),
        })
    }
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

/// Writes the page's FTS row and references (after its row was inserted or updated).
fn write_index(transaction: &Transaction<'_>, rid: i64, page: &EncodedPage) -> Result<()> {
    let what = || format!("indexing page {} in {}", page.id, page.ns);
    insert_terms(transaction, rid, &page.fts, &page.scope).context(what)?;
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

/// Removes the page's FTS row and references (before its row is updated or deleted).
fn clear_index(transaction: &Transaction<'_>, rid: i64, ns: &str, id: &str) -> Result<()> {
    let what = || format!("unindexing page {id} in {ns}");
    transaction
        .prepare_cached("DELETE FROM pages_fts WHERE rowid = ?1")
        .and_then(|mut statement| statement.execute([rid]))
        .context(what)?;
    transaction
        .prepare_cached("DELETE FROM page_refs WHERE ns = ?1 AND source_id = ?2")
        .and_then(|mut statement| statement.execute(params![ns, id]))
        .context(what)?;
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

struct Candidate {
    rid: i64,
    ns: String,
    id: String,
    score: f32,
    signals: PageMatchSignals,
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
                let rid: i64 = transaction
                    .prepare_cached(
                        "INSERT INTO pages (ns, id, title, title_key, summary, content, tags, \
                         refs, created_at, updated_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING rid",
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
                            ],
                            |row| row.get(0),
                        )
                    })
                    .context(|| format!("adding page {} in {}", page.id, page.ns))?;
                write_index(transaction, rid, &page)
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
            .call(move |connection| query_pages(connection, &sql, &what))
            .await
            .map(|pages| pages.into_iter().next())
    }

    async fn update_page(&self, page: KnowledgePage) -> Result<()> {
        let page = encode(page)?;
        self.db
            .write("updating a page", move |transaction| {
                let Some(rid) = find_page(transaction, &page.ns, &page.id)? else {
                    return Err(MemoryError::NotFound(format!(
                        "page {} in {}",
                        page.id, page.ns
                    )));
                };
                clear_index(transaction, rid, &page.ns, &page.id)?;
                // created_at is kept from the stored page.
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
                write_index(transaction, rid, &page)
            })
            .await
    }

    async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .write("deleting a page", move |transaction| {
                let Some(rid) = find_page(transaction, &ns, &id)? else {
                    return Ok(false);
                };
                clear_index(transaction, rid, &ns, &id)?;
                transaction
                    .prepare_cached("DELETE FROM pages WHERE rid = ?1")
                    .and_then(|mut statement| statement.execute([rid]))
                    .context(|| format!("deleting page {id} in {ns}"))?;
                Ok(true)
            })
            .await
    }

    async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>> {
        let Some(expression) = fts_match("title summary tags content", &query.text, &query.scope)
        else {
            return Ok(Vec::new());
        };
        if query.top_k == 0 {
            return Ok(Vec::new());
        }
        let [title, summary, tags, content] = PAGE_COLUMN_WEIGHTS;
        let mut sql = Sql::new(&format!(
            "SELECT p.rid, p.ns, p.id, p.title, p.summary, p.tags, \
             bm25(pages_fts, {title:.1}, {summary:.1}, {tags:.1}, {content:.1}, 0.0) \
             FROM pages_fts CROSS JOIN pages p ON p.rid = pages_fts.rowid \
             WHERE pages_fts MATCH "
        ));
        sql.bind(expression);
        sql.and_scope("p.ns", &query.scope);
        for tag in &query.tags {
            sql.push(" AND EXISTS (SELECT 1 FROM json_each(p.tags) j WHERE j.value = ")
                .bind(tag.as_str().to_owned())
                .push(")");
        }
        let keywords = memory_core::page_rule_keywords(&query.text);
        let top_k = query.top_k;
        self.db
            .call(move |connection| {
                let rows = connection
                    .prepare_cached(&sql.text)
                    .and_then(|mut statement| {
                        statement
                            .query_map(params_from_iter(sql.params.iter()), |row| {
                                Ok((
                                    row.get::<_, i64>(0)?,
                                    row.get::<_, String>(1)?,
                                    row.get::<_, String>(2)?,
                                    row.get::<_, String>(3)?,
                                    row.get::<_, String>(4)?,
                                    row.get::<_, String>(5)?,
                                    row.get::<_, f64>(6)?,
                                ))
                            })?
                            .collect::<rusqlite::Result<Vec<_>>>()
                    })
                    .context(|| "searching pages")?;
                let mut candidates = Vec::with_capacity(rows.len());
                for (rid, ns, id, title, summary, tags, rank) in rows {
                    let tags = decode_tags(&format_args!("page {id} in {ns}"), &tags)?;
                    let signals = PageMatchSignals::compute(&title, &summary, &tags, &keywords);
                    let relevance = (-rank as f32).max(f32::MIN_POSITIVE);
                    candidates.push(Candidate {
                        rid,
                        ns,
                        id,
                        score: relevance * signals.boost(),
                        signals,
                    });
                }
                candidates.sort_by(|a, b| {
                    b.score
                        .total_cmp(&a.score)
                        .then_with(|| a.id.cmp(&b.id))
                        .then_with(|| a.ns.cmp(&b.ns))
                });
                candidates.truncate(top_k);
                let mut statement = connection
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS}, {REFERENCED_BY} FROM pages p WHERE p.rid = ?1"
                    ))
                    .context(|| "reading page hits")?;
                let mut hits = Vec::with_capacity(candidates.len());
                for candidate in candidates {
                    let (raw, referenced_by) = statement
                        .query_row([candidate.rid], |row| {
                            Ok((read_raw(row)?, row.get::<_, i64>(9)?))
                        })
                        .context(|| format!("reading page {} in {}", candidate.id, candidate.ns))?;
                    hits.push(PageHit {
                        page: raw.into_page()?,
                        score: candidate.score,
                        signals: candidate.signals,
                        referenced_by: to_count(referenced_by),
                    });
                }
                Ok(hits)
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
            .call(move |connection| {
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
                for (rid, ns, id) in &rows {
                    clear_index(transaction, *rid, ns, id)?;
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
            .call(move |connection| namespaces(connection, &sql, "listing page namespaces"))
            .await
    }

    async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        let (ns, id) = (namespace.as_str().to_owned(), id.to_owned());
        self.db
            .call(move |connection| {
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

    async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
        let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM pages p WHERE 1"));
        sql.and_scope("p.ns", scope).push(ORDER);
        self.db
            .call(move |connection| query_pages(connection, &sql, "listing pages"))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_rules() {
        let keywords = memory_core::page_rule_keywords("LangGraph 的 StateGraph 状态管理原理？");
        assert_eq!(keywords, ["langgraph", "stategraph", "状态管理原理"]);
        let tags = [Tag::new("state-graph").unwrap()];
        let signals = PageMatchSignals::compute("StateGraph 状态管理", "核心", &tags, &keywords);
        assert!(signals.title_prefix && !signals.tag_exact && !signals.summary_contains);
        let signals = PageMatchSignals::compute(
            "Nodes",
            "graph theory",
            &tags,
            &memory_core::page_rule_keywords("State Graph"),
        );
        assert!(!signals.title_prefix && signals.summary_contains);
        assert!(memory_core::page_rule_keywords("the a of").is_empty());
        assert_eq!(PageMatchSignals::default().boost(), 1.0);
    }
}
