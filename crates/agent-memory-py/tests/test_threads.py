"""Threads calling one Memory at once: every write lands, reads see consistent results."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from agent_memory import Memory

THREADS = 8
PER_THREAD = 50


def hammer(memory: Memory) -> None:
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker(n: int) -> int:
        barrier.wait()
        found = 0
        for i in range(PER_THREAD):
            memory.remember(f"tenant-{n}", f"thread {n} wrote note {i} about concurrency", id=f"t{n}-{i}")
            result = memory.recall(f"tenant-{n}", "concurrency note", max_results=5)
            # Tenants never see each other's memories.
            assert all(hit.namespace == f"tenant-{n}" for hit in result)
            found += len(result)
            if i % 10 == 0:
                memory.stats(f"tenant-{n}")
                memory.list(f"tenant-{n}", limit=3)
        return found

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(worker, n) for n in range(THREADS)]
        for future in futures:
            try:
                assert future.result() > 0
            except BaseException as error:  # noqa: BLE001 - collected and re-raised below
                errors.append(error)
    assert not errors, errors
    stats = memory.stats()
    assert stats["total"] == THREADS * PER_THREAD
    assert stats["per_namespace"] == {f"tenant-{n}": PER_THREAD for n in range(THREADS)}
    memory.flush()


def test_threads_share_an_in_memory_store() -> None:
    hammer(Memory())


def test_threads_share_a_sqlite_store(tmp_path) -> None:
    hammer(Memory(tmp_path / "threads.db"))


def test_a_blocking_call_lets_other_threads_run() -> None:
    memory = Memory()
    for n in range(200):
        memory.remember("u", f"memory {n} mentions apples and pears and plums")
    stop = threading.Event()
    counted = [0]

    def python_work() -> None:
        while not stop.is_set():
            counted[0] += 1

    thread = threading.Thread(target=python_work)
    thread.start()
    for _ in range(50):
        memory.recall("u", "apples pears plums", max_results=50)
    stop.set()
    thread.join()
    assert counted[0] > 0


def _in_a_forked_child(path: str) -> None:
    memory = Memory(path)
    memory.remember("u", "written in the child")
    assert len(memory.recall("u", "child")) == 1
    memory.flush()
    memory.close()


def test_a_forked_child_opens_and_uses_its_own_memory(tmp_path) -> None:
    # The parent started the runtime; a forked child inherits it without its threads and
    # must start its own, or its flush (and its exit) waits for ever.
    import multiprocessing

    parent = Memory()
    parent.remember("u", "written in the parent")
    assert len(parent.recall("u", "parent")) == 1
    inherited = Memory(str(tmp_path / "parent.db"))
    inherited.remember("u", "a store the child inherits")
    child = multiprocessing.get_context("fork").Process(
        target=_in_a_forked_child, args=(str(tmp_path / "child.db"),)
    )
    child.start()
    child.join(60)
    finished = not child.is_alive()
    if not finished:
        child.kill()
    assert finished and child.exitcode == 0
    assert len(Memory(str(tmp_path / "child.db")).recall("u", "child")) == 1
    # A memory inherited through the fork is the parent's: in the child its calls raise
    # (they would wait for threads left in the parent), closing it and dropping it do
    # nothing, and the child exits.
    import os
    import time

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            try:
                inherited.recall("u", "store")
            except RuntimeError as error:
                code = 0 if "forked" in str(error) else 2
            inherited.close()
            del inherited
            import gc

            gc.collect()
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert status is not None and os.waitstatus_to_exitcode(status) == 0
    # The parent's memories go on working after the fork.
    assert len(parent.recall("u", "parent")) == 1
    inherited.remember("u", "after the fork")
    assert len(inherited.list("u")) == 2
