//! The full-text index of memories and of pages: postings in blocks with per-namespace
//! BM25F statistics, written in the same transaction as each record.
//!
//! Each index (`memory_*` over two fields, `page_*` over four) is three tables:
//! - `<p>_stats (nid, ns, docs, len0..)`: one row per namespace holding records, with its
//!   record count and each field's total length. `nid` names the namespace in the others.
//! - `<p>_blocks (nid, term, first, count, max_tf0.., min_len0.., data)`: a term's postings
//!   in the namespace, in row-id order, a block of up to 128 (memories) or 64 (pages) per
//!   row, each posting with the term's frequency in each field and the record's field
//!   lengths, so scoring reads nothing else; the columns bound the score of every posting
//!   in the block (see [`blocks`]). A term's document frequency is the sum of its blocks'
//!   counts.
//! - `<p>_docs (rid, nid, len0.., terms)`: each record's field lengths and its terms with
//!   their frequencies ([`Analyzed::encode_terms`]), so a record leaves the index exactly
//!   as it came in, and a rewrite whose terms did not change leaves the index alone.
//!
//! These tables are derived state: [`create_tables`] recreates them empty, and the rebuild
//! fills them from the records. A search reads the statistics of the namespaces in scope
//! (one row each) and the blocks of the query's terms in each (an index range per term, a
//! row per block), and decodes only the blocks whose bound can still make the cut.

mod blocks;
mod bulk;
mod check;
mod score;

use std::sync::OnceLock;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use memory_core::search::{MEMORY_FIELD_WEIGHTS, PAGE_FIELD_WEIGHTS};
use memory_core::{Result, Scope};
use rusqlite::{Connection, OptionalExtension};

pub(crate) use self::blocks::Posting;
pub(crate) use self::bulk::Bulk;
use crate::error::Context;
use crate::sql::Sql;
use crate::terms::{Analyzed, decode_terms};

/// The layout of the index tables; part of the index fingerprint, so a change rebuilds
/// them. 1: FTS5 `terms` and `scope` columns (schema 3); 2: the memory `context` column;
/// 3: postings with per-namespace statistics (schema 4); 4: postings in blocks with score
/// bounds, no table of document frequencies.
pub(crate) const INDEX_LAYOUT: u32 = 4;

/// One full-text index over records with `N` weighted fields.
#[derive(Debug)]
pub(crate) struct FullText<const N: usize> {
    /// The BM25F weight of each field.
    weights: [f32; N],
    /// The table prefix, `memory` or `page`.
    prefix: &'static str,
    /// Postings per block at most: a block's row stays within what SQLite keeps in a B-tree
    /// page of 4 KiB without overflow pages (about 1,000 bytes).
    block_size: usize,
    sql: Statements,
}

/// The statements over one index, built once.
#[derive(Debug)]
struct Statements {
    add_stats: String,
    /// Adds a batch's counts to a namespace's statistics row (which exists).
    add_stats_delta: String,
    sub_stats: String,
    drop_empty_stats: String,
    add_doc: String,
    read_doc: String,
    /// Every indexed record's row id, largest first.
    docs_desc: String,
    drop_doc: String,
    /// The block holding or due to hold a row id: the last keyed at or below it.
    block_at: String,
    /// The first block keyed above a row id.
    block_after: String,
    /// The key of the first block keyed above a row id.
    block_next: String,
    put_block: String,
    drop_block: String,
    /// `SELECT nid, docs, len0.. FROM <p>_stats s WHERE s.docs > 0`, for a scope condition.
    stats_in: String,
    /// Every block of a term in one namespace, in order, with its bounds.
    term_blocks: String,
    /// How many records of one namespace hold each term of a JSON array, and over how many
    /// blocks (their counts, no block read), by the term's index in the array; from at most
    /// `?3` blocks of each term (a negative `?3`: all).
    term_dfs: String,
    clear_blocks: String,
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
        let max_tf = columns("max_tf", n);
        let min_len = columns("min_len", n);
        let added = (0..n)
            .map(|field| format!("len{field} = len{field} + excluded.len{field}"))
            .collect::<Vec<_>>()
            .join(", ");
        let subtracted = (0..n)
            .map(|field| format!("len{field} = len{field} - ?{}", field + 2))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            add_stats: format!(
                "INSERT INTO {p}_stats (ns, docs, {len}) VALUES (?1, 1, {}) \
                 ON CONFLICT (ns) DO UPDATE SET docs = docs + 1, {added} RETURNING nid",
                placeholders(2, n)
            ),
            add_stats_delta: format!(
                "UPDATE {p}_stats SET docs = docs + ?2, {} WHERE nid = ?1",
                (0..n)
                    .map(|field| format!("len{field} = len{field} + ?{}", field + 3))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            sub_stats: format!("UPDATE {p}_stats SET docs = docs - 1, {subtracted} WHERE nid = ?1"),
            drop_empty_stats: format!("DELETE FROM {p}_stats WHERE nid = ?1 AND docs <= 0"),
            add_doc: format!(
                "INSERT INTO {p}_docs (rid, nid, {len}, terms) VALUES (?1, ?2, {})",
                placeholders(3, n + 1)
            ),
            read_doc: format!("SELECT nid, {len}, terms FROM {p}_docs WHERE rid = ?1"),
            docs_desc: format!("SELECT rid FROM {p}_docs ORDER BY rid DESC"),
            drop_doc: format!("DELETE FROM {p}_docs WHERE rid = ?1"),
            block_at: format!(
                "SELECT first, data FROM {p}_blocks WHERE nid = ?1 AND term = ?2 AND first <= ?3 \
                 ORDER BY first DESC LIMIT 1"
            ),
            block_after: format!(
                "SELECT first, data FROM {p}_blocks WHERE nid = ?1 AND term = ?2 AND first > ?3 \
                 ORDER BY first LIMIT 1"
            ),
            block_next: format!(
                "SELECT first FROM {p}_blocks WHERE nid = ?1 AND term = ?2 AND first > ?3 \
                 ORDER BY first LIMIT 1"
            ),
            put_block: format!(
                "INSERT OR REPLACE INTO {p}_blocks (nid, term, first, count, {max_tf}, {min_len}, data) \
                 VALUES (?1, ?2, ?3, ?4, {})",
                placeholders(5, 2 * n + 1)
            ),
            drop_block: format!(
                "DELETE FROM {p}_blocks WHERE nid = ?1 AND term = ?2 AND first = ?3"
            ),
            stats_in: format!("SELECT s.nid, s.docs, {len} FROM {p}_stats s WHERE s.docs > 0"),
            term_blocks: format!(
                "SELECT first, count, {max_tf}, {min_len}, data FROM {p}_blocks \
                 WHERE nid = ?1 AND term = ?2 ORDER BY first"
            ),
            term_dfs: format!(
                "SELECT j.key, \
                 (SELECT coalesce(sum(c.count), 0) FROM (SELECT b.count FROM {p}_blocks b \
                 WHERE b.nid = ?1 AND b.term = j.value LIMIT ?3) c), \
                 (SELECT count(*) FROM (SELECT 1 FROM {p}_blocks b \
                 WHERE b.nid = ?1 AND b.term = j.value LIMIT ?3) c) \
                 FROM json_each(?2) j"
            ),
            clear_blocks: format!("DELETE FROM {p}_blocks WHERE nid = ?1"),
            clear_stats: format!("DELETE FROM {p}_stats WHERE nid = ?1"),
        }
    }
}

/// The tables of the index with prefix `p` over `n` fields, created empty (the tables of
/// earlier layouts dropped).
fn table_sql(p: &str, n: usize) -> String {
    let lens = (0..n)
        .map(|field| format!("len{field} INTEGER NOT NULL"))
        .collect::<Vec<_>>()
        .join(", ");
    let bounds = (0..n)
        .map(|field| format!("max_tf{field} INTEGER NOT NULL, min_len{field} INTEGER NOT NULL"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "DROP TABLE IF EXISTS {p}_stats;
         DROP TABLE IF EXISTS {p}_df;
         DROP TABLE IF EXISTS {p}_postings;
         DROP TABLE IF EXISTS {p}_blocks;
         DROP TABLE IF EXISTS {p}_docs;
         CREATE TABLE {p}_stats (
             nid INTEGER PRIMARY KEY, ns TEXT NOT NULL UNIQUE, docs INTEGER NOT NULL, {lens}
         );
         CREATE TABLE {p}_blocks (
             nid INTEGER NOT NULL, term TEXT NOT NULL, first INTEGER NOT NULL,
             count INTEGER NOT NULL, {bounds}, data BLOB NOT NULL,
             PRIMARY KEY (nid, term, first)
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
    INDEX.get_or_init(|| FullText::new("memory", MEMORY_FIELD_WEIGHTS, 128))
}

/// The index of pages: title, summary, tags, content ([`PAGE_FIELD_WEIGHTS`]).
pub(crate) fn pages() -> &'static FullText<4> {
    static INDEX: OnceLock<FullText<4>> = OnceLock::new();
    INDEX.get_or_init(|| FullText::new("page", PAGE_FIELD_WEIGHTS, 64))
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

/// Postings of records being indexed in one transaction, written per term at the end
/// ([`flush`](Self::flush)): a batch of records rewrites each term's last block once instead
/// of once per record.
#[derive(Debug)]
pub(crate) struct Pending<const N: usize> {
    /// Per namespace and term, the new postings.
    postings: HashMap<i64, HashMap<String, Vec<Posting<N>>>>,
    /// The records whose postings are pending.
    rids: HashSet<i64>,
    /// Per namespace, its id and the records and field lengths counted here but not yet
    /// in its statistics row: the first record of a namespace in a batch writes the row
    /// (creating it if needed), the others add to this, and [`flush`](Self::flush) writes
    /// the sum with one statement instead of one per record.
    stats: HashMap<String, StatsDelta<N>>,
}

/// Counts of a namespace not yet written to its statistics row.
#[derive(Debug)]
struct StatsDelta<const N: usize> {
    nid: i64,
    docs: i64,
    len: [i64; N],
}

impl<const N: usize> Default for Pending<N> {
    fn default() -> Self {
        Self {
            postings: HashMap::new(),
            rids: HashSet::new(),
            stats: HashMap::new(),
        }
    }
}

impl<const N: usize> Pending<N> {
    /// How many records have postings pending.
    pub(crate) fn records(&self) -> usize {
        self.rids.len()
    }

    fn add(&mut self, nid: i64, rid: i64, doc: &Analyzed<N>) {
        self.rids.insert(rid);
        let terms = self.postings.entry(nid).or_default();
        for (term, tf) in &doc.terms {
            let posting = Posting {
                rid,
                tf: *tf,
                len: doc.len,
            };
            match terms.get_mut(term.as_str()) {
                Some(list) => list.push(posting),
                None => {
                    terms.insert(term.clone(), vec![posting]);
                }
            }
        }
    }

    /// Writes the counts held in [`stats`](Self::stats) to the statistics rows. Done before
    /// a record leaves the index in the same batch, so that its namespace's row never
    /// counts fewer records than it holds (a row counting none is deleted).
    fn write_stats(&mut self, connection: &Connection, index: &FullText<N>) -> Result<()> {
        let what = || format!("counting a batch in the {} index statistics", index.prefix);
        for (_, delta) in self.stats.drain() {
            if delta.docs == 0 {
                continue;
            }
            let mut statement = connection
                .prepare_cached(&index.sql.add_stats_delta)
                .context(what)?;
            statement.raw_bind_parameter(1, delta.nid).context(what)?;
            statement.raw_bind_parameter(2, delta.docs).context(what)?;
            for (field, len) in delta.len.iter().enumerate() {
                statement.raw_bind_parameter(3 + field, len).context(what)?;
            }
            statement.raw_execute().context(what)?;
        }
        Ok(())
    }

    /// The largest row id whose postings `index` holds (0 when it holds none): every indexed
    /// record's entry (`<p>_docs`) is written with its postings, except the pending ones,
    /// so it is the largest row id of an entry that is not pending. A batch's new records
    /// take the largest row ids, so the entries read are about as many as the batch.
    fn stored_below(&self, connection: &Connection, index: &FullText<N>) -> Result<i64> {
        let what = || format!("reading the {} index entries", index.prefix);
        let mut statement = connection
            .prepare_cached(&index.sql.docs_desc)
            .context(what)?;
        let mut rows = statement.query([]).context(what)?;
        while let Some(row) = rows.next().context(what)? {
            let rid: i64 = row.get(0).context(what)?;
            if !self.rids.contains(&rid) {
                return Ok(rid);
            }
        }
        Ok(0)
    }

    /// Writes the pending postings into `index`'s blocks, term by term in key order, and
    /// the pending counts into the statistics.
    pub(crate) fn flush(&mut self, connection: &Connection, index: &FullText<N>) -> Result<()> {
        self.write_stats(connection, index)?;
        if self.postings.is_empty() {
            self.rids.clear();
            return Ok(());
        }
        let stored_below = self.stored_below(connection, index)?;
        let mut namespaces: Vec<(i64, HashMap<String, Vec<Posting<N>>>)> =
            self.postings.drain().collect();
        self.rids.clear();
        namespaces.sort_unstable_by_key(|(nid, _)| *nid);
        for (nid, terms) in namespaces {
            let mut terms: Vec<(String, Vec<Posting<N>>)> = terms.into_iter().collect();
            terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (term, mut postings) in terms {
                postings.sort_unstable_by_key(|posting| posting.rid);
                index.add_postings(connection, nid, &term, &postings, stored_below)?;
            }
        }
        Ok(())
    }
}

impl<const N: usize> FullText<N> {
    fn new(prefix: &'static str, weights: [f32; N], block_size: usize) -> Self {
        Self {
            weights,
            prefix,
            block_size,
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
        let mut pending = Pending::default();
        self.put_pending(connection, rid, ns, doc, &mut pending)?;
        pending.flush(connection, self)
    }

    /// [`put`](Self::put), with the new postings left in `pending` for one
    /// [`Pending::flush`] of many records (before the transaction ends, and before anything
    /// reads the postings).
    pub(crate) fn put_pending(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
        pending: &mut Pending<N>,
    ) -> Result<()> {
        if pending.rids.contains(&rid) {
            // The record is rewritten within the batch: its pending postings go first, so
            // that removing its entry finds them.
            pending.flush(connection, self)?;
        }
        let terms = doc.encode_terms();
        if let Some(stored) = self.read_doc(connection, rid)? {
            if stored.len == doc.len && stored.terms == terms {
                return Ok(());
            }
            pending.write_stats(connection, self)?;
            self.remove_doc(connection, rid, &stored)?;
        }
        self.add_pending(connection, rid, ns, doc, &terms, pending)
    }

    /// [`put_pending`](Self::put_pending) for a record just inserted, which the index cannot
    /// hold yet (its row id is new: a deleted record's entry went with it).
    pub(crate) fn put_new_pending(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
        pending: &mut Pending<N>,
    ) -> Result<()> {
        if pending.rids.contains(&rid) {
            return self.put_pending(connection, rid, ns, doc, pending);
        }
        self.add_pending(connection, rid, ns, doc, &doc.encode_terms(), pending)
    }

    fn add_pending(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
        terms: &[u8],
        pending: &mut Pending<N>,
    ) -> Result<()> {
        let nid = match pending.stats.get_mut(ns) {
            Some(delta) => {
                delta.docs += 1;
                for (total, len) in delta.len.iter_mut().zip(doc.len) {
                    *total = total.saturating_add(i64::from(len));
                }
                delta.nid
            }
            None => {
                let nid = self.add_stats(connection, rid, ns, doc)?;
                pending.stats.insert(
                    ns.to_owned(),
                    StatsDelta {
                        nid,
                        docs: 0,
                        len: [0; N],
                    },
                );
                nid
            }
        };
        self.write_doc(connection, nid, rid, doc, terms)?;
        pending.add(nid, rid, doc);
        Ok(())
    }

    /// Removes the record `rid` from the index, if it is there.
    pub(crate) fn remove(&self, connection: &Connection, rid: i64) -> Result<()> {
        match self.read_doc(connection, rid)? {
            Some(stored) => self.remove_doc(connection, rid, &stored),
            None => Ok(()),
        }
    }

    /// Removes every record of the namespaces in `scope` from the index, given the row ids
    /// of those records: each namespace's blocks and statistics go by range, not term by
    /// term.
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
        for text in [&self.sql.clear_blocks, &self.sql.clear_stats] {
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

    /// Counts the record in its namespace's statistics; returns the namespace's id.
    fn add_stats(
        &self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
    ) -> Result<i64> {
        let what = || format!("indexing row {rid} of the {} index", self.prefix);
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
            Some(row) => row.get(0).context(what),
            None => Err(crate::error::corrupt(what(), "no namespace row")),
        }
    }

    /// Writes the record's `<p>_docs` row.
    fn write_doc(
        &self,
        connection: &Connection,
        nid: i64,
        rid: i64,
        doc: &Analyzed<N>,
        terms: &[u8],
    ) -> Result<()> {
        let what = || format!("indexing row {rid} of the {} index", self.prefix);
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
        for term in decode_terms::<N>(rid, &stored.terms)? {
            self.remove_posting(connection, nid, term, rid)?;
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
