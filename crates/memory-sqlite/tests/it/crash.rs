//! crash tests.
