//! The conditional writes of [`PostgresStore`]: each compares the stored `updated_at` of
//! what it writes with the time the caller read, and writes only when they agree, in one
//! step (one statement, or one transaction holding the rows it compared).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use memory_core::{ConditionalSave, MemoryItem, Namespace, Result};
use tokio_postgres::types::ToSql;

use super::filter::storable;
use super::row::encode;
use super::{PostgresStore, UPDATE, planner};
use crate::error::Context;

/// [`UPDATE`] only when the row's `updated_at` is still `$25`: the comparison and the write
/// are one statement, which takes the row's lock, so no writer comes between them.
fn update_if_sql() -> String {
    format!("{UPDATE} AND updated_at = $25::bigint")
}

/// A stored row's `updated_at`, the row locked until the transaction ends: a concurrent
/// write of it waits, and one committed first is seen (read committed reads the latest row
/// it locks).
const LOCK: &str =
    "SELECT updated_at FROM {s}.memories WHERE ns = $1::text AND id = $2::text FOR UPDATE";

pub(super) async fn update_if(
    store: &PostgresStore,
    item: MemoryItem,
    read_at: DateTime<Utc>,
) -> Result<bool> {
    let encoded = encode(item)?;
    // A time the store cannot hold is no stored item's.
    let Some(read_at) = read_at.timestamp_nanos_opt() else {
        return Ok(false);
    };
    let what = || format!("updating memory {} in {}", encoded.id, encoded.ns);
    let client = store.db.client(&what()).await?;
    let statement = client
        .prepare_cached(&store.db.qualify(&update_if_sql()))
        .await
        .context(what)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = encoded.params().to_vec();
    params.push(&read_at);
    let changed = client.execute(&statement, &params).await.context(what)?;
    Ok(changed > 0)
}

pub(super) async fn save_many_if(
    store: &PostgresStore,
    items: Vec<MemoryItem>,
    expected: &[(usize, DateTime<Utc>)],
) -> Result<bool> {
    memory_core::backend::validate_expected(&items, expected)?;
    let encoded = items.into_iter().map(encode).collect::<Result<Vec<_>>>()?;
    // A time the store cannot hold is no stored item's.
    let Some(expected) = memory_core::backend::expected_nanos(expected) else {
        return Ok(false);
    };
    if encoded.is_empty() {
        return Ok(true);
    }
    let what = || format!("saving {} memories", encoded.len());
    let mut client = store.db.client(&what()).await?;
    let transaction = client.transaction().await.context(what)?;
    // Each row compared is locked until the commit: a concurrent write of it waits, and
    // one committed first is seen (read committed reads the latest row it locks).
    let lock = transaction
        .prepare_cached(&store.db.qualify(LOCK))
        .await
        .context(what)?;
    for (at, read_at) in &expected {
        let Some(item) = encoded.get(*at) else {
            return Ok(false);
        };
        let stored = transaction
            .query_opt(&lock, &[&item.ns, &item.id])
            .await
            .context(|| format!("reading memory {} in {}", item.id, item.ns))?
            .map(|row| row.try_get::<_, i64>(0))
            .transpose()
            .context(|| format!("reading memory {} in {}", item.id, item.ns))?;
        if stored != Some(*read_at) {
            // Dropped: rolled back, nothing written.
            return Ok(false);
        }
    }
    store.upsert_all(&transaction, &encoded).await?;
    transaction.commit().await.context(what)?;
    // Back to the pool before the statistics refresh takes one of its own.
    drop(client);
    if encoded.len() >= planner::ANALYZE_BATCH {
        planner::refresh_statistics(&store.db, encoded.len()).await;
    }
    Ok(true)
}

/// [`save_many_if`] for each of `writes`, in one transaction: a maintenance pass's batch
/// commits (and syncs) once, not once per memory. The rows compared are locked first, in
/// one order (namespace, then id), so two batches never wait on each other in a cycle; each
/// write is then compared with what is stored, or with what an earlier write of the batch
/// wrote, and its items written only when every row it names is as read. A failure rolls
/// back the whole batch.
pub(super) async fn save_each_if(
    store: &PostgresStore,
    writes: Vec<ConditionalSave>,
) -> Result<Vec<bool>> {
    for write in &writes {
        memory_core::backend::validate_expected(&write.items, &write.expected)?;
    }
    let mut encoded = Vec::with_capacity(writes.len());
    for write in writes {
        let items = write
            .items
            .into_iter()
            .map(encode)
            .collect::<Result<Vec<_>>>()?;
        // A time the store cannot hold is no stored item's.
        let expected = memory_core::backend::expected_nanos(&write.expected);
        encoded.push((items, expected));
    }
    if encoded.is_empty() {
        return Ok(Vec::new());
    }
    let mut compared: Vec<(&str, &str)> = encoded
        .iter()
        .flat_map(|(items, expected)| {
            expected
                .iter()
                .flatten()
                .filter_map(|(at, _)| items.get(*at))
                .map(|item| (item.ns.as_str(), item.id.as_str()))
        })
        .collect();
    compared.sort_unstable();
    compared.dedup();
    let count = encoded.len();
    let what = || format!("saving {count} writes of memories");
    let mut client = store.db.client(&what()).await?;
    let transaction = client.transaction().await.context(what)?;
    let lock = transaction
        .prepare_cached(&store.db.qualify(LOCK))
        .await
        .context(what)?;
    // Each compared row's `updated_at` as the batch goes: as stored, then as written.
    // Sent together, run in order on the connection: one round trip, the locks in order.
    let rows = try_join_all(compared.iter().map(|(ns, id)| {
        let lock = &lock;
        let transaction = &transaction;
        async move {
            transaction
                .query_opt(lock, &[ns, id])
                .await
                .context(|| format!("reading memory {id} in {ns}"))
        }
    }))
    .await?;
    let mut stored: HashMap<(String, String), i64> = HashMap::with_capacity(compared.len());
    for ((ns, id), row) in compared.iter().zip(rows) {
        if let Some(row) = row {
            let at: i64 = row
                .try_get(0)
                .context(|| format!("reading memory {id} in {ns}"))?;
            stored.insert(((*ns).to_owned(), (*id).to_owned()), at);
        }
    }
    let mut saved = Vec::with_capacity(encoded.len());
    let mut written = Vec::new();
    for (items, expected) in encoded {
        let unchanged = expected.is_some_and(|expected| {
            expected.iter().all(|(at, read_at)| {
                items.get(*at).is_some_and(|item| {
                    stored.get(&(item.ns.clone(), item.id.clone())) == Some(read_at)
                })
            })
        });
        if unchanged {
            // What a later write of the batch is compared with: these rows as written
            // (those this write creates too).
            for item in &items {
                stored.insert((item.ns.clone(), item.id.clone()), item.updated_at);
            }
            written.extend(items);
        }
        saved.push(unchanged);
    }
    // In order on one connection: a row two writes change ends as the later one wrote it.
    store.upsert_all(&transaction, &written).await?;
    transaction.commit().await.context(what)?;
    drop(client);
    if written.len() >= planner::ANALYZE_BATCH {
        planner::refresh_statistics(&store.db, written.len()).await;
    }
    Ok(saved)
}

pub(super) async fn delete_many_if(
    store: &PostgresStore,
    namespace: &Namespace,
    read: &[(String, DateTime<Utc>)],
) -> Result<Option<usize>> {
    // An id the store cannot hold is no stored item's (gone, so unchanged).
    let read: Vec<(String, Option<i64>)> = read
        .iter()
        .filter(|(id, _)| storable(id))
        .map(|(id, at)| (id.clone(), at.timestamp_nanos_opt()))
        .collect();
    if read.is_empty() {
        return Ok(Some(0));
    }
    let ids: Vec<String> = read.iter().map(|(id, _)| id.clone()).collect();
    let ns = namespace.as_str().to_owned();
    let what = || format!("deleting memories in {namespace}");
    let mut client = store.db.client(&what()).await?;
    let transaction = client.transaction().await.context(what)?;
    // The rows compared are locked until the commit: a concurrent write of one waits,
    // and one committed first is seen (read committed reads the latest row it locks).
    let lock = transaction
        .prepare_cached(&store.db.qualify(
            "SELECT id, updated_at FROM {s}.memories \
             WHERE ns = $1::text AND id = ANY($2::text[]) FOR UPDATE",
        ))
        .await
        .context(what)?;
    let rows = transaction.query(&lock, &[&ns, &ids]).await.context(what)?;
    let expected: HashMap<&str, Option<i64>> =
        read.iter().map(|(id, at)| (id.as_str(), *at)).collect();
    for row in &rows {
        let id: String = row.try_get(0).context(what)?;
        let updated_at: i64 = row.try_get(1).context(what)?;
        if expected.get(id.as_str()) != Some(&Some(updated_at)) {
            // Dropped: rolled back, nothing deleted.
            return Ok(None);
        }
    }
    let delete = transaction
        .prepare_cached(
            &store
                .db
                .qualify("DELETE FROM {s}.memories WHERE ns = $1::text AND id = ANY($2::text[])"),
        )
        .await
        .context(what)?;
    let deleted = transaction
        .execute(&delete, &[&ns, &ids])
        .await
        .context(what)?;
    transaction.commit().await.context(what)?;
    Ok(Some(usize::try_from(deleted).unwrap_or(usize::MAX)))
}
