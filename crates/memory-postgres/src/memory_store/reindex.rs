//! Rebuilding the search columns of every memory when the analyzer's behaviour changes.

use memory_core::{CONTEXT_METADATA_KEY, Result};

use super::row::memory_terms;
use crate::database::Database;
use crate::error::{Context, corrupt};
use crate::sql::REINDEX_BATCH;

/// Rebuilds `terms` and the field lengths of every memory with this build's analyzer, in batches of
/// [`REINDEX_BATCH`] rows, inside the caller's transaction. Returns how many rows it rewrote.
pub(crate) async fn reindex(
    transaction: &deadpool_postgres::Transaction<'_>,
    db: &Database,
) -> Result<u64> {
    let what = || format!("re-indexing the memories of schema {}", db.schema());
    let select = db.qualify(
        "SELECT rid, content, tags, metadata, fact_key FROM {s}.memories \
         WHERE rid > $1::bigint ORDER BY rid LIMIT $2::bigint",
    );
    let update = db.qualify(
        "UPDATE {s}.memories AS m SET \
         terms = ARRAY(SELECT jsonb_object_keys(u.term_freqs)), term_freqs = u.term_freqs, \
         doc_len = u.doc_len, context_len = u.context_len \
         FROM unnest($1::bigint[], $2::jsonb[], $3::integer[], $4::integer[]) \
         AS u (rid, term_freqs, doc_len, context_len) WHERE m.rid = u.rid",
    );
    let mut after = 0i64;
    let mut total = 0u64;
    loop {
        let rows = transaction
            .query(&select, &[&after, &REINDEX_BATCH])
            .await
            .context(what)?;
        let Some(last) = rows.last() else {
            return Ok(total);
        };
        after = last.try_get(0).map_err(|error| corrupt(what(), error))?;
        let mut rids = Vec::with_capacity(rows.len());
        let mut frequencies = Vec::with_capacity(rows.len());
        let mut lengths = Vec::with_capacity(rows.len());
        let mut context_lengths = Vec::with_capacity(rows.len());
        for row in &rows {
            let field = |error| corrupt(what(), error);
            let rid: i64 = row.try_get(0).map_err(field)?;
            let content: String = row.try_get(1).map_err(field)?;
            let tags: Vec<String> = row.try_get(2).map_err(field)?;
            let metadata: serde_json::Value = row.try_get(3).map_err(field)?;
            let fact_key: Option<String> = row.try_get(4).map_err(field)?;
            // As MemoryItem::context reads it.
            let context = metadata
                .get(CONTEXT_METADATA_KEY)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let indexed = memory_terms(&content, &tags, fact_key.as_deref(), context);
            rids.push(rid);
            lengths.push(indexed.length(0));
            context_lengths.push(indexed.length(1));
            // The terms are the keys of the frequencies; the statement takes them from there.
            frequencies.push(indexed.frequencies);
        }
        total += transaction
            .execute(&update, &[&rids, &frequencies, &lengths, &context_lengths])
            .await
            .context(what)?;
    }
}
