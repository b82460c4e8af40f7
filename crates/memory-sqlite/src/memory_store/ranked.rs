//! From scored row ids to search hits, in two steps: the keys (row id, id, namespace) of the
//! best rows that pass the filter's SQL conditions are read a chunk at a time, best first,
//! until every row that can rank among the `top_k` (ties at the cut included) is known; then
//! only the rows that make the cut are read whole and decoded. Ties are frequent when many
//! records hold the query's terms equally often (their order is by id), and a tie costs the
//! read of its key, not the decoding of its row. Shared by full-text and similarity search.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use memory_core::{MemoryFilter, Result, SearchHit};
use rusqlite::{CachedStatement, Connection, params_from_iter};

use super::{COLUMNS, and_filter, read_raw_at};
use crate::error::Context;
use crate::sql::Sql;

/// Keys read per round after the first (which reads `top_k`), at least: more rounds happen
/// only when the filter turns rows away, or ties run past the cut.
const CHUNK: usize = 64;
/// Keys read per round at most.
const MAX_CHUNK: usize = 1024;

/// Best first: higher score, then lower row id (the final order, by id then namespace, is
/// [`SearchHit::best_first`]).
fn best_first(a: &(f32, i64), b: &(f32, i64)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// A row that passed the filter's SQL conditions, before it is read whole.
struct Key {
    score: f32,
    rid: i64,
    id: String,
    ns: String,
}

impl Key {
    /// The order of [`SearchHit::best_first`]: higher score, then id, then namespace.
    fn best_first(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| a.ns.cmp(&b.ns))
    }
}

/// `[rid,rid,...]`: the row ids as a JSON array, for `json_each`.
fn json_rids(rids: impl Iterator<Item = i64>) -> String {
    let mut list = String::from("[");
    for (at, rid) in rids.enumerate() {
        if at > 0 {
            list.push(',');
        }
        let _ = write!(list, "{rid}");
    }
    list.push(']');
    list
}

/// The statement selecting `columns` of the rows listed in its first parameter (a JSON array
/// of row ids) that pass `filter`'s SQL conditions, with its parameters.
fn listed_rows<'c>(
    connection: &'c Connection,
    columns: &str,
    filter: &MemoryFilter,
    what: &str,
) -> Result<(CachedStatement<'c>, Sql)> {
    // The listed rows drive the join (CROSS JOIN fixes the order), each one rowid lookup:
    // without it the planner may scan the whole namespace through its index on `ns`.
    let mut sql = Sql::new("SELECT m.rid, ");
    sql.push(columns).push(" FROM json_each(");
    sql.bind(String::new())
        .push(") AS j CROSS JOIN memories m ON m.rid = j.value WHERE 1");
    and_filter(&mut sql, filter);
    let statement = connection
        .prepare_cached(&sql.text)
        .context(|| what.to_owned())?;
    Ok((statement, sql))
}

/// The `top_k` best of the `scored` rows `(score, rid)` that match `filter`, best first
/// (ties by id, then namespace).
///
/// Each round selects the next best rows (a linear selection, no full sort of the
/// candidates) and reads the keys of those that pass the filter's SQL conditions; rounds stop
/// once `top_k` keys are held and no row left scores as high as the `top_k`-th, so every tie
/// at the cut is known. The keys are ordered, and the best rows read whole, decoded and
/// checked against the rest of the filter (its metadata conditions); when that turns rows
/// away, the next keys follow the same way.
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
    let (mut keys_statement, mut keys_sql) = listed_rows(connection, "m.id, m.ns", filter, what)?;
    let (mut rows_statement, mut rows_sql) = listed_rows(connection, COLUMNS, filter, what)?;
    let mut rest: &mut [(f32, i64)] = &mut scored;
    let mut size = top_k.min(MAX_CHUNK);
    // Keys read and not yet decoded.
    let mut keys: Vec<Key> = Vec::new();
    while hits.len() < top_k {
        let need = top_k - hits.len();
        // Keys, until those that can make the cut are all held.
        while !rest.is_empty() {
            if keys.len() >= need {
                let next = rest
                    .iter()
                    .map(|(score, _)| *score)
                    .max_by(f32::total_cmp)
                    .unwrap_or(f32::NEG_INFINITY);
                keys.select_nth_unstable_by(need - 1, |a, b| b.score.total_cmp(&a.score));
                if next < keys[need - 1].score {
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
            let scores: HashMap<i64, f32> =
                chunk.iter().map(|(score, rid)| (*rid, *score)).collect();
            keys_sql.params[0] = json_rids(chunk.iter().map(|(_, rid)| *rid)).into();
            let mut rows = keys_statement
                .query(params_from_iter(keys_sql.params.iter()))
                .context(|| what.to_owned())?;
            while let Some(row) = rows.next().context(|| what.to_owned())? {
                let rid: i64 = row.get(0).context(|| what.to_owned())?;
                if let Some(score) = scores.get(&rid) {
                    keys.push(Key {
                        score: *score,
                        rid,
                        id: row.get(1).context(|| what.to_owned())?,
                        ns: row.get(2).context(|| what.to_owned())?,
                    });
                }
            }
        }
        if keys.is_empty() {
            break;
        }
        // The best keys, read whole.
        keys.sort_unstable_by(Key::best_first);
        let best: Vec<Key> = keys.drain(..need.min(keys.len())).collect();
        rows_sql.params[0] = json_rids(best.iter().map(|key| key.rid)).into();
        let mut rows = rows_statement
            .query(params_from_iter(rows_sql.params.iter()))
            .context(|| what.to_owned())?;
        let mut decoded = HashMap::with_capacity(best.len());
        while let Some(row) = rows.next().context(|| what.to_owned())? {
            let rid: i64 = row.get(0).context(|| what.to_owned())?;
            let raw = read_raw_at(row, 1).context(|| what.to_owned())?;
            decoded.insert(rid, raw.into_item()?);
        }
        for key in &best {
            if let Some(item) = decoded.remove(&key.rid)
                && filter.matches(&item)
            {
                hits.push(SearchHit {
                    item: Arc::new(item),
                    score: key.score,
                });
            }
        }
        if keys.is_empty() && rest.is_empty() {
            break;
        }
    }
    hits.sort_by(SearchHit::best_first);
    hits.truncate(top_k);
    Ok(hits)
}
