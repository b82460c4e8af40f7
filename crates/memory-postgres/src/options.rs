//! [`PostgresOptions`]: where the tables live, the pool's size and its timeouts.

use std::path::PathBuf;
use std::time::Duration;

use memory_core::{MemoryError, Result, TagConstraints};

/// The schema the tables live in unless [`PostgresOptions::schema`] says otherwise.
pub const DEFAULT_SCHEMA: &str = "agent_memory";

/// Whether connections are encrypted, and whom they trust.
///
/// Decision: TLS, when asked for, always verifies. `Required` checks the server's certificate
/// chain against the chosen roots and its name against the host the URL connects to (what
/// libpq calls `sslmode=verify-full`; the URL itself accepts only tokio-postgres's
/// `sslmode` values `disable`, `prefer` and `require`, so ask for verification here). An encrypted connection to a server nobody checked
/// protects against eavesdroppers but not against whoever answers in its place, so there is
/// no option for it; a self-signed server is trusted by naming its certificate as the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostgresTls {
    /// Plain TCP (or a Unix socket). A URL asking for `sslmode=require` then fails to
    /// connect rather than silently going unencrypted. The default: local servers, trusted
    /// networks, TLS-terminating proxies.
    #[default]
    Disabled,
    /// Every connection is TLS, verified against these roots. Needs this crate's `tls`
    /// feature (facade: `postgres-tls`); without it, connect fails with
    /// [`MemoryError::InvalidInput`].
    Required(TlsRoots),
}

/// The certificates a [`PostgresTls::Required`] connection trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsRoots {
    /// The operating system's trust store: servers with publicly issued certificates
    /// (managed PostgreSQL services).
    System,
    /// The certificates of a PEM file, and only those: a private certificate authority, or a
    /// self-signed server's own certificate.
    PemFile(PathBuf),
}

/// Settings for [`PostgresBackend::connect`](crate::PostgresBackend::connect).
///
/// `Default` is a sensible production choice: schema [`DEFAULT_SCHEMA`], 16 pooled
/// connections, 10 s to connect, 30 s to wait for a free connection, migrations applied on
/// connect, the default [`TagConstraints`], and no TLS ([`PostgresTls::Disabled`]; see there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    /// The PostgreSQL schema that holds every table, created if missing. An unquoted
    /// identifier: a lowercase ASCII letter or `_`, then lowercase letters, digits or `_`, at
    /// most 63 bytes. Several deployments (or tests) can share a database with a schema each.
    pub schema: String,
    /// Most connections the pool opens at once, at least 1.
    pub max_connections: usize,
    /// How long establishing one connection may take (TCP connect and authentication) before
    /// an operation fails with [`MemoryError::Timeout`].
    pub connect_timeout: Duration,
    /// How long an operation waits for a free pooled connection before failing with
    /// [`MemoryError::Timeout`].
    pub acquire_timeout: Duration,
    /// Whether [`connect`](crate::PostgresBackend::connect) applies missing migrations. When
    /// `false`, connect only checks that the schema is at [`SCHEMA_VERSION`](crate::SCHEMA_VERSION)
    /// and the migrations are left to [`PostgresBackend::migrate`](crate::PostgresBackend::migrate)
    /// (for deployments where a separate step with more privileges changes the schema).
    pub apply_migrations: bool,
    /// Tag limits of the knowledge graph.
    pub tag_constraints: TagConstraints,
    /// Transport encryption.
    pub tls: PostgresTls,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: DEFAULT_SCHEMA.to_owned(),
            max_connections: 16,
            connect_timeout: Duration::from_secs(10),
            acquire_timeout: Duration::from_secs(30),
            apply_migrations: true,
            tag_constraints: TagConstraints::default(),
            tls: PostgresTls::Disabled,
        }
    }
}

impl PostgresOptions {
    /// Sets the schema.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Sets the pool size.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets how long an operation waits for a free connection.
    pub fn with_acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets whether connect applies missing migrations.
    pub fn with_apply_migrations(mut self, apply: bool) -> Self {
        self.apply_migrations = apply;
        self
    }

    /// Sets the graph's tag limits.
    pub fn with_tag_constraints(mut self, constraints: TagConstraints) -> Self {
        self.tag_constraints = constraints;
        self
    }

    /// Sets the transport encryption.
    pub fn with_tls(mut self, tls: PostgresTls) -> Self {
        self.tls = tls;
        self
    }

    /// Checks the schema name, the pool size and the timeouts.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `schema`, `max_connections`, `connect_timeout` or
    /// `acquire_timeout`.
    pub fn validate(&self) -> Result<()> {
        validate_schema_name(&self.schema)?;
        if self.max_connections == 0 {
            return Err(MemoryError::invalid(
                "max_connections",
                "must be at least 1",
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(MemoryError::invalid("connect_timeout", "must be positive"));
        }
        if self.acquire_timeout.is_zero() {
            return Err(MemoryError::invalid("acquire_timeout", "must be positive"));
        }
        Ok(())
    }
}

/// Longest identifier PostgreSQL keeps (`NAMEDATALEN - 1`).
const MAX_IDENTIFIER_BYTES: usize = 63;

fn validate_schema_name(schema: &str) -> Result<()> {
    let mut chars = schema.chars();
    let Some(first) = chars.next() else {
        return Err(MemoryError::invalid("schema", "empty"));
    };
    if schema.len() > MAX_IDENTIFIER_BYTES {
        return Err(MemoryError::invalid(
            "schema",
            format!("longer than {MAX_IDENTIFIER_BYTES} bytes"),
        ));
    }
    let valid_first = first.is_ascii_lowercase() || first == '_';
    if !valid_first || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(MemoryError::invalid(
            "schema",
            format!(
                "{schema:?} is not a plain identifier (a lowercase letter or _, then lowercase letters, digits or _)"
            ),
        ));
    }
    if schema.starts_with("pg_") {
        return Err(MemoryError::invalid(
            "schema",
            "names starting with pg_ are reserved by PostgreSQL",
        ));
    }
    if schema == "information_schema" {
        // A system schema: tables made there work, but pg_dump leaves them out of backups.
        return Err(MemoryError::invalid(
            "schema",
            "information_schema is PostgreSQL's own (pg_dump leaves it out of backups)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        for good in ["agent_memory", "_x", "am_test_0123abc", &"a".repeat(63)] {
            assert!(validate_schema_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Agent",
            "1abc",
            "a-b",
            "a b",
            "a\"; drop table x; --",
            "pg_catalog",
            "information_schema",
            "ünï",
            &"a".repeat(64),
        ] {
            let error = validate_schema_name(bad).unwrap_err();
            assert!(error.to_string().contains("schema"), "{bad}: {error}");
        }
    }

    #[test]
    fn options_validate() {
        assert!(PostgresOptions::default().validate().is_ok());
        let zero = PostgresOptions::default().with_max_connections(0);
        assert!(
            zero.validate()
                .unwrap_err()
                .to_string()
                .contains("max_connections")
        );
        let instant = PostgresOptions::default().with_acquire_timeout(Duration::ZERO);
        assert!(
            instant
                .validate()
                .unwrap_err()
                .to_string()
                .contains("acquire_timeout")
        );
    }
}
