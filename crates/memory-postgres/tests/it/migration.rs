//! migration tests.
