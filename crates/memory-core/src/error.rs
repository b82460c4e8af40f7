//! The one error type every crate of agent-memory returns.

use std::error::Error as StdError;

/// A boxed error from a backend, kept as the `source` of a [`MemoryError`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// `Result` with [`MemoryError`] as the default error.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// Everything that can go wrong in agent-memory.
///
/// Messages are lowercase, carry the key and the operation, and never end in a period.
/// Backend failures keep their cause as the [`source`](StdError::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The record does not exist (in the namespace that was asked).
    #[error("not found: {kind} {id} in {namespace}")]
    NotFound {
        /// `memory`, `page` or `entity`.
        kind: &'static str,
        /// The namespace that was asked.
        namespace: String,
        /// The record's id.
        id: String,
    },

    /// A record with this key already exists.
    #[error("already exists: {0}")]
    AlreadyExists(String),

    /// The caller passed something the library does not accept.
    #[error("invalid input: {field}: {problem}")]
    InvalidInput {
        /// The field (or setting, or argument) at fault, such as `content` or
        /// `weights.overlap`; for an import, prefixed with its line.
        field: String,
        /// What is wrong with it.
        problem: String,
    },

    /// The storage backend failed.
    #[error("storage error: {message}")]
    Storage {
        /// What was being done, with the key.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<BoxError>,
    },

    /// The backend could not be reached (connection refused or lost); retrying may succeed.
    #[error("backend unavailable: {message}")]
    Unavailable {
        /// What was being done.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
    },

    /// The operation took longer than its deadline; retrying may succeed.
    #[error("timed out: {0}")]
    Timeout(String),

    /// A concurrent transaction conflicted (serialization failure, lock busy); retry it.
    #[error("conflict: {message}")]
    Conflict {
        /// What was being done.
        message: String,
        /// The driver's error.
        #[source]
        source: Option<BoxError>,
    },

    /// Encoding or decoding a persisted record failed.
    #[error("serialization error: {message}")]
    Serialization {
        /// What was being encoded or decoded.
        message: String,
        /// The codec's error.
        #[source]
        source: Option<BoxError>,
    },

    /// A limit configured for safety (size, depth, count) was exceeded.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
}

impl MemoryError {
    /// Whether the caller may reasonably retry or carry on: missing records, an unreachable
    /// backend, timeouts and transaction conflicts.
    ///
    /// ```
    /// use memory_core::MemoryError;
    /// assert!(MemoryError::not_found("memory", "user-1", "m1").is_recoverable());
    /// assert!(!MemoryError::invalid("id", "empty").is_recoverable());
    /// ```
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. }
                | Self::Unavailable { .. }
                | Self::Timeout(_)
                | Self::Conflict { .. }
        )
    }

    /// An [`InvalidInput`](Self::InvalidInput) error naming `field`.
    pub fn invalid(field: &str, problem: impl std::fmt::Display) -> Self {
        Self::InvalidInput {
            field: field.to_owned(),
            problem: problem.to_string(),
        }
    }

    /// A [`NotFound`](Self::NotFound) error: no `kind` (`memory`, `page`, `entity`) with `id`
    /// in `namespace`.
    pub fn not_found(
        kind: &'static str,
        namespace: impl std::fmt::Display,
        id: impl std::fmt::Display,
    ) -> Self {
        Self::NotFound {
            kind,
            namespace: namespace.to_string(),
            id: id.to_string(),
        }
    }

    /// The field an [`InvalidInput`](Self::InvalidInput) error names, if it is one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::InvalidInput { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The error naming the field `to` where it is an [`InvalidInput`](Self::InvalidInput)
    /// naming `from`; any other unchanged. A face that calls a field by another name than
    /// the library does (the `text` a `remember` takes is the memory's `content`) names it
    /// as its caller wrote it.
    #[must_use]
    pub fn renamed(self, from: &str, to: &str) -> Self {
        match self {
            Self::InvalidInput { field, problem } if field == from => Self::InvalidInput {
                field: to.to_owned(),
                problem,
            },
            other => other,
        }
    }

    /// A [`Storage`](Self::Storage) error with a cause.
    pub fn storage(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Storage {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// A [`Serialization`](Self::Serialization) error with a cause.
    pub fn serialization(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Serialization {
            message: message.into(),
            source: Some(source.into()),
        }
    }
}

impl From<serde_json::Error> for MemoryError {
    fn from(error: serde_json::Error) -> Self {
        Self::serialization("json", error)
    }
}
