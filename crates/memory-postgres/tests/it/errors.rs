//! errors tests.
