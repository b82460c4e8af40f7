//! `cargo xtask bench` and `cargo xtask eval`.
//!
//! `bench` runs the criterion benchmarks of `memory-benches` (their output streams as they
//! run), then reads what criterion wrote (`<criterion home>/**/new/benchmark.json` and
//! `estimates.json`) and prints one summary table: each case's median time per iteration,
//! its throughput when the benchmark declares one, and the ratio of our time to each peer's
//! measured in the same group of the same run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::ci::{root, run};

const BENCH_USAGE: &str = "\
usage: cargo xtask bench [--quick] [--bench NAME]... [--summary] [FILTER] [-- CRITERION ARGS]

  --quick         0.5 s warm-up, 1 s measurement, 10 samples, no plots, the 10k-memory
                  ingest group at 1k and 200 per ingest into 100k, two SQLite ingest
                  variants left out (under 5 minutes on 2 cores once built)
  --bench NAME    run only this bench target (scoring, recall, ingest, knowledge, eviction, similar,
                  graph, enrich, listing); may be repeated; default all
  --summary       do not run; print the table of every result criterion has stored
  FILTER          a criterion filter (regex on `group/function`), e.g. search_100000
  -- ARGS         passed to criterion as they are

Results and HTML reports stay in $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else
target/criterion. Set AGENT_MEMORY_BENCH_1M=1 to add the 1M-memory search group.";

/// Criterion flags of `--quick`. Plots are most of a quick run's time (seconds per case), so
/// it makes none; the numbers and the summary table are the same.
const QUICK: [&str; 7] = [
    "--warm-up-time",
    "0.5",
    "--measurement-time",
    "1",
    "--sample-size",
    "10",
    "--noplot",
];

/// Set for the bench targets in `--quick` mode: they shrink their slowest setups.
pub(crate) const QUICK_ENV: &str = "AGENT_MEMORY_BENCH_QUICK";

/// A column of peer ratios: which of our functions it applies to (`None`: every
/// `agent_memory*` function) and the function each is compared with in the same group, the
/// first of `peers` that was measured.
struct PeerColumn {
    title: &'static str,
    ours: Option<&'static str>,
    peers: &'static [&'static str],
}

/// The peers, and our SQLite backend against the in-memory backend doing the same job
/// (recall in a search group, remember in an ingest group).
const PEER_COLUMNS: [PeerColumn; 4] = [
    PeerColumn {
        title: "vs tantivy",
        ours: None,
        peers: &["tantivy"],
    },
    PeerColumn {
        title: "vs sqlite_fts5",
        ours: None,
        peers: &["sqlite_fts5"],
    },
    // FTS5 writing a file with our SQLite backend's durability (ingest only).
    PeerColumn {
        title: "vs sqlite_fts5_file",
        ours: None,
        peers: &["sqlite_fts5_file"],
    },
    PeerColumn {
        title: "sqlite vs in-memory",
        ours: Some("agent_memory_sqlite"),
        peers: &["agent_memory_recall", "agent_memory_remember"],
    },
];

/// What `cargo xtask bench` was asked to do.
#[derive(Debug, Default)]
struct BenchOptions {
    quick: bool,
    summary_only: bool,
    benches: Vec<String>,
    criterion: Vec<String>,
}

fn parse_bench_args(args: &[String]) -> Result<Option<BenchOptions>, String> {
    let mut options = BenchOptions::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--help" | "-h" => {
                println!("{BENCH_USAGE}");
                return Ok(None);
            }
            "--quick" => options.quick = true,
            "--summary" => options.summary_only = true,
            "--bench" => {
                let name = args
                    .next()
                    .ok_or("--bench needs a name, e.g. --bench recall")?;
                options.benches.push(name.clone());
            }
            "--" => {
                options.criterion.extend(args.by_ref().cloned());
            }
            other => match other.strip_prefix("--bench=") {
                Some(name) => options.benches.push(name.to_owned()),
                None => options.criterion.push(other.to_owned()),
            },
        }
    }
    Ok(Some(options))
}

/// Where criterion keeps its results: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else `target/criterion`, relative paths taken from the workspace root (where cargo runs).
/// The benchmarks are given this path as `CRITERION_HOME`, because they run in their own
/// package folder and would resolve a relative target dir from there.
fn criterion_home() -> PathBuf {
    let from_root = |path: PathBuf| {
        if path.is_absolute() {
            path
        } else {
            root().join(path)
        }
    };
    if let Some(home) = std::env::var_os("CRITERION_HOME").filter(|home| !home.is_empty()) {
        return from_root(PathBuf::from(home));
    }
    match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => from_root(PathBuf::from(dir)).join("criterion"),
        None => root().join("target").join("criterion"),
    }
}

pub(crate) fn bench(args: &[String]) -> Result<(), String> {
    let Some(options) = parse_bench_args(args)? else {
        return Ok(());
    };
    let home = criterion_home();
    if options.summary_only {
        print_summary(&home, None);
        return Ok(());
    }
    let home_str = home
        .to_str()
        .ok_or_else(|| format!("the criterion folder {} is not UTF-8", home.display()))?
        .to_owned();
    // `--bench` selects bench targets only: the library and binaries would reject criterion's
    // flags in their libtest harness.
    // `--no-fail-fast`: a failing bench target does not cost the results of the others.
    let mut cargo_args: Vec<&str> = vec!["bench", "-p", "memory-benches", "--no-fail-fast"];
    if options.benches.is_empty() {
        cargo_args.extend(["--bench", "*"]);
    }
    for name in &options.benches {
        cargo_args.extend(["--bench", name.as_str()]);
    }
    let mut criterion_args: Vec<&str> = Vec::new();
    if options.quick {
        criterion_args.extend(QUICK);
    }
    criterion_args.extend(options.criterion.iter().map(String::as_str));
    if !criterion_args.is_empty() {
        cargo_args.push("--");
        cargo_args.extend(criterion_args);
    }
    let started = SystemTime::now();
    let mut envs = vec![("CRITERION_HOME", home_str.as_str())];
    if options.quick {
        envs.push((QUICK_ENV, "1"));
    }
    let outcome = run("cargo", &cargo_args, &envs);
    print_summary(&home, Some(started));
    outcome
}

/// One measured case, from criterion's `benchmark.json` and `estimates.json`.
#[derive(Debug, Clone)]
struct Case {
    group: String,
    function: String,
    /// Median time of one iteration, in nanoseconds.
    median_ns: f64,
    /// Elements (or bytes) one iteration processes, when the benchmark declares it.
    throughput: Option<Throughput>,
    measured_at: SystemTime,
}

#[derive(Debug, Clone, Copy)]
enum Throughput {
    Elements(f64),
    Bytes(f64),
}

impl Case {
    fn name(&self) -> String {
        if self.function.is_empty() {
            self.group.clone()
        } else {
            format!("{}/{}", self.group, self.function)
        }
    }

    /// Time per element when the benchmark declares elements, else per iteration: ratios
    /// stay right when two cases of a group process different amounts.
    fn unit_time(&self) -> f64 {
        match self.throughput {
            Some(Throughput::Elements(n)) if n > 0.0 => self.median_ns / n,
            _ => self.median_ns,
        }
    }
}

/// Every `new` folder under `home` that holds a `benchmark.json`.
fn result_folders(home: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(home) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|name| name == "new") {
            if path.join("benchmark.json").is_file() {
                out.push(path);
            }
        } else if path.file_name().is_none_or(|name| name != "report") {
            result_folders(&path, out);
        }
    }
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("cannot parse {}: {error}", path.display()))
}

fn read_case(folder: &Path) -> Result<Case, String> {
    let benchmark = read_json(&folder.join("benchmark.json"))?;
    let estimates_path = folder.join("estimates.json");
    let estimates = read_json(&estimates_path)?;
    let text = |key: &str| {
        benchmark
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut function = text("function_id");
    let value = text("value_str");
    if !value.is_empty() {
        function = if function.is_empty() {
            value
        } else {
            format!("{function}/{value}")
        };
    }
    let median_ns = estimates
        .pointer("/median/point_estimate")
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| format!("{} has no median estimate", estimates_path.display()))?;
    let throughput = benchmark.get("throughput").and_then(|throughput| {
        let amount = |key: &str| throughput.get(key).and_then(serde_json::Value::as_f64);
        amount("Elements")
            .map(Throughput::Elements)
            .or_else(|| amount("Bytes").map(Throughput::Bytes))
            .or_else(|| amount("BytesDecimal").map(Throughput::Bytes))
    });
    let measured_at = std::fs::metadata(&estimates_path)
        .and_then(|metadata| metadata.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Ok(Case {
        group: text("group_id"),
        function,
        median_ns,
        throughput,
        measured_at,
    })
}

/// The cases stored under `home`, measured at or after `since` when given, in the order
/// they ran (groups by their first case, cases within a group by time).
fn collect_cases(home: &Path, since: Option<SystemTime>) -> (Vec<Case>, Vec<String>) {
    let mut folders = Vec::new();
    result_folders(home, &mut folders);
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for folder in folders {
        match read_case(&folder) {
            Ok(case) if since.is_none_or(|since| case.measured_at >= since) => cases.push(case),
            Ok(_) => {}
            Err(problem) => problems.push(problem),
        }
    }
    let mut first_seen: BTreeMap<String, SystemTime> = BTreeMap::new();
    for case in &cases {
        first_seen
            .entry(case.group.clone())
            .and_modify(|at| *at = (*at).min(case.measured_at))
            .or_insert(case.measured_at);
    }
    cases.sort_by(|a, b| {
        let group_at = |case: &Case| first_seen.get(&case.group).copied();
        group_at(a)
            .cmp(&group_at(b))
            .then_with(|| a.group.cmp(&b.group))
            .then_with(|| a.measured_at.cmp(&b.measured_at))
            .then_with(|| a.function.cmp(&b.function))
    });
    (cases, problems)
}

fn format_time(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.1} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn format_rate(per_second: f64, unit: &str) -> String {
    if per_second >= 1e9 {
        format!("{:.2} G{unit}/s", per_second / 1e9)
    } else if per_second >= 1e6 {
        format!("{:.2} M{unit}/s", per_second / 1e6)
    } else if per_second >= 1e3 {
        format!("{:.2} K{unit}/s", per_second / 1e3)
    } else {
        format!("{per_second:.1} {unit}/s")
    }
}

fn format_throughput(case: &Case) -> String {
    let seconds = case.median_ns / 1e9;
    if seconds <= 0.0 {
        return String::new();
    }
    match case.throughput {
        Some(Throughput::Elements(n)) => format_rate(n / seconds, "elem"),
        Some(Throughput::Bytes(n)) => format_rate(n / seconds, "B"),
        None => String::new(),
    }
}

/// Our cases are the `agent_memory*` functions; each gets the ratio of its time to the
/// peer's of `column` measured in the same group.
fn ratio(case: &Case, cases: &[Case], column: &PeerColumn) -> Option<f64> {
    let ours = match column.ours {
        Some(ours) => case.function == ours,
        None => case.function.starts_with("agent_memory"),
    };
    if !ours {
        return None;
    }
    let peer = column.peers.iter().find_map(|peer| {
        cases
            .iter()
            .find(|other| other.group == case.group && other.function == *peer)
    })?;
    let peer_time = peer.unit_time();
    (peer_time > 0.0).then(|| case.unit_time() / peer_time)
}

fn render_table(cases: &[Case]) -> String {
    let mut header = vec![
        "case".to_owned(),
        "median".to_owned(),
        "throughput".to_owned(),
    ];
    header.extend(PEER_COLUMNS.iter().map(|column| column.title.to_owned()));
    let mut rows = vec![header];
    for case in cases {
        let mut row = vec![
            case.name(),
            format_time(case.median_ns),
            format_throughput(case),
        ];
        row.extend(PEER_COLUMNS.iter().map(|column| {
            ratio(case, cases, column).map_or_else(String::new, |ratio| format!("{ratio:.2}"))
        }));
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (at, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            let pad = widths[column].saturating_sub(cell.chars().count());
            if column == 0 {
                let _ = write!(line, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{cell}", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if at == 0 {
            let total = widths.iter().sum::<usize>() + 2 * (columns - 1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// Prints the table of the cases measured since `since` (all stored cases when `None`).
/// Missing or unreadable results are reported, never fatal.
fn print_summary(home: &Path, since: Option<SystemTime>) {
    println!("\n==> summary ({})", home.display());
    if !home.is_dir() {
        println!("no criterion results at {}", home.display());
        return;
    }
    let (cases, problems) = collect_cases(home, since);
    for problem in &problems {
        println!("skipped a result: {problem}");
    }
    if cases.is_empty() {
        match since {
            Some(_) => println!("no benchmark results from this run"),
            None => println!("no benchmark results stored"),
        }
        return;
    }
    print!("{}", render_table(&cases));
    println!(
        "median: time of one iteration (search: one query; ingest: the whole batch).\n\
         vs <peer>: our time / the peer's time in the same group and run, per element; \
         under 1.00 we are faster.\n\
         sqlite vs in-memory: our SQLite backend / our in-memory backend, same job.\n\
         HTML reports: {}",
        home.join("report").join("index.html").display()
    );
}

/// `cargo xtask eval [ARGS]`: the `eval` binary of `memory-benches`, built in release mode,
/// with `ARGS` as they are (`--facts` for the changing-facts benchmark, `--no-facts` to
/// ingest without reconciliation; `--help` lists them all).
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
