"""A mem0-shaped layer: ``add``, ``search``, ``get_all``, ``get``, ``update``, ``delete``,
``delete_all``, ``history`` and ``reset`` with mem0's arguments and result dicts, so code
written for ``mem0.Memory`` changes little::

    from agent_memory.mem0 import Memory       # instead of: from mem0 import Memory

    m = Memory()                                # or Memory("memories.db")
    m.add("I like hiking in the Alps", user_id="alice")
    m.search("hobbies", user_id="alice", limit=3)["results"][0]["memory"]

What differs from mem0:

- **No model is called.** mem0's ``add`` asks an LLM to extract facts (``infer=True``) and
  embeds them; here each message is stored as it is (``infer`` and ``prompt`` are
  ignored), reconciled by the library's rules instead: a repeated statement merges into
  the stored one (event ``NONE``). Search is by words (BM25 with the library's signals),
  so a query must share words (or their stems) with a memory, unless an embedder is
  given: ``Memory(embedder=..., embedding_dimension=...)`` as :class:`agent_memory.Memory`
  takes it, or mem0's ``embedder`` config in ``from_config`` (providers ``openai``,
  ``ollama`` and ``lmstudio``, which serve an OpenAI-compatible ``/embeddings``); then
  search finds memories by meaning too.
- **Scores** are the library's, in [0, 1], with ``threshold`` (default 0.05) as the
  minimum; mem0's are similarities.
- **Ids** are the library's (not UUIDs). ``get``, ``update``, ``delete`` and ``history`` by
  id look through the layer's namespaces, a scan of ids in Rust.
- **Where memories live**: ``user_id``, ``agent_id`` and ``run_id`` become the namespace
  ``<prefix>/user:<id>/agent:<id>/run:<id>`` (absent ones left out) and are kept in the
  metadata. Searching by the leading ids (a user; a user's agent) reads that namespace's
  subtree; an id further down given alone (``agent_id`` without ``user_id``) narrows the
  wider search to the memories whose metadata holds it, as a filter's exact string
  values do. Filters on numbers, the other operators and ``AND``/``OR``/``NOT``
  are checked on the search's best 1,000.
- **Messages**: each message of a list is one memory (``system`` messages are skipped),
  with its role in the metadata and the previous message as its searchable context.
- ``update`` replaces the text in place; ``history`` lists the versions the library keeps
  (facts superseded through ``agent_memory.Memory``), not mem0's edit log.
- Filters take exact values, ``"*"``, the operators ``eq``, ``ne``, ``in``, ``nin``,
  ``gt``, ``gte``, ``lt``, ``lte``, ``contains``, ``icontains``, and ``AND``/``OR``/``NOT``.
  Both mem0 forms are accepted: ``search(q, user_id=...)`` and
  ``search(q, filters={"user_id": ...})``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import datetime
from typing import Any, TypeVar

from agent_memory._labels import encode_label
from agent_memory._native import Memory as _NativeMemory
from agent_memory._native import MemoryRecord
from agent_memory.errors import InvalidInputError, NotFoundError

__all__ = ["Memory", "AsyncMemory"]

T = TypeVar("T")

_IDS = ("user_id", "agent_id", "run_id")
_SEGMENT = {"user_id": "user", "agent_id": "agent", "run_id": "run"}
# Shown at the top of a result, as mem0 does; the rest of the metadata goes under "metadata".
_PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role")
_MAX_RESULTS = 1000


def _view(record: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    metadata = record.metadata
    view: dict[str, Any] = {
        "id": record.id,
        "memory": record.text,
        "hash": hashlib.md5(record.text.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
    }
    if score is not None:
        view["score"] = score
    for key in _PROMOTED:
        if key in metadata:
            view[key] = metadata[key]
    rest = {key: value for key, value in metadata.items() if key not in _PROMOTED}
    if rest:
        view["metadata"] = rest
    return view


def _messages(messages: Any) -> list[tuple[str, str]]:
    """``(role, text)`` pairs from a string, a message dict or a list of them."""
    if isinstance(messages, str):
        return [("user", messages)]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence):
        raise InvalidInputError(
            "invalid input: messages: expected a string, a message dict or a list of them",
            field="messages",
            problem="expected a string, a message dict or a list of them",
        )
    pairs = []
    for message in messages:
        if isinstance(message, str):
            pairs.append(("user", message))
            continue
        if not isinstance(message, Mapping):
            raise InvalidInputError(
                "invalid input: messages: each message is a dict with role and content",
                field="messages",
                problem="each message is a dict with role and content",
            )
        role = str(message.get("role", "user"))
        content = message.get("content", "")
        if isinstance(content, list):  # multimodal parts: keep the text ones
            content = " ".join(
                part.get("text", "") for part in content if isinstance(part, Mapping)
            )
        if role != "system" and isinstance(content, str) and content.strip():
            pairs.append((role, content))
    return pairs


def _matches(value: Any, condition: Any) -> bool:
    if condition == "*":
        return value is not None
    if isinstance(condition, Mapping):
        return all(_operator(value, op, operand) for op, operand in condition.items())
    return bool(value == condition)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "eq":
        return bool(value == operand)
    if op == "ne":
        return bool(value != operand)
    if op == "in":
        return bool(value in operand)
    if op == "nin":
        return bool(value not in operand)
    if op in ("contains", "icontains"):
        if not isinstance(value, str) or not isinstance(operand, str):
            return False
        return operand.lower() in value.lower() if op == "icontains" else operand in value
    if op in ("gt", "gte", "lt", "lte"):
        try:
            left, right = float(value), float(operand)
        except (TypeError, ValueError):
            return False
        return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}[op]
    raise InvalidInputError(
        f"invalid input: filters: unsupported operator {op!r}",
        field="filters",
        problem=f"unsupported operator {op!r}",
    )


def _passes(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    for key, condition in filters.items():
        if key == "AND":
            if not all(_passes(metadata, each) for each in condition):
                return False
        elif key == "OR":
            if not any(_passes(metadata, each) for each in condition):
                return False
        elif key == "NOT":
            if any(_passes(metadata, each) for each in condition):
                return False
        elif not _matches(metadata.get(key), condition):
            return False
    return True


def _exact(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """The conditions the library can match itself: a key (1 to 256 bytes) equal to a
    string (alone or as ``eq``), which compares the same in JSON and in Python, at most 32
    of them. The rest (booleans, which Python compares equal to 1 and 0, numbers, other
    operators, ``"*"``, ``AND``/``OR``/``NOT``) are checked on what it returns."""
    exact = {}
    for key, condition in conditions.items():
        if key in ("AND", "OR", "NOT") or not 0 < len(key.encode()) <= 256 or len(exact) == 32:
            continue
        if isinstance(condition, Mapping) and len(condition) == 1 and "eq" in condition:
            condition = condition["eq"]
        if isinstance(condition, str) and condition != "*":
            exact[key] = condition
    return exact


# mem0's default model of its huggingface provider.
_HUGGINGFACE_MODEL = "multi-qa-MiniLM-L6-cos-v1"

# mem0's embedder providers that serve an OpenAI-compatible /embeddings: the config key of
# their base URL, its default, and the default model with its dimension (huggingface with
# a base URL: a text-embeddings-inference server).
_PROVIDERS = {
    "openai": ("openai_base_url", "https://api.openai.com/v1", "text-embedding-3-small", 1536),
    "ollama": ("ollama_base_url", "http://localhost:11434", None, None),
    "lmstudio": ("lmstudio_base_url", "http://localhost:1234/v1", None, None),
    "huggingface_service": ("huggingface_base_url", None, _HUGGINGFACE_MODEL, 384),
}


def _refuse(field: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"invalid input: {field}: {problem}", field=field, problem=problem)


def _check_filters(filters: Any, depth: int = 0) -> None:
    """Refuses filters of the wrong shape, naming ``filters``: a dict with text keys, whose
    ``AND``/``OR``/``NOT`` hold lists of such dicts (at most 32 levels deep)."""
    if depth > 32:
        raise _refuse("filters", "nested more than 32 levels deep")
    if not isinstance(filters, Mapping):
        raise _refuse("filters", f"must be a dict, not {type(filters).__name__}")
    for key, condition in filters.items():
        if not isinstance(key, str):
            raise _refuse("filters", f"keys are text, not {type(key).__name__}")
        if key in ("AND", "OR", "NOT"):
            if isinstance(condition, (str, bytes, Mapping)) or not isinstance(condition, Iterable):
                raise _refuse("filters", f"{key} takes a list of filters")
            for each in condition:
                _check_filters(each, depth + 1)


def _sentence_transformer(settings: Mapping[str, Any]) -> Any:
    """mem0's huggingface provider without a base URL: a local sentence-transformers model,
    which :class:`agent_memory.Memory` takes as it is."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise _refuse(
            "embedder.provider",
            "the huggingface provider without huggingface_base_url runs a local "
            "sentence-transformers model: pip install sentence-transformers",
        ) from error
    kwargs = settings.get("model_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise _refuse("embedder.config.model_kwargs", "a dict")
    return SentenceTransformer(settings.get("model") or _HUGGINGFACE_MODEL, **kwargs)


def _embedder_service(embedder: Any) -> Any:
    """mem0's ``embedder`` config as the embedder :class:`agent_memory.Memory` takes: the
    dict naming an OpenAI-compatible service, or a local sentence-transformers model."""
    if not isinstance(embedder, Mapping):
        raise _refuse("embedder", "a dict with provider and config")
    provider = embedder.get("provider", "openai")
    settings = embedder.get("config") or {}
    if not isinstance(settings, Mapping):
        raise _refuse("embedder.config", "a dict")
    if provider == "huggingface":
        if not settings.get("huggingface_base_url"):
            return _sentence_transformer(settings)
        # A text-embeddings-inference server, reached as mem0 reaches it: its OpenAI API.
        provider = "huggingface_service"
    if provider not in _PROVIDERS:
        raise _refuse(
            "embedder.provider",
            f"{provider!r} serves no OpenAI-compatible /embeddings; use openai, ollama, "
            "lmstudio or huggingface, or give Memory(embedder=...) a callable",
        )
    url_key, default_url, default_model, default_dims = _PROVIDERS[provider]
    model = settings.get("model", default_model)
    if not model:
        raise _refuse("embedder.config.model", f"the {provider} provider needs a model")
    dims = settings.get("embedding_dims")
    if dims is None and model == default_model:
        dims = default_dims
    if dims is None:
        raise _refuse("embedder.config.embedding_dims", "the length of the model's vectors")
    base_url = str(settings.get(url_key) or default_url).rstrip("/")
    if provider == "ollama" and not base_url.endswith("/v1"):
        base_url += "/v1"  # Ollama's OpenAI-compatible API
    service: dict[str, Any] = {"base_url": base_url, "model": model, "dimension": dims}
    if settings.get("api_key"):
        service["api_key"] = settings["api_key"]
    return service



# The metadata keys the library reads as its own settings.
_RESERVED_KEYS = ("_context", "_original", "_pinned", "_decay")


def _check_metadata_keys(metadata: Mapping[str, Any]) -> None:
    """Refuses metadata holding a key the library reads as its own setting."""
    taken = sorted(key for key in metadata if key in _RESERVED_KEYS)
    if taken:
        problem = f"the keys {', '.join(taken)} are the library's own settings; rename them"
        raise InvalidInputError(f"invalid input: metadata: {problem}", field="metadata", problem=problem)


def _wanted(limit: Any, top_k: Any) -> int:
    """How many results a call asks for: ``limit``, else ``top_k``, else 20; a whole number
    of at least 0 (``InvalidInputError`` naming the one given otherwise)."""
    field, value = ("limit", limit) if limit is not None else ("top_k", top_k)
    if value is None:
        return 20
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problem = f"{value!r} is not a whole number of at least 0"
        raise InvalidInputError(f"invalid input: {field}: {problem}", field=field, problem=problem)
    return value

class Memory:
    """mem0's ``Memory`` API on agent-memory. ``store`` is what
    :class:`agent_memory.Memory` takes (nothing: in this process; a SQLite path; a
    PostgreSQL URL), or pass ``memory=`` an existing one. Everything lives under the
    namespace ``prefix``."""

    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        *,
        memory: _NativeMemory | None = None,
        prefix: str = "mem0",
        **memory_options: Any,
    ) -> None:
        if not isinstance(prefix, str) or not prefix.strip("/"):
            # Everything this layer holds, and all that `reset` clears, is under it: an empty
            # prefix would put it beside the store's other memories and clear them too.
            raise _refuse("prefix", "must name a namespace (an empty prefix would hold the whole store)")
        self.memory = memory if memory is not None else _NativeMemory(store, **memory_options)
        self.prefix = prefix.strip("/")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None = None) -> Memory:
        """mem0's constructor from a dict: ``store`` (or ``path``), ``prefix``, and
        ``embedder`` (``{"provider": "openai" | "ollama" | "lmstudio" | "huggingface",
        "config": {"model", "embedding_dims", "api_key", "openai_base_url" |
        "ollama_base_url" | "lmstudio_base_url" | "huggingface_base_url"}}``; huggingface
        without a base URL loads the model with sentence-transformers, as mem0 does). The
        LLM and vector store settings do not apply."""
        config = dict(config or {})
        options: dict[str, Any] = {}
        if config.get("embedder") is not None:
            embedder = _embedder_service(config["embedder"])
            options["embedder"] = embedder
            dims = (config["embedder"].get("config") or {}).get("embedding_dims")
            if not isinstance(embedder, Mapping) and dims is not None:
                options["embedding_dimension"] = dims
        return cls(
            config.get("store", config.get("path")),
            prefix=config.get("prefix", "mem0"),
            **options,
        )

    # Scopes.

    def _ids(self, given: Mapping[str, Any], filters: Mapping[str, Any] | None) -> dict[str, str]:
        if filters is not None:
            _check_filters(filters)
        ids = {key: value for key, value in given.items() if value is not None}
        for key in _IDS:
            if filters and filters.get(key) is not None:
                ids.setdefault(key, filters[key])
        for key, value in ids.items():
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(
                    f"invalid input: {key}: must be a non-empty string",
                    field=key,
                    problem="must be a non-empty string",
                )
        return {key: ids[key].strip() for key in _IDS if key in ids}

    def _namespace(self, ids: Mapping[str, str]) -> str:
        """The namespace a memory with these ids lives in."""
        segments = [self.prefix]
        for key in _IDS:
            if key in ids:
                segments.append(f"{_SEGMENT[key]}:{encode_label(ids[key])}")
        return "/".join(segments)

    def _scope(self, ids: Mapping[str, str]) -> str:
        """The widest namespace holding every memory with these ids: the leading ones."""
        segments = [self.prefix]
        for key in _IDS:
            if key not in ids:
                break
            segments.append(f"{_SEGMENT[key]}:{encode_label(ids[key])}")
        return "/".join(segments)

    @staticmethod
    def _require(ids: Mapping[str, str], call: str) -> None:
        if not ids:
            raise InvalidInputError(
                f"invalid input: user_id: {call} needs at least one of user_id, agent_id, run_id",
                field="user_id",
                problem=f"{call} needs at least one of user_id, agent_id, run_id",
            )

    def _find(self, memory_id: str) -> MemoryRecord | None:
        for record in self.memory.list(self.prefix, id_prefix=memory_id, view="all"):
            if record.id == memory_id:
                return record
        return None

    def _found(self, memory_id: str) -> MemoryRecord:
        record = self._find(memory_id)
        if record is None:
            raise NotFoundError(
                f"not found: memory {memory_id} in {self.prefix}",
                kind="memory",
                namespace=self.prefix,
                id=memory_id,
            )
        return record

    # mem0's methods.

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        timestamp: datetime | str | float | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Stores each message as a memory of the user/agent/run. Returns ``{"results":
        [{"id", "memory", "event"}]}``; ``event`` is ``ADD``, ``NONE`` (merged into the
        stored memory with the same statement, whose id is given) or ``UPDATE`` (it
        superseded older ones). ``infer`` and ``prompt`` are ignored: no model is called."""
        del infer, prompt  # no model is called
        ids = self._ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, None)
        self._require(ids, "add")
        namespace = self._namespace(ids)
        _check_metadata_keys(metadata or {})
        base = {**(metadata or {}), **ids}
        if memory_type is not None:
            base["memory_type"] = memory_type
        results = []
        previous: str | None = None
        for role, text in _messages(messages):
            done = self.memory.remember(
                namespace,
                text,
                metadata={**base, "role": role},
                context=previous,
                created_at=timestamp,
            )
            previous = text
            event = {"added": "ADD", "merged": "NONE", "superseded": "UPDATE"}.get(done.outcome, "ADD")
            results.append({"id": done.id, "memory": text, "event": event})
        return {"results": results}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """The best memories for ``query`` among those of the ids given, best first, each
        with its ``score``. ``limit`` (or ``top_k``) defaults to 20."""
        ids = self._ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, filters)
        self._require(ids, "search")
        wanted = _wanted(limit, top_k)
        if wanted == 0:
            return {"results": []}
        conditions = {**(filters or {}), **ids}
        scope = self._scope(ids)
        # Exact values (ids below the scope among them) narrow the recall itself; the other
        # conditions are checked on its best results.
        exact = _exact(conditions)
        narrow = any(key not in exact for key in conditions)
        result = self.memory.recall(
            scope,
            query,
            max_results=_MAX_RESULTS if narrow else max(1, min(wanted, _MAX_RESULTS)),
            min_score=threshold,
            strategy="memory_only",
            metadata=exact or None,
        )
        found = []
        for hit in result:
            record = hit.record
            if record is None or not _passes(record.metadata, conditions):
                continue
            found.append(_view(record, hit.score))
            if len(found) >= wanted:
                break
        return {"results": found}

    @staticmethod
    def _leading(ids: Mapping[str, str]) -> set[str]:
        leading = set()
        for key in _IDS:
            if key not in ids:
                break
            leading.add(key)
        return leading

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """The memories of the ids given, newest first; ``limit`` (or ``top_k``) defaults
        to 20."""
        ids = self._ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, filters)
        self._require(ids, "get_all")
        wanted = _wanted(limit, top_k)
        if wanted == 0:
            return {"results": []}
        conditions = {**(filters or {}), **ids}
        exact = _exact(conditions)
        records = self.memory.list(
            self._scope(ids),
            metadata=exact,
            newest_first=True,
            limit=None if any(key not in exact for key in conditions) else wanted,
        )
        found = [_view(record) for record in records if _passes(record.metadata, conditions)]
        return {"results": found[:wanted]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """The memory with this id, or None."""
        record = self._find(memory_id)
        return None if record is None else _view(record)

    def update(self, memory_id: str, data: str) -> dict[str, str]:
        """Replaces the memory's text, keeping everything else: its id, metadata, fact key,
        pin, creation time and recall statistics (:meth:`agent_memory.Memory.update`).

        :raises NotFoundError: when there is no such memory.
        :raises InvalidInputError: (``memory_id``) when the memory is an ended version of a
            fact (superseded, retracted): its history is not rewritten; the current version
            is the one to update.
        """
        if not isinstance(data, str):
            raise _refuse("data", f"the new text, not {type(data).__name__}")
        record = self._found(memory_id)
        if record.ended is not None:
            problem = f"memory {memory_id} has ended ({record.ended.get('reason')}); update the current version"
            raise InvalidInputError(f"invalid input: memory_id: {problem}", field="memory_id", problem=problem)
        # Refused too when a concurrent write ends it between the check above and the write.
        self.memory.update(record.namespace, record.id, text=data, only_current=True)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Deletes the memory (and the versions of its fact).

        :raises NotFoundError: when there is no such memory.
        """
        record = self._found(memory_id)
        self.memory.forget(record.namespace, record.id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, str]:
        """Deletes every memory of the ids given."""
        ids = self._ids({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, None)
        self._require(ids, "delete_all")
        if set(ids) == self._leading(ids):
            self.memory.clear(self._scope(ids))
        else:
            for record in self.memory.list(self._scope(ids), metadata=ids, view="all"):
                self.memory.forget(record.namespace, record.id)
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The versions the library keeps of the memory's fact, oldest first: dicts with
        ``id``, ``memory_id``, ``old_memory``, ``new_memory``, ``event`` and times."""
        record = self._found(memory_id)
        versions = self.memory.history(record.namespace, record.id)
        events = []
        previous: str | None = None
        for version in versions:
            events.append(
                {
                    "id": version.id,
                    "memory_id": memory_id,
                    "old_memory": previous,
                    "new_memory": version.text,
                    "event": "ADD" if previous is None else "UPDATE",
                    "created_at": version.created_at.isoformat(),
                    "updated_at": version.updated_at.isoformat(),
                    "is_deleted": False,
                }
            )
            previous = version.text
        return events

    def reset(self) -> None:
        """Deletes every memory of this layer (everything under ``prefix``)."""
        self.memory.clear(self.prefix)


class AsyncMemory:
    """mem0's ``AsyncMemory``: :class:`Memory`'s methods as coroutines, each run in a
    worker thread (``loop.run_in_executor``) with the GIL released while Rust works."""

    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        *,
        memory: _NativeMemory | None = None,
        prefix: str = "mem0",
        executor: Executor | None = None,
        **memory_options: Any,
    ) -> None:
        self.sync = Memory(store, memory=memory, prefix=prefix, **memory_options)
        self._executor = executor

    async def _run(self, method: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(method, *args, **kwargs))

    async def add(self, messages: Any, **options: Any) -> dict[str, list[dict[str, Any]]]:
        """See :meth:`Memory.add`."""
        return await self._run(self.sync.add, messages, **options)

    async def search(self, query: str, **options: Any) -> dict[str, list[dict[str, Any]]]:
        """See :meth:`Memory.search`."""
        return await self._run(self.sync.search, query, **options)

    async def get_all(self, **options: Any) -> dict[str, list[dict[str, Any]]]:
        """See :meth:`Memory.get_all`."""
        return await self._run(self.sync.get_all, **options)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """See :meth:`Memory.get`."""
        return await self._run(self.sync.get, memory_id)

    async def update(self, memory_id: str, data: str) -> dict[str, str]:
        """See :meth:`Memory.update`."""
        return await self._run(self.sync.update, memory_id, data)

    async def delete(self, memory_id: str) -> dict[str, str]:
        """See :meth:`Memory.delete`."""
        return await self._run(self.sync.delete, memory_id)

    async def delete_all(self, **options: Any) -> dict[str, str]:
        """See :meth:`Memory.delete_all`."""
        return await self._run(self.sync.delete_all, **options)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """See :meth:`Memory.history`."""
        return await self._run(self.sync.history, memory_id)

    async def reset(self) -> None:
        """See :meth:`Memory.reset`."""
        return await self._run(self.sync.reset)
