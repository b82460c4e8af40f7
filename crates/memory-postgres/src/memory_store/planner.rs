//! The planner's statistics of the memories table, refreshed after large batches.

use crate::database::Database;

/// Memories one `save_many` writes at least before the table's planner statistics are
/// looked at (see [`refresh_statistics`]).
pub(super) const ANALYZE_BATCH: usize = 1_000;

/// After a large batch (an import), `ANALYZE`s the memories table when the batch holds more
/// than a tenth of the rows the planner believes the table has (or it was never analysed).
///
/// Why: the planner's row estimates come from the last `ANALYZE`. A table filled by an
/// import and searched at once still looks empty to it, so it reads a namespace through its
/// time index and filters every row by term (14 ms for a rare word in 10,000 memories)
/// instead of through the terms' GIN index; autovacuum would fix that a minute later, and is
/// off on some servers. The rule is autovacuum's own (a tenth of the table changed), so an
/// import of a million rows in chunks analyses a few times, not once per chunk. The batch is
/// committed already: a failure here (a role that may not analyse the table, a closed pool)
/// changes no data and is ignored.
pub(super) async fn refresh_statistics(db: &Database, written: usize) {
    let Ok(client) = db.client("refreshing planner statistics").await else {
        return;
    };
    let believed = client
        .query_opt(
            "SELECT c.reltuples::float8 FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = 'memories'",
            &[&db.schema()],
        )
        .await;
    let Ok(Some(row)) = believed else {
        return;
    };
    let rows: f64 = row.try_get(0).unwrap_or(0.0);
    // `reltuples` is -1 for a table never analysed.
    if written as f64 > 0.1 * rows.max(0.0) {
        let _ = client
            .batch_execute(&db.qualify("ANALYZE {s}.memories"))
            .await;
    }
}
