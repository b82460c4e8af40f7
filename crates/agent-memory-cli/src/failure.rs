//! What went wrong, in one shape for the three faces: an exit code for the commands, an HTTP
//! status and a JSON body for the API, a tool error for MCP; each with a hint saying what to do.

use agent_memory::MemoryError;
use serde::Serialize;

/// The exit codes of `agent-memory`, documented in `--help` and the README.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitCode {
    /// 0: the command did what it was asked.
    Ok = 0,
    /// 1: an unexpected failure inside the program.
    Internal = 1,
    /// 2: the command line was wrong (unknown command or option, missing argument).
    Usage = 2,
    /// 3: the input was refused: an invalid value, a bad file, a record that exists already.
    InvalidInput = 3,
    /// 4: the record asked for does not exist.
    NotFound = 4,
    /// 5: the store failed or could not be reached, or another write changed the record
    /// first; retrying may succeed.
    Storage = 5,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> Self {
        std::process::ExitCode::from(code as u8)
    }
}

/// The kind of a failure, as the `kind` of a JSON error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorKind {
    /// The command line or request was malformed.
    Usage,
    /// A value was refused; `field` names it when known.
    InvalidInput,
    /// A record with this key exists already.
    AlreadyExists,
    /// Another write changed the record while it was being edited, the store reported a
    /// conflicting transaction (a serialization failure, a deadlock), or the record
    /// contradicts a stored one that the facts policy keeps.
    Conflict,
    /// The record does not exist.
    NotFound,
    /// No or an unknown API key.
    Unauthorized,
    /// The API key does not cover the namespace asked for.
    Forbidden,
    /// The request body is larger than the server accepts.
    PayloadTooLarge,
    /// The request body is not declared as JSON (`Content-Type: application/json`).
    UnsupportedMediaType,
    /// The store failed.
    Storage,
    /// The store could not be reached or timed out; retry later.
    Unavailable,
    /// The request took longer than the server's deadline.
    Timeout,
    /// A failure inside the program.
    Internal,
}

impl ErrorKind {
    /// The exit code of a command that failed this way.
    pub(crate) fn exit_code(self) -> ExitCode {
        match self {
            ErrorKind::Usage | ErrorKind::UnsupportedMediaType => ExitCode::Usage,
            ErrorKind::InvalidInput
            | ErrorKind::AlreadyExists
            | ErrorKind::PayloadTooLarge
            | ErrorKind::Unauthorized
            | ErrorKind::Forbidden => ExitCode::InvalidInput,
            ErrorKind::NotFound => ExitCode::NotFound,
            ErrorKind::Storage
            | ErrorKind::Unavailable
            | ErrorKind::Timeout
            | ErrorKind::Conflict => ExitCode::Storage,
            ErrorKind::Internal => ExitCode::Internal,
        }
    }

    /// The HTTP status of a request that failed this way.
    pub(crate) fn http_status(self) -> u16 {
        match self {
            ErrorKind::Usage | ErrorKind::InvalidInput => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::AlreadyExists | ErrorKind::Conflict => 409,
            ErrorKind::PayloadTooLarge => 413,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::Storage | ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
            ErrorKind::Timeout => 504,
        }
    }

    /// What to do about it.
    fn hint(self) -> &'static str {
        match self {
            ErrorKind::Usage => "run `agent-memory --help` or `agent-memory <command> --help`",
            ErrorKind::InvalidInput => {
                "correct the value the message and `field` name; what each accepts is in `agent-memory <command> --help`, the HTTP API's GET /openapi.json, or the MCP tool's input schema"
            }
            ErrorKind::AlreadyExists => "choose another id, or forget the existing record first",
            ErrorKind::Conflict => {
                "retry: another write changed the record while it was being edited, or the store reported a conflicting transaction; when the message names a contradiction, the facts policy refused it and a retry is refused too"
            }
            ErrorKind::NotFound => {
                "check the id and the namespace (--namespace, or the request's namespace): records are only found in their own namespace"
            }
            ErrorKind::Unauthorized => {
                "send an API key as `Authorization: Bearer <key>`; the admin creates keys with POST /v1/keys"
            }
            ErrorKind::Forbidden => {
                "use a namespace under your key's prefix, or ask the admin for a key that covers it"
            }
            ErrorKind::PayloadTooLarge => {
                "send a smaller body (split a batch), or raise the server's --max-body-bytes"
            }
            ErrorKind::UnsupportedMediaType => {
                "send the body as JSON with the header `Content-Type: application/json`"
            }
            ErrorKind::Storage => {
                "check that the store (--store or AGENT_MEMORY_STORE) exists, is writable and is not used by an incompatible version"
            }
            ErrorKind::Unavailable => {
                "check that the store's server is running and reachable, then retry; a write \
                 whose connection was lost may have been stored before it was: read it back \
                 before sending it again"
            }
            ErrorKind::Timeout => {
                "retry; if it keeps happening, ask for less (a smaller limit or batch)"
            }
            ErrorKind::Internal => {
                "this is a bug: please report it with the command that caused it"
            }
        }
    }
}

/// A failure: its kind, a message, the field at fault when known, and a hint.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub(crate) struct Failure {
    /// What kind of failure.
    pub(crate) kind: ErrorKind,
    /// What went wrong, naming the value or record.
    pub(crate) message: String,
    /// The input field at fault, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
    /// What to do about it.
    pub(crate) hint: String,
}

impl Failure {
    /// A failure of `kind` with `message` and the kind's hint.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            field: None,
            hint: kind.hint().to_owned(),
        }
    }

    /// Invalid input naming `field`.
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        let mut failure = Self::new(ErrorKind::InvalidInput, message);
        failure.field = Some(field.to_owned());
        failure
    }

    /// A failure of a `remember`, its field named as the faces name it: the memory's
    /// `content` is the `text` a `remember` takes (an empty or over-long text).
    pub(crate) fn of_remember(error: MemoryError) -> Self {
        Self::from(error.renamed("content", "text"))
    }

    /// An unexpected failure.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Replaces the hint.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    /// The exit code for this failure.
    pub(crate) fn exit_code(&self) -> ExitCode {
        self.kind.exit_code()
    }

    /// Writes the failure: `{"error": {...}}` on stdout with `--json` (so stdout always
    /// holds one JSON document), else `error: ...` and the hint on stderr. A stream that
    /// cannot be written (closed, a full disk) is left unwritten: the exit code still tells
    /// the failure, where `println!` would have panicked.
    pub(crate) fn report(&self, json: bool) {
        use std::io::Write;
        if json {
            let body = serde_json::json!({ "error": self });
            let _ = writeln!(std::io::stdout(), "{body}");
        } else {
            let _ = writeln!(
                std::io::stderr(),
                "error: {}\nhint: {}",
                self.message,
                self.hint
            );
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What to do when the embedding service failed.
const EMBEDDINGS_HINT: &str = "check that the embedding service (the configuration file's [embeddings] table, or AGENT_MEMORY_EMBEDDINGS_BASE_URL) is running and reachable, then retry";

/// The first line of the deepest cause of `error` (at most eight down, and 300 bytes), when
/// the message does not hold it already (a leading `ERROR: ` aside, as PostgreSQL writes
/// its errors).
fn root_cause(error: &MemoryError) -> Option<String> {
    let mut cause = std::error::Error::source(error)?;
    for _ in 0..8 {
        match cause.source() {
            Some(deeper) => cause = deeper,
            None => break,
        }
    }
    let text = cause.to_string();
    let line = text.lines().next()?.trim();
    let line = line.strip_prefix("ERROR: ").unwrap_or(line);
    if line.is_empty() || error.to_string().contains(line) {
        return None;
    }
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(line[..end].to_owned())
}

impl From<MemoryError> for Failure {
    fn from(error: MemoryError) -> Self {
        let kind = match &error {
            MemoryError::NotFound { .. } => ErrorKind::NotFound,
            MemoryError::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            MemoryError::InvalidInput { .. }
            | MemoryError::LimitExceeded { .. }
            | MemoryError::Serialization { .. } => ErrorKind::InvalidInput,
            MemoryError::Conflict { .. } => ErrorKind::Conflict,
            MemoryError::Unavailable { .. } => ErrorKind::Unavailable,
            MemoryError::Timeout { .. } => ErrorKind::Timeout,
            MemoryError::Storage { .. } => ErrorKind::Storage,
            _ => ErrorKind::Internal,
        };
        let mut message = error.to_string();
        // A store's failure says what was being done; its deepest cause says why
        // ("connection refused", "is a directory"). Its first line only (a database
        // error's detail may quote the row), and only when the message does not say it.
        if matches!(
            kind,
            ErrorKind::Storage | ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Internal
        ) && let Some(why) = root_cause(&error)
        {
            message.push_str(": ");
            message.push_str(&why);
        }
        let field = error.field().map(str::to_owned);
        // The embedding service's client names its calls `embeddings: ...`: the store is
        // not the one to check then.
        let hint = if matches!(kind, ErrorKind::Unavailable | ErrorKind::Timeout)
            && message.contains("embeddings: ")
        {
            EMBEDDINGS_HINT
        } else {
            kind.hint()
        };
        Self {
            kind,
            field,
            hint: hint.to_owned(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's failure is told with its causes, each once.
    #[test]
    fn a_store_failure_says_why() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let failure = Failure::from(MemoryError::Unavailable {
            message: "getting a connection".to_owned(),
            source: Some(Box::new(refused)),
        });
        assert!(
            failure.message.ends_with(": connection refused"),
            "{}",
            failure.message
        );
        let failure = Failure::from(MemoryError::storage(
            "opening /tmp/u",
            std::io::Error::other("is a directory"),
        ));
        assert_eq!(
            failure.message.matches("is a directory").count(),
            1,
            "{}",
            failure.message
        );
        // The deepest cause's first line, once: a database error's detail stays out.
        #[derive(Debug)]
        struct Wrapper(std::io::Error);
        impl std::fmt::Display for Wrapper {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("db error")
            }
        }
        impl std::error::Error for Wrapper {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let detail = std::io::Error::other(
            "ERROR: null value in column \"content\"\nDETAIL: Failing row contains (secret)",
        );
        let failure = Failure::from(MemoryError::storage(
            "saving memory m: null value in column \"content\"",
            Wrapper(detail),
        ));
        assert!(!failure.message.contains("secret"), "{}", failure.message);
        assert!(!failure.message.contains("db error"), "{}", failure.message);
        assert_eq!(
            failure.message.matches("null value").count(),
            1,
            "{}",
            failure.message
        );
    }

    #[test]
    fn invalid_input_names_its_field() {
        let failure = Failure::from(MemoryError::invalid("importance", "2 is outside [0, 1]"));
        assert_eq!(failure.kind, ErrorKind::InvalidInput);
        assert_eq!(failure.field.as_deref(), Some("importance"));
        assert_eq!(failure.exit_code(), ExitCode::InvalidInput);
        let other = Failure::from(MemoryError::invalid("import line 3", "bad"));
        assert_eq!(other.field.as_deref(), Some("import line 3"));
    }

    /// An edit that lost to other writes, a conflicting transaction or a contradiction the
    /// facts policy refuses is a conflict (409), not an unreachable store (503); a command
    /// exits with the code that says a retry may succeed.
    #[test]
    fn a_conflict_is_not_an_outage() {
        let failure = Failure::from(MemoryError::Conflict {
            message: "memory m1 in u was changed by other writes".to_owned(),
            source: None,
        });
        assert_eq!(failure.kind, ErrorKind::Conflict);
        assert_eq!(failure.kind.http_status(), 409);
        assert_eq!(failure.exit_code(), ExitCode::Storage);
        assert_eq!(failure.hint, ErrorKind::Conflict.hint());
    }

    #[test]
    fn an_unreachable_embedding_service_is_named_in_the_hint() {
        let down = |message: &str| {
            Failure::from(MemoryError::Unavailable {
                message: message.to_owned(),
                source: None,
            })
        };
        let embeddings = down("embeddings: cannot reach http://127.0.0.1:9/v1/embeddings");
        assert_eq!(embeddings.kind, ErrorKind::Unavailable);
        assert_eq!(embeddings.hint, EMBEDDINGS_HINT);
        let store = down("connecting to postgres://db:5432/memory");
        assert_eq!(store.hint, ErrorKind::Unavailable.hint());
    }
}
