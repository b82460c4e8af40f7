//! Failures map to the right `MemoryError`: refused and lost connections are `Unavailable`,
//! a server that never answers and an exhausted pool are `Timeout`, a deadlock and a
//! serialization failure are `Conflict`; all recoverable, with their cause kept. A closed
//! backend fails for good.

use std::error::Error as _;
use std::time::{Duration, Instant};

use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgeStore, MemoryError, MemoryItem,
    MemoryStore, Namespace,
};
use memory_postgres::{PostgresBackend, PostgresOptions};

use crate::common::{TestSchema, schema_or_skip};

#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    // Nothing listens on port 1 of the loopback address.
    let error = PostgresBackend::connect(
        "postgres://postgres@127.0.0.1:1/test",
        PostgresOptions::default().with_connect_timeout(Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, MemoryError::Unavailable { .. }),
        "{error:?}"
    );
    assert!(error.is_recoverable());
    assert!(error.source().is_some(), "the driver's error is kept");
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_timeout() {
    // A local listener that accepts connections and never speaks.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let started = Instant::now();
    let error = PostgresBackend::connect(
        &format!("postgres://postgres@127.0.0.1:{port}/test"),
        PostgresOptions::default().with_connect_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, MemoryError::Timeout(_)), "{error:?}");
    assert!(error.is_recoverable());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "gave up in time"
    );
    silent.abort();
}

/// Polls until a session whose current statement mentions `marker` waits for a lock. (Its own
/// connection: inside a transaction, pg_stat_activity would show one frozen snapshot.)
async fn wait_until_blocked(schema: &TestSchema, marker: &str) {
    let client = schema.raw_client().await;
    let pattern = format!("%{marker}%");
    for _ in 0..400 {
        let row = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE $1 AND pid <> pg_backend_pid()",
                &[&pattern],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no statement on {marker} ever waited for a lock");
}

fn note(ns: &Namespace, id: &str, content: &str) -> MemoryItem {
    MemoryItem::new(ns.clone(), content)
        .unwrap()
        .with_id(id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_is_a_timeout() {
    let schema = schema_or_skip!("err_pool");
    let backend = PostgresBackend::connect(
        &schema.url,
        schema
            .options()
            .with_max_connections(1)
            .with_acquire_timeout(Duration::from_millis(300)),
    )
    .await
    .unwrap();
    let ns = Namespace::parse("pool").unwrap();
    let store = backend.memory_store().clone();
    store.save(note(&ns, "x", "locked row")).await.unwrap();
    // Hold the row, so a save of it keeps the pool's only connection busy.
    let mut raw = schema.raw_client().await;
    let transaction = raw.transaction().await.unwrap();
    transaction
        .execute(
            &format!(
                "SELECT 1 FROM \"{}\".memories WHERE id = 'x' FOR UPDATE",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();
    let blocked = {
        let store = store.clone();
        let ns = ns.clone();
        tokio::spawn(async move { store.save(note(&ns, "x", "second version")).await })
    };
    wait_until_blocked(&schema, &schema.name).await;
    let error = store.get(&ns, "x").await.unwrap_err();
    assert!(matches!(error, MemoryError::Timeout(_)), "{error:?}");
    assert!(error.is_recoverable());
    transaction.commit().await.unwrap();
    blocked.await.unwrap().unwrap();
    let item = store.get(&ns, "x").await.unwrap().unwrap();
    assert_eq!(
        item.content, "second version",
        "the waiting write went through"
    );
}

/// A relation to a missing entity is `NotFound` on a pool of one connection: the call gives
/// its connection back before it reads which end is missing (it held it and waited for a
/// second one, a `Timeout`, and a full pool of such calls stalled every one of them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_relation_end_is_found_on_a_pool_of_one() {
    let schema = schema_or_skip!("err_pool_one");
    let backend = PostgresBackend::connect(
        &schema.url,
        schema
            .options()
            .with_max_connections(1)
            .with_acquire_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap();
    let ns = Namespace::parse("pool-one").unwrap();
    let graph = backend.graph();
    graph
        .add_entity(GraphEntity::new(ns.clone(), "a", "A", "thing").unwrap())
        .await
        .unwrap();
    let relation = GraphRelation::new(ns.clone(), "a", "missing", "knows", 1.0).unwrap();
    let error = graph.add_relation(relation).await.unwrap_err();
    assert!(matches!(error, MemoryError::NotFound { .. }), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_is_a_recoverable_conflict() {
    let schema = schema_or_skip!("err_deadlock");
    let backend = schema.connect().await;
    let store = backend.memory_store().clone();
    let ns = Namespace::parse("deadlock").unwrap();
    store
        .save_many(vec![note(&ns, "a", "first"), note(&ns, "b", "second")])
        .await
        .unwrap();
    let mut raw = schema.raw_client().await;
    // The deadlock check runs in whichever waiting session reaches its deadlock_timeout
    // first; a long timeout here makes the batch's session (default 1 s) the victim, so the
    // test does not depend on scheduling.
    raw.batch_execute("SET deadlock_timeout = '60s'")
        .await
        .unwrap();
    let transaction = raw.transaction().await.unwrap();
    let update = |id: &str| {
        format!(
            "UPDATE \"{}\".memories SET importance = 0.9 WHERE ns = 'deadlock' AND id = '{id}'",
            schema.name
        )
    };
    transaction.execute(&update("b"), &[]).await.unwrap();
    // save_many writes a, then waits for b; the raw transaction then waits for a.
    let batch = {
        let store = store.clone();
        let ns = ns.clone();
        tokio::spawn(async move {
            store
                .save_many(vec![note(&ns, "a", "a again"), note(&ns, "b", "b again")])
                .await
        })
    };
    wait_until_blocked(&schema, &schema.name).await;
    // PostgreSQL's deadlock check runs in the session that has waited longest (the batch),
    // aborts it, and this statement then gets its lock.
    let raw_result = transaction.execute(&update("a"), &[]).await;
    let error = batch.await.unwrap().unwrap_err();
    assert!(
        raw_result.is_ok(),
        "the other side proceeds: {raw_result:?}"
    );
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error:?}");
    assert!(error.is_recoverable());
    assert!(error.to_string().contains("40P01"), "{error}");
    assert!(error.source().is_some());
    transaction.commit().await.unwrap();
    // Retrying succeeds, and the failed batch left nothing half-written.
    assert_eq!(store.get(&ns, "a").await.unwrap().unwrap().content, "first");
    store
        .save_many(vec![note(&ns, "a", "a again"), note(&ns, "b", "b again")])
        .await
        .unwrap();
    assert_eq!(
        store.get(&ns, "b").await.unwrap().unwrap().content,
        "b again"
    );
}

/// A batch on a server whose transactions are serializable
/// (`default_transaction_isolation`, set here through the URL's `options`), which writes a
/// row another transaction updated and committed after the batch began, fails with a
/// serialization failure (SQLSTATE 40001): a recoverable conflict that leaves nothing
/// half-written, and the batch tried again goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serialization_failure_is_a_recoverable_conflict() {
    let schema = schema_or_skip!("err_serialize");
    // Migrated on the ordinary connection first.
    drop(schema.connect().await);
    let separator = if schema.url.contains('?') { '&' } else { '?' };
    let url = format!(
        "{}{separator}options=-c%20default_transaction_isolation%3Dserializable",
        schema.url
    );
    let backend = PostgresBackend::connect(&url, schema.options())
        .await
        .expect("connecting with serializable transactions");
    let store = backend.memory_store().clone();
    let ns = Namespace::parse("serialize").unwrap();
    store
        .save_many(vec![note(&ns, "a", "first"), note(&ns, "b", "second")])
        .await
        .unwrap();
    let mut raw = schema.raw_client().await;
    let transaction = raw.transaction().await.unwrap();
    transaction
        .execute(
            &format!(
                "UPDATE \"{}\".memories SET importance = 0.9 WHERE ns = 'serialize' AND id = 'b'",
                schema.name
            ),
            &[],
        )
        .await
        .unwrap();
    // The batch's transaction takes its snapshot, writes a, then waits for b's lock.
    let batch = {
        let store = store.clone();
        let ns = ns.clone();
        tokio::spawn(async move {
            store
                .save_many(vec![note(&ns, "a", "a again"), note(&ns, "b", "b again")])
                .await
        })
    };
    wait_until_blocked(&schema, &schema.name).await;
    // Committed after the batch's snapshot: its write of b can no longer be serialized.
    transaction.commit().await.unwrap();
    let error = batch.await.unwrap().unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error:?}");
    assert!(error.is_recoverable());
    assert!(error.to_string().contains("40001"), "{error}");
    assert!(error.source().is_some());
    assert_eq!(
        store.get(&ns, "a").await.unwrap().unwrap().content,
        "first",
        "the failed batch left nothing half-written"
    );
    store
        .save_many(vec![note(&ns, "a", "a again"), note(&ns, "b", "b again")])
        .await
        .expect("tried again, the batch goes through");
    assert_eq!(
        store.get(&ns, "b").await.unwrap().unwrap().content,
        "b again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_is_unavailable_then_replaced() {
    let schema = schema_or_skip!("err_lost");
    let application = format!("am_lost_{}", memory_core::new_id());
    let separator = if schema.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{separator}application_name={application}", schema.url);
    let backend = PostgresBackend::connect(&url, schema.options().with_max_connections(1))
        .await
        .unwrap();
    let store = backend.memory_store();
    let ns = Namespace::parse("lost").unwrap();
    store.save(note(&ns, "m", "before")).await.unwrap();
    let raw = schema.raw_client().await;
    let killed: i64 = raw
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1",
            &[&application],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "the pool's one connection was terminated");
    // pg_terminate_backend only signals; wait until the session is really gone.
    for attempt in 0.. {
        let left: i64 = raw
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&application],
            )
            .await
            .unwrap()
            .get(0);
        if left == 0 {
            break;
        }
        assert!(attempt < 400, "the terminated session never went away");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The pool may notice the closed connection before handing it out; if not, the
    // operation fails as recoverable and the next one gets a fresh connection.
    match store.get(&ns, "m").await {
        Ok(found) => assert!(found.is_some()),
        Err(error) => {
            assert!(
                matches!(error, MemoryError::Unavailable { .. }),
                "{error:?}"
            );
            assert!(error.is_recoverable());
        }
    }
    assert!(store.get(&ns, "m").await.unwrap().is_some(), "recovered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_backend_fails_for_good() {
    let schema: TestSchema = schema_or_skip!("err_closed");
    let backend = schema.connect().await;
    let ns = Namespace::parse("closed").unwrap();
    backend.close();
    let item = note(&ns, "m", "written after close");
    let errors = [
        backend.memory_store().get(&ns, "m").await.unwrap_err(),
        backend.memory_store().save(item).await.unwrap_err(),
        backend
            .knowledge_store()
            .list_pages(&ns.exact())
            .await
            .unwrap_err(),
        backend
            .graph()
            .list_entities(&ns.exact())
            .await
            .unwrap_err(),
    ];
    for error in errors {
        // Retrying cannot succeed: the pool stays closed.
        assert!(
            matches!(error, MemoryError::Storage { .. }) && !error.is_recoverable(),
            "{error:?}"
        );
        assert!(error.to_string().contains("closed"), "{error}");
    }
}
