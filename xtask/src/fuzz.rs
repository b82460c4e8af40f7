//! `cargo xtask fuzz` and `cargo xtask soak`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::ci::{root, run};

const TARGETS: [&str; 6] = [
    "analyzer",
    "sqlite_search",
    "postgres_search",
    "jsonl_import",
    "time_window",
    "recall",
];

/// `cargo xtask fuzz [--time SECONDS] [TARGET...]`: runs each cargo-fuzz target (nightly
/// toolchain) for the given time (default 60 s), then prints executions per target. Crashing
/// inputs land in `fuzz/artifacts/<target>/`; commit them as regression tests.
pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let mut seconds = 60u64;
    let mut targets: Vec<String> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--time" {
            let value = args.next().ok_or("--time needs a number of seconds")?;
            seconds = value.parse().map_err(|e| format!("--time {value}: {e}"))?;
        } else if TARGETS.contains(&arg.as_str()) {
            targets.push(arg.clone());
        } else {
            return Err(format!(
                "unknown fuzz argument {arg}; targets: {}",
                TARGETS.join(", ")
            ));
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    let has_fuzz = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !has_fuzz {
        return Err("cargo-fuzz is not installed: `cargo install cargo-fuzz` (it runs on the nightly toolchain)".into());
    }
    let fuzz_dir = root().join("fuzz");
    let mut summary = Vec::new();
    for target in &targets {
        eprintln!("\n==> fuzz {target} for {seconds}s");
        let time = format!("-max_total_time={seconds}");
        let mut child = Command::new("cargo")
            .args([
                "+nightly",
                "fuzz",
                "run",
                "-O",
                target,
                "--",
                &time,
                "-print_final_stats=1",
            ])
            .current_dir(&fuzz_dir)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start cargo fuzz: {e}"))?;
        let mut runs = String::from("?");
        if let Some(stderr) = child.stderr.take() {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{line}");
                if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
                    runs = rest.trim().to_owned();
                }
            }
        }
        let status = child.wait().map_err(|e| format!("cargo fuzz: {e}"))?;
        summary.push(format!(
            "| {target} | {runs} | {seconds} s | {} |",
            if status.success() {
                "no crash"
            } else {
                "CRASH (see fuzz/artifacts)"
            }
        ));
        if !status.success() {
            eprintln!("fuzz: {target} found a crash");
        }
    }
    println!("\n| target | executions | time | result |\n|---|---:|---:|---|");
    for line in &summary {
        println!("{line}");
    }
    if summary.iter().any(|line| line.contains("CRASH")) {
        return Err("a fuzz target crashed".into());
    }
    Ok(())
}

/// `cargo xtask soak [--count N] [--capacity N]`: writes N memories (default 1,000,000) into a
/// store with a capacity (default 10,000) and prints the resident memory as it goes.
pub(crate) fn soak(args: &[String]) -> Result<(), String> {
    let mut cargo_args = vec![
        "run",
        "--release",
        "-p",
        "memory-benches",
        "--bin",
        "soak",
        "--",
    ];
    cargo_args.extend(args.iter().map(String::as_str));
    run("cargo", &cargo_args, &[])
}
