//! Similarity search over stored embeddings, reading only what ranking needs: the ranking
//! pass reads each candidate's row id and embedding blob, and whole rows are decoded only for
//! the best few (`ranked.rs`).

use memory_core::backend::CosineQuery;
use memory_core::{MemoryFilter, Result, SearchHit};
use rusqlite::{Connection, params_from_iter};

use super::and_filter;
use crate::error::{Context, corrupt};
use crate::sql::Sql;

/// The `top_k` items matching `filter` with the most similar embedding to `vector`, best
/// first, ties by id then namespace (the trait's contract).
pub(super) fn search_similar(
    connection: &Connection,
    filter: &MemoryFilter,
    vector: &[f32],
    top_k: usize,
) -> Result<Vec<SearchHit>> {
    let what = || "searching memories by embedding";
    let query = CosineQuery::new(vector);
    // First pass: the score of every comparable item, from its blob alone.
    let mut sql = Sql::new(
        "SELECT m.rid, m.embedding FROM memories m \
         WHERE m.embedding IS NOT NULL AND length(m.embedding) = ",
    );
    sql.bind(i64::try_from(vector.len() * 4).unwrap_or(i64::MAX));
    and_filter(&mut sql, filter);
    let mut ranked: Vec<(f32, i64)> = Vec::new();
    {
        let mut statement = connection.prepare_cached(&sql.text).context(what)?;
        let mut rows = statement
            .query(params_from_iter(sql.params.iter()))
            .context(what)?;
        let mut values = vec![0f32; vector.len()];
        while let Some(row) = rows.next().context(what)? {
            let rid: i64 = row.get(0).context(what)?;
            let bytes = row
                .get_ref(1)
                .and_then(|value| value.as_blob().map_err(Into::into))
                .context(what)?;
            if bytes.len() != values.len() * 4 {
                return Err(corrupt(
                    format_args!("embedding of memory row {rid}"),
                    "length changed while reading",
                ));
            }
            for (value, chunk) in values.iter_mut().zip(bytes.chunks_exact(4)) {
                *value = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
            if let Some(score) = query.similarity(&values) {
                ranked.push((score, rid));
            }
        }
    }
    // Second pass: decode rows best first until `top_k` have passed the filter.
    super::ranked::best_hits(
        connection,
        ranked,
        filter,
        top_k,
        |_| None,
        "searching memories by embedding",
    )
}
