//! Filling an empty index from every record at once (the rebuild): postings and entries are
//! written as records come, frequencies and statistics are counted in memory and written
//! once at the end, instead of one upsert per term and record.

use std::collections::HashMap;

use memory_core::Result;
use rusqlite::Connection;

use super::{FullText, columns, placeholders};
use crate::error::Context;
use crate::terms::Analyzed;

/// A namespace's statistics being counted.
struct Counted<const N: usize> {
    nid: i64,
    docs: i64,
    len: [u64; N],
    /// Records holding each term.
    df: HashMap<String, i64>,
}

/// An empty index being filled.
pub(crate) struct Bulk<'i, const N: usize> {
    index: &'i FullText<N>,
    namespaces: HashMap<String, Counted<N>>,
}

impl<'i, const N: usize> Bulk<'i, N> {
    /// Starts filling `index`, whose tables must be empty.
    pub(crate) fn new(index: &'i FullText<N>) -> Self {
        Self {
            index,
            namespaces: HashMap::new(),
        }
    }

    /// Indexes the record `rid` of namespace `ns` as `doc`.
    pub(crate) fn add(
        &mut self,
        connection: &Connection,
        rid: i64,
        ns: &str,
        doc: &Analyzed<N>,
    ) -> Result<()> {
        let next = i64::try_from(self.namespaces.len()).unwrap_or(i64::MAX - 1) + 1;
        let counted = match self.namespaces.get_mut(ns) {
            Some(counted) => counted,
            None => self.namespaces.entry(ns.to_owned()).or_insert(Counted {
                nid: next,
                docs: 0,
                len: [0; N],
                df: HashMap::new(),
            }),
        };
        counted.docs += 1;
        for (total, len) in counted.len.iter_mut().zip(doc.len) {
            *total += u64::from(len);
        }
        for (term, _) in &doc.terms {
            match counted.df.get_mut(term) {
                Some(df) => *df += 1,
                None => {
                    counted.df.insert(term.clone(), 1);
                }
            }
        }
        self.index
            .write_entry(connection, counted.nid, rid, doc, &doc.encode_terms())
    }

    /// Writes the counted frequencies and statistics.
    pub(crate) fn finish(self, connection: &Connection) -> Result<()> {
        let prefix = self.index.prefix;
        let what = || format!("writing the {prefix} index statistics");
        let mut add_stats = connection
            .prepare(&format!(
                "INSERT INTO {prefix}_stats (nid, ns, docs, {}) VALUES ({})",
                columns("len", N),
                placeholders(1, 3 + N)
            ))
            .context(what)?;
        let mut add_df = connection
            .prepare(&format!(
                "INSERT INTO {prefix}_df (nid, term, df) VALUES (?1, ?2, ?3)"
            ))
            .context(what)?;
        for (ns, counted) in self.namespaces {
            add_stats.raw_bind_parameter(1, counted.nid).context(what)?;
            add_stats.raw_bind_parameter(2, &ns).context(what)?;
            add_stats
                .raw_bind_parameter(3, counted.docs)
                .context(what)?;
            for (field, total) in counted.len.iter().enumerate() {
                let total = i64::try_from(*total).unwrap_or(i64::MAX);
                add_stats
                    .raw_bind_parameter(4 + field, total)
                    .context(what)?;
            }
            add_stats.raw_execute().context(what)?;
            // In key order, so each insert appends to the table's B-tree.
            let mut df: Vec<(String, i64)> = counted.df.into_iter().collect();
            df.sort_unstable();
            for (term, count) in df {
                add_df.execute((counted.nid, term, count)).context(what)?;
            }
        }
        Ok(())
    }
}
