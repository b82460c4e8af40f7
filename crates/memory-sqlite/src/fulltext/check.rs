//! The integrity check of an index: every record is indexed as its text analyses now, and
//! the frequencies and statistics add up to the postings and entries.

use memory_core::{MemoryError, Result};
use rusqlite::Connection;

use super::{FullText, blocks};
use crate::error::Context;
use crate::terms::Analyzed;

/// A check of one index in progress: feed it every record ([`entry`](Self::entry)), then
/// [`finish`](Self::finish) it.
pub(crate) struct Check<'i, const N: usize> {
    index: &'i FullText<N>,
    /// Postings the records should have.
    postings: i64,
    problems: Vec<String>,
}

/// Problems reported per index at most (the first ones).
const MAX_PROBLEMS: usize = 10;

impl<const N: usize> FullText<N> {
    /// Starts checking this index.
    pub(crate) fn check(&self) -> Check<'_, N> {
        Check {
            index: self,
            postings: 0,
            problems: Vec::new(),
        }
    }
}

impl<const N: usize> Check<'_, N> {
    fn problem(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        }
    }

    /// Checks that the record `rid` is indexed as `doc`, the analysis of its text: its
    /// entry, and a posting per term with the right frequencies and lengths.
    pub(crate) fn entry(
        &mut self,
        connection: &Connection,
        rid: i64,
        doc: &Analyzed<N>,
    ) -> Result<()> {
        let prefix = self.index.prefix;
        self.postings += i64::try_from(doc.terms.len()).unwrap_or(i64::MAX);
        let Some(stored) = self.index.read_doc(connection, rid)? else {
            self.problem(format!("{prefix} row {rid} is not indexed"));
            return Ok(());
        };
        if stored.len != doc.len || stored.terms != doc.encode_terms() {
            self.problem(format!(
                "{prefix} row {rid} is indexed with other terms than its text's"
            ));
            return Ok(());
        }
        for (term, tf) in &doc.terms {
            let posting = match self.index.read_posting(connection, stored.nid, term, rid) {
                Ok(posting) => posting,
                Err(MemoryError::Serialization { .. }) => None,
                Err(error) => return Err(error),
            };
            if posting.map(|posting| (posting.tf, posting.len)) != Some((*tf, doc.len)) {
                self.problem(format!(
                    "{prefix} row {rid}: the posting of {term:?} is missing or wrong"
                ));
                return Ok(());
            }
        }
        Ok(())
    }

    /// Checks what spans records, with `records` the table of the records (with columns
    /// `rid` and `ns`), and returns the problems found.
    pub(crate) fn finish(mut self, connection: &Connection, records: &str) -> Result<Vec<String>> {
        let p = self.index.prefix;
        let lens = (0..N)
            .map(|field| format!("sum(len{field}) AS len{field}"))
            .collect::<Vec<_>>()
            .join(", ");
        let differ = (0..N)
            .map(|field| format!(" OR a.len{field} IS NOT s.len{field}"))
            .collect::<String>();
        let checks = [
            (
                format!("SELECT coalesce(sum(count), 0) - ?1 FROM {p}_blocks"),
                "postings beyond the records' terms",
            ),
            (
                format!(
                    "SELECT count(*) FROM {p}_docs d WHERE ?1 = ?1 AND NOT EXISTS \
                     (SELECT 1 FROM {records} r WHERE r.rid = d.rid)"
                ),
                "index entries of deleted records",
            ),
            (
                format!(
                    "SELECT count(*) FROM {records} r JOIN {p}_docs d ON d.rid = r.rid \
                     LEFT JOIN {p}_stats s ON s.nid = d.nid WHERE ?1 = ?1 AND s.ns IS NOT r.ns"
                ),
                "records indexed under another namespace",
            ),
            (
                format!(
                    "SELECT count(*) FROM {p}_stats s FULL JOIN \
                     (SELECT nid, count(*) AS docs, {lens} FROM {p}_docs GROUP BY nid) a \
                     ON a.nid = s.nid WHERE ?1 = ?1 AND (a.docs IS NOT s.docs{differ})"
                ),
                "namespace statistics that differ from their records",
            ),
        ];
        for (sql, problem) in checks {
            let count: i64 = connection
                .query_row(&sql, [self.postings], |row| row.get(0))
                .context(|| format!("checking the {p} index"))?;
            if count != 0 {
                self.problem(format!("{p} index: {count} {problem}"));
            }
        }
        self.blocks(connection)?;
        Ok(self.problems)
    }

    /// Checks every block: its postings decode, in row-id order, none below its key or at or
    /// above the next block's, as many as its count says, within its bounds.
    fn blocks(&mut self, connection: &Connection) -> Result<()> {
        let p = self.index.prefix;
        let what = || format!("checking the {p} blocks");
        let mut statement = connection
            .prepare(&format!(
                "SELECT nid, term, first, count, {}, {}, data FROM {p}_blocks \
                 ORDER BY nid, term, first",
                super::columns("max_tf", N),
                super::columns("min_len", N)
            ))
            .context(what)?;
        let mut rows = statement.query([]).context(what)?;
        let mut previous: Option<(i64, String, i64)> = None;
        let mut postings = Vec::new();
        while let Some(row) = rows.next().context(what)? {
            let nid: i64 = row.get(0).context(what)?;
            let term: String = row.get(1).context(what)?;
            let first: i64 = row.get(2).context(what)?;
            let count: i64 = row.get(3).context(what)?;
            let mut max_tf = [0u16; N];
            let mut min_len = [0u32; N];
            for field in 0..N {
                max_tf[field] =
                    u16::try_from(row.get::<_, i64>(4 + field).context(what)?).unwrap_or(0);
                min_len[field] =
                    u32::try_from(row.get::<_, i64>(4 + N + field).context(what)?).unwrap_or(0);
            }
            let data: Vec<u8> = row.get(4 + 2 * N).context(what)?;
            postings.clear();
            let name = format!("{p} block ({nid}, {term:?}, {first})");
            if blocks::decode(first, &data, &mut postings).is_err() {
                self.problem(format!("{name} does not decode"));
                continue;
            }
            if let Some((last_nid, last_term, last_rid)) = &previous
                && *last_nid == nid
                && *last_term == term
                && postings
                    .first()
                    .is_some_and(|posting| posting.rid <= *last_rid)
            {
                self.problem(format!("{name} overlaps the block before it"));
            }
            let sorted = postings.windows(2).all(|pair| pair[0].rid < pair[1].rid);
            if !sorted || postings.first().is_some_and(|posting| posting.rid < first) {
                self.problem(format!("{name} is out of order"));
            }
            if usize::try_from(count).ok() != Some(postings.len()) || postings.is_empty() {
                self.problem(format!(
                    "{name} holds {} postings, not {count}",
                    postings.len()
                ));
            }
            if blocks::bounds(&postings) != (max_tf, min_len) {
                self.problem(format!("{name} has wrong bounds"));
            }
            previous = postings
                .last()
                .map(|posting| (nid, term, posting.rid.max(first)));
        }
        Ok(())
    }
}
