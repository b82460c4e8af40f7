"""The PostgreSQL backend from Python, when a server is given (AGENT_MEMORY_TEST_POSTGRES_URL,
which .ci/run sets); each test works in a schema of its own, dropped afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

from agent_memory import Memory

URL = os.environ.get("AGENT_MEMORY_TEST_POSTGRES_URL")

pytestmark = pytest.mark.skipif(not URL, reason="AGENT_MEMORY_TEST_POSTGRES_URL is not set")


@pytest.fixture
def schema():
    name = f"py_test_{uuid.uuid4().hex[:12]}"
    yield name
    if shutil.which("psql"):
        subprocess.run(["psql", URL, "-qc", f"DROP SCHEMA IF EXISTS {name} CASCADE"], check=False, capture_output=True)


def test_remember_recall_across_handles(schema: str) -> None:
    memory = Memory(URL, postgres_schema=schema)
    assert memory.location.startswith("postgres://")
    assert "@" not in memory.location.split("…@", 1)[0].removeprefix("postgres://")
    done = memory.remember("user-42", "The user likes the Rust programming language", metadata={"n": 1})
    memory.remember("user-42", "The user has a cat called Miso")
    memory.recall("user-42", "programming")
    memory.close()
    again = Memory(URL, postgres_schema=schema)
    best = again.recall("user-42", "programming")[0]
    assert best.id == done.id and best.metadata == {"n": 1}
    assert again.stats("user-42")["total"] == 2
    assert again.get("user-42", done.id).access_count >= 1
    assert again.forget("user-42", done.id)
