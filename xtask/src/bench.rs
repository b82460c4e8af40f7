//! `cargo xtask bench` and `cargo xtask eval`.

use crate::ci::run;

pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    let mut cargo_args = vec!["bench", "-p", "memory-benches"];
    let mut extra: Vec<&str> = Vec::new();
    for arg in args {
        if arg == "--quick" {
            extra.extend([
                "--warm-up-time",
                "1",
                "--measurement-time",
                "2",
                "--sample-size",
                "10",
            ]);
        } else {
            extra.push(arg);
        }
    }
    if !extra.is_empty() {
        cargo_args.push("--");
        cargo_args.extend(extra);
    }
    run("cargo", &cargo_args, &[])
}

pub(crate) fn eval(args: &[String]) -> Result<(), String> {
    let mut cargo_args = vec![
        "run",
        "--release",
        "-p",
        "memory-benches",
        "--bin",
        "eval",
        "--",
    ];
    cargo_args.extend(args.iter().map(String::as_str));
    run("cargo", &cargo_args, &[])
}
