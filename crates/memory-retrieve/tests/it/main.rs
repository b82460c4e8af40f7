//! Integration tests of retrieval, eviction, decay and the Memory API.

mod api;
mod eviction;
mod retrieval;
mod stress;
