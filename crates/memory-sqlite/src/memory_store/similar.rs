//! Similarity search over stored embeddings, reading only what ranking needs: the ranking
//! pass reads each candidate's row id and embedding blob, and whole rows are decoded only for
//! the best few.

use memory_core::{CosineQuery, MemoryFilter, Result, SearchHit};
use rusqlite::{Connection, params_from_iter};

use super::{COLUMNS, and_filter, read_raw_at};
use crate::error::{Context, corrupt};
use crate::sql::Sql;

/// Rows decoded per round of the second pass, at least (more rounds only when a metadata
/// filter, checked after decoding, rejects some, or ties run past the cut).
const CHUNK: usize = 64;
/// Rows decoded per round at most: each is one bound parameter, and SQLite allows 32,766.
const MAX_CHUNK: usize = 1024;

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
    ranked.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    // Second pass: decode rows best first until `top_k` have passed the filter and the next
    // score is lower than the k-th (so every tie at the cut is in, to be ordered by id).
    let mut hits: Vec<SearchHit> = Vec::new();
    let mut next = 0;
    while next < ranked.len() {
        if hits.len() >= top_k && ranked[next].0 < hits[top_k - 1].score {
            break;
        }
        let chunk = &ranked[next..ranked.len().min(next + top_k.clamp(CHUNK, MAX_CHUNK))];
        next += chunk.len();
        let mut fetch = Sql::new(&format!(
            "SELECT m.rid, {COLUMNS} FROM memories m WHERE m.rid IN ("
        ));
        for (at, (_, rid)) in chunk.iter().enumerate() {
            if at > 0 {
                fetch.push(", ");
            }
            fetch.bind(*rid);
        }
        fetch.push(")");
        let rows = connection
            .prepare(&fetch.text)
            .and_then(|mut statement| {
                statement
                    .query_map(params_from_iter(fetch.params.iter()), |row| {
                        Ok((row.get::<_, i64>(0)?, read_raw_at(row, 1)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .context(what)?;
        let mut decoded = std::collections::HashMap::with_capacity(rows.len());
        for (rid, raw) in rows {
            decoded.insert(rid, raw.into_item()?);
        }
        for (score, rid) in chunk {
            if let Some(item) = decoded.remove(rid)
                && filter.matches(&item)
            {
                hits.push(SearchHit {
                    item: std::sync::Arc::new(item),
                    score: *score,
                });
            }
        }
        hits.sort_by(SearchHit::best_first);
    }
    hits.truncate(top_k);
    Ok(hits)
}
