//! The integrity check of an index: every record is indexed as its text analyses now, and
//! the frequencies and statistics add up to the postings and entries.

use memory_core::Result;
use rusqlite::{Connection, OptionalExtension};

use super::{FullText, to_len};
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
        let what = || format!("checking the {prefix} index entry of row {rid}");
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
        let mut statement = connection
            .prepare_cached(&self.index.sql.read_posting)
            .context(what)?;
        for (term, tf) in &doc.terms {
            let posting = statement
                .query_row((stored.nid, term, rid), |row| {
                    let mut stored_tf = [0u16; N];
                    let mut len = [0u32; N];
                    for field in 0..N {
                        stored_tf[field] =
                            u16::try_from(row.get::<_, i64>(field)?).unwrap_or(u16::MAX);
                        len[field] = to_len(row.get(N + field)?);
                    }
                    Ok((stored_tf, len))
                })
                .optional()
                .context(what)?;
            if posting != Some((*tf, doc.len)) {
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
                format!("SELECT count(*) - ?1 FROM {p}_postings"),
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
            (
                format!(
                    "SELECT count(*) FROM {p}_df d FULL JOIN \
                     (SELECT nid, term, count(*) AS df FROM {p}_postings GROUP BY nid, term) c \
                     ON c.nid = d.nid AND c.term = d.term WHERE ?1 = ?1 AND c.df IS NOT d.df"
                ),
                "document frequencies that differ from the postings",
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
        Ok(self.problems)
    }
}
