//! [`MemoryStore::least_valuable`](memory_core::MemoryStore::least_valuable) in one query over
//! the rows' own recall statistics.

use chrono::{DateTime, Utc};
use memory_core::{Namespace, RecallBasedConfig, RecallStats, Result};
use tokio_postgres::types::ToSql;

use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::{decode_time, limit_value};

/// The candidates for the `$7` least valuable memories of namespace `$1`, from the value of
/// [`RecallStats::value`] approximated in SQL: `$2` and `$3` are the seconds and
/// sub-second nanoseconds of `now`, `$4` to `$6` the recall, score and recency weights, all
/// scaled by one power of two so no product or sum can overflow (PostgreSQL raises an error
/// where Rust gives infinity), and `$8` is `f64::MAX` scaled alike: a value Rust computes as
/// infinity is capped there, so such values tie in SQL as they do in Rust.
///
/// SQL's `ln` is not Rust's `ln_1p` (they differ in the last bit for some counts), so the
/// approximate order can differ from the exact one between values within a few units in the
/// last place. The query therefore returns a superset of the victims, from which the caller
/// picks them with the exact formula: every row whose approximate value is at most the
/// `$7`-th smallest one plus a relative margin far above the rounding error (`cut`, `band`).
/// Rows whose value depends on the same inputs (the statistics the non-zero weights read)
/// have the same exact value and are ordered by `(created_at, id)` in either order, so of
/// each such group only the first `$7` can be victims and only they are returned: a
/// namespace of items never recalled returns `$7` rows, not all of them. The mean score is
/// taken as 0 below 1e-200, and the margin has an absolute part above that, so no tiny
/// quotient or product underflows (another error in PostgreSQL).
const LEAST_VALUABLE: &str = "
WITH v AS (
    SELECT m.id, m.created_at, m.recall_count, m.recall_total, m.last_recall_at, least(
        ln(1 + m.recall_count::float8) * $4::float8
        + CASE WHEN m.recall_count = 0
                    OR m.recall_total < m.recall_count::float8 * 1e-200::float8 THEN 0::float8
               ELSE m.recall_total / m.recall_count::float8 * $5::float8 END
        + CASE WHEN m.last_recall_at IS NULL THEN 0::float8
               ELSE 1 / (1 + greatest(div($2::bigint::numeric * 1000000000 + $3::bigint
                                          - m.last_recall_at, 1000000), 0)::float8
                             / 86400000) * $6::float8 END,
        $8::float8) AS approx
    FROM {s}.memories m WHERE m.ns = $1::text
),
cut AS (
    SELECT v.approx FROM v ORDER BY v.approx, v.created_at, v.id OFFSET $7::bigint - 1 LIMIT 1
),
band AS (
    SELECT v.*, row_number() OVER (
        PARTITION BY CASE WHEN $4::float8 > 0 OR $5::float8 > 0 THEN v.recall_count END,
                     CASE WHEN $5::float8 > 0 THEN v.recall_total END,
                     CASE WHEN $6::float8 > 0 THEN v.last_recall_at END
        ORDER BY v.created_at, v.id) AS nth
    FROM v
    WHERE v.approx <= coalesce(
        (SELECT c.approx * (1 + 1e-9)::float8 + 1e-190::float8 FROM cut c), 'infinity'::float8)
)
SELECT b.id, b.created_at, b.recall_count, b.recall_total, b.last_recall_at
FROM band b WHERE b.nth <= $7::bigint";

/// The ids of the `count` memories of `namespace` with the lowest
/// [`RecallStats::value`] under `config` at `now`, least valuable first, ties by
/// `(created_at, id)`: exactly [`memory_core::backend::least_valuable`] over every item, in one query
/// that returns the candidates ([`LEAST_VALUABLE`]) and the exact formula on them.
pub(super) async fn least_valuable(
    db: &Database,
    namespace: &Namespace,
    count: usize,
    config: &RecallBasedConfig,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let weights = [
        config.recall_weight,
        config.score_weight,
        config.recency_weight,
    ]
    .map(f64::from);
    // A power of two, so the scaled weights keep the order of the values exactly; the
    // largest becomes at most 1/4, so no sum of three terms of at most f64::MAX/4 overflows.
    let largest = weights.iter().copied().fold(0.0f64, f64::max);
    let scale = if largest > 0.0 && largest.is_finite() {
        2f64.powi(-(largest.log2().ceil() as i32) - 2)
    } else {
        1.0
    };
    let [recall, score, recency] = weights.map(|weight| weight * scale);
    let ns = namespace.as_str().to_owned();
    let seconds = now.timestamp();
    let nanos = i64::from(now.timestamp_subsec_nanos());
    let most = limit_value(count);
    let what = || format!("finding the least valuable memories of {namespace}");
    let client = db.client(&what()).await?;
    let statement = client
        .prepare_cached(&db.qualify(LEAST_VALUABLE))
        .await
        .context(what)?;
    let cap = f64::MAX * scale;
    let params: [&(dyn ToSql + Sync); 8] = [
        &ns, &seconds, &nanos, &recall, &score, &recency, &most, &cap,
    ];
    let rows = client.query(&statement, &params).await.context(what)?;
    drop(client);
    let mut candidates = Vec::with_capacity(rows.len());
    for row in &rows {
        let field = |error| corrupt(what(), error);
        let id: String = row.try_get(0).map_err(field)?;
        let created_at: i64 = row.try_get(1).map_err(field)?;
        let recall_count: i64 = row.try_get(2).map_err(field)?;
        let last: Option<i64> = row.try_get(4).map_err(field)?;
        let stats = RecallStats {
            recall_count: u64::try_from(recall_count).unwrap_or(0),
            total_score: row.try_get(3).map_err(field)?,
            last_recall_at: last.map(decode_time),
        };
        candidates.push((stats.value(now, config), decode_time(created_at), id));
    }
    Ok(memory_core::backend::least_valuable(candidates, count))
}
