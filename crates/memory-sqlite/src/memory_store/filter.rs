//! The SQL of a [`MemoryFilter`]: the conditions SQL can check, the listing statement, and
//! how many records a search first asks the index for.

use memory_core::backend::listing_order;
use memory_core::{ListPosition, MemoryFilter, MemoryItem, Namespace, Result, Scope, TimeView};
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::row::{COLUMNS, Raw, read_raw};
use crate::error::Context;
use crate::sql::{Sql, time_bound};

/// Appends every condition of `filter` that SQL can check: scope, time range, list
/// position, kinds, id prefix, tags, time view, fact key, and the metadata conditions [`metadata_sql`] can
/// decide. Callers still check every condition on the decoded item
/// ([`MemoryFilter::matches`]). The default view ([`TimeView::All`]) and no fact key add
/// nothing.
pub(super) fn and_filter(sql: &mut Sql, filter: &MemoryFilter) {
    sql.and_scope("m.ns", &filter.scope);
    if let Some(since) = filter.since {
        sql.push(" AND m.created_at >= ").bind(time_bound(since));
    }
    if let Some(until) = filter.until {
        sql.push(" AND m.created_at < ").bind(time_bound(until));
    }
    if let Some(after) = &filter.after {
        // One row value in the listing's order, so the index on `(ns, created_at, id)`
        // seeks to the position within a namespace on both the time and the id.
        // Bounding the time alone, the id deciding in an `OR`, read and threw away every
        // memory created at the position's time before it: all of a batch saved at once.
        let later = if filter.newest_first { "<" } else { ">" };
        sql.push(&format!(" AND (m.created_at, m.id, m.ns) {later} ("))
            .bind(time_bound(after.created_at()))
            .push(", ")
            .bind(after.id().to_owned())
            .push(", ")
            .bind(after.namespace().as_str().to_owned())
            .push(")");
    }
    if !filter.kinds.is_empty() {
        sql.push(" AND m.kind IN (");
        for (index, kind) in filter.kinds.iter().enumerate() {
            if index > 0 {
                sql.push(", ");
            }
            sql.bind(kind.as_str().to_owned());
        }
        sql.push(")");
    }
    if let Some(prefix) = &filter.id_prefix {
        sql.and_prefix("m.id", prefix);
    }
    for tag in &filter.tags {
        sql.push(" AND EXISTS (SELECT 1 FROM memory_tags t WHERE t.rid = m.rid AND t.tag = ")
            .bind(tag.as_str().to_owned())
            .push(")");
    }
    if let Some(key) = &filter.fact_key {
        sql.push(" AND m.fact_key = ").bind(key.clone());
    }
    for (key, value) in &filter.metadata {
        let Some((path, json_type, scalar)) = metadata_sql(key, value) else {
            continue;
        };
        sql.push(" AND json_type(m.metadata, ")
            .bind(path.clone())
            .push(") = ")
            .bind(json_type.to_owned());
        if let Some(scalar) = scalar {
            sql.push(" AND json_extract(m.metadata, ")
                .bind(path)
                .push(") = ")
                .bind(scalar);
        }
    }
    and_view(sql, filter.view);
}

/// A metadata condition (`key` holds exactly `value`) as SQLite's JSON functions decide it
/// on the stored text: the key's JSON path, the `json_type` the value must have and, for a
/// string or an integer, the value `json_extract` must return. `None` when SQL cannot
/// decide it exactly (a float, an array, an object, an integer beyond `i64`, a key holding
/// `"` or `\`): the decoded item decides.
fn metadata_sql(
    key: &str,
    value: &serde_json::Value,
) -> Option<(String, &'static str, Option<rusqlite::types::Value>)> {
    use rusqlite::types::Value as Sql;
    use serde_json::Value;
    if key.contains(['"', '\\']) {
        return None;
    }
    let path = format!("$.\"{key}\"");
    let (json_type, scalar) = match value {
        Value::Null => ("null", None),
        Value::Bool(true) => ("true", None),
        Value::Bool(false) => ("false", None),
        Value::String(text) => ("text", Some(Sql::Text(text.clone()))),
        Value::Number(number) => ("integer", Some(Sql::Integer(number.as_i64()?))),
        Value::Array(_) | Value::Object(_) => return None,
    };
    Some((path, json_type, scalar))
}

/// Whether SQL decides every metadata condition of `filter` ([`metadata_sql`]), so a limit
/// can go to SQL.
fn metadata_in_sql(filter: &MemoryFilter) -> bool {
    filter
        .metadata
        .iter()
        .all(|(key, value)| metadata_sql(key, value).is_some())
}

/// Appends the conditions of `view`, exactly [`TimeView::admits_parts`] over the columns
/// (NULL is an open end, or no end). Bounds saturate ([`time_bound`]): every stored time is
/// within them, so a view outside the storable range compares as it would in memory.
pub(super) fn and_view(sql: &mut Sql, view: TimeView) {
    match view {
        TimeView::All => {}
        TimeView::Current(now) => {
            sql.push(" AND m.ended_at IS NULL AND (m.valid_until IS NULL OR m.valid_until > ")
                .bind(time_bound(now))
                .push(")");
        }
        TimeView::AsOf(at) => {
            let at = time_bound(at);
            sql.push(" AND m.created_at <= ")
                .bind(at)
                .push(" AND (m.ended_at IS NULL OR m.ended_at > ")
                .bind(at)
                .push(") AND (m.valid_from IS NULL OR m.valid_from <= ")
                .bind(at)
                .push(") AND (m.valid_until IS NULL OR m.valid_until > ")
                .bind(at)
                .push(")");
        }
    }
}

/// How many records a search first asks the index for, to return `top_k` hits through
/// `filter`; the search asks for four times more while the filter turns too many away.
/// - Only a scope: every candidate passes, so the top k are the hits.
/// - A scope, a time view and kinds (every recall's filter: the current view, and every kind
///   but short-term): the view turns away only records that were superseded, retracted or
///   have expired, and the kinds only short-term memories, which are few among the best
///   matches of a query (a namespace's short-term memories are a window over its latest
///   turns); so an eighth more than `top_k`, and two. Asking for twice as many made a recall
///   of frequent words cost half as much again: the k-th best score prunes less the larger k
///   is, and more ties at the cut have their keys read.
/// - Any other condition: twice as many, and eight more.
pub(super) fn first_ask(filter: &MemoryFilter, top_k: usize) -> usize {
    let mostly_admitted = filter.only_kinds_and_view();
    if !mostly_admitted {
        top_k.saturating_mul(2).saturating_add(8)
    } else if filter.kinds.is_empty() && filter.view == TimeView::All {
        top_k
    } else {
        top_k.saturating_add(top_k / 8).saturating_add(2)
    }
}

/// The statement of [`list`](memory_core::MemoryStore::list): the filter's SQL conditions in time order.
pub(super) fn list_sql(filter: &MemoryFilter) -> Sql {
    let mut sql = Sql::new(&format!("SELECT {COLUMNS} FROM memories m WHERE 1"));
    and_filter(&mut sql, filter);
    sql.push(if filter.newest_first {
        " ORDER BY m.created_at DESC, m.id DESC, m.ns DESC"
    } else {
        " ORDER BY m.created_at, m.id, m.ns"
    });
    // Metadata SQL cannot decide is checked after decoding: the limit goes to SQL only when
    // it decides every condition.
    if let (Some(limit), true) = (filter.limit, metadata_in_sql(filter)) {
        sql.push(" LIMIT ").bind(limit_value(limit));
    }
    sql
}

/// A page of a subtree's memories is read namespace by namespace, each page merged, when
/// the subtree spans at most this many namespaces holding memories.
const MERGED_NAMESPACES: usize = 8;

/// The memories of [`list`](memory_core::MemoryStore::list): the listing's statement, its
/// rows decoded and checked against every condition, at most its limit.
///
/// A page of a subtree (a limit over a scope with descendants) that spans at most
/// [`MERGED_NAMESPACES`] namespaces is read as one page of each, merged in the listing's
/// order. The time index leads with the namespace, so one statement over the subtree sorts
/// all of its memories after the position (about 10 ms at the start of 50,000), where a page
/// of one namespace seeks to the position and reads only the page (0.12 ms).
pub(super) fn list_items(
    connection: &Connection,
    filter: &MemoryFilter,
) -> Result<Vec<MemoryItem>> {
    if let (true, Some(limit)) = (filter.scope.descendants, filter.limit)
        && let Some(namespaces) = few_namespaces(connection, &filter.scope, MERGED_NAMESPACES)?
    {
        let mut items = Vec::new();
        for namespace in namespaces {
            let mut one = filter.clone();
            one.scope = namespace.exact();
            items.extend(listed(connection, &one)?);
        }
        items.sort_by(|a, b| listing_order(a, b, filter.newest_first));
        items.truncate(limit);
        return Ok(items);
    }
    listed(connection, filter)
}

/// Rows a listing reads at a time when a metadata condition is decided after decoding.
const LIST_CHUNK: usize = 256;

/// The memories of one listing statement, checked against every condition, at most the
/// filter's limit.
///
/// A limited listing with a metadata condition SQL cannot decide ([`metadata_sql`]) reads
/// its rows [`LIST_CHUNK`] at a time, each chunk from the last row of the one before,
/// until the limit is reached or the rows run out: reading every row of the scope at once
/// held and decoded the whole scope for a page of one.
fn listed(connection: &Connection, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
    let what = "listing memories";
    let Some(limit) = filter.limit.filter(|_| !metadata_in_sql(filter)) else {
        let mut items = query_items(connection, &list_sql(filter), what)?;
        items.retain(|item| filter.matches(item));
        if let Some(limit) = filter.limit {
            items.truncate(limit);
        }
        return Ok(items);
    };
    let mut items = Vec::new();
    let mut chunk = filter.clone();
    loop {
        let mut sql = list_sql(&chunk);
        sql.push(" LIMIT ").bind(limit_value(LIST_CHUNK));
        let rows = query_items(connection, &sql, what)?;
        let (read, last) = (rows.len(), rows.last().map(ListPosition::of));
        items.extend(rows.into_iter().filter(|item| filter.matches(item)));
        if items.len() >= limit || read < LIST_CHUNK {
            break;
        }
        chunk.after = last;
    }
    items.truncate(limit);
    Ok(items)
}

/// The namespaces holding memories in `scope`, when there are at most `max` (`None` when
/// there are more). Each is found by seeking the index from the one before (a probe each),
/// where `DISTINCT` would read every entry of the scope.
fn few_namespaces(
    connection: &Connection,
    scope: &Scope,
    max: usize,
) -> Result<Option<Vec<Namespace>>> {
    let what = || "finding the namespaces of a listing".to_owned();
    let namespace = scope.namespace.as_str();
    let mut found = Vec::new();
    if !scope.descendants {
        return Ok(Some(vec![scope.namespace.clone()]));
    }
    if !scope.namespace.is_root() {
        let held = connection
            .prepare_cached("SELECT 1 FROM memories WHERE ns = ?1 LIMIT 1")
            .and_then(|mut statement| statement.exists([namespace]))
            .context(what)?;
        if held {
            found.push(scope.namespace.clone());
        }
    }
    // The descendants: from `a/` (inclusive) up to `a0`, or every namespace under the root.
    let end = (!scope.namespace.is_root()).then(|| format!("{namespace}0"));
    let mut from = if scope.namespace.is_root() {
        String::new()
    } else {
        format!("{namespace}/")
    };
    let mut inclusive = !scope.namespace.is_root();
    loop {
        let text = match (inclusive, end.is_some()) {
            (true, true) => {
                "SELECT ns FROM memories WHERE ns >= ?1 AND ns < ?2 ORDER BY ns LIMIT 1"
            }
            (false, true) => {
                "SELECT ns FROM memories WHERE ns > ?1 AND ns < ?2 ORDER BY ns LIMIT 1"
            }
            (true, false) => "SELECT ns FROM memories WHERE ns >= ?1 ORDER BY ns LIMIT 1",
            (false, false) => "SELECT ns FROM memories WHERE ns > ?1 ORDER BY ns LIMIT 1",
        };
        let next: Option<String> = connection
            .prepare_cached(text)
            .and_then(|mut statement| match &end {
                Some(end) => statement
                    .query_row(rusqlite::params![from, end], |row| row.get(0))
                    .optional(),
                None => statement.query_row([&from], |row| row.get(0)).optional(),
            })
            .context(what)?;
        let Some(next) = next else {
            return Ok(Some(found));
        };
        if found.len() == max {
            return Ok(None);
        }
        found.push(Namespace::parse(&next)?);
        from = next;
        inclusive = false;
    }
}

pub(super) fn query_items(
    connection: &Connection,
    sql: &Sql,
    what: &str,
) -> Result<Vec<MemoryItem>> {
    let raws = connection
        .prepare_cached(&sql.text)
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(sql.params.iter()), read_raw)?
                .collect::<rusqlite::Result<Vec<Raw>>>()
        })
        .context(|| what.to_owned())?;
    raws.into_iter().map(Raw::into_item).collect()
}

pub(super) fn limit_value(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use memory_core::Namespace;
    use rusqlite::Connection;

    use super::*;

    fn plan(connection: &Connection, sql: &Sql) -> String {
        let text = format!("EXPLAIN QUERY PLAN {}", sql.text);
        let mut statement = connection.prepare(&text).unwrap();
        let rows = statement
            .query_map(params_from_iter(sql.params.iter()), |row| {
                row.get::<_, String>(3)
            })
            .unwrap();
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .unwrap()
            .join("; ")
    }

    #[test]
    fn listing_a_fact_reads_its_index_and_the_default_view_adds_no_condition() {
        let mut connection = Connection::open_in_memory().unwrap();
        let transaction = connection.transaction().unwrap();
        crate::schema::migrate(&transaction, "test", "migrating").unwrap();
        transaction.commit().unwrap();
        let ns = Namespace::parse("user-1").unwrap();

        let keyed = MemoryFilter::new(ns.exact())
            .with_fact_key("user.city")
            .unwrap();
        let text = plan(&connection, &list_sql(&keyed));
        assert!(text.contains("memories_by_fact_key"), "{text}");
        assert!(!text.contains("TEMP B-TREE"), "{text}");

        let plain = list_sql(&MemoryFilter::new(ns.exact()));
        let viewed =
            list_sql(&MemoryFilter::new(ns.exact()).with_view(TimeView::Current(Utc::now())));
        assert!(!plain.text.contains("ended_at"), "{}", plain.text);
        assert!(
            viewed.text.contains("m.ended_at IS NULL"),
            "{}",
            viewed.text
        );
    }

    #[test]
    fn a_page_after_a_position_seeks_the_time_index_on_time_and_id() {
        let mut connection = Connection::open_in_memory().unwrap();
        let transaction = connection.transaction().unwrap();
        crate::schema::migrate(&transaction, "test", "migrating").unwrap();
        transaction.commit().unwrap();
        let ns = Namespace::parse("user-1").unwrap();
        let position = ListPosition::new(Utc::now(), "m1", ns.clone()).unwrap();
        for newest_first in [false, true] {
            let mut filter = MemoryFilter::new(ns.exact())
                .after(position.clone())
                .with_limit(100);
            filter.newest_first = newest_first;
            let text = plan(&connection, &list_sql(&filter));
            // The seek bounds both columns: memories created at the position's time
            // before it are never read (a bound on the time alone read every one of them).
            let range = if newest_first { "<" } else { ">" };
            assert!(
                text.contains(&format!(
                    "USING INDEX memories_by_time (ns=? AND (created_at,id){range}(?,?))"
                )),
                "{text}"
            );
            assert!(!text.contains("TEMP B-TREE"), "{text}");
        }
    }
}
