//! From scored row ids to search hits. The best `top_k` rows are read whole and decoded;
//! when more rows tie with the `top_k`-th (frequent when many records hold the query's
//! terms equally often, and ties are ordered by id), only their keys (row id, id,
//! namespace) are read, and only those that make the cut are decoded after. Shared by
//! full-text and similarity search.

use std::collections::HashMap;
use std::sync::Arc;

use memory_core::{MemoryFilter, MemoryItem, Result, SearchHit};
use rusqlite::{CachedStatement, Connection, params_from_iter};

use super::{COLUMNS, and_filter, read_raw_at};
use crate::error::Context;
use crate::sql::{Sql, json_rids};

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

/// A row that passed the filter: decoded (and checked against the whole filter), or only
/// its key read (and checked against the filter's SQL conditions).
enum Held {
    Hit(SearchHit),
    Key {
        score: f32,
        rid: i64,
        id: String,
        ns: String,
    },
}

impl Held {
    fn score(&self) -> f32 {
        match self {
            Held::Hit(hit) => hit.score,
            Held::Key { score, .. } => *score,
        }
    }

    fn id_and_namespace(&self) -> (&str, &str) {
        match self {
            Held::Hit(hit) => (&hit.item.id, hit.item.namespace.as_str()),
            Held::Key { id, ns, .. } => (id, ns),
        }
    }

    /// The order of [`SearchHit::best_first`]: higher score, then id, then namespace.
    fn best_first(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.score()
            .total_cmp(&a.score())
            .then_with(|| a.id_and_namespace().cmp(&b.id_and_namespace()))
    }
}

/// The memory in a row of a [`Listed`] over [`COLUMNS`].
fn item_at(row: &rusqlite::Row<'_>, what: &str) -> Result<memory_core::MemoryItem> {
    read_raw_at(row, 1).context(|| what.to_owned())?.into_item()
}

/// Selects `columns` of the rows listed in the first parameter (a JSON array of row ids)
/// that pass a filter's SQL conditions.
struct Listed<'c> {
    statement: CachedStatement<'c>,
    sql: Sql,
}

impl<'c> Listed<'c> {
    fn new(
        connection: &'c Connection,
        columns: &str,
        filter: &MemoryFilter,
        what: &str,
    ) -> Result<Self> {
        // The listed rows drive the join (CROSS JOIN fixes the order), each one rowid
        // lookup: without it the planner may scan the whole namespace through its index on
        // `ns`.
        let mut sql = Sql::new("SELECT m.rid, ");
        sql.push(columns).push(" FROM json_each(");
        sql.bind(String::new())
            .push(") AS j CROSS JOIN memories m ON m.rid = j.value WHERE 1");
        and_filter(&mut sql, filter);
        let statement = connection
            .prepare_cached(&sql.text)
            .context(|| what.to_owned())?;
        Ok(Self { statement, sql })
    }

    /// Calls `row` for each listed row that passes, with its row id.
    fn each(
        &mut self,
        rids: impl Iterator<Item = i64>,
        what: &str,
        mut row: impl FnMut(i64, &rusqlite::Row<'_>) -> Result<()>,
    ) -> Result<()> {
        self.sql.params[0] = json_rids(rids).into();
        let mut rows = self
            .statement
            .query(params_from_iter(self.sql.params.iter()))
            .context(|| what.to_owned())?;
        while let Some(found) = rows.next().context(|| what.to_owned())? {
            let rid: i64 = found.get(0).context(|| what.to_owned())?;
            row(rid, found)?;
        }
        Ok(())
    }
}

/// A hit of `score`, telling where its terms are when `own_words` is known.
fn hit(item: MemoryItem, score: f32, own_words: Option<bool>) -> SearchHit {
    let hit = SearchHit::new(Arc::new(item), score);
    match own_words {
        Some(own) => hit.with_own_words(own),
        None => hit,
    }
}

/// The `top_k` best of the `scored` rows `(score, rid)` that match `filter`, best first
/// (ties by id, then namespace), each hit's [`in_own_words`](SearchHit::in_own_words) as
/// `own_words` tells of its row.
///
/// Each round selects the next best rows (a linear selection, no full sort of the
/// candidates): the first round reads the best `top_k` whole, decodes them and checks them
/// against the whole filter; the later ones, which happen only when the filter turned rows
/// away or rows tie with the cut, read the keys of the rows that pass the filter's SQL
/// conditions. Rounds stop once `top_k` rows are held and no row left scores as high as
/// the `top_k`-th, so every tie at the cut is held. The held rows are ordered, and those of
/// the best that are keys only are read whole and checked against the rest of the filter
/// (its metadata conditions); when that turns rows away, the next follow the same way.
pub(super) fn best_hits(
    connection: &Connection,
    mut scored: Vec<(f32, i64)>,
    filter: &MemoryFilter,
    top_k: usize,
    own_words: impl Fn(i64) -> Option<bool>,
    what: &str,
) -> Result<Vec<SearchHit>> {
    let mut hits: Vec<SearchHit> = Vec::new();
    if top_k == 0 {
        return Ok(hits);
    }
    let mut rows = Listed::new(connection, COLUMNS, filter, what)?;
    let mut keys: Option<Listed<'_>> = None;
    let mut rest: &mut [(f32, i64)] = &mut scored;
    let mut size = top_k.min(MAX_CHUNK);
    let mut held: Vec<Held> = Vec::new();
    let mut first = true;
    while hits.len() < top_k {
        let need = top_k - hits.len();
        while !rest.is_empty() {
            if held.len() >= need {
                let next = rest
                    .iter()
                    .map(|(score, _)| *score)
                    .max_by(f32::total_cmp)
                    .unwrap_or(f32::NEG_INFINITY);
                held.select_nth_unstable_by(need - 1, |a, b| b.score().total_cmp(&a.score()));
                if next < held[need - 1].score() {
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
            let rids = chunk.iter().map(|(_, rid)| *rid);
            let score_of = |rid: i64| scores.get(&rid).copied();
            if std::mem::take(&mut first) {
                rows.each(rids, what, |rid, row| {
                    let item = item_at(row, what)?;
                    if let Some(score) = score_of(rid)
                        && filter.matches(&item)
                    {
                        held.push(Held::Hit(hit(item, score, own_words(rid))));
                    }
                    Ok(())
                })?;
            } else {
                let keys = match &mut keys {
                    Some(keys) => keys,
                    None => keys.insert(Listed::new(connection, "m.id, m.ns", filter, what)?),
                };
                keys.each(rids, what, |rid, row| {
                    if let Some(score) = score_of(rid) {
                        held.push(Held::Key {
                            score,
                            rid,
                            id: row.get(1).context(|| what.to_owned())?,
                            ns: row.get(2).context(|| what.to_owned())?,
                        });
                    }
                    Ok(())
                })?;
            }
        }
        if held.is_empty() {
            break;
        }
        // The best held rows; those held by key read whole now.
        held.sort_unstable_by(Held::best_first);
        let best: Vec<Held> = held.drain(..need.min(held.len())).collect();
        let mut decoded = HashMap::new();
        let unread: Vec<i64> = best
            .iter()
            .filter_map(|entry| match entry {
                Held::Key { rid, .. } => Some(*rid),
                Held::Hit(_) => None,
            })
            .collect();
        if !unread.is_empty() {
            rows.each(unread.into_iter(), what, |rid, row| {
                decoded.insert(rid, item_at(row, what)?);
                Ok(())
            })?;
        }
        for entry in best {
            match entry {
                Held::Hit(hit) => hits.push(hit),
                Held::Key { score, rid, .. } => {
                    if let Some(item) = decoded.remove(&rid)
                        && filter.matches(&item)
                    {
                        hits.push(hit(item, score, own_words(rid)));
                    }
                }
            }
        }
        if held.is_empty() && rest.is_empty() {
            break;
        }
    }
    hits.sort_by(SearchHit::best_first);
    hits.truncate(top_k);
    Ok(hits)
}
