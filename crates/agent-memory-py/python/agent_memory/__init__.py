"""Long-term memory for LLM agents: the Rust library agent-memory in-process.

Remember text, recall the best of it for a query with every score explained, build
prompt context within a token budget, forget and maintain; in memory, in a SQLite file or
on a PostgreSQL server. No embedding model is needed.

>>> from agent_memory import Memory
>>> memory = Memory()  # Memory("agent.db") for SQLite, Memory("postgres://...") for PostgreSQL
>>> _ = memory.remember("user-42", "The user likes the Rust programming language")
>>> best = memory.recall("user-42", "programming")[0]
>>> "Rust" in best.text
True

:class:`AsyncMemory` is the asyncio API; :mod:`agent_memory.langgraph` a LangGraph store;
:mod:`agent_memory.mem0` a mem0-shaped layer (``add``, ``search``, ``get_all``, ``delete``).
"""

from agent_memory._aio import AsyncMemory
from agent_memory._native import (
    Hit,
    Memory,
    MemoryRecord,
    RecallResult,
    Remembered,
    __version__,
)
from agent_memory.errors import (
    AgentMemoryError,
    AlreadyExistsError,
    ConflictError,
    InvalidInputError,
    LimitExceededError,
    MemoryTimeoutError,
    NotFoundError,
    SerializationError,
    StorageError,
    UnavailableError,
)
from agent_memory.errors import MemoryError  # noqa: A004 - see agent_memory.errors

__all__ = [
    "Memory",
    "AsyncMemory",
    "MemoryRecord",
    "Hit",
    "RecallResult",
    "Remembered",
    "AgentMemoryError",
    "NotFoundError",
    "AlreadyExistsError",
    "InvalidInputError",
    "StorageError",
    "UnavailableError",
    "MemoryTimeoutError",
    "ConflictError",
    "SerializationError",
    "LimitExceededError",
    "__version__",
]
