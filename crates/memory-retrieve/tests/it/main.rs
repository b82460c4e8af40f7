//! Integration tests of retrieval, eviction, decay and the Memory API.

mod api;
mod conversation;
mod dialogue;
mod edits;
#[cfg(feature = "embeddings")]
mod embedding;
mod enrich;
mod eviction;
mod instrumented;
mod maintenance_crash;
mod reconcile;
#[cfg(feature = "embeddings")]
mod reembed;
mod retrieval;
mod stress;
