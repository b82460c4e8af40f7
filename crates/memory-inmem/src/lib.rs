//! In-memory backends of agent-memory: the default every user starts on and the reference
//! other backends are measured against.
//!
//! - [`InMemoryStore`]: memory items, sharded by namespace, with a time index and BM25 search.
//! - [`InMemoryKnowledgeStore`]: knowledge pages with a table of contents, back-references
//!   and BM25F search over title, summary, tags and content.
//!
//! ```
//! use std::sync::Arc;
//! use memory_core::{KnowledgePage, KnowledgeStore, Namespace, PageQuery};
//! use memory_inmem::InMemoryKnowledgeStore;
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let pages = InMemoryKnowledgeStore::new();
//! let ns = Namespace::parse("wiki")?;
//! pages.add_page(KnowledgePage::new(ns.clone(), "sg", "StateGraph 状态管理")?).await?;
//! let hits = pages.search(&PageQuery::new(ns.exact(), "LangGraph 的 StateGraph 状态管理原理？", 5)).await?;
//! assert_eq!(hits[0].page.id, "sg");
//! # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
//! ```

mod bm25;
mod knowledge;
mod registry;
mod store;
mod vectors;

pub use crate::{knowledge::InMemoryKnowledgeStore, store::InMemoryStore};
