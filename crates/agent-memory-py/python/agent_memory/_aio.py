"""The asyncio API: :class:`AsyncMemory`, the same methods as :class:`Memory`, awaitable.

Each call runs the synchronous method in a worker thread of the event loop's executor
(``loop.run_in_executor``). The method releases the GIL while the library works on its
own tokio runtime, so the event loop keeps running and several calls proceed at once.
This costs a thread hand-off per call (tens of microseconds), which is small beside a
SQLite or PostgreSQL round trip; an in-memory recall is cheaper called synchronously.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import datetime
from typing import Any, TypeVar

from agent_memory._native import Memory, MemoryRecord, RecallResult, Remembered

T = TypeVar("T")

Time = datetime | str | float


class AsyncMemory:
    """:class:`Memory` for asyncio code: every method is a coroutine.

    ``AsyncMemory()`` keeps everything in this process, ``AsyncMemory("agent.db")`` in a
    SQLite file, ``AsyncMemory("postgres://...")`` on a server; the keyword options are
    :class:`Memory`'s. Opening a file or connecting blocks briefly: use
    ``await AsyncMemory.open(...)`` to do it off the event loop, or wrap an existing
    :class:`Memory` with ``AsyncMemory(memory)``. ``executor`` chooses where calls run
    (default: the loop's default executor).
    """

    def __init__(
        self,
        store: Memory | str | os.PathLike[str] | None = None,
        *,
        executor: Executor | None = None,
        **options: Any,
    ) -> None:
        if isinstance(store, Memory) and options:
            # The memory is open already: its settings were chosen when it was opened.
            raise TypeError(
                f"AsyncMemory(Memory, ...) takes no settings ({', '.join(sorted(options))}): "
                "pass them to Memory, or give AsyncMemory the store's location"
            )
        self.memory: Memory = store if isinstance(store, Memory) else Memory(store, **options)
        self._executor = executor

    @classmethod
    async def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        executor: Executor | None = None,
        **options: Any,
    ) -> AsyncMemory:
        """Opens the store in a worker thread, then wraps it."""
        loop = asyncio.get_running_loop()
        memory = await loop.run_in_executor(executor, functools.partial(Memory, store, **options))
        return cls(memory, executor=executor)

    async def _run(self, method: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(method, *args, **kwargs))

    @property
    def location(self) -> str:
        """Where the records live."""
        return self.memory.location

    async def remember(
        self,
        namespace: str,
        text: str,
        *,
        kind: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        id: str | None = None,
        source: str | None = None,
        context: str | None = None,
        fact_key: str | None = None,
        created_at: Time | None = None,
        pinned: bool = False,
        valid_from: Time | None = None,
        valid_until: Time | None = None,
        credibility: float | None = None,
    ) -> Remembered:
        """See :meth:`Memory.remember`."""
        return await self._run(
            self.memory.remember,
            namespace,
            text,
            kind=kind,
            importance=importance,
            tags=tags,
            metadata=metadata,
            id=id,
            source=source,
            context=context,
            fact_key=fact_key,
            created_at=created_at,
            pinned=pinned,
            valid_from=valid_from,
            valid_until=valid_until,
            credibility=credibility,
        )

    async def remember_dialogue(
        self, namespace: str, turns: Sequence[Mapping[str, Any]]
    ) -> list[Remembered]:
        """See :meth:`Memory.remember_dialogue`."""
        return await self._run(self.memory.remember_dialogue, namespace, list(turns))

    async def put(self, namespace: str, id: str, text: str, **options: Any) -> None:
        """See :meth:`Memory.put`."""
        return await self._run(self.memory.put, namespace, id, text, **options)

    async def update(self, namespace: str, id: str, **changes: Any) -> MemoryRecord:
        """See :meth:`Memory.update`."""
        return await self._run(self.memory.update, namespace, id, **changes)

    async def recall(
        self,
        namespace: str,
        query: str,
        *,
        exact: bool = False,
        max_results: int | None = None,
        min_score: float | None = None,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        since: Time | None = None,
        until: Time | None = None,
        view: str | None = None,
        as_of: Time | None = None,
        strategy: str | None = None,
        scoring: str | Mapping[str, Any] | None = None,
        fusion: str | Mapping[str, Any] | None = None,
        graph_depth: int | None = None,
    ) -> RecallResult:
        """See :meth:`Memory.recall`."""
        return await self._run(
            self.memory.recall,
            namespace,
            query,
            exact=exact,
            max_results=max_results,
            min_score=min_score,
            kinds=kinds,
            tags=tags,
            metadata=metadata,
            since=since,
            until=until,
            view=view,
            as_of=as_of,
            strategy=strategy,
            scoring=scoring,
            fusion=fusion,
            graph_depth=graph_depth,
        )

    async def context(
        self,
        namespace: str,
        query: str,
        max_tokens: int = 500,
        *,
        exact: bool = False,
        session: str | None = None,
        turns: int = 10,
    ) -> str:
        """See :meth:`Memory.context`."""
        return await self._run(
            self.memory.context,
            namespace,
            query,
            max_tokens,
            exact=exact,
            session=session,
            turns=turns,
        )

    async def forget(self, namespace: str, id: str) -> bool:
        """See :meth:`Memory.forget`."""
        return await self._run(self.memory.forget, namespace, id)

    async def clear(self, namespace: str, *, exact: bool = False) -> int:
        """See :meth:`Memory.clear`."""
        return await self._run(self.memory.clear, namespace, exact=exact)

    async def get(self, namespace: str, id: str) -> MemoryRecord | None:
        """See :meth:`Memory.get`."""
        return await self._run(self.memory.get, namespace, id)

    async def list(self, namespace: str = "", **options: Any) -> list[MemoryRecord]:
        """See :meth:`Memory.list` (the same keyword options)."""
        return await self._run(self.memory.list, namespace, **options)

    async def namespaces(self, prefix: str = "") -> builtins.list[str]:
        """See :meth:`Memory.namespaces`."""
        return await self._run(self.memory.namespaces, prefix)

    async def history(self, namespace: str, id: str) -> builtins.list[MemoryRecord]:
        """See :meth:`Memory.history`."""
        return await self._run(self.memory.history, namespace, id)

    async def supersede(self, namespace: str, old: str, new: str) -> None:
        """See :meth:`Memory.supersede`."""
        return await self._run(self.memory.supersede, namespace, old, new)

    async def retract(self, namespace: str, id: str, reason: str) -> None:
        """See :meth:`Memory.retract`."""
        return await self._run(self.memory.retract, namespace, id, reason)

    async def pin(self, namespace: str, id: str, pinned: bool = True) -> bool:
        """See :meth:`Memory.pin`."""
        return await self._run(self.memory.pin, namespace, id, pinned)

    async def compress(self, namespace: str, id: str, text: str) -> bool:
        """See :meth:`Memory.compress`."""
        return await self._run(self.memory.compress, namespace, id, text)

    async def add_entity(self, namespace: str, id: str, name: str, entity_type: str, **options: Any) -> None:
        """See :meth:`Memory.add_entity`."""
        return await self._run(self.memory.add_entity, namespace, id, name, entity_type, **options)

    async def get_entity(self, namespace: str, id: str) -> dict[str, Any] | None:
        """See :meth:`Memory.get_entity`."""
        return await self._run(self.memory.get_entity, namespace, id)

    async def entities(
        self,
        namespace: str = "",
        *,
        exact: bool = False,
        limit: int | None = None,
        after: dict[str, Any] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """See :meth:`Memory.entities`."""
        return await self._run(self.memory.entities, namespace, exact=exact, limit=limit, after=after)

    async def remove_entity(self, namespace: str, id: str) -> bool:
        """See :meth:`Memory.remove_entity`."""
        return await self._run(self.memory.remove_entity, namespace, id)

    async def put_page(self, namespace: str, id: str, title: str, **options: Any) -> dict[str, Any]:
        """See :meth:`Memory.put_page`."""
        return await self._run(self.memory.put_page, namespace, id, title, **options)

    async def get_page(self, namespace: str, id: str) -> dict[str, Any] | None:
        """See :meth:`Memory.get_page`."""
        return await self._run(self.memory.get_page, namespace, id)

    async def pages(self, namespace: str = "", *, exact: bool = False) -> builtins.list[dict[str, Any]]:
        """See :meth:`Memory.pages`."""
        return await self._run(self.memory.pages, namespace, exact=exact)

    async def remove_page(self, namespace: str, id: str) -> bool:
        """See :meth:`Memory.remove_page`."""
        return await self._run(self.memory.remove_page, namespace, id)

    async def add_relation(
        self,
        namespace: str,
        source_id: str,
        target_id: str,
        relation_type: str,
        weight: float = 1.0,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """See :meth:`Memory.add_relation`."""
        return await self._run(
            self.memory.add_relation, namespace, source_id, target_id, relation_type, weight, attributes=attributes
        )

    async def relations(self, namespace: str, id: str) -> builtins.list[dict[str, Any]]:
        """See :meth:`Memory.relations`."""
        return await self._run(self.memory.relations, namespace, id)

    async def related(self, namespace: str, id: str, depth: int = 2) -> builtins.list[dict[str, Any]]:
        """See :meth:`Memory.related`."""
        return await self._run(self.memory.related, namespace, id, depth)

    async def conflicts(self, namespace: str = "", *, exact: bool = False) -> builtins.list[dict[str, str]]:
        """See :meth:`Memory.conflicts`."""
        return await self._run(self.memory.conflicts, namespace, exact=exact)

    async def stats(self, namespace: str = "", *, exact: bool = False) -> dict[str, Any]:
        """See :meth:`Memory.stats`."""
        return await self._run(self.memory.stats, namespace, exact=exact)

    async def maintain(self, namespace: str = "", *, exact: bool = False) -> dict[str, int]:
        """See :meth:`Memory.maintain`."""
        return await self._run(self.memory.maintain, namespace, exact=exact)

    async def reembed(self, namespace: str = "", *, exact: bool = False, all: bool = False) -> dict[str, int]:
        """See :meth:`Memory.reembed`."""
        return await self._run(self.memory.reembed, namespace, exact=exact, all=all)

    async def flush(self) -> None:
        """See :meth:`Memory.flush`."""
        return await self._run(self.memory.flush)

    async def close(self) -> None:
        """See :meth:`Memory.close`."""
        return await self._run(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncMemory({self.memory.location!r})"
