//! Integration tests of retrieval, eviction, decay and the Memory API.

mod api;
mod conversation;
#[cfg(feature = "embeddings")]
mod embedding;
mod eviction;
mod retrieval;
mod stress;
