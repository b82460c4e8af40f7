//! Shared helpers of the benchmarks and the evaluation: deterministic corpora.
