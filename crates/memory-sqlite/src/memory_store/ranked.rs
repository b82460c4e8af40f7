//! From scored row ids to search hits: rows are read and decoded best first, a few at a
//! time, until `top_k` have passed the filter, so only the hits (and the rows a filter turns
//! away) are ever decoded. Shared by full-text and similarity search.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use memory_core::{MemoryFilter, Result, SearchHit};
use rusqlite::{Connection, params_from_iter};

use super::{COLUMNS, and_filter, read_raw_at};
use crate::error::Context;
use crate::sql::Sql;

/// Rows read per round after the first (which reads `top_k`), at least: more rounds happen
/// only when the filter turns rows away, or ties run past the cut.
const CHUNK: usize = 64;
/// Rows read per round at most.
const MAX_CHUNK: usize = 1024;

/// Best first: higher score, then lower row id (the final order, by id then namespace, is
/// [`SearchHit::best_first`]).
fn best_first(a: &(f32, i64), b: &(f32, i64)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// The `top_k` best of the `scored` rows `(score, rid)` that match `filter`, best first
/// (ties by id, then namespace). Each round selects the next best rows (a linear selection,
/// no full sort of the candidates), reads those that pass the filter's SQL conditions, and
/// checks the rest of the filter on the decoded items. It stops once `top_k` hits are held
/// and no row left scores as high as the `top_k`-th, so every tie at the cut is read and
/// ordered by id.
pub(super) fn best_hits(
    connection: &Connection,
    mut scored: Vec<(f32, i64)>,
    filter: &MemoryFilter,
    top_k: usize,
    what: &str,
) -> Result<Vec<SearchHit>> {
    let mut hits: Vec<SearchHit> = Vec::new();
    if top_k == 0 {
        return Ok(hits);
    }
    // The listed rows drive the join (CROSS JOIN fixes the order), each one rowid lookup:
    // without it the planner may scan the whole namespace through its index on `ns`.
    let mut sql = Sql::new("SELECT m.rid, ");
    sql.push(COLUMNS).push(" FROM json_each(");
    sql.bind(String::new())
        .push(") AS j CROSS JOIN memories m ON m.rid = j.value WHERE 1");
    and_filter(&mut sql, filter);
    let mut statement = connection
        .prepare_cached(&sql.text)
        .context(|| what.to_owned())?;
    let mut rest: &mut [(f32, i64)] = &mut scored;
    let mut size = top_k.min(MAX_CHUNK);
    while !rest.is_empty() {
        if hits.len() >= top_k {
            let next = rest
                .iter()
                .map(|(score, _)| *score)
                .max_by(f32::total_cmp)
                .unwrap_or(f32::NEG_INFINITY);
            if next < hits[top_k - 1].score {
                break;
            }
        }
        let take = size.min(rest.len());
        if rest.len() > take {
            rest.select_nth_unstable_by(take - 1, best_first);
        }
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(take);
        rest = tail;
        size = (size * 2).clamp(CHUNK, MAX_CHUNK);

        let mut list = String::with_capacity(chunk.len() * 8 + 2);
        list.push('[');
        for (at, (_, rid)) in chunk.iter().enumerate() {
            if at > 0 {
                list.push(',');
            }
            let _ = write!(list, "{rid}");
        }
        list.push(']');
        sql.params[0] = list.into();
        let mut rows = statement
            .query(params_from_iter(sql.params.iter()))
            .context(|| what.to_owned())?;
        let mut decoded = HashMap::with_capacity(chunk.len());
        while let Some(row) = rows.next().context(|| what.to_owned())? {
            let rid: i64 = row.get(0).context(|| what.to_owned())?;
            let raw = read_raw_at(row, 1).context(|| what.to_owned())?;
            decoded.insert(rid, raw.into_item()?);
        }
        for (score, rid) in chunk.iter() {
            if let Some(item) = decoded.remove(rid)
                && filter.matches(&item)
            {
                hits.push(SearchHit {
                    item: Arc::new(item),
                    score: *score,
                });
            }
        }
        hits.sort_by(SearchHit::best_first);
    }
    hits.truncate(top_k);
    Ok(hits)
}
