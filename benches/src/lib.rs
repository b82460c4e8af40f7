//! Shared helpers of the benchmarks and the retrieval evaluation: a seeded PRNG, a
//! Zipf-distributed corpus generator, the LoCoMo-format loader and evaluation runner, a
//! small synthetic conversation set that runs in the test suite without external data, and
//! a generated changing-facts benchmark.

pub mod corpus;
pub mod eval;
pub mod facts;
pub mod synthetic;
