//! Integration tests of memory-sqlite: one binary, one module per area.

mod blocks;
mod common;
mod concurrency;
mod conformance;
mod crash;
mod fts;
mod migration;
mod migration_v3;
mod migration_v4;
mod page_search;
mod properties;
mod similar;
mod transfer;
