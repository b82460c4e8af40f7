//! The module's tokio runtime. Every call from Python blocks on it with the GIL released,
//! so other Python threads run meanwhile and several threads can call one `Memory` at once.

use std::future::Future;
use std::sync::OnceLock;

use agent_memory::MemoryError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::{Handle, Runtime};

use crate::errors::to_py_err;

/// Worker threads: they run what the library spawns (recall statistics written in the
/// background, PostgreSQL connections); the calls themselves run on the calling thread.
const WORKER_THREADS: usize = 2;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

fn runtime(py: Python<'_>) -> PyResult<&'static Runtime> {
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("agent-memory")
        .enable_all()
        .build()
        .map_err(|error| {
            to_py_err(
                py,
                MemoryError::Unavailable {
                    message: "could not start the runtime of agent_memory".into(),
                    source: Some(Box::new(error)),
                },
            )
        })?;
    // Another thread may have won the race: its runtime is kept, this one dropped.
    Ok(RUNTIME.get_or_init(|| built))
}

/// Why a call from inside a running call is refused.
const NESTED: &str = "agent_memory: a Memory method cannot be called from inside a callable \
    agent_memory is running (an embedder): the call that runs it waits for it on the same \
    thread. Call it before or after";

/// Runs `future` to completion on the module's runtime with the GIL released, and turns
/// its error into the matching Python exception.
///
/// A call from inside a callable the library runs (an embedder calling a `Memory` method,
/// of this memory or another) is on a thread already blocked on the runtime, which cannot
/// block on it again: it raises `RuntimeError` instead of tokio's panic. Running it on
/// another thread was not chosen: the outer call may hold what the inner one waits for
/// (the same store's connection), which would hang both.
pub(crate) fn block_on<T, F>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: Future<Output = Result<T, MemoryError>> + Send,
    T: Send,
{
    if Handle::try_current().is_ok() {
        return Err(PyRuntimeError::new_err(NESTED));
    }
    let runtime = runtime(py)?;
    py.detach(|| runtime.block_on(future))
        .map_err(|error| to_py_err(py, error))
}

/// Runs `future` on the module's runtime, if it was started, ignoring its outcome: for a
/// drop, where nothing can be raised. It waits for the future, with the GIL held (a drop
/// has no `Python` token to release it with, and the flush it runs calls no Python), except
/// inside a callable the library runs, where it cannot wait: there the future is spawned
/// on the runtime's workers and finishes after the drop.
pub(crate) fn block_on_detached<F>(future: F)
where
    F: Future<Output = Result<(), MemoryError>> + Send + 'static,
{
    let Some(runtime) = RUNTIME.get() else {
        return;
    };
    if Handle::try_current().is_ok() {
        drop(runtime.spawn(future));
    } else {
        let _ = runtime.block_on(future);
    }
}
