//! The Python package `agent_memory`: this crate is its native module,
//! `agent_memory._native`, built by maturin (see `pyproject.toml`). The Python side
//! (`python/agent_memory/`) re-exports it and adds the asyncio API, the exception classes,
//! the LangGraph store and the mem0-shaped layer.
//!
//! ```python
//! from agent_memory import Memory
//! memory = Memory()  # or Memory("agent.db"), Memory("postgres://…")
//! memory.remember("user-42", "The user likes the Rust programming language")
//! best = memory.recall("user-42", "programming")[0]
//! print(best.text, best.score, best.breakdown)
//! ```

mod convert;
mod embedder;
mod errors;
mod memory;
mod results;
mod runtime;

use pyo3::prelude::*;

/// The native part of `agent_memory`; import `agent_memory` instead.
#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<memory::PyMemory>()?;
    module.add_class::<results::Record>()?;
    module.add_class::<results::Hit>()?;
    module.add_class::<results::Recalled>()?;
    module.add_class::<results::Remembered>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
