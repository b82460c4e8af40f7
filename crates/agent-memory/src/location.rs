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
#[derive(Clone, PartialEq, Eq)]
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
        } else if let Some((scheme, rest)) = ["postgres://", "postgresql://"]
            .into_iter()
            .find_map(|scheme| strip_prefix_any_case(store, scheme).map(|rest| (scheme, rest)))
        {
            // The driver reads the scheme in lower case only.
            StoreLocation::Postgres(format!("{scheme}{rest}"))
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
            // The URL may hold a password, before the server or in its query string
            // (`?password=`): show the server and the database only, read as the driver
            // reads them (the credentials end at the first `@`, whatever `/` or `?` they
            // hold; the server at the first `/` or `?` after it).
            StoreLocation::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
                let rest = rest.split_once('@').map_or(rest, |(_, server)| server);
                let (server, path) = match rest.find(['/', '?']) {
                    Some(at) => rest.split_at(at),
                    None => (rest, ""),
                };
                let (database, query) = match path.split_once('?') {
                    Some((database, _)) => (database, "?…"),
                    None => (path, ""),
                };
                write!(f, "postgres://…@{server}{database}{query}")
            }
        }
    }
}

/// As [`Display`](fmt::Display): a PostgreSQL URL without its credentials.
impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::InMemory => f.write_str("InMemory"),
            StoreLocation::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            StoreLocation::Postgres(_) => f
                .debug_tuple("Postgres")
                .field(&format_args!("{self}"))
                .finish(),
        }
    }
}

/// `text` after `prefix`, which it starts with in any case (`POSTGRES://` is a URL scheme
/// too).
fn strip_prefix_any_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.get(..prefix.len())
        .filter(|start| start.eq_ignore_ascii_case(prefix))
        .and_then(|_| text.get(prefix.len()..))
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
        // A password in the query string, an `@` in a parameter, an upper-case scheme, and
        // `Debug`.
        let queried = StoreLocation::parse("postgres://db.example/agents?user=me&password=hunter2");
        assert_eq!(queried.to_string(), "postgres://…@db.example/agents?…");
        assert!(!format!("{queried:?}").contains("hunter2"), "{queried:?}");
        assert_eq!(
            StoreLocation::parse("postgres://u:p@db/agents?application_name=a@b").to_string(),
            "postgres://…@db/agents?…"
        );
        // A password holding `/` or `?` (base64) ends at the first `@`, as the driver reads it.
        for url in [
            "postgres://me:pa/ss@db.example/agents",
            "postgres://me:p?ss@db/x",
        ] {
            let shown = StoreLocation::parse(url).to_string();
            assert!(
                !shown.contains("pa/ss") && !shown.contains("p?ss"),
                "{shown}"
            );
            assert!(!shown.contains("me:"), "{shown}");
        }
        let upper = StoreLocation::parse("POSTGRES://me:hunter2@db/x");
        assert_eq!(
            upper,
            StoreLocation::Postgres("postgres://me:hunter2@db/x".into()),
            "the scheme as the driver reads it"
        );
        assert_eq!(upper.to_string(), "postgres://…@db/x");
        assert_eq!(StoreLocation::parse("sqlite:a.db").to_string(), "a.db");
        assert_eq!(StoreLocation::InMemory.to_string(), ":memory:");
    }
}
