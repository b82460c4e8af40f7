//! Mapping of tokio-postgres and pool errors into the shared [`MemoryError`].

use std::error::Error as StdError;

use deadpool_postgres::{PoolError, TimeoutType};
use memory_core::MemoryError;

/// SQLSTATE codes the mapping treats specially (PostgreSQL manual, appendix A).
mod sqlstate {
    pub(super) const SERIALIZATION_FAILURE: &str = "40001";
    pub(super) const DEADLOCK_DETECTED: &str = "40P01";
    pub(super) const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub(super) const UNIQUE_VIOLATION: &str = "23505";
    pub(super) const QUERY_CANCELED: &str = "57014";
    pub(super) const ADMIN_SHUTDOWN: &str = "57P01";
    pub(super) const CRASH_SHUTDOWN: &str = "57P02";
    pub(super) const CANNOT_CONNECT_NOW: &str = "57P03";
    pub(super) const TOO_MANY_CONNECTIONS: &str = "53300";
    /// Class 08: connection exception.
    pub(super) const CONNECTION_EXCEPTION_CLASS: &str = "08";
}

/// Maps a tokio-postgres error raised while doing `operation`.
///
/// - Serialization failures, deadlocks and lock timeouts are [`MemoryError::Conflict`]:
///   the transaction was rolled back and retrying may succeed.
/// - A lost or refused connection, a server shutting down or out of connection slots is
///   [`MemoryError::Unavailable`]; a connect that timed out or a cancelled statement is
///   [`MemoryError::Timeout`]. All three are recoverable.
/// - A unique violation is [`MemoryError::AlreadyExists`] (the stores use `ON CONFLICT`
///   where the contract allows replacing, so this means a concurrent insert of the same key).
/// - A failed TLS handshake (an untrusted certificate, one for another host name, no common
///   protocol version) is [`MemoryError::Storage`], not recoverable: retrying cannot fix a
///   configuration. Its message carries rustls's reason.
/// - Everything else is [`MemoryError::Storage`] with the driver's error as its source.
pub(crate) fn pg_error(operation: impl Into<String>, error: tokio_postgres::Error) -> MemoryError {
    let operation = operation.into();
    if let Some(db) = error.as_db_error() {
        let code = db.code().code();
        let message = format!("{operation}: {} (sqlstate {code})", db.message());
        return match code {
            sqlstate::SERIALIZATION_FAILURE
            | sqlstate::DEADLOCK_DETECTED
            | sqlstate::LOCK_NOT_AVAILABLE => MemoryError::Conflict {
                message,
                source: Some(Box::new(error)),
            },
            sqlstate::UNIQUE_VIOLATION => MemoryError::AlreadyExists(message),
            sqlstate::QUERY_CANCELED => MemoryError::Timeout(message),
            sqlstate::ADMIN_SHUTDOWN
            | sqlstate::CRASH_SHUTDOWN
            | sqlstate::CANNOT_CONNECT_NOW
            | sqlstate::TOO_MANY_CONNECTIONS => MemoryError::Unavailable {
                message,
                source: Some(Box::new(error)),
            },
            class if class.starts_with(sqlstate::CONNECTION_EXCEPTION_CLASS) => {
                MemoryError::Unavailable {
                    message,
                    source: Some(Box::new(error)),
                }
            }
            _ => MemoryError::storage(message, error),
        };
    }
    #[cfg(feature = "tls")]
    if let Some(problem) = tls_problem(&error) {
        return MemoryError::storage(format!("{operation}: TLS handshake: {problem}"), error);
    }
    if error.is_closed() {
        return MemoryError::Unavailable {
            message: format!("{operation}: the connection to the server was closed"),
            source: Some(Box::new(error)),
        };
    }
    let io_kind = error
        .source()
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    match io_kind {
        Some(std::io::ErrorKind::TimedOut) => MemoryError::Timeout(format!("{operation}: {error}")),
        Some(_) => MemoryError::Unavailable {
            message: format!("{operation}: {error}"),
            source: Some(Box::new(error)),
        },
        None => MemoryError::storage(format!("{operation}: {error}"), error),
    }
}

/// rustls's reason when `error` is a failed TLS handshake. tokio-rustls hands rustls errors
/// over inside an `io::Error`, whose `source()` skips the wrapped error, so each `io::Error`
/// of the chain is opened with `get_ref`.
#[cfg(feature = "tls")]
fn tls_problem(error: &tokio_postgres::Error) -> Option<String> {
    let mut cause = error.source();
    while let Some(current) = cause {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        if let Some(tls) = current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(tls.to_string());
        }
        cause = current.source();
    }
    None
}

/// Maps an error of the connection pool: a wait for a free connection, or for a new one to
/// be established, that ran out of time is [`MemoryError::Timeout`]; a pool closed by
/// [`PostgresBackend::close`](crate::PostgresBackend::close) is [`MemoryError::Storage`], not
/// recoverable (it stays closed, so retrying cannot succeed); a failure to connect is mapped
/// by [`pg_error`].
pub(crate) fn pool_error(operation: impl Into<String>, error: PoolError) -> MemoryError {
    let operation = operation.into();
    match error {
        PoolError::Timeout(TimeoutType::Wait) => MemoryError::Timeout(format!(
            "{operation}: no pooled connection became free in time (raise max_connections or acquire_timeout)"
        )),
        PoolError::Timeout(TimeoutType::Create) => MemoryError::Timeout(format!(
            "{operation}: connecting to the server took longer than connect_timeout"
        )),
        PoolError::Timeout(TimeoutType::Recycle) => MemoryError::Timeout(format!(
            "{operation}: checking a pooled connection took too long"
        )),
        PoolError::Backend(error) => pg_error(operation, error),
        PoolError::Closed => MemoryError::Storage {
            message: format!(
                "{operation}: the backend was closed (PostgresBackend::close); connect a new one"
            ),
            source: Some(Box::new(PoolError::Closed)),
        },
        other => MemoryError::storage(format!("{operation}: connection pool"), other),
    }
}

/// `.context(|| "what was being done")` on tokio-postgres results.
pub(crate) trait Context<T> {
    /// Maps the error with [`pg_error`], computing the operation's description only on error.
    fn context<S: Into<String>>(self, operation: impl FnOnce() -> S) -> Result<T, MemoryError>;
}

impl<T> Context<T> for Result<T, tokio_postgres::Error> {
    fn context<S: Into<String>>(self, operation: impl FnOnce() -> S) -> Result<T, MemoryError> {
        self.map_err(|error| pg_error(operation(), error))
    }
}

/// A stored value that cannot be decoded into a record.
pub(crate) fn corrupt(
    what: impl std::fmt::Display,
    problem: impl std::fmt::Display,
) -> MemoryError {
    MemoryError::Serialization {
        message: format!("decoding {what}: {problem}"),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_timeouts_are_recoverable_and_a_closed_pool_is_not() {
        for kind in [TimeoutType::Wait, TimeoutType::Create, TimeoutType::Recycle] {
            let error = pool_error("reading memory m1 in u", PoolError::Timeout(kind));
            assert!(matches!(error, MemoryError::Timeout(_)), "{error:?}");
            assert!(error.is_recoverable());
            assert!(error.to_string().contains("reading memory m1 in u"));
        }
        let closed = pool_error("saving", PoolError::Closed);
        assert!(matches!(closed, MemoryError::Storage { .. }));
        assert!(!closed.is_recoverable());
        assert!(StdError::source(&closed).is_some());
    }
}
