//! fts tests.
