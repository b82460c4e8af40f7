//! Shared helpers: temporary database files that clean up after themselves.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A database path under the system temp directory, unique to this process and call; the
/// file and its WAL and shared-memory files are removed on drop.
#[derive(Debug)]
pub(crate) struct TempDb {
    path: PathBuf,
}

impl TempDb {
    pub(crate) fn new(label: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "memory-sqlite-test-{}-{n}-{label}.db",
            std::process::id()
        ));
        remove_files(&path);
        Self { path }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        remove_files(&self.path);
    }
}

fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// A deterministic generator (xorshift), for generated corpora.
pub(crate) struct Xorshift(pub(crate) u64);

impl Xorshift {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
