//! [`StoreLocation`]: where a memory keeps its records, read from one string, the way the
//! `agent-memory` command's `--store` and the Python package's `store` argument read it.

use std::fmt;
use std::path::PathBuf;

/// Which backend a store string names, and where:
///
/// - `:memory:` or `memory:`: the in-memory stores, kept in the process only;
/// - `postgres://…` or `postgresql://…`: a PostgreSQL server (the URL as given);
/// - anything else, optionally prefixed `sqlite:` or `sqlite://`: a SQLite file at that path.
///
/// Reading never fails and touches nothing: whether the file or server can be opened is
/// known only when the backend opens it. Its [`Display`](fmt::Display) is safe to log: a
/// PostgreSQL URL shows its server only, never its user or password.
///
/// ```
/// use agent_memory::StoreLocation;
///
/// assert_eq!(StoreLocation::parse(":memory:"), StoreLocation::InMemory);
/// assert_eq!(
///     StoreLocation::parse("sqlite:./agent.db"),
///     StoreLocation::Sqlite("./agent.db".into())
/// );
/// let server = StoreLocation::parse("postgres://me:secret@db.example:5432/agents");
/// assert_eq!(server.to_string(), "postgres://…@db.example:5432/agents");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreLocation {
    /// The in-memory stores: nothing outlives the process.
    InMemory,
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server, by its connection URL.
    Postgres(String),
}

impl StoreLocation {
    /// Reads a store string (see [`StoreLocation`]).
    pub fn parse(store: &str) -> Self {
        if matches!(store, ":memory:" | "memory:") {
            StoreLocation::InMemory
        } else if store.starts_with("postgres://") || store.starts_with("postgresql://") {
            StoreLocation::Postgres(store.to_owned())
        } else {
            let path = store
                .strip_prefix("sqlite://")
                .or_else(|| store.strip_prefix("sqlite:"))
                .unwrap_or(store);
            StoreLocation::Sqlite(PathBuf::from(path))
        }
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::InMemory => f.write_str(":memory:"),
            StoreLocation::Sqlite(path) => write!(f, "{}", path.display()),
            // The URL may hold a password: show the server only.
            StoreLocation::Postgres(url) => {
                let server = url.rsplit('@').next().unwrap_or(url);
                let server = server.split_once("://").map_or(server, |(_, rest)| rest);
                write!(f, "postgres://…@{server}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StoreLocation;

    #[test]
    fn store_strings_name_their_backend() {
        for (text, expected) in [
            (":memory:", StoreLocation::InMemory),
            ("memory:", StoreLocation::InMemory),
            ("./a.db", StoreLocation::Sqlite("./a.db".into())),
            (
                "sqlite:/tmp/b.db",
                StoreLocation::Sqlite("/tmp/b.db".into()),
            ),
            (
                "sqlite:///tmp/b.db",
                StoreLocation::Sqlite("/tmp/b.db".into()),
            ),
            ("memory.db", StoreLocation::Sqlite("memory.db".into())),
            (
                "postgres://u@h/d",
                StoreLocation::Postgres("postgres://u@h/d".into()),
            ),
            (
                "postgresql://h/d",
                StoreLocation::Postgres("postgresql://h/d".into()),
            ),
        ] {
            assert_eq!(StoreLocation::parse(text), expected, "{text}");
        }
    }

    #[test]
    fn a_server_is_shown_without_its_credentials() {
        let shown = StoreLocation::parse("postgresql://agent:hunter2@db:5432/memory").to_string();
        assert_eq!(shown, "postgres://…@db:5432/memory");
        assert!(!shown.contains("hunter2") && !shown.contains("agent:"));
        assert_eq!(
            StoreLocation::parse("postgres://db/memory").to_string(),
            "postgres://…@db/memory"
        );
        assert_eq!(StoreLocation::parse("sqlite:a.db").to_string(), "a.db");
        assert_eq!(StoreLocation::InMemory.to_string(), ":memory:");
    }
}
