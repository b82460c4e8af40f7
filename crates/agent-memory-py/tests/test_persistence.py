"""SQLite persistence across processes: what one process remembers, another recalls."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from agent_memory import Memory


def run_python(code: str, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


WRITE = """
    import sys
    from agent_memory import Memory
    with Memory(sys.argv[1]) as memory:
        for n in range(20):
            memory.remember("user-42", f"note {n}: the user collects vintage stamps", id=f"n{n}")
        memory.remember("user-42", "The user lives in Paris", fact_key="user.city", id="paris")
        memory.remember("user-42", "The user moved to Berlin", fact_key="user.city", id="berlin")
        memory.recall("user-42", "stamps")
    print("written")
"""

READ = """
    import json, sys
    from agent_memory import Memory
    memory = Memory(sys.argv[1])
    hits = memory.recall("user-42", "where does the user live")
    print(json.dumps({
        "total": memory.stats("user-42")["total"],
        "city": [hit.id for hit in hits],
        "history": [r.id for r in memory.history("user-42", "berlin")],
        "accessed": sum(r.access_count for r in memory.list("user-42")),
    }))
"""


def test_a_second_process_reads_what_the_first_wrote(sqlite_path: Path) -> None:
    assert run_python(WRITE, str(sqlite_path)).strip() == "written"
    seen = json.loads(run_python(READ, str(sqlite_path)))
    assert seen["total"] == 22
    assert seen["city"][0] == "berlin" and "paris" not in seen["city"]
    assert seen["history"] == ["paris", "berlin"]
    # Recall statistics written before the first process closed.
    assert seen["accessed"] >= 10


def test_two_processes_share_a_file_at_once(sqlite_path: Path) -> None:
    memory = Memory(sqlite_path)
    memory.remember("shared", "written by the test process", id="mine")
    run_python(
        """
        import sys
        from agent_memory import Memory
        memory = Memory(sys.argv[1])
        assert memory.get("shared", "mine").text == "written by the test process"
        memory.remember("shared", "written by the child process", id="theirs")
        """,
        str(sqlite_path),
    )
    assert memory.get("shared", "theirs").text == "written by the child process"
    assert {hit.id for hit in memory.recall("shared", "written process")} == {"mine", "theirs"}
