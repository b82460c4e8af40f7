//! Integration tests of memory-postgres against a real server: one binary, one module per
//! area. Each test works in a schema of its own (dropped at the end), so they run in
//! parallel. Without `AGENT_MEMORY_TEST_POSTGRES_URL` every test that needs the server says
//! so on stderr and returns.

mod common;
mod concurrency;
mod conformance;
mod errors;
mod eviction;
mod facts;
mod fts;
mod graph;
mod migration;
mod multi_process;
mod properties;
mod records;
mod similar;
#[cfg(feature = "tls")]
mod tls;
mod transfer;
