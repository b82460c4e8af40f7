//! Shared helpers of the benchmarks and the retrieval evaluation: a seeded PRNG, a
//! Zipf-distributed corpus generator, the LoCoMo-format loader and evaluation runner, and a
//! small synthetic conversation set that runs in the test suite without external data.

pub mod corpus;
pub mod eval;
pub mod synthetic;
