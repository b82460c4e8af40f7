"""AgentMemoryStore: LangGraph's BaseStore operations, and a graph that reads and writes
memories through its store (no model calls)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from agent_memory import InvalidInputError, Memory  # noqa: E402
from agent_memory.langgraph import AgentMemoryStore, decode_label, encode_label  # noqa: E402


@pytest.fixture
def store() -> AgentMemoryStore:
    return AgentMemoryStore()


def fill(store: BaseStore) -> None:
    store.put(("users", "alice", "memories"), "m1", {"text": "Alice likes hiking in the Alps", "kind": "hobby", "rating": 5})
    store.put(("users", "alice", "memories"), "m2", {"text": "Alice drinks green tea", "kind": "food", "rating": 3})
    store.put(("users", "alice", "profile"), "p", {"name": "Alice", "city": "Zurich"})
    store.put(("users", "bob", "memories"), "m1", {"text": "Bob likes hiking too", "kind": "hobby", "rating": 4})


def test_is_a_base_store(store: AgentMemoryStore) -> None:
    assert isinstance(store, BaseStore) and store.supports_ttl is False


def test_put_get_replace_delete(store: AgentMemoryStore) -> None:
    fill(store)
    item = store.get(("users", "alice", "memories"), "m1")
    assert isinstance(item, Item)
    assert item.key == "m1" and item.namespace == ("users", "alice", "memories")
    assert item.value == {"text": "Alice likes hiking in the Alps", "kind": "hobby", "rating": 5}
    created = item.created_at
    store.put(("users", "alice", "memories"), "m1", {"text": "Alice now prefers climbing", "kind": "hobby", "rating": 5})
    again = store.get(("users", "alice", "memories"), "m1")
    assert again.value["text"] == "Alice now prefers climbing"
    assert again.created_at == created and again.updated_at >= created
    assert store.get(("users", "alice", "memories"), "missing") is None
    assert store.get(("users", "carol"), "m1") is None
    store.delete(("users", "alice", "memories"), "m1")
    assert store.get(("users", "alice", "memories"), "m1") is None
    # Deleting what is not there is fine.
    store.delete(("users", "alice", "memories"), "m1")


def test_search_by_query_ranks_and_scores(store: AgentMemoryStore) -> None:
    fill(store)
    hits = store.search(("users",), query="hiking")
    assert [(hit.namespace[1], hit.key) for hit in hits] == [("alice", "m1"), ("bob", "m1")] or \
        [(hit.namespace[1], hit.key) for hit in hits] == [("bob", "m1"), ("alice", "m1")]
    assert all(isinstance(hit, SearchItem) and 0 < hit.score <= 1 for hit in hits)
    alice = store.search(("users", "alice"), query="hiking tea")
    assert {hit.key for hit in alice} == {"m1", "m2"}
    assert store.search(("users", "alice"), query="hiking", limit=1)[0].key == "m1"
    assert store.search(("users",), query="hiking", limit=1, offset=1)[0].key == "m1"
    assert store.search(("users",), query="hiking", offset=2) == []
    assert store.search(("users",), query="hiking", filter={"rating": {"$gte": 5}})[0].namespace[1] == "alice"
    assert store.search(("users",), query="hiking", filter={"kind": "food"}) == []
    assert store.search(("nobody",), query="hiking") == []


def test_an_exact_filter_ranks_among_the_items_that_hold_it(store: AgentMemoryStore) -> None:
    # More than the 1,000 best match the query better than the one item the filter keeps.
    for n in range(1_050):
        store.put(("docs",), f"d{n}", {"text": "hiking hiking trail", "owner": "bob"})
    store.put(("docs",), "mine", {"text": "a long note that mentions hiking once among many other words", "owner": "ann"})
    assert [hit.key for hit in store.search(("docs",), query="hiking", filter={"owner": "ann"})] == ["mine"]
    assert [hit.key for hit in store.search(("docs",), query="hiking", filter={"owner": {"$eq": "ann"}})] == ["mine"]
    # A boolean is checked as Python compares it (True equals 1), and many conditions are fine.
    store.put(("docs",), "flagged", {"text": "hiking boots", "owner": "ann", "flag": 1})
    assert [hit.key for hit in store.search(("docs",), query="boots", filter={"flag": True})] == ["flagged"]
    many = {f"k{n}": "x" for n in range(40)}
    assert store.search(("docs",), query="boots", filter=many) == []
    # Other operators are checked on the best 1,000 the query ranks.
    assert store.search(("docs",), query="hiking", filter={"owner": {"$ne": "bob"}}) == []


def test_search_without_query_lists_with_filters(store: AgentMemoryStore) -> None:
    fill(store)
    everything = store.search(())
    assert len(everything) == 4 and all(hit.score is None for hit in everything)
    # Newest first.
    assert (everything[0].namespace, everything[0].key) == (("users", "bob", "memories"), "m1")
    assert {hit.key for hit in store.search(("users", "alice"))} == {"m1", "m2", "p"}
    hobbies = store.search(("users",), filter={"kind": "hobby"})
    assert {hit.namespace[1] for hit in hobbies} == {"alice", "bob"}
    assert [hit.key for hit in store.search(("users",), filter={"rating": {"$lt": 4}})] == ["m2"]
    assert [hit.key for hit in store.search(("users",), filter={"rating": 3})] == ["m2"]
    assert [hit.key for hit in store.search(("users",), filter={"rating": {"$ne": 3}, "kind": {"$eq": "hobby"}}, limit=1)] == ["m1"]
    assert len(store.search(("users",), limit=2)) == 2
    assert len(store.search(("users",), limit=2, offset=3)) == 1


def test_list_namespaces(store: AgentMemoryStore) -> None:
    fill(store)
    assert store.list_namespaces() == [
        ("users", "alice", "memories"),
        ("users", "alice", "profile"),
        ("users", "bob", "memories"),
    ]
    assert store.list_namespaces(prefix=("users", "alice")) == [
        ("users", "alice", "memories"),
        ("users", "alice", "profile"),
    ]
    assert store.list_namespaces(suffix=("memories",)) == [
        ("users", "alice", "memories"),
        ("users", "bob", "memories"),
    ]
    assert store.list_namespaces(prefix=("users", "*", "memories")) == [
        ("users", "alice", "memories"),
        ("users", "bob", "memories"),
    ]
    assert store.list_namespaces(max_depth=2) == [("users", "alice"), ("users", "bob")]
    assert store.list_namespaces(limit=1, offset=1) == [("users", "alice", "profile")]


def test_batch_runs_every_op_in_order(store: AgentMemoryStore) -> None:
    ns = ("docs", "v1")
    results = store.batch([
        PutOp(ns, "a", {"text": "alpha release notes"}),
        GetOp(ns, "a"),
        SearchOp(("docs",), query="release"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
        PutOp(ns, "a", None),
        GetOp(ns, "a"),
    ])
    assert results[0] is None and results[1].value == {"text": "alpha release notes"}
    assert [hit.key for hit in results[2]] == ["a"]
    assert results[3] == [("docs", "v1")]
    assert results[4] is None and results[5] is None


def test_any_label_round_trips(store: AgentMemoryStore) -> None:
    for label in ["plain", "with space", "ümlaut", "a/b", "50%", "at@sign", "", "emoji 🎉", "..", "x:y-z_1.2"]:
        assert decode_label(encode_label(label)) == label
        # batch directly: LangGraph's put refuses periods and empty labels, the store does not.
        ns = ("labels", label, label)
        store.batch([PutOp(ns, "k", {"text": f"label {label}"})])
        assert store.batch([GetOp(ns, "k")])[0].namespace == ns
    assert ("labels", "with space", "with space") in store.list_namespaces(prefix=("labels",))
    assert encode_label("plain") == "plain" and encode_label("a b") == "a@20b"


def test_index_fields_choose_the_searched_text() -> None:
    store = AgentMemoryStore(index={"fields": ["summary", "notes[*].text"]})
    store.put(("n",), "a", {"summary": "quarterly report", "body": "zebra", "notes": [{"text": "giraffe"}]})
    assert [hit.key for hit in store.search(("n",), query="report")] == ["a"]
    assert [hit.key for hit in store.search(("n",), query="giraffe")] == ["a"]
    assert store.search(("n",), query="zebra") == []
    # put's own index overrides the store's.
    store.put(("n",), "b", {"summary": "x", "body": "okapi"}, index=["body"])
    assert [hit.key for hit in store.search(("n",), query="okapi")] == ["b"]
    # A value without text is still stored and found by its JSON form.
    store.put(("n",), "c", {"count": 7})
    assert store.get(("n",), "c").value == {"count": 7}


def test_prefix_keeps_the_store_apart(store: AgentMemoryStore) -> None:
    memory = Memory()
    memory.remember("other", "hiking unrelated to the store")
    scoped = AgentMemoryStore(memory, prefix="graph-store")
    scoped.put(("u",), "k", {"text": "hiking in the store"})
    assert memory.namespaces() == ["graph-store/u", "other"]
    assert [hit.key for hit in scoped.search((), query="hiking")] == ["k"]
    assert scoped.list_namespaces() == [("u",)]


def test_bad_values_raise_invalid_input(store: AgentMemoryStore) -> None:
    with pytest.raises(InvalidInputError) as caught:
        store.put(("u",), "k", {"when": object()})
    assert caught.value.field == "metadata"
    with pytest.raises(ValueError):  # LangGraph's own check of labels
        store.put(("u.v",), "k", {"text": "x"})


def test_async_operations(store: AgentMemoryStore) -> None:
    async def main() -> None:
        await store.aput(("a",), "k1", {"text": "asynchronous hiking notes"})
        await asyncio.gather(*(store.aput(("a",), f"k{n}", {"text": f"note {n} about hiking"}) for n in range(2, 12)))
        assert (await store.aget(("a",), "k1")).value["text"] == "asynchronous hiking notes"
        hits = await store.asearch(("a",), query="hiking", limit=20)
        assert len(hits) == 11
        assert await store.alist_namespaces() == [("a",)]
        await store.adelete(("a",), "k1")
        assert await store.aget(("a",), "k1") is None

    asyncio.run(main())


def test_persists_in_sqlite(tmp_path) -> None:
    path = tmp_path / "graph.db"
    AgentMemoryStore(str(path)).put(("u",), "k", {"text": "kept across stores"})
    assert AgentMemoryStore(path).get(("u",), "k").value == {"text": "kept across stores"}


def build_graph():
    from typing_extensions import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        user: str
        message: str
        recalled: list[str]

    def remember(state: State, *, store: BaseStore) -> dict:
        store.put(("users", state["user"], "memories"), str(uuid.uuid4()), {"text": state["message"]})
        return {}

    def recall(state: State, runtime: Runtime) -> dict:
        hits = runtime.store.search(("users", state["user"]), query=state["message"], limit=3)
        return {"recalled": [hit.value["text"] for hit in hits]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph


def test_a_langgraph_graph_remembers_and_recalls_through_its_store() -> None:
    pytest.importorskip("langgraph.graph")
    store = AgentMemoryStore()
    app = build_graph().compile(store=store)
    app.invoke({"user": "alice", "message": "I love hiking in the Alps", "recalled": []})
    app.invoke({"user": "bob", "message": "I love sailing", "recalled": []})
    out = app.invoke({"user": "alice", "message": "Where do I go hiking?", "recalled": []})
    assert "I love hiking in the Alps" in out["recalled"]
    assert all("sailing" not in text for text in out["recalled"])
    assert store.list_namespaces(max_depth=2) == [("users", "alice"), ("users", "bob")]

    async def asynchronous() -> dict:
        return await app.ainvoke({"user": "bob", "message": "Do I like sailing?", "recalled": []})

    assert "I love sailing" in asyncio.run(asynchronous())["recalled"]


def _toy_embed(texts: list[str]) -> list[list[float]]:
    """Pets, vehicles, and a small constant so no vector is zero."""
    classes = {"cat": 0, "kitten": 0, "dog": 0, "car": 1, "bike": 1}
    vectors = []
    for text in texts:
        vector = [0.0, 0.0, 0.1]
        for word in text.lower().replace("?", " ").split():
            if word in classes:
                vector[classes[word]] += 1.0
        vectors.append(vector)
    return vectors


def test_index_embed_searches_by_meaning() -> None:
    class ToyEmbeddings:
        """The LangChain Embeddings interface: documents and queries."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _toy_embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return _toy_embed([text])[0]

    for embed in (_toy_embed, ToyEmbeddings()):
        store = AgentMemoryStore(index={"dims": 3, "embed": embed, "fields": ["text"]})
        store.put(("u",), "pet", {"text": "I adopted a kitten"})
        store.put(("u",), "ride", {"text": "The bike has a flat tyre"})
        found = store.search(("u",), query="which cat do I have?")
        assert [item.key for item in found][:1] == ["pet"], embed

    words_only = AgentMemoryStore(index={"fields": ["text"]})
    words_only.put(("u",), "pet", {"text": "I adopted a kitten"})
    assert words_only.search(("u",), query="which cat do I have?") == []


def test_index_embed_queries_through_embed_query() -> None:
    class QueryForm:
        """A model whose query form reads "animal" as a pet; its documents form does not."""

        def __init__(self) -> None:
            self.queries: list[str] = []

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _toy_embed(texts)

        def embed_query(self, text: str) -> list[float]:
            self.queries.append(text)
            return _toy_embed([text.replace("animal", "cat")])[0]

    model = QueryForm()
    store = AgentMemoryStore(index={"dims": 3, "embed": model, "fields": ["text"]})
    store.put(("u",), "pet", {"text": "I adopted a kitten"})
    store.put(("u",), "ride", {"text": "The bike has a flat tyre"})
    found = store.search(("u",), query="which animal do I have?")
    assert [item.key for item in found][:1] == ["pet"]
    assert model.queries == ["which animal do I have?"]


@pytest.mark.parametrize(
    "options",
    [
        {"index": {"dims": 3, "embed": "openai:text-embedding-3-small"}},
        {"index": {"dims": 3, "embed": 42}},
        {"memory": Memory(), "index": {"dims": 3, "embed": _toy_embed}},
    ],
)
def test_index_embed_that_cannot_be_used_is_refused(options: dict) -> None:
    with pytest.raises(InvalidInputError) as raised:
        AgentMemoryStore(**options)
    assert raised.value.field == "index.embed"


def test_index_embed_without_dims_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        AgentMemoryStore(index={"embed": _toy_embed})
    assert raised.value.field == "embedding_dimension"


def test_values_with_the_librarys_keys_are_refused(store: AgentMemoryStore) -> None:
    for value in [{"_pinned": True, "title": "hello"}, {"_context": "secret", "title": "x"}, {"_original": 5}]:
        with pytest.raises(InvalidInputError) as raised:
            store.put(("cfg",), "k", value)
        assert raised.value.field == "value"
    assert store.get(("cfg",), "k") is None
    store.put(("cfg",), "k", {"pinned": True, "title": "hello"})
    assert store.get(("cfg",), "k").value == {"pinned": True, "title": "hello"}


def test_an_async_embed_is_refused_when_the_store_is_made() -> None:
    async def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    with pytest.raises(InvalidInputError) as raised:
        AgentMemoryStore(index={"dims": 4, "embed": embed})
    assert raised.value.field == "index.embed"
