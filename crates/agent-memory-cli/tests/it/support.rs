//! Temporary directories and running the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "agent-memory-cli-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create the temporary directory");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary, with no configuration from the environment it runs in.
pub(crate) fn command(dir: &TempDir) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-memory"));
    for (key, _) in std::env::vars() {
        if key.starts_with("AGENT_MEMORY_") {
            command.env_remove(key);
        }
    }
    command
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .current_dir(dir.path())
        .stdin(Stdio::null());
    command
}

/// Runs the binary on the store `store.db` of `dir` with `args`.
pub(crate) fn run(dir: &TempDir, args: &[&str]) -> Output {
    command(dir)
        .arg("--store")
        .arg(dir.path().join("store.db"))
        .args(args)
        .output()
        .expect("run agent-memory")
}

/// Runs with `--json` and parses stdout, which must be one JSON document.
pub(crate) fn run_json(dir: &TempDir, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = run(dir, &all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "{args:?}: stdout is not one JSON document ({error}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), value)
}
