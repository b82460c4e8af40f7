//! The full-text index of memories and of pages: postings with per-namespace BM25F
//! statistics, written in the same transaction as each record.
//!
//! Each index (`memory_*` over two fields, `page_*` over four) is four tables:
//! - `<p>_stats (nid, ns, docs, len0..)`: one row per namespace holding records, with its
//!   record count and each field's total length. `nid` names the namespace in the others.
//! - `<p>_df (nid, term, df)`: how many records of the namespace hold the term.
//! - `<p>_postings (nid, term, rid, tf0.., len0..)`: one row per record and distinct term,
//!   with the term's frequency in each field and the record's field lengths, so scoring a
//!   candidate reads nothing else.
//! - `<p>_docs (rid, nid, len0.., terms)`: each record's field lengths and its terms with
//!   their frequencies ([`Analyzed::encode_terms`]), so a record leaves the index exactly
//!   as it came in, and a rewrite whose terms did not change leaves the index alone.
//!
//! These tables are derived state: [`create_tables`] recreates them empty, and the rebuild
//! fills them from the records. A search reads the statistics of the namespaces in scope
//! (one row each) and the postings of the query's terms in each (an index range per
//! term), never anything proportional to the namespace's size.

mod bulk;
mod check;
mod score;

use std::sync::OnceLock;

use memory_core::search::{MEMORY_FIELD_WEIGHTS, PAGE_FIELD_WEIGHTS};
use memory_core::{Result, Scope};
use rusqlite::{Connection, OptionalExtension};

pub(crate) use self::bulk::Bulk;
use crate::error::Context;
use crate::sql::Sql;
use crate::terms::{Analyzed, decode_terms};

/// The layout of the index tables; part of the index fingerprint, so a change rebuilds
/// them. 1: FTS5 `terms` and `scope` columns (schema 3); 2: the memory `context` column;
/// 3: postings with per-namespace statistics (schema 4).
pub(crate) const INDEX_LAYOUT: u32 = 3;

/// One full-text index over records with `N` weighted fields.
#[derive(Debug)]
pub(crate) struct FullText<const N: usize> {
    /// The BM25F weight of each field.
    weights: [f32; N],
    /// The table prefix, `memory` or `page`.
    prefix: &'static str,
    sql: Statements,
}

/// The statements over one index, built once.
#[derive(Debug)]
struct Statements {
    add_stats: String,
    sub_stats: String,
    drop_empty_stats: String,
    add_df: String,
    drop_last_df: String,
    sub_df: String,
    add_posting: String,
    drop_posting: String,
    add_doc: String,
    read_doc: String,
    drop_doc: String,
    read_posting: String,
    /// `SELECT nid, docs, len0.. FROM <p>_stats s WHERE s.docs > 0`, for a scope condition.
    stats_in: String,
    /// The postings of the query's terms in one namespace, with each term's df.
    postings: String,
    clear_postings: String,
    clear_df: String,
    clear_stats: String,
}

/// `name0, name1, ...`, `N` columns.
fn columns(name: &str, n: usize) -> String {
    (0..n)
        .map(|field| format!("{name}{field}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `?from, ?from+1, ...`, `n` placeholders.
fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|at| format!("?{at}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Statements {
    fn new(p: &str, n: usize) -> Self {
        let len = columns("len", n);
        let tf = columns("tf", n);
        let added = (0..n)
            .map(|field| format!("len{field} = len{field} + excluded.len{field}"))
            .collect::<Vec<_>>()
            .join(", ");
        let subtracted = (0..n)
            .map(|field| format!("len{field} = len{field} - ?{}", field + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let posting_len = (0..n)
            .map(|field| format!("p.len{field}"))
            .collect::<Vec<_>>()
            .join(", ");
        let posting_tf = (0..n)
            .map(|field| format!("p.tf{field}"))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            add_stats: format!(
                "INSERT INTO {p}_stats (ns, docs, {len}) VALUES (?1, 1, {}) \
                 ON CONFLICT (ns) DO UPDATE SET docs = docs + 1, {added} RETURNING nid",
                placeholders(2, n)
            ),
            sub_stats: format!("UPDATE {p}_stats SET docs = docs - 1, {subtracted} WHERE nid = ?1"),
            drop_empty_stats: format!("DELETE FROM {p}_stats WHERE nid = ?1 AND docs <= 0"),
            add_df: format!(
                "INSERT INTO {p}_df (nid, term, df) VALUES (?1, ?2, 1) \
                 ON CONFLICT (nid, term) DO UPDATE SET df = df + 1"
            ),
            drop_last_df: format!("DELETE FROM {p}_df WHERE nid = ?1 AND term = ?2 AND df <= 1"),
            sub_df: format!("UPDATE {p}_df SET df = df - 1 WHERE nid = ?1 AND term = ?2"),
            add_posting: format!(
                "INSERT INTO {p}_postings (nid, term, rid, {tf}, {len}) VALUES (?1, ?2, ?3, {})",
                placeholders(4, 2 * n)
            ),
            drop_posting: format!(
                "DELETE FROM {p}_postings WHERE nid = ?1 AND term = ?2 AND rid = ?3"
            ),
            add_doc: format!(
                "INSERT INTO {p}_docs (rid, nid, {len}, terms) VALUES (?1, ?2, {})",
                placeholders(3, n + 1)
            ),
            read_doc: format!("SELECT nid, {len}, terms FROM {p}_docs WHERE rid = ?1"),
            drop_doc: format!("DELETE FROM {p}_docs WHERE rid = ?1"),
            read_posting: format!(
                "SELECT {tf}, {len} FROM {p}_postings WHERE nid = ?1 AND term = ?2 AND rid = ?3"
            ),
            stats_in: format!("SELECT s.nid, s.docs, {len} FROM {p}_stats s WHERE s.docs > 0"),
            postings: format!(
                "SELECT d.df, p.rid, {posting_tf}, {posting_len} FROM {p}_df d \
                 CROSS JOIN {p}_postings p ON p.nid = d.nid AND p.term = d.term \
                 WHERE d.nid = ?1 AND d.term IN (SELECT value FROM json_each(?2))"
            ),
            clear_postings: format!("DELETE FROM {p}_postings WHERE nid = ?1"),
            clear_df: format!("DELETE FROM {p}_df WHERE nid = ?1"),
            clear_stats: format!("DELETE FROM {p}_stats WHERE nid = ?1"),
        }
    }
}

/// The tables of the index with prefix `p` over `n` fields, created empty.
fn table_sql(p: &str, n: usize) -> String {
    let lens = (0..n)
        .map(|field| format!("len{field} INTEGER NOT NULL"))
        .collect::<Vec<_>>()
        .join(", ");
    let tfs = (0..n)
        .map(|field| format!("tf{field} INTEGER NOT NULL"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "DROP TABLE IF EXISTS {p}_stats;
         DROP TABLE IF EXISTS {p}_df;
         DROP TABLE IF EXISTS {p}_postings;
         DROP TABLE IF EXISTS {p}_docs;
         CREATE TABLE {p}_stats (
             nid INTEGER PRIMARY KEY, ns TEXT NOT NULL UNIQUE, docs INTEGER NOT NULL, {lens}
         );
         CREATE TABLE {p}_df (
             nid INTEGER NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
             PRIMARY KEY (nid, term)
         ) WITHOUT ROWID;
         CREATE TABLE {p}_postings (
             nid INTEGER NOT NULL, term TEXT NOT NULL, rid INTEGER NOT NULL, {tfs}, {lens},
             PRIMARY KEY (nid, term, rid)
         ) WITHOUT ROWID;
         CREATE TABLE {p}_docs (
             rid INTEGER PRIMARY KEY, nid INTEGER NOT NULL, {lens}, terms BLOB NOT NULL
         );"
    )
}

/// Drops and recreates both indexes' tables, empty (the first step of a rebuild).
pub(crate) fn create_tables(connection: &Connection) -> Result<()> {
    let sql = format!("{}\n{}", table_sql("memory", 2), table_sql("page", 4));
    connection
        .execute_batch(&sql)
        .context(|| "creating the full-text index tables")
}

/// The index of memories: content with tags, and context ([`MEMORY_FIELD_WEIGHTS`]).
pub(crate) fn memories() -> &'static FullText<2> {
    static INDEX: OnceLock<FullText<2>> = OnceLock::new();
    INDEX.get_or_init(|| FullText::new("memory", MEMORY_FIELD_WEIGHTS))
}

/// The index of pages: title, summary, tags, content ([`PAGE_FIELD_WEIGHTS`]).
pub(crate) fn pages() -> &'static FullText<4> {
    static INDEX: OnceLock<FullText<4>> = OnceLock::new();
    INDEX.get_or_init(|| FullText::new("page", PAGE_FIELD_WEIGHTS))
}

/// A record's entry in `<p>_docs`.
struct StoredDoc<const N: usize> {
    nid: i64,
    len: [u32; N],
    terms: Vec<u8>,
}

fn to_len(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

impl<const N: usize> FullText<N> {
    fn new(prefix: &'static str, weights: [f32; N]) -> Self {
        Self {
            weights,
            prefix,
            sql: Statements::new(prefix, N),
        }
    }

    /// Indexes the record `rid` of namespace `ns` as `doc`, replacing what the index held
    /// for it; nothing is written when it held exactly this. A record never changes
    /// namespace (its row is found by namespace and id), so neither does its entry.
    pub(crate) fn put(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
    ) -> Result<()> {
        let terms = doc.encode_terms();
        if let Some(stored) = self.read_doc(connection, rid)? {
            if stored.len == doc.len && stored.terms == terms {
                return Ok(());
            }
            self.remove_doc(connection, rid, &stored)?;
        }
        self.insert(connection, rid, ns, doc, &terms)
    }

    /// Removes the record `rid` from the index, if it is there.
    pub(crate) fn remove(&self, connection: &Connection, rid: i64) -> Result<()> {
        match self.read_doc(connection, rid)? {
            Some(stored) => self.remove_doc(connection, rid, &stored),
            None => Ok(()),
        }
    }

    /// Removes every record of the namespaces in `scope` from the index, given the row ids
    /// of those records: each namespace's postings, frequencies and statistics go by range,
    /// not term by term.
    pub(crate) fn clear(&self, connection: &Connection, scope: &Scope, rids: &[i64]) -> Result<()> {
        let what = || format!("clearing the {} full-text index", self.prefix);
        let mut sql = Sql::new(&format!(
            "SELECT s.nid FROM {}_stats s WHERE 1",
            self.prefix
        ));
        sql.and_scope("s.ns", scope);
        let nids = connection
            .prepare_cached(&sql.text)
            .and_then(|mut statement| {
                statement
                    .query_map(rusqlite::params_from_iter(sql.params.iter()), |row| {
                        row.get::<_, i64>(0)
                    })?
                    .collect::<rusqlite::Result<Vec<i64>>>()
            })
            .context(what)?;
        for text in [
            &self.sql.clear_postings,
            &self.sql.clear_df,
            &self.sql.clear_stats,
        ] {
            let mut statement = connection.prepare_cached(text).context(what)?;
            for nid in &nids {
                statement.execute([nid]).context(what)?;
            }
        }
        let mut statement = connection
            .prepare_cached(&self.sql.drop_doc)
            .context(what)?;
        for rid in rids {
            statement.execute([rid]).context(what)?;
        }
        Ok(())
    }

    fn read_doc(&self, connection: &Connection, rid: i64) -> Result<Option<StoredDoc<N>>> {
        connection
            .prepare_cached(&self.sql.read_doc)
            .and_then(|mut statement| {
                statement
                    .query_row([rid], |row| {
                        let mut len = [0u32; N];
                        for (field, len) in len.iter_mut().enumerate() {
                            *len = to_len(row.get(1 + field)?);
                        }
                        Ok(StoredDoc {
                            nid: row.get(0)?,
                            len,
                            terms: row.get(1 + N)?,
                        })
                    })
                    .optional()
            })
            .context(|| format!("reading the {} index entry of row {rid}", self.prefix))
    }

    fn insert(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
        terms: &[u8],
    ) -> Result<()> {
        let what = || format!("indexing row {rid} of the {} index", self.prefix);
        let nid: i64 = {
            let mut statement = connection
                .prepare_cached(&self.sql.add_stats)
                .context(what)?;
            statement.raw_bind_parameter(1, ns).context(what)?;
            for (field, len) in doc.len.iter().enumerate() {
                statement.raw_bind_parameter(2 + field, len).context(what)?;
            }
            let mut rows = statement.raw_query();
            let row = rows.next().context(what)?;
            match row {
                Some(row) => row.get(0).context(what)?,
                None => return Err(crate::error::corrupt(what(), "no namespace row")),
            }
        };
        let mut add_df = connection.prepare_cached(&self.sql.add_df).context(what)?;
        for (term, _) in &doc.terms {
            add_df.execute((nid, term)).context(what)?;
        }
        self.write_entry(connection, nid, rid, doc, terms)
    }

    /// Writes the record's postings and its `<p>_docs` row (not the statistics).
    fn write_entry(
        &self,
        connection: &Connection,
        nid: i64,
        rid: i64,
        doc: &Analyzed<N>,
        terms: &[u8],
    ) -> Result<()> {
        let what = || format!("indexing row {rid} of the {} index", self.prefix);
        let mut add_posting = connection
            .prepare_cached(&self.sql.add_posting)
            .context(what)?;
        for (term, tf) in &doc.terms {
            add_posting.raw_bind_parameter(1, nid).context(what)?;
            add_posting.raw_bind_parameter(2, term).context(what)?;
            add_posting.raw_bind_parameter(3, rid).context(what)?;
            for (field, (tf, len)) in tf.iter().zip(doc.len).enumerate() {
                add_posting
                    .raw_bind_parameter(4 + field, tf)
                    .context(what)?;
                add_posting
                    .raw_bind_parameter(4 + N + field, len)
                    .context(what)?;
            }
            add_posting.raw_execute().context(what)?;
        }
        let mut add_doc = connection.prepare_cached(&self.sql.add_doc).context(what)?;
        add_doc.raw_bind_parameter(1, rid).context(what)?;
        add_doc.raw_bind_parameter(2, nid).context(what)?;
        for (field, len) in doc.len.iter().enumerate() {
            add_doc.raw_bind_parameter(3 + field, len).context(what)?;
        }
        add_doc.raw_bind_parameter(3 + N, terms).context(what)?;
        add_doc.raw_execute().context(what)?;
        Ok(())
    }

    fn remove_doc(&self, connection: &Connection, rid: i64, stored: &StoredDoc<N>) -> Result<()> {
        let what = || format!("unindexing row {rid} of the {} index", self.prefix);
        let nid = stored.nid;
        let mut drop_posting = connection
            .prepare_cached(&self.sql.drop_posting)
            .context(what)?;
        let mut drop_last_df = connection
            .prepare_cached(&self.sql.drop_last_df)
            .context(what)?;
        let mut sub_df = connection.prepare_cached(&self.sql.sub_df).context(what)?;
        for term in decode_terms::<N>(rid, &stored.terms)? {
            drop_posting.execute((nid, term, rid)).context(what)?;
            if drop_last_df.execute((nid, term)).context(what)? == 0 {
                sub_df.execute((nid, term)).context(what)?;
            }
        }
        let mut sub_stats = connection
            .prepare_cached(&self.sql.sub_stats)
            .context(what)?;
        sub_stats.raw_bind_parameter(1, nid).context(what)?;
        for (field, len) in stored.len.iter().enumerate() {
            sub_stats.raw_bind_parameter(2 + field, len).context(what)?;
        }
        sub_stats.raw_execute().context(what)?;
        connection
            .prepare_cached(&self.sql.drop_empty_stats)
            .and_then(|mut statement| statement.execute([nid]))
            .context(what)?;
        connection
            .prepare_cached(&self.sql.drop_doc)
            .and_then(|mut statement| statement.execute([rid]))
            .context(what)?;
        Ok(())
    }
}
