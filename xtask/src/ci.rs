//! `cargo xtask ci`, `features` and `tidy`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The workspace root (the parent of this crate's folder).
pub(crate) fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Runs a command in the workspace root, streaming its output; errors when it fails.
pub(crate) fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("\n==> {program} {}", args.join(" "));
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|error| format!("could not start {program}: {error}"))?;
    eprintln!("<== {:.1}s", started.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|output| output.status.success())
}

pub(crate) fn ci() -> Result<(), String> {
    let started = Instant::now();
    run("cargo", &["fmt", "--all", "--", "--check"], &[])?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    if has_nextest() {
        run(
            "cargo",
            &[
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
            ],
            &[],
        )?;
    } else {
        run(
            "cargo",
            &[
                "test",
                "--workspace",
                "--all-features",
                "--lib",
                "--bins",
                "--tests",
            ],
            &[],
        )?;
    }
    run(
        "cargo",
        &["test", "--workspace", "--all-features", "--doc"],
        &[],
    )?;
    run(
        "cargo",
        &["doc", "--workspace", "--all-features", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // The private items' docs too: their links break silently when an item is renamed.
    // (The run above also checks that public docs link to no private item.)
    run(
        "cargo",
        &[
            "doc",
            "--workspace",
            "--all-features",
            "--no-deps",
            "--document-private-items",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    examples()?;
    features()?;
    run(
        "cargo",
        &["check", "-p", "memory-benches", "--benches"],
        &[],
    )?;
    tidy()?;
    eprintln!(
        "\nci: all checks passed in {:.0}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every feature combination of the facade compiles: the powerset of its capabilities, then
/// the features that only add to another one (`embeddings`, `postgres-tls`, the model
/// clients `llm`, `embeddings-http` and `rerank-http`) and `full`, each alone.
pub(crate) fn features() -> Result<(), String> {
    let features = ["inmem", "graph", "retrieve", "sqlite", "postgres"];
    for mask in 0u32..(1 << features.len()) {
        let chosen: Vec<&str> = features
            .iter()
            .enumerate()
            .filter(|(bit, _)| mask & (1 << bit) != 0)
            .map(|(_, feature)| *feature)
            .collect();
        let list = chosen.join(",");
        let mut args = vec![
            "check",
            "-p",
            "agent-memory",
            "--lib",
            "--no-default-features",
            "--quiet",
        ];
        if !chosen.is_empty() {
            args.extend(["--features", list.as_str()]);
        }
        run("cargo", &args, &[])?;
    }
    // The features that only add to another one, each on its own (with what it needs): in the
    // powerset they would multiply its length for no new combination of crates.
    for extra in [
        "embeddings",
        "postgres-tls",
        "llm",
        "embeddings-http",
        "rerank-http",
        "full",
    ] {
        run(
            "cargo",
            &[
                "check",
                "-p",
                "agent-memory",
                "--lib",
                "--no-default-features",
                "--features",
                extra,
                "--quiet",
            ],
            &[],
        )?;
    }
    Ok(())
}

/// Runs every example of the workspace (the test build above compiled them): each must exit
/// successfully. The quickstart runs in memory, then twice on SQLite in an empty folder,
/// as a new user runs it (the second run reads what the first kept).
pub(crate) fn examples() -> Result<(), String> {
    eprintln!("\n==> the examples");
    let started = Instant::now();
    let output = Command::new("cargo")
        .args([
            "test",
            "--workspace",
            "--all-features",
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(root())
        .output()
        .map_err(|error| format!("could not start cargo: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the examples failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut examples: Vec<(String, PathBuf)> = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let target = &message["target"];
        let is_example = target["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|kind| kind == "example"));
        if let (true, Some(name), Some(executable)) = (
            is_example,
            target["name"].as_str(),
            message["executable"].as_str(),
        ) {
            examples.push((name.to_owned(), PathBuf::from(executable)));
        }
    }
    examples.sort();
    examples.dedup_by(|a, b| a.0 == b.0);
    if examples.is_empty() {
        return Err("no example was built".to_owned());
    }
    let folder = root().join("target").join("xtask-examples");
    // A folder of its own, emptied first: the quickstart's SQLite file starts new.
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder)
        .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
    for (name, executable) in &examples {
        let runs: &[&[&str]] = if name == "quickstart" {
            &[&["--in-memory"], &[], &[]]
        } else {
            &[&[]]
        };
        for args in runs {
            let output = Command::new(executable)
                .args(*args)
                .current_dir(&folder)
                .output()
                .map_err(|error| format!("could not start example {name}: {error}"))?;
            if !output.status.success() {
                return Err(format!(
                    "example {name} {} failed ({}):\n{}{}",
                    args.join(" "),
                    output.status,
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            eprintln!("example {name} {}: ok", args.join(" "));
        }
    }
    eprintln!("<== {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Architecture rules that a compiler does not check.
pub(crate) fn tidy() -> Result<(), String> {
    eprintln!("\n==> tidy");
    let output = Command::new("cargo")
        .args([
            "tree",
            "-p",
            "memory-core",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(root())
        .output()
        .map_err(|error| format!("could not run cargo tree: {error}"))?;
    if !output.status.success() {
        return Err("cargo tree failed".into());
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let mut problems = Vec::new();
    for forbidden in [
        "tokio ",
        "dashmap ",
        "petgraph ",
        "rusqlite ",
        "tokio-postgres ",
    ] {
        if tree.lines().any(|line| line.starts_with(forbidden)) {
            problems.push(format!("memory-core depends on {}", forbidden.trim()));
        }
    }
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "benches"] {
        collect_rust_files(&root().join(dir), &mut files);
    }
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let first = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("");
        if !(first.starts_with("//!") || first.starts_with("#![doc")) {
            problems.push(format!("{} does not start with a //! line", file.display()));
        }
    }
    problems.extend(layering_problems(&files));
    problems.extend(manifest_problems());
    if problems.is_empty() {
        eprintln!(
            "tidy: {} files checked, memory-core stays light",
            files.len()
        );
        Ok(())
    } else {
        Err(format!("tidy found problems:\n  {}", problems.join("\n  ")))
    }
}

fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "target") {
                continue;
            }
            collect_rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// memory-retrieve uses the in-memory backends only for the builder's defaults; the BM25
/// constants and field weights are defined in memory-core alone; no test hides behind
/// `#[ignore]` or `#[should_panic]`.
fn layering_problems(files: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    let retrieve = root().join("crates/memory-retrieve/src");
    let builder = retrieve.join("memory/builder.rs");
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if file.starts_with(&retrieve)
            && *file != builder
            && (text.contains("memory_inmem::") || text.contains("memory_graph::"))
        {
            problems.push(format!(
                "{} uses a backend crate; only memory/builder.rs may (for the defaults)",
                file.display()
            ));
        }
        // The ranking's constants have one home, memory_core::search.
        if !file.starts_with(root().join("crates/memory-core")) {
            for line in text.lines() {
                let line = line.trim_start();
                let defines = line.starts_with("const ")
                    || line.starts_with("pub const ")
                    || line.starts_with("pub(crate) const ");
                if defines
                    && ["K1:", " B:", "_WEIGHTS:", "BM25_"]
                        .iter()
                        .any(|name| line.contains(name))
                {
                    problems.push(format!(
                        "{} defines a ranking constant ({}); use memory_core::search",
                        file.display(),
                        line.trim()
                    ));
                }
            }
        }
        let is_xtask = file.starts_with(root().join("xtask"));
        for attribute in ["#[ignore", "#[should_panic"] {
            if !is_xtask && text.contains(attribute) {
                problems.push(format!("{} uses {attribute}]", file.display()));
            }
        }
    }
    problems
}

/// Every member crate takes the workspace's lints.
fn manifest_problems() -> Vec<String> {
    let mut problems = Vec::new();
    let mut manifests = vec![
        root().join("xtask/Cargo.toml"),
        root().join("benches/Cargo.toml"),
    ];
    if let Ok(entries) = std::fs::read_dir(root().join("crates")) {
        manifests.extend(
            entries
                .flatten()
                .map(|entry| entry.path().join("Cargo.toml")),
        );
    }
    for manifest in manifests {
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        if !text.contains("[lints]\nworkspace = true") {
            problems.push(format!(
                "{} does not take the workspace lints ([lints] workspace = true)",
                manifest.display()
            ));
        }
    }
    problems
}
