//! The module's tokio runtime. Every call from Python blocks on it with the GIL released,
//! so other Python threads run meanwhile and several threads can call one `Memory` at once.

use std::future::Future;
use std::sync::Mutex;

use agent_memory::MemoryError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::runtime::{Handle, Runtime};

use crate::errors::to_py_err;

/// Worker threads: they run what the library spawns (recall statistics written in the
/// background, PostgreSQL connections); the calls themselves run on the calling thread.
const WORKER_THREADS: usize = 2;

/// The runtime and the process that started it. A process forked from one that had started
/// it inherits the runtime without its worker threads (a fork copies the calling thread
/// alone), so what the library spawns would never run there and a flush would wait for
/// ever: the child starts a runtime of its own, and the inherited one is left as it is
/// (dropping it would wait for threads that do not exist).
static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The runtime of this process, if it was started.
fn started() -> Option<&'static Runtime> {
    let current = RUNTIME.lock().ok()?;
    current
        .filter(|(pid, _)| *pid == std::process::id())
        .map(|(_, runtime)| runtime)
}

fn runtime(py: Python<'_>) -> PyResult<&'static Runtime> {
    let mut current = RUNTIME
        .lock()
        .map_err(|_| PyRuntimeError::new_err("agent_memory: the runtime's lock is poisoned"))?;
    if let Some((pid, runtime)) = *current
        && pid == std::process::id()
    {
        return Ok(runtime);
    }
    let built = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("agent-memory")
        .enable_all()
        .build()
    {
        Ok(built) => built,
        Err(error) => {
            // The lock is let go first: building the exception runs Python, and another
            // thread may be waiting for the lock with the GIL.
            drop(current);
            return Err(to_py_err(
                py,
                MemoryError::Unavailable {
                    message: "could not start the runtime of agent_memory".into(),
                    source: Some(Box::new(error)),
                },
            ));
        }
    };
    // One per process for the life of the process (a forked child leaks the one it
    // inherited), so it may be lent out as `'static`.
    let runtime: &'static Runtime = Box::leak(Box::new(built));
    *current = Some((std::process::id(), runtime));
    Ok(runtime)
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

/// Runs `future` on the module's runtime, if this process started it, ignoring its outcome: for a
/// drop, where nothing can be raised. It waits for the future, with the GIL held (a drop
/// has no `Python` token to release it with, and the flush it runs calls no Python), except
/// inside a callable the library runs, where it cannot wait: there the future is spawned
/// on the runtime's workers and finishes after the drop.
pub(crate) fn block_on_detached<F>(future: F)
where
    F: Future<Output = Result<(), MemoryError>> + Send + 'static,
{
    let Some(runtime) = started() else {
        return;
    };
    if Handle::try_current().is_ok() {
        drop(runtime.spawn(future));
    } else {
        let _ = runtime.block_on(future);
    }
}
