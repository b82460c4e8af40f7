//! Mapping of rusqlite errors into the shared [`MemoryError`].

use memory_core::MemoryError;
use rusqlite::ErrorCode;

/// Maps a rusqlite error raised while doing `operation`.
///
/// A busy or locked database (another connection holds the write lock past the busy
/// timeout) is a [`MemoryError::Conflict`]: retrying may succeed. A file that is not a
/// database is named as such. Everything else is [`MemoryError::Storage`] with the rusqlite
/// error as its source.
pub(crate) fn sql_error(operation: impl Into<String>, error: rusqlite::Error) -> MemoryError {
    let operation = operation.into();
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => MemoryError::Conflict {
            message: format!("{operation}: the database is locked by another connection"),
            source: Some(Box::new(error)),
        },
        Some(ErrorCode::NotADatabase) => MemoryError::storage(
            format!("{operation}: the file is not an sqlite database"),
            error,
        ),
        _ => MemoryError::storage(operation, error),
    }
}

/// `.context(|| "what was being done")` on rusqlite results.
pub(crate) trait Context<T> {
    /// Maps the error with [`sql_error`], computing the operation's description only on error.
    fn context<S: Into<String>>(self, operation: impl FnOnce() -> S) -> Result<T, MemoryError>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn context<S: Into<String>>(self, operation: impl FnOnce() -> S) -> Result<T, MemoryError> {
        self.map_err(|error| sql_error(operation(), error))
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

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn busy_and_locked_are_recoverable_conflicts() {
        for code in [rusqlite::ffi::SQLITE_BUSY, rusqlite::ffi::SQLITE_LOCKED] {
            let error = sql_error("saving memory m1 in u", failure(code));
            assert!(matches!(error, MemoryError::Conflict { .. }), "{error:?}");
            assert!(error.is_recoverable());
            assert!(std::error::Error::source(&error).is_some());
        }
    }

    #[test]
    fn other_failures_are_storage_errors_with_a_source() {
        let error = sql_error("opening x.db", failure(rusqlite::ffi::SQLITE_NOTADB));
        assert!(
            error.to_string().contains("not an sqlite database"),
            "{error}"
        );
        let error = sql_error("reading", failure(rusqlite::ffi::SQLITE_IOERR));
        assert!(matches!(error, MemoryError::Storage { .. }));
        assert!(!error.is_recoverable());
        assert!(std::error::Error::source(&error).is_some());
    }
}
