//! Shared helpers of the benchmarks and the retrieval evaluation: a seeded PRNG, a
//! Zipf-distributed corpus generator, the LoCoMo-format loader and evaluation runner, a
//! small synthetic conversation set that runs in the test suite without external data, and
//! a generated changing-facts benchmark.

pub mod corpus;
pub mod eval;
pub mod facts;
pub mod stores;
pub mod synthetic;

/// The environment variable `cargo xtask bench --quick` sets for the bench targets.
pub const QUICK_ENV: &str = "AGENT_MEMORY_BENCH_QUICK";

/// Whether this is a quick run (`cargo xtask bench --quick`): the bench targets then shrink
/// their slowest setups and leave out variants that only restate another row at a cost of
/// tens of seconds, so the whole run stays under five minutes on 2 cores.
pub fn quick_run() -> bool {
    std::env::var_os(QUICK_ENV).is_some()
}
