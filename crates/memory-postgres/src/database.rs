//! The shared connection pool, and running parameterised statements on it.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use deadpool_postgres::{
    GenericClient, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime,
};
use memory_core::{MemoryError, Result};
use tokio_postgres::{NoTls, Row};

use crate::error::{Context, pool_error};
use crate::sql::{Sql, qualify};
use crate::{PostgresOptions, PostgresTls, TlsRoots};

/// One connection pool shared by the three stores of a backend, and the schema their tables
/// live in.
#[derive(Clone)]
pub(crate) struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The schema name as given (validated: a plain lowercase identifier).
    schema: String,
    /// The schema name quoted as an SQL identifier, spliced into statements for `{s}`.
    quoted_schema: String,
    /// `host:port/dbname` for messages; never the password.
    target: String,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database")
            .field("target", &self.inner.target)
            .field("schema", &self.inner.schema)
            .field("pool", &self.inner.pool.status())
            .finish()
    }
}

impl Database {
    /// Builds the pool for `url` (no connection is opened yet).
    pub(crate) fn new(url: &str, options: &PostgresOptions) -> Result<Self> {
        options.validate()?;
        // The parser's message never repeats the URL, so no password reaches an error.
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|error| MemoryError::invalid("url", error))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("agent-memory");
        }
        let target = describe(&config);
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &options.tls {
            PostgresTls::Disabled => Manager::from_config(config, NoTls, manager_config),
            PostgresTls::Required(roots) => {
                // Never fall back to plain TCP, whatever the URL's `sslmode` says.
                config.ssl_mode(tokio_postgres::config::SslMode::Require);
                Manager::from_config(config, tls_connector(roots)?, manager_config)
            }
        };
        let pool = Pool::builder(manager)
            .max_size(options.max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.acquire_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| MemoryError::storage("building the connection pool", error))?;
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                quoted_schema: format!("\"{}\"", options.schema),
                schema: options.schema.clone(),
                target,
            }),
        })
    }

    /// The schema name.
    pub(crate) fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// `host:port/dbname` of the server.
    pub(crate) fn target(&self) -> &str {
        &self.inner.target
    }

    /// A statement starting with `text`, `{s}` standing for this backend's schema.
    pub(crate) fn sql(&self, text: &str) -> Sql {
        Sql::new(&self.inner.quoted_schema, text)
    }

    /// `text` with `{s}` replaced by this backend's schema.
    pub(crate) fn qualify(&self, text: &str) -> String {
        qualify(&self.inner.quoted_schema, text)
    }

    /// A pooled connection.
    pub(crate) async fn client(&self, what: &str) -> Result<Object> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|error| pool_error(format!("{what}: getting a connection"), error))
    }

    /// Closes the pool: connections are closed as they are returned, and further operations
    /// fail with [`MemoryError::Storage`] (not recoverable: the pool stays closed).
    pub(crate) fn close(&self) {
        self.inner.pool.close();
    }

    /// Runs `sql` on a pooled connection and returns its rows.
    pub(crate) async fn query(&self, sql: &Sql, what: impl Fn() -> String) -> Result<Vec<Row>> {
        let client = self.client(&what()).await?;
        query(&client, sql, what).await
    }

    /// Runs `sql` on a pooled connection and returns how many rows it changed.
    pub(crate) async fn execute(&self, sql: &Sql, what: impl Fn() -> String) -> Result<u64> {
        let client = self.client(&what()).await?;
        execute(&client, sql, what).await
    }
}

/// Runs `sql` (prepared once per connection and cached) and returns its rows.
pub(crate) async fn query(
    client: &(impl GenericClient + ?Sized),
    sql: &Sql,
    what: impl Fn() -> String,
) -> Result<Vec<Row>> {
    let statement = client.prepare_cached(&sql.text).await.context(&what)?;
    client.query(&statement, &sql.params()).await.context(&what)
}

/// Runs `sql` (prepared once per connection and cached) and returns how many rows it changed.
pub(crate) async fn execute(
    client: &(impl GenericClient + ?Sized),
    sql: &Sql,
    what: impl Fn() -> String,
) -> Result<u64> {
    let statement = client.prepare_cached(&sql.text).await.context(&what)?;
    client
        .execute(&statement, &sql.params())
        .await
        .context(&what)
}

/// The rustls connector for `roots`.
#[cfg(feature = "tls")]
fn tls_connector(roots: &TlsRoots) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    crate::tls::connector(roots)
}

/// Without the `tls` feature there is no connector: asking for TLS is a configuration error,
/// never a silent downgrade.
#[cfg(not(feature = "tls"))]
fn tls_connector(_roots: &TlsRoots) -> Result<NoTls> {
    Err(MemoryError::invalid(
        "tls",
        "TLS needs memory-postgres's `tls` feature (agent-memory: `postgres-tls`)",
    ))
}

/// `host:port/dbname` (or the socket directory) of a configuration, for messages.
fn describe(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        Some(tokio_postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let dbname = config.get_dbname().unwrap_or("(default database)");
    format!("{host}:{port}/{dbname}")
}
