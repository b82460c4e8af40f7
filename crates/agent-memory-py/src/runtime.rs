//! The module's tokio runtime. Every call from Python blocks on it with the GIL released,
//! so other Python threads run meanwhile and several threads can call one `Memory` at once.

use std::future::Future;
use std::sync::OnceLock;

use agent_memory::MemoryError;
use pyo3::prelude::*;
use tokio::runtime::Runtime;

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

/// Runs `future` to completion on the module's runtime with the GIL released, and turns
/// its error into the matching Python exception.
pub(crate) fn block_on<T, F>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: Future<Output = Result<T, MemoryError>> + Send,
    T: Send,
{
    let runtime = runtime(py)?;
    py.detach(|| runtime.block_on(future))
        .map_err(|error| to_py_err(py, error))
}

/// Runs `future` on the module's runtime, if it was started, ignoring its outcome: for a
/// drop, where nothing can be raised.
pub(crate) fn block_on_detached<F>(future: F)
where
    F: Future<Output = Result<(), MemoryError>>,
{
    if let Some(runtime) = RUNTIME.get() {
        let _ = runtime.block_on(future);
    }
}
