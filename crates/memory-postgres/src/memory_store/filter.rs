//! The SQL of a [`MemoryFilter`]: every condition but the scope, and whether a filter can
//! match anything that PostgreSQL can store.

use chrono::{DateTime, Utc};
use memory_core::{MemoryFilter, TimeView};

use crate::sql::{Sql, reject_nul_json, time_bound};

/// Whether `text` can be a stored key: PostgreSQL text never holds NUL, so a key with one
/// names nothing (and must not reach the server, which would refuse it).
pub(super) fn storable(text: &str) -> bool {
    !text.contains('\0')
}

/// Whether the filter can match anything at all (see [`storable`]).
pub(super) fn filter_is_satisfiable(filter: &MemoryFilter) -> bool {
    filter.id_prefix.as_deref().is_none_or(storable)
        && filter.fact_key.as_deref().is_none_or(storable)
        && filter
            .metadata
            .iter()
            .all(|(key, value)| storable(key) && reject_nul_json("metadata", value).is_ok())
}

/// Appends every condition of `filter` except its scope: time range, list position, kinds, id prefix, tags
/// (GIN `@>`), metadata (GIN `@>` plus exact `->` equality; the caller checks the decoded item
/// again, since jsonb compares numbers by value where serde_json compares their form), fact
/// key and time view ([`and_view`]). A filter of every record ([`TimeView::All`], no fact
/// key) adds nothing for the last two.
pub(super) fn and_conditions(sql: &mut Sql, filter: &MemoryFilter) {
    if let Some(key) = &filter.fact_key {
        sql.push(" AND m.fact_key = ").bind(key.clone(), "text");
    }
    and_view(sql, filter.view);
    if let Some(since) = filter.since {
        sql.push(" AND m.created_at >= ")
            .bind(time_bound(since), "bigint");
    }
    if let Some(until) = filter.until {
        sql.push(" AND m.created_at < ")
            .bind(time_bound(until), "bigint");
    }
    if let Some(after) = &filter.after {
        // One row value in the listing's order, so the index on `(ns, created_at, id)`
        // seeks to the position within a namespace on both the time and the id (the text
        // columns compare in byte order, `COLLATE "C"`).
        // Bounding the time alone, the id deciding in an `OR`, read and threw away every
        // memory created at the position's time before it: all of a batch saved at once.
        let later = if filter.newest_first { "<" } else { ">" };
        sql.push(&format!(" AND (m.created_at, m.id, m.ns) {later} ("))
            .bind(time_bound(after.created_at()), "bigint")
            .push(", ")
            .bind(after.id().to_owned(), "text")
            .push(", ")
            .bind(after.namespace().as_str().to_owned(), "text")
            .push(")");
    }
    if !filter.kinds.is_empty() {
        let kinds: Vec<String> = filter
            .kinds
            .iter()
            .map(|kind| kind.as_str().to_owned())
            .collect();
        sql.push(" AND m.kind = ANY(")
            .bind(kinds, "text[]")
            .push(")");
    }
    if let Some(prefix) = &filter.id_prefix {
        sql.push(" AND starts_with(m.id, ")
            .bind(prefix.clone(), "text")
            .push(")");
    }
    if !filter.tags.is_empty() {
        let tags: Vec<String> = filter
            .tags
            .iter()
            .map(|tag| tag.as_str().to_owned())
            .collect();
        sql.push(" AND m.tags @> ").bind(tags, "text[]");
    }
    for (key, value) in &filter.metadata {
        let mut pair = serde_json::Map::new();
        pair.insert(key.clone(), value.clone());
        sql.push(" AND m.metadata @> ")
            .bind(serde_json::Value::Object(pair), "jsonb")
            .push(" AND m.metadata -> ")
            .bind(key.clone(), "text")
            .push(" = ")
            .bind(value.clone(), "jsonb");
    }
}

/// Appends the conditions of a time view, exactly [`TimeView::admits_parts`] over the
/// columns `created_at`, `valid_from`, `valid_until` and `ended_at`, the view's time bound as
/// a parameter (never the database's clock).
fn and_view(sql: &mut Sql, view: TimeView) {
    match view {
        TimeView::All => {}
        TimeView::Current(now) => {
            sql.push(" AND m.ended_at IS NULL");
            and_open_or_after(sql, "m.valid_until", now);
        }
        TimeView::AsOf(at) => {
            match at.timestamp_nanos_opt() {
                Some(nanos) => {
                    sql.push(" AND m.created_at <= ").bind(nanos, "bigint");
                    sql.push(" AND (m.valid_from IS NULL OR m.valid_from <= ")
                        .bind(nanos, "bigint")
                        .push(")");
                }
                // Every stored time is later: nothing was recorded by then.
                None if at.timestamp() < 0 => {
                    sql.push(" AND false");
                }
                // Every stored time is earlier.
                None => {}
            }
            and_open_or_after(sql, "m.ended_at", at);
            and_open_or_after(sql, "m.valid_until", at);
        }
    }
}

/// Appends ` AND (column IS NULL OR column > at)` for a nullable time column, exact also for
/// a time outside the stored range (where no bound parameter could stand for it).
fn and_open_or_after(sql: &mut Sql, column: &str, at: DateTime<Utc>) {
    match at.timestamp_nanos_opt() {
        Some(nanos) => {
            sql.push(" AND (")
                .push(column)
                .push(" IS NULL OR ")
                .push(column)
                .push(" > ")
                .bind(nanos, "bigint")
                .push(")");
        }
        // Every stored time is later.
        None if at.timestamp() < 0 => {}
        // Every stored time is earlier: only an open end passes.
        None => {
            sql.push(" AND ").push(column).push(" IS NULL");
        }
    }
}
