"""The exceptions agent_memory raises: one class per kind of error of the Rust library
(``memory_core::MemoryError``), all subclasses of :class:`AgentMemoryError`.

``AgentMemoryError`` is also available as ``agent_memory.MemoryError``, the Rust name; it
is not in ``__all__``, so ``from agent_memory import *`` does not shadow Python's built-in
``MemoryError`` (out of memory).
"""

from __future__ import annotations

from typing import Any

__all__ = [
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
]


class AgentMemoryError(Exception):
    """Any error of the memory. ``message`` is the library's text;
    ``recoverable`` says whether retrying or carrying on is reasonable."""

    recoverable: bool = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        for name, value in details.items():
            setattr(self, name, value)


class NotFoundError(AgentMemoryError, LookupError):
    """The record does not exist. ``kind`` (``memory``, ``page`` or ``entity``),
    ``namespace`` and ``id`` say which."""

    recoverable = True
    kind: str
    namespace: str
    id: str


class AlreadyExistsError(AgentMemoryError):
    """A record with this key exists already (or the duplicate policy rejects the write)."""


class InvalidInputError(AgentMemoryError, ValueError):
    """An argument the library does not accept. ``field`` names it (``content``,
    ``importance``, ``namespace``, ``metadata``, ...) and ``problem`` says what is wrong."""

    field: str
    problem: str


class StorageError(AgentMemoryError):
    """The storage backend failed (a SQLite file that is not a memory store, a full disk...)."""


class UnavailableError(AgentMemoryError, ConnectionError):
    """The backend could not be reached; retrying may succeed."""

    recoverable = True


class MemoryTimeoutError(AgentMemoryError, TimeoutError):
    """The operation took longer than its deadline; retrying may succeed."""

    recoverable = True


class ConflictError(AgentMemoryError):
    """A concurrent write conflicted (or the conflict policy rejects the write); retry it."""

    recoverable = True


class SerializationError(AgentMemoryError):
    """Encoding or decoding a stored record failed."""


class LimitExceededError(AgentMemoryError):
    """A safety limit (size, depth, count) was exceeded."""


MemoryError = AgentMemoryError  # noqa: A001 - the Rust library's name, not exported by *
