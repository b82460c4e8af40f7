"""Shared fixtures: a fresh memory in this process, and one in a SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory import Memory


@pytest.fixture
def memory() -> Memory:
    return Memory()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture(params=["memory", "sqlite"])
def any_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Memory:
    """The in-memory backend and the SQLite one, for tests that must hold on both."""
    if request.param == "memory":
        return Memory()
    return Memory(tmp_path / "memory.db")
