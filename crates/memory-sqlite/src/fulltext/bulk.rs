//! Filling an empty index from every record at once (the rebuild): entries are written as
//! records come, postings gathered per term and written in blocks every
//! [`RECORDS_PER_FLUSH`] records, and statistics counted in memory and written once at the
//! end, instead of one upsert per record.

use std::collections::HashMap;

use memory_core::Result;
use rusqlite::Connection;

use super::{FullText, Pending, columns, placeholders};
use crate::error::Context;
use crate::terms::Analyzed;

/// Records whose postings are held in memory at most before they are written.
const RECORDS_PER_FLUSH: usize = 20_000;

/// A namespace's statistics being counted.
struct Counted<const N: usize> {
    nid: i64,
    docs: i64,
    len: [u64; N],
}

/// An empty index being filled.
pub(crate) struct Bulk<'i, const N: usize> {
    index: &'i FullText<N>,
    namespaces: HashMap<String, Counted<N>>,
    pending: Pending<N>,
}

impl<'i, const N: usize> Bulk<'i, N> {
    /// Starts filling `index`, whose tables must be empty.
    pub(crate) fn new(index: &'i FullText<N>) -> Self {
        Self {
            index,
            namespaces: HashMap::new(),
            pending: Pending::default(),
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
            }),
        };
        counted.docs += 1;
        for (total, len) in counted.len.iter_mut().zip(doc.len) {
            *total += u64::from(len);
        }
        let nid = counted.nid;
        self.index
            .write_doc(connection, nid, rid, doc, &doc.encode_terms())?;
        self.pending.add(nid, rid, doc);
        if self.pending.records() >= RECORDS_PER_FLUSH {
            self.pending.flush(connection, self.index)?;
        }
        Ok(())
    }

    /// Writes the postings still held and the counted statistics.
    pub(crate) fn finish(mut self, connection: &Connection) -> Result<()> {
        self.pending.flush(connection, self.index)?;
        let prefix = self.index.prefix;
        let what = || format!("writing the {prefix} index statistics");
        let mut add_stats = connection
            .prepare(&format!(
                "INSERT INTO {prefix}_stats (nid, ns, docs, {}) VALUES ({})",
                columns("len", N),
                placeholders(1, 3 + N)
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
        }
        Ok(())
    }
}
