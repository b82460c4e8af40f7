"""A LangGraph store on agent-memory: :class:`AgentMemoryStore`, a ``BaseStore`` (from the
``langgraph-checkpoint`` package) for a graph's long-term memory.

>>> from agent_memory.langgraph import AgentMemoryStore
>>> store = AgentMemoryStore()  # or AgentMemoryStore("agent.db"), or a Memory
>>> store.put(("users", "u1", "memories"), "m1", {"text": "The user likes hiking"})
>>> store.search(("users", "u1"), query="hiking")[0].key
'm1'

How LangGraph's model maps onto the library's:

- A namespace tuple ``("users", "u1")`` is the namespace ``users/u1`` (under ``prefix``,
  if one is given). Labels made of letters, digits and ``._:-`` are kept as they are; any
  other character (and ``@``) is written ``@XX`` per UTF-8 byte, so every label round-trips.
- An item is a memory whose id is the key and whose metadata is the value (a JSON-like
  dict). ``put`` replaces the item with the same key, keeping its creation time; it does
  not merge duplicates or supersede facts as ``Memory.remember`` does.
- What is searched is the text of the value: the fields named by ``index`` (``put``'s
  argument, else the store's ``index={"fields": [...]}``), else every string in the value.
  ``index=False`` is accepted but the text is indexed all the same.
- ``search`` with a ``query`` ranks with the library's BM25 and signals (``SearchItem.score``
  is the recall score); without one it lists items newest first. ``filter`` takes exact
  values and the operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``. Exact
  strings (also as ``$eq``) are matched by the library before it ranks or lists, so a query
  ranks the items that hold them; the other conditions are applied to the ranked items, of
  which a query looks at the best 1,000: a search with a query ranks 1,000 items at most,
  so its pages end there (``offset`` 1,000 and beyond find nothing).
- A value's keys ``_context``, ``_original``, ``_pinned`` and ``_decay`` are the library's
  own settings: a ``put`` of a value holding one is refused (``InvalidInputError`` naming
  ``value``). An async ``embed`` is refused when the store is made (``index.embed``).
- TTLs are not supported (``supports_ttl`` is False); the library's own eviction policies
  (the ``Memory``'s ``eviction`` setting, run by ``maintain``) bound a namespace instead.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from agent_memory._labels import decode_label, encode_label
from agent_memory._native import Memory, MemoryRecord
from agent_memory.errors import InvalidInputError

__all__ = ["AgentMemoryStore", "encode_label", "decode_label"]

# The most results one recall may return (the library's MAX_RESULTS_LIMIT).
_MAX_RESULTS = 1000
# The most metadata conditions a recall takes, and the longest key (in UTF-8 bytes).
_MAX_PUSHED = 32
_MAX_KEY_BYTES = 256


def _pushable_key(key: str) -> bool:
    """Whether the library takes ``key`` as a metadata condition (1 to 256 bytes)."""
    return 0 < len(key.encode()) <= _MAX_KEY_BYTES

def _strings(value: Any) -> Iterable[str]:
    """Every string in a JSON-like value, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _at_path(value: Any, path: str) -> list[Any]:
    """The values at a LangGraph field path (``a.b``, ``a[0]``, ``a[-1]``, ``a[*].b``)."""
    if path == "$":
        return [value]
    current = [value]
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", path):
        following: list[Any] = []
        for item in current:
            if part.startswith("["):
                index = part[1:-1]
                if not isinstance(item, (list, tuple)):
                    continue
                if index == "*":
                    following.extend(item)
                else:
                    try:
                        following.append(item[int(index)])
                    except (ValueError, IndexError):
                        pass
            elif isinstance(item, Mapping) and part in item:
                following.append(item[part])
        current = following
    return current


def _compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter rule: exact values, nested dicts, lists, and ``$`` operators."""
    if isinstance(expected, Mapping):
        if any(str(key).startswith("$") for key in expected):
            return all(_operator(actual, op, operand) for op, operand in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(key), value) for key, value in expected.items())
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected))
        )
    return bool(actual == expected)


def _operator(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        try:
            left, right = float(actual), float(operand)
        except (TypeError, ValueError):
            return False
        return {
            "$gt": left > right,
            "$gte": left >= right,
            "$lt": left < right,
            "$lte": left <= right,
        }[operator]
    raise ValueError(f"unsupported filter operator: {operator}")


# The metadata keys the library reads as its own settings (the context indexed beside a
# memory, its pin, its original text, its decay state).
RESERVED_KEYS = ("_context", "_original", "_pinned", "_decay")


def _check_value_keys(value: Mapping[str, Any], field: str) -> None:
    """Refuses a value holding a key the library reads as its own setting: stored as given,
    it would pin the item, be searched as context, or be dropped from the value read back."""
    taken = sorted(key for key in value if key in RESERVED_KEYS)
    if taken:
        problem = f"the keys {', '.join(taken)} are the library's own settings; rename them"
        raise InvalidInputError(f"invalid input: {field}: {problem}", field=field, problem=problem)


def _embedder(embed: Any) -> Any:
    """The ``embed`` of LangGraph's index config as an embedder ``Memory`` takes: a
    LangChain ``Embeddings`` as it is (stored texts through its ``embed_documents``, a
    search's query through its ``embed_query``), an object with ``embed_documents`` only by
    that method, or a callable as it is."""
    if isinstance(embed, str):
        raise InvalidInputError(
            "invalid input: index.embed: a model name needs LangChain's init_embeddings: pass its result, or a callable",
            field="index.embed",
            problem="a model name needs LangChain's init_embeddings: pass its result, or a callable",
        )
    documents = getattr(embed, "embed_documents", None)
    called = documents if callable(documents) else embed
    if inspect.iscoroutinefunction(called) or inspect.iscoroutinefunction(getattr(called, "__call__", None)):
        problem = "an async embed is not supported: pass a synchronous callable or a LangChain Embeddings"
        raise InvalidInputError(f"invalid input: index.embed: {problem}", field="index.embed", problem=problem)
    if callable(documents) and callable(getattr(embed, "embed_query", None)):
        return embed
    if callable(documents):
        return lambda texts: documents(list(texts))
    if callable(embed):
        return embed
    raise InvalidInputError(
        "invalid input: index.embed: a LangChain Embeddings, or a callable taking a list of texts",
        field="index.embed",
        problem="a LangChain Embeddings, or a callable taking a list of texts",
    )


class AgentMemoryStore(BaseStore):
    """A LangGraph ``BaseStore`` kept by an agent-memory :class:`~agent_memory.Memory`.

    ``memory`` is a :class:`~agent_memory.Memory`, or what ``Memory(...)`` takes (nothing
    for in-process, a SQLite path, a PostgreSQL URL; ``memory_options`` go to it).
    ``prefix`` is a namespace under which every item lives (default: none), so one
    ``Memory`` can serve a store and other uses. ``index`` is LangGraph's index config:
    ``fields`` chooses the text of each item; ``embed`` (a LangChain ``Embeddings``, or a
    callable taking a list of texts and returning one vector per text) with ``dims`` turns
    on the embedding channel, so ``search`` finds items by meaning as well as by words.
    Without ``embed``, search is by words. A ``Memory`` given ready-made keeps its own
    embedder: ``embed`` then raises ``InvalidInputError``.
    ``abatch`` runs ``batch`` in ``executor`` (default: the loop's), with the GIL released
    while the library works.
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory | str | os.PathLike[str] | None = None,
        *,
        prefix: str | None = None,
        index: Mapping[str, Any] | None = None,
        executor: Executor | None = None,
        **memory_options: Any,
    ) -> None:
        embed = (index or {}).get("embed")
        if embed is not None:
            if isinstance(memory, Memory):
                raise InvalidInputError(
                    "invalid input: index.embed: give the Memory its embedder (Memory(embedder=...))",
                    field="index.embed",
                    problem="give the Memory its embedder (Memory(embedder=...))",
                )
            memory_options["embedder"] = _embedder(embed)
            memory_options["embedding_dimension"] = (index or {}).get("dims")
        self.memory = memory if isinstance(memory, Memory) else Memory(memory, **memory_options)
        self.prefix = (prefix or "").strip("/")
        fields = (index or {}).get("fields")
        self.index_fields: list[str] | None = list(fields) if fields else None
        self._executor = executor

    # Namespaces.

    def _namespace(self, labels: Sequence[str]) -> str:
        segments = [encode_label(label) for label in labels]
        if self.prefix:
            segments.insert(0, self.prefix)
        return "/".join(segments)

    def _labels(self, namespace: str) -> tuple[str, ...] | None:
        """The tuple of a stored namespace, or None when it is outside the prefix."""
        if self.prefix:
            if namespace == self.prefix:
                return ()
            if not namespace.startswith(self.prefix + "/"):
                return None
            namespace = namespace[len(self.prefix) + 1 :]
        return tuple(decode_label(segment) for segment in namespace.split("/") if segment)

    # Items.

    def _text(self, value: Mapping[str, Any], index: Sequence[str] | None) -> str:
        fields = index if index else self.index_fields
        if fields:
            texts: list[str] = []
            for path in fields:
                for found in _at_path(value, path):
                    if isinstance(found, (int, float)) and not isinstance(found, bool):
                        texts.append(str(found))
                    else:
                        texts.extend(_strings(found))
        else:
            texts = list(_strings(value))
        text = "\n".join(text for text in texts if text.strip())
        # A value without text still needs some: its JSON form.
        if not text:
            text = json.dumps(value, sort_keys=True, default=str)
        return text

    def _item(self, record: MemoryRecord, labels: tuple[str, ...]) -> Item:
        return Item(
            value=record.metadata,
            key=record.id,
            namespace=labels,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )

    def _search_item(self, record: MemoryRecord, labels: tuple[str, ...], score: float | None) -> SearchItem:
        return SearchItem(
            namespace=labels,
            key=record.id,
            value=record.metadata,
            created_at=record.created_at,
            updated_at=record.updated_at,
            score=score,
        )

    # Operations.

    def _get(self, op: GetOp) -> Item | None:
        record = self.memory.get(self._namespace(op.namespace), op.key)
        return None if record is None else self._item(record, tuple(op.namespace))

    def _put(self, op: PutOp) -> None:
        namespace = self._namespace(op.namespace)
        if op.value is None:
            self.memory.forget(namespace, op.key)
            return
        index = op.index if isinstance(op.index, list) else None
        value = dict(op.value)
        _check_value_keys(value, "value")
        self.memory.put(namespace, op.key, self._text(value, index), metadata=value)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        namespace = self._namespace(op.namespace_prefix)
        offset, limit = max(op.offset, 0), max(op.limit, 0)
        wanted = offset + limit
        if limit == 0:
            return []
        found: list[SearchItem] = []
        # A string (alone or as ``$eq``) compares the same in JSON and in Python (a boolean
        # does not: Python's True equals 1): the library matches those before ranking or
        # listing, as many as a recall takes; the rest is checked here.
        pushed: dict[str, str] = {}
        for key, value in (op.filter or {}).items():
            if isinstance(value, dict) and len(value) == 1 and "$eq" in value:
                value = value["$eq"]
            if isinstance(value, str) and _pushable_key(key) and len(pushed) < _MAX_PUSHED:
                pushed[key] = value
        checked_here = len(pushed) < len(op.filter or {})
        if op.query:
            ask = _MAX_RESULTS if checked_here else min(wanted, _MAX_RESULTS)
            result = self.memory.recall(
                namespace,
                op.query,
                max_results=ask,
                strategy="memory_only",
                min_score=0.0,
                metadata=pushed or None,
            )
            for hit in result:
                record = hit.record
                if record is None:
                    continue
                labels = self._labels(record.namespace)
                if labels is None:
                    continue
                if op.filter and not all(_compare(record.metadata.get(k), v) for k, v in op.filter.items()):
                    continue
                found.append(self._search_item(record, labels, hit.score))
                if len(found) >= wanted:
                    break
        else:
            records = self.memory.list(
                namespace,
                metadata=pushed or None,
                newest_first=True,
                limit=None if checked_here else wanted,
            )
            for record in records:
                labels = self._labels(record.namespace)
                if labels is None:
                    continue
                if op.filter and not all(_compare(record.metadata.get(k), v) for k, v in op.filter.items()):
                    continue
                found.append(self._search_item(record, labels, None))
                if len(found) >= wanted:
                    break
        return found[offset:wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions: Sequence[MatchCondition] = op.match_conditions or ()
        # A literal prefix narrows what the library lists.
        literal: list[str] = []
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        namespaces = []
        for stored in self.memory.namespaces(self._namespace(literal)):
            labels = self._labels(stored)
            if labels is None or not labels:
                continue
            if all(_matches(condition, labels) for condition in conditions):
                namespaces.append(labels)
        if op.max_depth is not None:
            namespaces = sorted({labels[: op.max_depth] for labels in namespaces})
        else:
            namespaces = sorted(set(namespaces))
        return namespaces[op.offset : op.offset + op.limit]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ``ops`` in order; each result is at the op's position."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation type: {type(op)}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread, so the event loop keeps running."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(self.batch, list(ops)))


def _matches(condition: MatchCondition, labels: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(labels, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(labels), reversed(path))
    else:
        raise ValueError(f"unsupported match type: {condition.match_type}")
    return all(pattern == "*" or label == pattern for label, pattern in pairs)
