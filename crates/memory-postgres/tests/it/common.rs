//! Shared helpers: the server URL from the environment, and a schema per test that is
//! dropped when the test ends (also when it fails).

use std::io::Write;

use memory_postgres::{PostgresBackend, PostgresOptions};

/// The variable naming the test server, e.g. `postgres://postgres@127.0.0.1:5432/test`.
pub(crate) const URL_ENV: &str = "AGENT_MEMORY_TEST_POSTGRES_URL";

/// The test server's URL; `None` (after saying so on stderr) when the variable is unset.
pub(crate) fn server_url(test: &str) -> Option<String> {
    match std::env::var(URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            // Written to the real stderr, not through the test harness's capture, so the
            // skip shows in every test run.
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {URL_ENV} is not set ({test} did not run)"
            );
            None
        }
    }
}

/// A fresh schema name, unique across processes and runs.
pub(crate) fn unique_schema(label: &str) -> String {
    format!("am_test_{label}_{}", memory_core::new_id())
}

/// A schema of one test, dropped (with everything in it) on drop.
#[derive(Debug)]
pub(crate) struct TestSchema {
    pub(crate) url: String,
    pub(crate) name: String,
}

impl TestSchema {
    /// A new schema name for `test`; `None` when the server is not configured.
    pub(crate) fn new(test: &str) -> Option<Self> {
        let url = server_url(test)?;
        Some(Self {
            url,
            name: unique_schema(test),
        })
    }

    /// Options for this schema with a small pool (tests run in parallel).
    pub(crate) fn options(&self) -> PostgresOptions {
        PostgresOptions::default()
            .with_schema(self.name.clone())
            .with_max_connections(6)
    }

    /// A backend on this schema (migrating it on first use).
    pub(crate) async fn connect(&self) -> PostgresBackend {
        PostgresBackend::connect(&self.url, self.options())
            .await
            .unwrap_or_else(|error| panic!("connecting to the test server: {error}"))
    }

    /// A plain client, for setting up situations the stores cannot create.
    pub(crate) async fn raw_client(&self) -> tokio_postgres::Client {
        raw_client(&self.url).await
    }
}

/// A plain tokio-postgres client whose connection runs on the current runtime.
pub(crate) async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("raw connection to the test server: {error}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let url = self.url.clone();
        let statement = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        // Its own thread and runtime: drop may run inside (or after) the test's runtime.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| error.to_string())?;
            runtime.block_on(async move {
                let client = raw_client(&url).await;
                client
                    .batch_execute(&statement)
                    .await
                    .map_err(|error| error.to_string())
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            let _ = writeln!(
                std::io::stderr(),
                "could not drop test schema {}: {error}",
                self.name
            );
        }
    }
}

/// `let schema = schema_or_skip!("name");` returns from the test when no server is set.
macro_rules! schema_or_skip {
    ($test:expr) => {
        match $crate::common::TestSchema::new($test) {
            Some(schema) => schema,
            None => return,
        }
    };
}
pub(crate) use schema_or_skip;

/// A memory of `ns` with the given id and content.
pub(crate) fn item(
    ns: &memory_core::Namespace,
    id: &str,
    content: &str,
) -> memory_core::MemoryItem {
    memory_core::MemoryItem::new(ns.clone(), content)
        .unwrap()
        .with_id(id)
        .unwrap()
}
