//! Project automation, in Rust so it runs wherever cargo does: `cargo xtask <command>`.
//!
//! - `ci`: everything CI checks, in order (fmt, clippy, tests, doctests, rustdoc, the
//!   examples run, feature combinations, bench compile, tidy).
//! - `examples`: only the examples, each run (built as the tests build them).
//! - `features`: only the facade's feature combinations.
//! - `tidy`: only the tidy checks.
//! - `bench [--quick] [criterion args]`: the benchmarks, then a summary table.
//! - `eval [options]`: retrieval quality on LoCoMo-format conversations and LongMemEval
//!   haystacks, or with `--facts` the generated changing-facts benchmark (see `eval --help`).
//! - `fuzz [--time SECONDS] [TARGET...]`: the cargo-fuzz targets, each for a given time.
//! - `soak [--count N] [--capacity N]`: N writes into a bounded store, printing memory use.

mod bench;
mod ci;
mod fuzz;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprintln!("usage: cargo xtask <ci|examples|features|tidy|bench|eval|fuzz|soak> [args]");
        return ExitCode::FAILURE;
    };
    let rest = &args[1..];
    let result = match command.as_str() {
        "ci" => ci::ci(),
        "examples" => ci::examples(),
        "features" => ci::features(),
        "tidy" => ci::tidy(),
        "bench" => bench::bench(rest),
        "eval" => bench::eval(rest),
        "fuzz" => fuzz::fuzz(rest),
        "soak" => fuzz::soak(rest),
        other => Err(format!(
            "unknown command {other:?}; expected ci, examples, features, tidy, bench, eval, fuzz or soak"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
