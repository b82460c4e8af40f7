"""The asyncio API: AsyncMemory's coroutines, run concurrently on one event loop."""

from __future__ import annotations

import asyncio

import pytest

from agent_memory import AsyncMemory, InvalidInputError, Memory, RecallResult


def run(coroutine):
    return asyncio.run(coroutine)


def test_every_method_awaits() -> None:
    async def main() -> None:
        async with AsyncMemory() as memory:
            done = await memory.remember("user-1", "The user plays the cello on Sundays", tags=["music"])
            assert done.outcome == "added"
            await memory.put("user-1", "k", "The user owns a bicycle", metadata={"kv": True})
            result = await memory.recall("user-1", "cello", max_results=5)
            assert isinstance(result, RecallResult) and result[0].id == done.id
            assert "cello" in await memory.context("user-1", "cello", 100)
            assert (await memory.get("user-1", "k")).metadata == {"kv": True}
            assert len(await memory.list("user-1")) == 2
            assert await memory.namespaces() == ["user-1"]
            assert [r.id for r in await memory.history("user-1", done.id)] == [done.id]
            assert await memory.pin("user-1", done.id)
            assert await memory.compress("user-1", "k", "A bicycle")
            other = await memory.remember("user-1", "The cello lesson moved to Mondays")
            await memory.supersede("user-1", done.id, other.id)
            await memory.retract("user-1", other.id, "no more lessons")
            page = await memory.put_page("kb", "p", "A page", references=["q"])
            assert page["id"] == "p" and (await memory.get_page("kb", "p"))["references"] == ["q"]
            assert [entry["id"] for entry in await memory.pages("kb")] == ["p"]
            assert await memory.remove_page("kb", "p")
            assert await memory.conflicts("user-1") == []
            assert (await memory.stats("user-1"))["total"] == 3
            assert "evicted" in await memory.maintain("user-1")
            await memory.flush()
            assert await memory.forget("user-1", "k")
            assert await memory.clear("user-1") == 2
            assert memory.location == ":memory:" and "AsyncMemory" in repr(memory)

    run(main())


def test_errors_raise_in_the_awaiting_task() -> None:
    async def main() -> None:
        memory = AsyncMemory()
        with pytest.raises(InvalidInputError) as caught:
            await memory.remember("u", "text", importance=7.0)
        assert caught.value.field == "importance"

    run(main())


def test_concurrent_calls_on_one_loop(tmp_path) -> None:
    async def main() -> None:
        memory = await AsyncMemory.open(tmp_path / "async.db")
        writes = [memory.remember(f"user-{n % 4}", f"fact {n}: the number {n} is interesting") for n in range(40)]
        done = await asyncio.gather(*writes)
        assert len({d.id for d in done}) == 40
        reads = [memory.recall(f"user-{n}", "interesting number", max_results=50) for n in range(4)]
        results = await asyncio.gather(*reads)
        assert [len(result) for result in results] == [10, 10, 10, 10]
        # The loop stays free while calls run: a ticker advances meanwhile.
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.gather(*(memory.recall("", "number", max_results=40) for _ in range(20)))
        task.cancel()
        assert ticks > 0
        await memory.close()

    run(main())


def test_wraps_an_existing_memory() -> None:
    sync = Memory()
    sync.remember("u", "shared between both APIs")

    async def main() -> None:
        memory = AsyncMemory(sync)
        assert memory.memory is sync
        assert (await memory.recall("u", "shared"))[0].text == "shared between both APIs"

    run(main())


def test_settings_beside_an_open_memory_are_refused() -> None:
    # The memory was opened with its settings: others given beside it would be dropped.
    with pytest.raises(TypeError, match="eviction"):
        AsyncMemory(Memory(), eviction={"policy": "capacity", "max_items": 3})
