"""Type stubs of the native module (the Rust crate agent-memory-py)."""

import builtins
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Protocol, final, overload

__version__: str

Time = datetime | str | float
"""A time: a ``datetime`` (naive ones are UTC), an RFC 3339 string, or epoch seconds."""

Kind = Literal["short_term", "long_term", "episodic", "semantic"]

class _Embeddings(Protocol):
    """An embedder with a query form, as a LangChain ``Embeddings`` has."""

    def embed_documents(self, texts: list[str]) -> Sequence[Sequence[float]]: ...
    def embed_query(self, text: str) -> Sequence[float]: ...

class _SentenceEncoder(Protocol):
    """A sentence-transformers model, by its ``encode`` (and ``encode_query`` and
    ``encode_document`` where it has them)."""

    def encode(self, sentences: list[str]) -> Any: ...

@final
class MemoryRecord:
    """A stored memory."""

    def __eq__(self, other: object) -> bool:
        """Equal when every field is; results pickle (``pickle``, ``multiprocessing``)."""
    def __hash__(self) -> int: ...
    @property
    def id(self) -> str:
        """Its id, unique within its namespace."""
    @property
    def namespace(self) -> str:
        """Its namespace (``user-1/agent``)."""
    @property
    def text(self) -> str:
        """The text (for a compressed memory, the compressed text)."""
    @property
    def kind(self) -> Kind:
        """``short_term``, ``long_term``, ``episodic`` or ``semantic``."""
    @property
    def importance(self) -> float:
        """Importance in [0, 1]."""
    @property
    def tags(self) -> list[str]:
        """Tags, normalised (lowercase, dashes)."""
    @property
    def metadata(self) -> dict[str, Any]:
        """Metadata (the library's reserved ``_`` keys are attributes instead)."""
    @property
    def source(self) -> str | None:
        """Where it came from, if given."""
    @property
    def context(self) -> str | None:
        """Text that situates it (searchable, not part of it), if any."""
    @property
    def pinned(self) -> bool:
        """Whether maintenance leaves it alone."""
    @property
    def original(self) -> str:
        """The text before compression (the text itself if never compressed)."""
    @property
    def credibility(self) -> float:
        """How far its source is trusted, in [0, 1]."""
    @property
    def created_at(self) -> datetime:
        """When it was remembered (aware, UTC)."""
    @property
    def updated_at(self) -> datetime:
        """When it last changed."""
    @property
    def last_accessed(self) -> datetime | None:
        """When it was last recalled, if ever."""
    @property
    def access_count(self) -> int:
        """How many times it was recalled."""
    @property
    def fact_key(self) -> str | None:
        """The fact it states (``user.city``), if any."""
    @property
    def valid_from(self) -> datetime | None:
        """From when the fact holds in the world, if given."""
    @property
    def valid_until(self) -> datetime | None:
        """Until when the fact holds in the world, if given."""
    @property
    def ended(self) -> dict[str, Any] | None:
        """How it stopped being believed: ``{"at", "reason", "by" | "into" | "why"}``, or None."""
    @property
    def supersedes(self) -> list[str]:
        """The ids of the memories it superseded, oldest first."""
    @property
    def conflicts_with(self) -> list[str]:
        """The ids of memories found to contradict it."""
    def to_dict(self) -> dict[str, Any]:
        """Every attribute as a dict."""

@final
class Hit:
    """One recall result: a memory, a knowledge page or a graph entity."""

    def __eq__(self, other: object) -> bool:
        """Equal when every field is; results pickle (``pickle``, ``multiprocessing``)."""
    def __hash__(self) -> int: ...
    @property
    def source(self) -> Literal["memory", "page", "entity"]:
        """What it is."""
    @property
    def id(self) -> str:
        """Its id."""
    @property
    def namespace(self) -> str:
        """Its namespace."""
    @property
    def text(self) -> str:
        """A memory's text; a page's title and summary; an entity's name, type, description."""
    @property
    def score(self) -> float:
        """The score in [0, 1]; higher is better."""
    @property
    def record(self) -> MemoryRecord | None:
        """The memory found; None for a page or an entity."""
    @property
    def metadata(self) -> dict[str, Any]:
        """A memory's metadata; empty for pages and entities."""
    @property
    def breakdown(self) -> dict[str, Any]:
        """Why it scored what it did: ``{"channels": [...], "signals": {name: {"value",
        "contribution"}}}``."""
    def to_dict(self) -> dict[str, Any]:
        """The hit as a dict: source, id, namespace, text, score, metadata, breakdown."""

@final
class RecallResult:
    """What a recall found: a sequence of hits, best first."""

    def __eq__(self, other: object) -> bool:
        """Equal when every field is; results pickle (``pickle``, ``multiprocessing``)."""
    def __hash__(self) -> int: ...
    @property
    def query(self) -> str:
        """The query as given."""
    @property
    def total_found(self) -> int:
        """Candidates scored before the threshold and the cut."""
    @property
    def hits(self) -> list[Hit]:
        """The hits as a list."""
    def texts(self) -> list[str]:
        """The hits' texts, best first."""
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int) -> Hit: ...
    @overload
    def __getitem__(self, index: slice) -> list[Hit]: ...
    def __iter__(self) -> Iterator[Hit]: ...
    def __bool__(self) -> bool: ...

@final
class Remembered:
    """What ``remember`` did."""

    def __eq__(self, other: object) -> bool:
        """Equal when every field is; results pickle (``pickle``, ``multiprocessing``)."""
    def __hash__(self) -> int: ...
    @property
    def id(self) -> str:
        """The id the text lives under: the new memory's, or the one it merged into."""
    @property
    def outcome(self) -> Literal["added", "merged", "superseded", "outdated"]:
        """``added``; ``merged`` (a duplicate: nothing new stored); ``superseded`` (it
        replaced older memories of its fact); ``outdated`` (stored as history)."""
    @property
    def superseded(self) -> list[str]:
        """The memories it superseded (outcome ``superseded``)."""
    @property
    def outdated_by(self) -> str | None:
        """The later version that supersedes it (outcome ``outdated``)."""
    @property
    def conflicts(self) -> list[dict[str, str]]:
        """Stored memories it contradicts: ``{"id", "reason"}``."""

@final
class Memory:
    """Long-term memory for an agent: remember text, recall the best of it for a query with
    each score explained, build prompt context, forget, maintain.

    ``Memory()`` keeps everything in this process; ``Memory("agent.db")`` in a SQLite file;
    ``Memory("postgres://user@host/db")`` on a PostgreSQL server (``postgres_schema``
    names the schema). Namespaces are strings like ``"user-42/agent-a/session-7"``; reads
    cover a namespace and everything under it (only it with ``exact=True``; ``""`` is all).

    Settings are dicts with the Rust field names: ``eviction`` (``{"policy":
    "value_based", "max_items": 1000}``, ``{"policy": "capacity", "max_items": 100}``,
    ``{"policy": "ttl", "ttl_secs": 86400}``...), ``check_interval``, ``decay``,
    ``facts`` and ``retriever`` (a key ``retriever`` does not have raises
    ``InvalidInputError``). Every method releases the GIL while the library works.

    ``embedder`` turns on the embedding channel, so recall also finds memories by meaning:
    a callable taking a list of texts and returning one vector per text (with
    ``embedding_dimension``); an object with ``embed_documents`` and ``embed_query``, such
    as a LangChain ``Embeddings`` (stored texts through the first, a recall's query through
    the second, as models with distinct query and document forms need; with
    ``embedding_dimension``); a sentence-transformers model (``encode_document`` and
    ``encode_query``, else ``encode``; its own length unless ``embedding_dimension`` is
    given); or a dict naming an OpenAI-compatible ``/embeddings`` service
    (``{"base_url": ..., "model": ..., "dimension": ...}``, optionally ``"query_prefix":
    "query: "`` and ``"document_prefix": "passage: "`` for such models). A memory the
    embedder fails on is not stored. The embedder runs inside the call that needs it, so
    it may not call a ``Memory`` method itself (of any memory): that raises
    ``RuntimeError`` within it.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        *,
        postgres_schema: str | None = None,
        eviction: str | Mapping[str, Any] | None = None,
        check_interval: int | None = None,
        decay: Mapping[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
        retriever: Mapping[str, Any] | None = None,
        single_valued_relations: Sequence[str] | None = None,
        embedder: Callable[[list[str]], Sequence[Sequence[float]]] | _Embeddings | _SentenceEncoder | Mapping[str, Any] | None = None,
        embedding_dimension: int | None = None,
    ) -> None: ...
    @property
    def location(self) -> str:
        """``:memory:``, the SQLite path, or the PostgreSQL server."""
    def remember_dialogue(
        self, namespace: str, turns: list[dict[str, Any]]
    ) -> list[Remembered]:
        """Remembers the turns of a dialogue in order, each as ``[date] speaker: text`` with
        its role and session in metadata and its neighbours in the session as context.

        Each turn is a dict with ``text`` and optionally ``speaker``, ``role`` (``user``,
        ``assistant``, ``system``, ``tool``), ``session`` (a string or an int), ``at``,
        ``id``, ``metadata``, ``source``; another key is refused. A turn given an ``id`` is
        stored under it even when it repeats another turn's words. Pass a conversation's
        turns together: a later call starts a new stretch of dialogue.

        :raises InvalidInputError: naming the turn and field (``turns[3].role``); every
            turn is checked before any is stored, so a bad one stores nothing.
        """

    def remember(
        self,
        namespace: str,
        text: str,
        *,
        kind: Kind | None = None,
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
        """Remembers ``text`` in ``namespace``, reconciled with what is stored: duplicates
        merge, a ``fact_key`` supersedes the current memory of that key, contradictions
        are flagged. An ``id`` names the memory (a dialogue's turn id, say): a memory
        already stored under it is replaced whole, pin included, as a turn sent again
        replaces itself; leave ``id`` out for a new one. A stored memory that is part of a
        fact's history (ended, or ending others) is not replaced: the same text, kind and
        fact key sent again writes nothing (``merged`` into it), anything else raises
        ``InvalidInputError`` naming ``id``.

        :raises InvalidInputError: naming the bad argument (``content``, ``importance``,
            ``namespace``, ``metadata``, ``tag``...).
        """
    def put(
        self,
        namespace: str,
        id: str,
        text: str,
        *,
        kind: Kind | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        context: str | None = None,
    ) -> None:
        """Stores ``text`` under ``id`` as given, replacing the memory with that id (its
        creation time and recall statistics kept): a key-value write, without
        reconciliation or an eviction pass. A memory that is part of a fact's history is
        not replaced (``InvalidInputError`` naming ``id``).

        :raises ConflictError: when another write changed the memory while it was replaced
            (nothing written).
        """
    def update(
        self,
        namespace: str,
        id: str,
        *,
        text: str | None = None,
        tags: Sequence[str] | None = None,
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        only_current: bool = False,
    ) -> MemoryRecord:
        """Changes memory ``id``'s ``text``, ``tags``, ``importance`` or ``metadata`` (only
        those given), keeping everything else: kind, source, fact key and validity, pin,
        context, creation time and recall statistics (the library's own metadata keys
        ``_context``, ``_original``, ``_pinned`` and ``_decay`` are refused in ``metadata``;
        a new importance decays from the time of the update). Returns the memory as stored. With
        ``only_current``, an ended memory (superseded, retracted) is refused, as read when
        the update is made.

        :raises NotFoundError: when there is no such memory.
        :raises InvalidInputError: naming the value out of its limits; nothing is written.
        :raises ConflictError: when other writes changed the memory at each of eight
            attempts; nothing is written.
        """
    def recall(
        self,
        namespace: str,
        query: str,
        *,
        exact: bool = False,
        max_results: int | None = None,
        min_score: float | None = None,
        kinds: Sequence[Kind] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        since: Time | None = None,
        until: Time | None = None,
        view: Literal["current", "all"] | None = None,
        as_of: Time | None = None,
        strategy: Literal["hybrid", "memory_only", "knowledge_only", "graph_only"] | None = None,
        scoring: str | Mapping[str, Any] | None = None,
        fusion: str | Mapping[str, Any] | None = None,
        graph_depth: int | None = None,
    ) -> RecallResult:
        """The best memories, pages and entities for ``query``, best first, each with its
        score breakdown. Options override the retrieval settings for this call; ``metadata``
        keeps the memories whose metadata holds each key with its value (pages and entities,
        which carry none, are then left out)."""
    def context(
        self,
        namespace: str,
        query: str,
        max_tokens: int = 500,
        *,
        exact: bool = False,
        session: str | None = None,
        turns: int = 10,
    ) -> str:
        """Prompt-ready text of the best results within ``max_tokens``; with ``session``,
        that conversation's last ``turns`` messages first."""
    def forget(self, namespace: str, id: str) -> bool:
        """Deletes memory ``id`` and every version of its fact. Returns whether it existed."""
    def clear(self, namespace: str, *, exact: bool = False) -> int:
        """Deletes every memory in (and under) ``namespace``; returns how many."""
    def get(self, namespace: str, id: str) -> MemoryRecord | None:
        """Memory ``id`` of ``namespace``, or None."""
    def list(
        self,
        namespace: str = "",
        *,
        exact: bool = False,
        kinds: Sequence[Kind] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        fact_key: str | None = None,
        id_prefix: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        limit: int | None = None,
        newest_first: bool = False,
        view: Literal["current", "all"] = "current",
        after: MemoryRecord | None = None,
    ) -> builtins.list[MemoryRecord]:
        """The memories matching every condition, oldest first (or newest first);
        with ``after`` (the last record of the previous page), the page after it."""
    def namespaces(self, prefix: str = "") -> builtins.list[str]:
        """The namespaces holding memories, in and under ``prefix``, sorted."""
    def history(self, namespace: str, id: str) -> builtins.list[MemoryRecord]:
        """The versions of memory ``id``'s fact, oldest first."""
    def supersede(self, namespace: str, old: str, new: str) -> None:
        """Marks memory ``new`` as superseding memory ``old``. Raises ``InvalidInputError``
        naming ``new`` when it already supersedes 64 memories, ``ConflictError`` when other
        writes changed one of the two at each of eight attempts."""
    def retract(self, namespace: str, id: str, reason: str) -> None:
        """Withdraws memory ``id`` without a replacement; it stays in its history. Raises
        ``ConflictError`` when other writes changed it at each of eight attempts."""
    def pin(self, namespace: str, id: str, pinned: bool = True) -> bool:
        """Pins (or unpins) memory ``id``. Returns whether it exists. Raises
        ``ConflictError`` when other writes changed it at each of eight attempts."""
    def compress(self, namespace: str, id: str, text: str) -> bool:
        """Replaces memory ``id``'s text with ``text``, keeping the original. Raises
        ``ConflictError`` when other writes changed it at each of eight attempts."""
    def add_entity(
        self,
        namespace: str,
        id: str,
        name: str,
        entity_type: str,
        *,
        description: str = "",
        tags: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        """Adds a knowledge-graph entity, or replaces the one with this ``id`` (its relations
        stay). ``attributes`` is a dict of what is known about it; at most 8 distinct ``tags``
        (more raise :class:`InvalidInputError` naming ``tags``)."""
    def get_entity(self, namespace: str, id: str) -> dict[str, Any] | None:
        """Entity ``id`` as a dict, or None."""
    def entities(
        self,
        namespace: str = "",
        *,
        exact: bool = False,
        limit: int | None = None,
        after: dict[str, Any] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """The entities in (and under) ``namespace`` as dicts, by namespace and id; at most
        ``limit``, after ``after`` (the last entity dict of the previous page)."""
    def remove_entity(self, namespace: str, id: str) -> bool:
        """Removes entity ``id`` and its relations; returns whether it existed."""
    def add_relation(
        self,
        namespace: str,
        source_id: str,
        target_id: str,
        relation_type: str,
        weight: float = 1.0,
        *,
        attributes: Mapping[str, Any] | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """Adds ``source_id -[relation_type]-> target_id`` (weight in [0, 1], ``attributes`` a
        dict); adding it again replaces the weight and the attributes. A type named in
        ``single_valued_relations`` closes the current relation of that type from the same
        source (its ``valid_until`` set). Returns the relations it closed, as dicts."""
    def relations(self, namespace: str, id: str) -> builtins.list[dict[str, Any]]:
        """The relations of entity ``id``, both ways, as dicts."""
    def related(self, namespace: str, id: str, depth: int = 2) -> builtins.list[dict[str, Any]]:
        """The entities within ``depth`` hops, nearest first: ``{"entity", "hops", "score", "path"}``."""
    def put_page(
        self,
        namespace: str,
        id: str,
        title: str,
        *,
        summary: str = "",
        content: str = "",
        tags: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
        if_updated_at: str | None = None,
    ) -> dict[str, Any]:
        """Writes knowledge page ``id`` (creates it, or replaces it keeping its creation time);
        ``references`` are the ids of the pages it cites (at most 1,000 distinct). Returns it as :meth:`get_page` does.
        With ``if_updated_at`` (the ``updated_at`` of the page dict the edit was made from), it
        writes only over the page as read: :class:`ConflictError` when another write changed it
        since, :class:`NotFoundError` when it is gone."""
    def get_page(self, namespace: str, id: str) -> dict[str, Any] | None:
        """Knowledge page ``id`` as a dict, with ``referrers`` (the first 100 pages citing it)
        and ``referrers_truncated`` (whether more cite it), or None."""
    def pages(self, namespace: str = "", *, exact: bool = False) -> builtins.list[dict[str, Any]]:
        """The page index by namespace, then title: ``{"id", "namespace", "title", "summary",
        "tags", "updated_at", "referenced_by"}`` per page."""
    def remove_page(self, namespace: str, id: str) -> bool:
        """Removes knowledge page ``id``; returns whether it existed."""
    def conflicts(self, namespace: str = "", *, exact: bool = False) -> builtins.list[dict[str, str]]:
        """Pairs of current memories flagged as contradicting: ``{"namespace", "older", "newer"}``."""
    def stats(self, namespace: str = "", *, exact: bool = False) -> dict[str, Any]:
        """Counts: ``total`` (current memories and history), ``current`` (not ended, not past
        its ``valid_until``: what a recall can find), ``per_kind``, ``per_namespace``, ``mean_access``, ``compressed``,
        ``compression_rate``, ``capacity_use``, ``recalled`` (memories returned by a recall),
        ``mean_recall_score`` (the mean relevance they were returned with, ``None`` before
        the first recall), ``pages``, ``entities``."""
    def maintain(self, namespace: str = "", *, exact: bool = False) -> dict[str, int]:
        """Runs TTL, decay, eviction and compression now; returns what it did."""
    def reembed(self, namespace: str = "", *, exact: bool = False, all: bool = False) -> dict[str, int]:
        """Embeds the stored memories without a vector of the embedder's length (every one
        with ``all=True``, after a change of model); returns ``examined``, ``embedded`` and
        ``skipped`` (edited or deleted meanwhile). Raises ``InvalidInputError`` naming
        ``embedder`` when the memory has none."""
    def flush(self) -> None:
        """Writes pending recall statistics."""
    def close(self) -> None:
        """Writes pending recall statistics (the memory stays usable)."""
    def __enter__(self) -> Memory: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool: ...
