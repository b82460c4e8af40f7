//! BM25F scoring of a query's candidates, with the statistics of each candidate's own
//! namespace, exactly as `memory-inmem` scores them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use memory_core::search::{bm25_idf, bm25f, length_factors};
use memory_core::{Result, Scope};
use rusqlite::{Connection, params_from_iter};

use super::{FullText, to_len};
use crate::error::Context;
use crate::sql::Sql;
use crate::terms::QueryTerms;

/// Hashes row ids (already well spread) with one multiplication, instead of SipHash.
#[derive(Default)]
struct RidHasher(u64);

impl Hasher for RidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, value: i64) {
        self.0 = (value as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A namespace in scope: its id, record count and total field lengths.
struct Namespace<const N: usize> {
    nid: i64,
    docs: f32,
    total_len: [u64; N],
}

impl<const N: usize> FullText<N> {
    /// The BM25F score of every record in `scope` holding at least one of the query's
    /// terms, as `(score, rid)` in no particular order. Each record is scored with the
    /// statistics of its own namespace (document count, mean field lengths, document
    /// frequencies), as every backend does: a scope over several namespaces ranks each with
    /// its own. Per-term scores are `f32`, summed in `f64` (exact for a query's terms, so
    /// the order they are read in does not matter) and rounded to `f32` once.
    ///
    /// Cost: one statistics row per namespace in scope, and per namespace one index range
    /// per query term, each as long as the term's postings there.
    pub(crate) fn score(
        &self,
        connection: &Connection,
        scope: &Scope,
        terms: &QueryTerms,
    ) -> Result<Vec<(f32, i64)>> {
        let what = || format!("searching the {} index", self.prefix);
        let namespaces = self.namespaces(connection, scope)?;
        let mut statement = connection
            .prepare_cached(&self.sql.postings)
            .context(what)?;
        // One term in one namespace: every posting is a whole score.
        let direct = terms.count == 1 && namespaces.len() == 1;
        let mut scored: Vec<(f32, i64)> = Vec::new();
        let mut sums: HashMap<i64, f64, BuildHasherDefault<RidHasher>> = HashMap::default();
        for namespace in &namespaces {
            let length_factor = length_factors(namespace.docs, &namespace.total_len);
            let mut rows = statement
                .query((namespace.nid, &terms.json))
                .context(what)?;
            let (mut df, mut idf) = (-1i64, 0.0f32);
            let mut tf = [0u16; N];
            let mut len = [0u32; N];
            while let Some(row) = rows.next().context(what)? {
                let term_df: i64 = row.get(0).context(what)?;
                if term_df != df {
                    df = term_df;
                    idf = bm25_idf(namespace.docs, df as f32);
                }
                let rid: i64 = row.get(1).context(what)?;
                for field in 0..N {
                    tf[field] = u16::try_from(row.get::<_, i64>(2 + field).context(what)?)
                        .unwrap_or(u16::MAX);
                    len[field] = to_len(row.get(2 + N + field).context(what)?);
                }
                let score = bm25f(&self.weights, &length_factor, &tf, &len, idf);
                if direct {
                    scored.push((score, rid));
                } else {
                    *sums.entry(rid).or_insert(0.0) += f64::from(score);
                }
            }
        }
        if !direct {
            scored.reserve(sums.len());
            scored.extend(sums.into_iter().map(|(rid, sum)| (sum as f32, rid)));
        }
        Ok(scored)
    }

    /// The namespaces in `scope` that hold records, with their statistics.
    fn namespaces(&self, connection: &Connection, scope: &Scope) -> Result<Vec<Namespace<N>>> {
        let mut sql = Sql::new(&self.sql.stats_in);
        sql.and_scope("s.ns", scope);
        connection
            .prepare_cached(&sql.text)
            .and_then(|mut statement| {
                statement
                    .query_map(params_from_iter(sql.params.iter()), |row| {
                        let mut total_len = [0u64; N];
                        for (field, total) in total_len.iter_mut().enumerate() {
                            *total = u64::try_from(row.get::<_, i64>(2 + field)?).unwrap_or(0);
                        }
                        Ok(Namespace {
                            nid: row.get(0)?,
                            docs: row.get::<_, i64>(1)? as f32,
                            total_len,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .context(|| format!("reading the {} index statistics", self.prefix))
    }
}
