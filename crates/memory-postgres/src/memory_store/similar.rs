//! Similarity search over stored embeddings in two passes, as the SQLite backend does: the
//! ranking pass reads each comparable row's key and packed embedding only (four bytes a
//! value, decoded into one reused buffer), and whole rows are read
//! and decoded for the best few. Both passes run in one read-only repeatable-read
//! transaction, so they see the same rows.
//!
//! Without a vector index (no extension is assumed) the ranking pass still reads every
//! embedding in scope: the search is exact and linear. What it saves is the rest of each
//! row (content, context, metadata, tags) and its decoding, which the trait's default, a
//! whole listing, paid for every memory in scope. The ranking pass streams its rows, so it
//! holds one embedding at a time and a score with a key for each row.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use memory_core::backend::CosineQuery;
use memory_core::{MemoryFilter, Result, SearchHit};
use tokio_postgres::IsolationLevel;

use super::filter::{and_conditions, filter_is_satisfiable};
use super::row::{COLUMN_COUNT, COLUMNS, decode, unpack_embedding};
use crate::database::{Database, query};
use crate::error::{Context, corrupt};

/// Rows read whole per round after the first (which reads `top_k`), at least: more rounds
/// happen only when decoded items fail the filter's check in Rust (a metadata value jsonb
/// compares by value, serde_json by form).
const CHUNK: usize = 64;

/// A ranked row: score, id, namespace, row id.
type Ranked = (f32, String, String, i64);

/// The `top_k` items matching `filter` whose embedding is most similar to `vector`, best
/// first, ties by id then namespace: exactly what the trait's default returns.
pub(super) async fn search_similar(
    db: &Database,
    filter: &MemoryFilter,
    vector: &[f32],
    top_k: usize,
) -> Result<Vec<SearchHit>> {
    memory_core::backend::validate_embedding(vector)?;
    if top_k == 0 || !filter_is_satisfiable(filter) {
        return Ok(Vec::new());
    }
    let what = || "searching memories by embedding".to_owned();
    let query_vector = CosineQuery::new(vector);
    let mut client = db.client(&what()).await?;
    let transaction = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .context(what)?;

    // First pass: the score of every comparable item, from its key and embedding alone.
    let mut sql = db.sql(
        "SELECT m.rid, m.id, m.ns, m.embedding FROM {s}.memories m \
         WHERE m.embedding IS NOT NULL AND octet_length(m.embedding) = ",
    );
    // Packed: four bytes per value (see `row::pack_embedding`).
    sql.bind(
        i32::try_from(vector.len().saturating_mul(4)).unwrap_or(i32::MAX),
        "integer",
    );
    sql.and_scope("m.ns", &filter.scope);
    and_conditions(&mut sql, filter);
    // Streamed: each row's embedding is scored as it arrives and let go, so the pass holds
    // one row at a time and the scores, not every embedding in scope (6 GB for a million
    // vectors of 1,536 values).
    let statement = transaction.prepare_cached(&sql.text).await.context(what)?;
    let mut rows = std::pin::pin!(
        transaction
            .query_raw(&statement, sql.params())
            .await
            .context(what)?
    );
    let mut ranked: Vec<Ranked> = Vec::new();
    let mut embedding: Vec<f32> = Vec::with_capacity(vector.len());
    while let Some(row) = rows.next().await {
        let row = row.context(what)?;
        let rid: i64 = row.try_get(0).map_err(|e| corrupt("a memory row id", e))?;
        let id: String = row.try_get(1).map_err(|e| corrupt("a memory id", e))?;
        let ns: String = row
            .try_get(2)
            .map_err(|e| corrupt("a memory namespace", e))?;
        let what = || format!("the embedding of memory {id} in {ns}");
        let bytes: &[u8] = row.try_get(3).map_err(|e| corrupt(what(), e))?;
        unpack_embedding(bytes, &mut embedding).map_err(|e| corrupt(what(), e))?;
        if let Some(score) = query_vector.similarity(&embedding) {
            ranked.push((score, id, ns, rid));
        }
    }
    ranked.sort_unstable_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| (&a.1, &a.2).cmp(&(&b.1, &b.2)))
    });

    // Second pass: whole rows, best first, until `top_k` have passed the filter.
    let mut hits = Vec::with_capacity(top_k.min(ranked.len()));
    let mut at = 0;
    while hits.len() < top_k && at < ranked.len() {
        let wanted = if at == 0 {
            top_k
        } else {
            (top_k - hits.len()).max(CHUNK)
        };
        let round = &ranked[at..ranked.len().min(at + wanted)];
        at += round.len();
        let mut read = db.sql(&format!(
            "SELECT {COLUMNS}, m.rid FROM {{s}}.memories m WHERE m.rid = ANY("
        ));
        read.bind(round.iter().map(|r| r.3).collect::<Vec<i64>>(), "bigint[]")
            .push(")");
        let mut items: HashMap<i64, tokio_postgres::Row> = HashMap::with_capacity(round.len());
        for row in query(&transaction, &read, what).await? {
            let rid: i64 = row
                .try_get(COLUMN_COUNT)
                .map_err(|e| corrupt("a memory row id", e))?;
            items.insert(rid, row);
        }
        for (score, _, _, rid) in round {
            let Some(row) = items.get(rid) else {
                continue;
            };
            let item = decode(row)?;
            if !filter.matches(&item) {
                continue;
            }
            hits.push(SearchHit::new(Arc::new(item), *score));
            if hits.len() == top_k {
                break;
            }
        }
    }
    transaction.commit().await.context(what)?;
    Ok(hits)
}
