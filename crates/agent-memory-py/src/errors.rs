//! `MemoryError` as Python exceptions: one class per variant, all under
//! `agent_memory.errors.AgentMemoryError` (also exported as `MemoryError`). The classes are
//! defined in Python (`agent_memory/errors.py`), where they can take several bases
//! (`InvalidInputError` is also a `ValueError`); this module raises them.

use agent_memory::MemoryError;
use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

/// The module that defines the exception classes.
fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    MODULE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("agent_memory.errors")?.unbind())
        })
        .map(|module| module.bind(py))
}

/// The Python exception for `error`: its class by variant, its message the error's
/// `Display`, and the variant's fields as attributes (`field` and `problem` for invalid
/// input; `kind`, `namespace` and `id` for a missing record).
///
/// An error caused by Python code the library called (an embedder) keeps that exception: one
/// that is not an `Exception` (`KeyboardInterrupt`, `SystemExit`) is raised again as it was,
/// not turned into a recoverable error a retry loop would swallow; any other is the raised
/// error's `__cause__`.
pub(crate) fn to_py_err(py: Python<'_>, error: MemoryError) -> PyErr {
    let raised = python_cause(&error);
    if let Some(raised) = raised
        && !raised.is_instance_of::<PyException>(py)
    {
        return raised.clone_ref(py);
    }
    match build(py, &error) {
        Ok(err) => {
            if let Some(raised) = raised {
                err.set_cause(py, Some(raised.clone_ref(py)));
            }
            err
        }
        // Building the exception raised what is no error of the call (a KeyboardInterrupt
        // pending when the class was looked up): that goes on, as Python would raise it.
        Err(interrupt) if !interrupt.is_instance_of::<PyException>(py) => interrupt,
        // The errors module could not be imported: still raise, with the message.
        Err(import_error) => {
            let err = PyRuntimeError::new_err(error.to_string());
            err.set_cause(py, Some(import_error));
            err
        }
    }
}

/// The Python exception among the causes of `error`, if Python code raised it.
fn python_cause(error: &MemoryError) -> Option<&PyErr> {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(raised) = cause.downcast_ref::<PyErr>() {
            return Some(raised);
        }
        source = cause.source();
    }
    None
}

fn build(py: Python<'_>, error: &MemoryError) -> PyResult<PyErr> {
    let details = PyDict::new(py);
    let class = match error {
        MemoryError::NotFound {
            kind,
            namespace,
            id,
        } => {
            details.set_item("kind", kind)?;
            details.set_item("namespace", namespace)?;
            details.set_item("id", id)?;
            "NotFoundError"
        }
        MemoryError::AlreadyExists(_) => "AlreadyExistsError",
        MemoryError::InvalidInput { field, problem } => {
            details.set_item("field", field)?;
            details.set_item("problem", problem)?;
            "InvalidInputError"
        }
        MemoryError::Storage { .. } => "StorageError",
        MemoryError::Unavailable { .. } => "UnavailableError",
        MemoryError::Timeout(_) => "MemoryTimeoutError",
        MemoryError::Conflict { .. } => "ConflictError",
        MemoryError::Serialization { .. } => "SerializationError",
        MemoryError::LimitExceeded(_) => "LimitExceededError",
        // A variant added later: the common base.
        _ => "AgentMemoryError",
    };
    // The whole chain of causes: a storage error's driver message is often the useful part.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    let instance = errors_module(py)?
        .getattr(class)?
        .call((message,), Some(&details))?;
    Ok(PyErr::from_value(instance))
}

/// An `InvalidInputError` naming `field`.
pub(crate) fn invalid(py: Python<'_>, field: &str, problem: impl std::fmt::Display) -> PyErr {
    to_py_err(py, MemoryError::invalid(field, problem))
}
