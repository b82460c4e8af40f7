//! Fuzz PostgreSQL full-text search with arbitrary user text against the server named by
//! `AGENT_MEMORY_TEST_POSTGRES_URL`: user text reaches SQL only as parameters and analyzed
//! terms, so a search never errors. Does nothing when the variable is unset.
#![no_main]

use std::sync::OnceLock;

use agent_memory::postgres::{PostgresBackend, PostgresOptions};
use agent_memory::{MemoryItem, MemoryStore, Namespace, SearchQuery};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    backend: PostgresBackend,
    ns: Namespace,
}

fn fixture() -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE
        .get_or_init(|| {
            let url = std::env::var("AGENT_MEMORY_TEST_POSTGRES_URL").ok()?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let ns = Namespace::parse("fuzz").ok()?;
            let backend = runtime.block_on(async {
                let options = PostgresOptions::default().with_schema("am_fuzz");
                let backend = PostgresBackend::connect(&url, options).await.ok()?;
                for (i, text) in ["a & b | !c", "title:x* 'quoted'", "状态管理", "plain words"]
                    .iter()
                    .enumerate()
                {
                    let item = MemoryItem::new(ns.clone(), *text)
                        .and_then(|item| item.with_id(format!("m{i}")))
                        .ok()?;
                    backend.memory_store().save(item).await.ok()?;
                }
                Some(backend)
            })?;
            Some(Fixture {
                runtime,
                backend,
                ns,
            })
        })
        .as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Some(f) = fixture() else { return };
    let text = String::from_utf8_lossy(data);
    f.runtime.block_on(async {
        let hits = f
            .backend
            .memory_store()
            .search(&SearchQuery::new(f.ns.exact(), text.as_ref(), 10))
            .await;
        assert!(hits.is_ok(), "search of {text:?} failed: {hits:?}");
    });
});
