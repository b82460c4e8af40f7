//! multi_process tests.
