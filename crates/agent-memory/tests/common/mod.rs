//! The backends every facade test runs on: in memory, SQLite, and PostgreSQL when
//! `AGENT_MEMORY_TEST_POSTGRES_URL` names a server (each test in a schema of its own,
//! dropped by [`Backend::cleanup`]).

use std::sync::Arc;

use agent_memory::prelude::*;
use agent_memory::retrieve::Memory;
use agent_memory::{EvictionConfig, EvictionPolicy};

/// A backend's three stores, plus what removes the test's data at the end.
pub(crate) struct Backend {
    pub(crate) name: &'static str,
    pub(crate) store: Arc<dyn MemoryStore>,
    pub(crate) knowledge: Arc<dyn KnowledgeStore>,
    pub(crate) graph: Arc<dyn KnowledgeGraph>,
    #[cfg(feature = "postgres")]
    schema: Option<(String, String)>,
}

impl Backend {
    fn inmem() -> Self {
        Self {
            name: "inmem",
            store: Arc::new(agent_memory::inmem::InMemoryStore::new()),
            knowledge: Arc::new(agent_memory::inmem::InMemoryKnowledgeStore::new()),
            graph: Arc::new(agent_memory::graph::PetGraph::new()),
            #[cfg(feature = "postgres")]
            schema: None,
        }
    }

    fn sqlite() -> Self {
        let sqlite = agent_memory::sqlite::SqliteBackend::open_in_memory().expect("sqlite");
        Self {
            name: "sqlite",
            store: Arc::new(sqlite.memory_store().clone()),
            knowledge: Arc::new(sqlite.knowledge_store().clone()),
            graph: Arc::new(sqlite.graph().clone()),
            #[cfg(feature = "postgres")]
            schema: None,
        }
    }

    /// A PostgreSQL backend in a schema of its own, when the test server is configured.
    #[cfg(feature = "postgres")]
    async fn postgres(label: &str) -> Option<Self> {
        let url = std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())?;
        let schema = format!("am_test_{label}_{}", agent_memory::new_id());
        let options = agent_memory::postgres::PostgresOptions::default()
            .with_schema(schema.clone())
            .with_max_connections(4);
        let backend = agent_memory::postgres::PostgresBackend::connect(&url, options)
            .await
            .expect("connecting to the test server");
        Some(Self {
            name: "postgres",
            store: Arc::new(backend.memory_store().clone()),
            knowledge: Arc::new(backend.knowledge_store().clone()),
            graph: Arc::new(backend.graph().clone()),
            schema: Some((url, schema)),
        })
    }

    /// Drops the PostgreSQL schema, if there is one.
    pub(crate) async fn cleanup(self) {
        #[cfg(feature = "postgres")]
        if let Some((url, schema)) = self.schema {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("raw connection");
            tokio::spawn(connection);
            client
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .expect("dropping the test schema");
        }
    }

    /// A `Memory` over this backend with `policy`.
    #[allow(dead_code, reason = "not every test binary uses it")]
    pub(crate) fn memory(&self, policy: EvictionPolicy, check_interval: usize) -> Memory {
        Memory::builder()
            .store(Arc::clone(&self.store))
            .knowledge(Arc::clone(&self.knowledge))
            .graph(Arc::clone(&self.graph))
            .eviction(EvictionConfig {
                policy,
                check_interval,
            })
            .build()
            .expect("valid settings")
    }
}

/// Every backend available here; `label` names the test in PostgreSQL schema names.
pub(crate) async fn backends(label: &str) -> Vec<Backend> {
    #[cfg(not(feature = "postgres"))]
    let _ = label;
    #[allow(unused_mut, reason = "PostgreSQL joins only with its feature")]
    let mut backends = vec![Backend::inmem(), Backend::sqlite()];
    #[cfg(feature = "postgres")]
    if let Some(postgres) = Backend::postgres(label).await {
        backends.push(postgres);
    }
    backends
}
