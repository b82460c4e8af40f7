"""Errors raise one exception class per kind, and bad input names the argument at fault."""

from __future__ import annotations

import builtins
import math

import pytest

import agent_memory
from agent_memory import (
    AgentMemoryError,
    AlreadyExistsError,
    ConflictError,
    InvalidInputError,
    LimitExceededError,
    Memory,
    MemoryTimeoutError,
    NotFoundError,
    SerializationError,
    StorageError,
    UnavailableError,
)

ALL = [NotFoundError, AlreadyExistsError, InvalidInputError, StorageError, UnavailableError,
       MemoryTimeoutError, ConflictError, SerializationError, LimitExceededError]


def test_one_class_per_kind_under_one_base() -> None:
    assert agent_memory.MemoryError is AgentMemoryError
    assert "MemoryError" not in agent_memory.__all__  # a star import keeps the builtin
    assert AgentMemoryError is not builtins.MemoryError
    assert len(set(ALL)) == len(ALL)
    for cls in ALL:
        assert issubclass(cls, AgentMemoryError)
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(NotFoundError, LookupError)
    assert issubclass(MemoryTimeoutError, TimeoutError)
    assert issubclass(UnavailableError, ConnectionError)
    recoverable = {cls for cls in ALL if cls.recoverable}
    assert recoverable == {NotFoundError, UnavailableError, MemoryTimeoutError, ConflictError}


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.remember("u", ""), "text"),
        (lambda m: m.remember("u", "text", importance=1.5), "importance"),
        (lambda m: m.remember("u", "text", importance=math.nan), "importance"),
        (lambda m: m.remember("u", "text", credibility=-1.0), "credibility"),
        (lambda m: m.remember("user 42", "text"), "namespace"),
        (lambda m: m.remember("", "text"), "namespace"),
        (lambda m: m.remember("u", "text", kind="forever"), "kind"),
        (lambda m: m.remember("u", "text", metadata={"when": object()}), "metadata"),
        (lambda m: m.remember("u", "text", metadata={1: "x"}), "metadata"),
        (lambda m: m.remember("u", "text", metadata={"x": math.inf}), "metadata"),
        (lambda m: m.remember("u", "text", metadata={"x": 2**70}), "metadata"),
        (lambda m: m.remember("u", "text", metadata=["not", "a", "dict"]), "metadata"),
        (lambda m: m.remember("u", "text", metadata={"k": "\ud800"}), "metadata"),
        (lambda m: m.remember("u", "text", metadata={"\udc00": 1}), "metadata"),
        (lambda m: m.remember("u", "text", created_at=10**400), "created_at"),
        (lambda m: m.remember("u", "text", created_at="\ud800"), "created_at"),
        (lambda m: m.remember("u", "text", tags=["x" * 1000]), "tag"),
        (lambda m: m.remember("u", "text", id=""), "id"),
        (lambda m: m.remember("u", "text", created_at="yesterday"), "created_at"),
        (lambda m: m.remember("u", "text", created_at=[2024]), "created_at"),
        (lambda m: m.remember("u", "text", fact_key=""), "fact_key"),
        (lambda m: m.recall("u", "q", max_results=0), "max_results"),
        (lambda m: m.recall("u", "q", min_score=2.0), "min_score"),
        (lambda m: m.recall("u", "q", view="future"), "view"),
        (lambda m: m.recall("u", "q", strategy="psychic"), "strategy"),
        (lambda m: m.recall("u", "q", graph_depth=10_000), "graph_depth"),
        (lambda m: m.recall("u", "q", kinds=["nope"]), "kind"),
        (lambda m: m.list("u", view="later"), "view"),
        (lambda m: m.put("u", "k", "", metadata={}), "text"),
        (lambda m: m.retract("u", "id", "r" * 100_000), "reason"),
        (lambda m: m.context("u/", "q", 10, session=""), "session"),
        # A negative count names its argument (it had raised an OverflowError naming none).
        (lambda m: m.recall("u", "q", max_results=-1), "max_results"),
        (lambda m: m.recall("u", "q", graph_depth=-1), "graph_depth"),
        (lambda m: m.context("u", "q", -1), "max_tokens"),
        (lambda m: m.context("u", "q", 10, session="s", turns=-2), "turns"),
        (lambda m: m.list("u", limit=-1), "limit"),
        (lambda m: m.entities("u", limit=-5), "limit"),
        (lambda m: m.related("u", "e", depth=-1), "depth"),
    ],
)
def test_bad_input_names_the_field(memory: Memory, call, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        call(memory)
    error = caught.value
    assert error.field == field, str(error)
    assert error.problem and field in str(error) and error.message == str(error)
    assert not error.recoverable


def test_metadata_that_shares_itself_is_refused_at_its_size(memory: Memory) -> None:
    # Each level holds the one below twice: 2**24 values as JSON, from 24 lists.
    shared: object = 0
    for _ in range(24):
        shared = [shared, shared]
    with pytest.raises(InvalidInputError) as caught:
        memory.remember("u", "text", metadata={"k": shared})
    assert caught.value.field == "metadata"
    assert "bytes as JSON" in caught.value.problem
    assert memory.list("u") == []


def test_deep_and_self_containing_metadata_is_refused(memory: Memory) -> None:
    deep: dict = {}
    cursor = deep
    for _ in range(100):
        cursor["next"] = {}
        cursor = cursor["next"]
    with pytest.raises(InvalidInputError) as caught:
        memory.remember("u", "text", metadata=deep)
    assert caught.value.field == "metadata"
    loop: list = []
    loop.append(loop)
    with pytest.raises(InvalidInputError):
        memory.remember("u", "text", metadata={"loop": loop})


def test_metadata_changed_while_it_converts_is_read_as_it_was(memory: Memory) -> None:
    # A list subclass whose iteration adds a key to the dict holding it: the dict changes
    # while it is read, which had panicked (PanicException, no Exception at all).
    metadata: dict = {}

    class Growing(list):
        def __iter__(self):
            metadata[f"k{len(metadata)}"] = 1
            return iter([1, 2])

    metadata["a"] = Growing()
    done = memory.remember("u", "text", metadata=metadata)
    assert memory.get("u", done.id).metadata == {"a": [1, 2]}
    conditions: dict = {}

    class Adding(list):
        def __iter__(self):
            conditions["extra"] = 1
            return iter([1, 2])

    conditions["a"] = Adding()
    assert [record.id for record in memory.list("u", metadata=conditions)] == [done.id]


def test_bad_settings_name_the_setting() -> None:
    for kwargs, field in [
        ({"eviction": {"policy": "sometimes"}}, "eviction"),
        ({"eviction": "capacity"}, "eviction"),  # needs max_items
        ({"decay": {"daily_rate": "fast"}}, "decay"),
        ({"facts": {"duplicates": "maybe"}}, "facts"),
        ({"retriever": {"max_results": 0}}, "max_results"),
        ({"eviction": {"policy": "capacity", "max_items": 4}, "check_interval": -1},
         "check_interval"),
        ({"embedder": lambda texts: [[1.0] for _ in texts], "embedding_dimension": -1},
         "embedding_dimension"),
        ({"store": 42}, "store"),
    ]:
        store = kwargs.pop("store", None)
        with pytest.raises(InvalidInputError) as caught:
            Memory(store, **kwargs)
        assert caught.value.field == field, (kwargs, str(caught.value))


def test_not_found(memory: Memory) -> None:
    keep = memory.remember("u", "a memory that exists").id
    with pytest.raises(NotFoundError) as caught:
        memory.supersede("u", "missing", keep)
    error = caught.value
    assert (error.kind, error.namespace, error.id) == ("memory", "u", "missing")
    assert error.recoverable and isinstance(error, LookupError)
    with pytest.raises(NotFoundError):
        memory.retract("u", "missing", "because")


def test_already_exists_and_conflict_from_policies() -> None:
    strict = Memory(facts={"duplicates": "reject", "conflicts": "reject"})
    strict.remember("u", "The user is 30 years old")
    with pytest.raises(AlreadyExistsError):
        strict.remember("u", "The user is 30 years old")
    with pytest.raises(ConflictError) as caught:
        strict.remember("u", "The user is 31 years old")
    assert caught.value.recoverable


def test_storage_error_for_a_file_that_is_not_a_store(tmp_path) -> None:
    path = tmp_path / "not-a-database.db"
    path.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(StorageError):
        Memory(path)


def test_unavailable_for_a_server_that_does_not_answer() -> None:
    # Port 1 on the loopback: nothing listens, so the connection is refused at once.
    with pytest.raises((UnavailableError, MemoryTimeoutError)) as caught:
        Memory("postgres://nobody@127.0.0.1:1/none")
    assert caught.value.recoverable


@pytest.mark.parametrize("setting", ["decay", "facts"])
def test_an_unknown_setting_is_refused_by_name(setting: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        Memory(**{setting: {"bogus": 1}})
    assert refused.value.field == setting
    assert "bogus" in str(refused.value)
    Memory(**{setting: {}})  # the defaults


def test_a_count_below_its_range_gets_the_range(memory: Memory) -> None:
    problems = set()
    for n in (-1, 0, 1001):
        with pytest.raises(InvalidInputError) as refused:
            memory.recall("u", "q", max_results=n)
        assert refused.value.field == "max_results"
        problems.add(refused.value.problem)
    assert len(problems) == 1, problems


@pytest.mark.parametrize("store", ["", "   "])
def test_an_empty_store_location_is_refused(store: str, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as raised:
        Memory(store)
    assert raised.value.field == "store"
    assert list(tmp_path.iterdir()) == []
