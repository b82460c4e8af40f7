//! Integration tests of the in-memory backends: the conformance suite, properties,
//! concurrency and conversation memory.

mod churn;
mod conformance;
mod properties;
