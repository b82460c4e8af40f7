//! Fuzz SQLite full-text search with arbitrary user text: it is never FTS5 syntax, so a
//! search never errors and never panics, for memories and for pages.
#![no_main]

use std::sync::OnceLock;

use agent_memory::sqlite::SqliteBackend;
use agent_memory::{
    KnowledgePage, KnowledgeStore, MemoryItem, MemoryStore, Namespace, PageQuery, SearchQuery,
};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    runtime: tokio::runtime::Runtime,
    backend: SqliteBackend,
    ns: Namespace,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let backend = SqliteBackend::open_in_memory().expect("sqlite");
        let ns = Namespace::parse("fuzz").expect("namespace");
        runtime.block_on(async {
            for (i, text) in [
                "AND OR NOT NEAR",
                "title:x* \"quoted\"",
                "状态管理 StateGraph",
                "plain words here",
            ]
            .iter()
            .enumerate()
            {
                let item = MemoryItem::new(ns.clone(), *text)
                    .and_then(|i2| i2.with_id(format!("m{i}")))
                    .expect("item");
                backend.memory_store().save(item).await.expect("save");
                let page = KnowledgePage::new(ns.clone(), format!("p{i}"), *text).expect("page");
                backend
                    .knowledge_store()
                    .add_page(page)
                    .await
                    .expect("page");
            }
        });
        Fixture {
            runtime,
            backend,
            ns,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let f = fixture();
    f.runtime.block_on(async {
        let hits = f
            .backend
            .memory_store()
            .search(&SearchQuery::new(f.ns.exact(), text.as_ref(), 10))
            .await;
        assert!(hits.is_ok(), "memory search of {text:?} failed: {hits:?}");
        let pages = f
            .backend
            .knowledge_store()
            .search(&PageQuery::new(f.ns.exact(), text.as_ref(), 10))
            .await;
        assert!(pages.is_ok(), "page search of {text:?} failed: {pages:?}");
    });
});
