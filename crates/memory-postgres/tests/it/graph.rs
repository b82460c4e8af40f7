//! graph tests.
