//! transfer tests.
