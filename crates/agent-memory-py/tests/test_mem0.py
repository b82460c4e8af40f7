"""The mem0-shaped layer: mem0's calls and result shapes on agent-memory."""

from __future__ import annotations

import asyncio

import pytest

from agent_memory import InvalidInputError, Memory as NativeMemory, NotFoundError
from agent_memory.mem0 import AsyncMemory, Memory


@pytest.fixture
def m() -> Memory:
    return Memory()


def test_add_search_get_all(m: Memory) -> None:
    added = m.add("I like hiking in the Alps", user_id="alice", metadata={"topic": "hobby"})
    [result] = added["results"]
    assert result["event"] == "ADD" and result["memory"] == "I like hiking in the Alps"
    m.add("I like sailing", user_id="bob")

    found = m.search("hiking", user_id="alice", limit=3)["results"]
    assert [f["memory"] for f in found] == ["I like hiking in the Alps"]
    hit = found[0]
    assert hit["id"] == result["id"] and hit["user_id"] == "alice" and hit["role"] == "user"
    assert hit["metadata"] == {"topic": "hobby"} and 0 < hit["score"] <= 1
    assert set(hit) >= {"id", "memory", "hash", "created_at", "updated_at", "score"}
    # mem0 2.x's form: ids in filters, top_k.
    assert m.search("hiking", filters={"user_id": "alice"}, top_k=1)["results"][0]["id"] == hit["id"]
    assert m.search("hiking", user_id="bob")["results"] == []

    everything = m.get_all(user_id="alice")["results"]
    assert [e["id"] for e in everything] == [hit["id"]] and "score" not in everything[0]
    assert m.get(hit["id"])["memory"] == "I like hiking in the Alps"
    assert m.get("missing") is None


def test_messages_roles_and_duplicates(m: Memory) -> None:
    conversation = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What tea do you recommend?"},
        {"role": "assistant", "content": "Green tea from Kyoto."},
    ]
    results = m.add(conversation, user_id="alice", agent_id="tea-bot")["results"]
    assert [r["memory"] for r in results] == ["What tea do you recommend?", "Green tea from Kyoto."]
    again = m.add("Green tea from Kyoto.", user_id="alice", agent_id="tea-bot")["results"][0]
    assert again["event"] == "NONE" and again["id"] == results[1]["id"]
    answer = m.search("tea", user_id="alice", agent_id="tea-bot")["results"]
    assert {a["role"] for a in answer} == {"user", "assistant"}
    assert all(a["agent_id"] == "tea-bot" for a in answer)


def test_scoping_by_user_agent_and_run(m: Memory) -> None:
    m.add("Alice asked the travel agent about Lisbon flights", user_id="alice", agent_id="travel")
    m.add("Alice asked the cooking agent about flights of wine", user_id="alice", agent_id="cook")
    m.add("Bob asked the travel agent about Oslo flights", user_id="bob", agent_id="travel", run_id="r1")
    m.add("The travel agent's own note about flights", agent_id="travel")

    def memories(**ids):
        return sorted(r["memory"].split()[0] for r in m.search("flights", **ids)["results"])

    assert memories(user_id="alice") == ["Alice", "Alice"]
    assert memories(user_id="alice", agent_id="travel") == ["Alice"]
    # An agent across users, as mem0 filters it.
    assert memories(agent_id="travel") == ["Alice", "Bob", "The"]
    assert memories(run_id="r1") == ["Bob"]
    assert memories(user_id="bob", run_id="r1") == ["Bob"]
    assert len(m.get_all(agent_id="travel")["results"]) == 3
    assert len(m.get_all(user_id="alice", limit=1)["results"]) == 1
    m.delete_all(agent_id="travel")
    assert memories(user_id="alice") == ["Alice"]
    m.delete_all(user_id="bob")
    assert m.get_all(user_id="bob")["results"] == []


def test_metadata_filters(m: Memory) -> None:
    for n, topic in enumerate(["food", "food", "sport"]):
        m.add(f"note {n} on {topic} matters", user_id="u", metadata={"topic": topic, "n": n})
    search = lambda filters: sorted(r["metadata"]["n"] for r in m.search("matters", user_id="u", filters=filters)["results"])  # noqa: E731
    assert search({"topic": "food"}) == [0, 1]
    assert search({"n": {"gte": 1}}) == [1, 2]
    assert search({"topic": {"in": ["sport"]}}) == [2]
    assert search({"topic": {"nin": ["sport"]}, "n": {"lt": 1}}) == [0]
    assert search({"topic": {"icontains": "SPO"}}) == [2]
    assert search({"OR": [{"n": 0}, {"n": 2}]}) == [0, 2]
    assert search({"NOT": [{"topic": "food"}]}) == [2]
    assert search({"AND": [{"topic": "food"}, {"n": {"ne": 0}}]}) == [1]
    assert search({"topic": "*"}) == [0, 1, 2]
    listed = m.get_all(user_id="u", filters={"topic": "sport"})["results"]
    assert [r["metadata"]["n"] for r in listed] == [2]
    with pytest.raises(InvalidInputError):
        m.search("matters", user_id="u", filters={"n": {"between": [1, 2]}})


def test_exact_filters_and_ids_narrow_the_search_itself(m: Memory) -> None:
    # More than the best 1,000 match the query better than the memories the filters keep.
    for n in range(1_050):
        m.add(f"hiking hiking trail {n}", user_id=f"u{n % 3}", agent_id="scout", metadata={"owner": "bob"})
    m.add("a long note that mentions hiking once among many other words", user_id="u9", agent_id="guide", metadata={"owner": "ann"})
    found = m.search("hiking", user_id="u9", filters={"owner": "ann"})["results"]
    assert [r["memory"] for r in found] == ["a long note that mentions hiking once among many other words"]
    across_users = m.search("hiking", agent_id="guide")["results"]
    assert [r["agent_id"] for r in across_users] == ["guide"]
    by_eq = m.search("hiking", agent_id="scout", filters={"owner": {"eq": "ann"}})["results"]
    assert by_eq == []
    assert [r["metadata"]["owner"] for r in m.get_all(agent_id="guide", filters={"owner": "ann"})["results"]] == ["ann"]


def test_update_delete_history_reset(m: Memory) -> None:
    memory_id = m.add("I live in Paris", user_id="alice", metadata={"k": 1})["results"][0]["id"]
    assert m.update(memory_id, "I live in Berlin") == {"message": "Memory updated successfully!"}
    updated = m.get(memory_id)
    assert updated["memory"] == "I live in Berlin" and updated["metadata"] == {"k": 1}
    assert updated["user_id"] == "alice"
    history = m.history(memory_id)
    assert history[0]["memory_id"] == memory_id and history[0]["event"] == "ADD"
    assert m.delete(memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None
    with pytest.raises(NotFoundError):
        m.delete(memory_id)
    with pytest.raises(NotFoundError):
        m.update(memory_id, "x")
    m.add("something else", user_id="carol")
    m.reset()
    assert m.get_all(user_id="carol")["results"] == []


def test_ids_are_required_and_checked(m: Memory) -> None:
    with pytest.raises(InvalidInputError) as caught:
        m.add("no owner")
    assert caught.value.field == "user_id"
    with pytest.raises(InvalidInputError):
        m.search("anything")
    with pytest.raises(InvalidInputError) as caught:
        m.add("x", user_id="   ")
    assert caught.value.field == "user_id"
    with pytest.raises(InvalidInputError) as caught:
        m.add(42, user_id="u")  # type: ignore[arg-type]
    assert caught.value.field == "messages"
    # Any characters in ids.
    m.add("ids may hold spaces and slashes", user_id="Ada Lovelace/1815")
    assert m.search("slashes", user_id="Ada Lovelace/1815")["results"][0]["user_id"] == "Ada Lovelace/1815"


def test_shares_a_native_memory_and_from_config(tmp_path) -> None:
    native = NativeMemory()
    layer = Memory(memory=native, prefix="apps/mem0")
    layer.add("shared with the native API", user_id="u")
    assert native.namespaces() == ["apps/mem0/user:u"]
    path = tmp_path / "mem0.db"
    Memory.from_config({"store": str(path), "llm": {"provider": "ignored"}}).add("kept", user_id="u")
    assert Memory(str(path)).get_all(user_id="u")["results"][0]["memory"] == "kept"


def test_async_layer() -> None:
    async def main() -> None:
        m = AsyncMemory()
        added = await m.add("I like asynchronous code", user_id="alice")
        memory_id = added["results"][0]["id"]
        assert (await m.search("asynchronous", user_id="alice"))["results"][0]["id"] == memory_id
        assert len((await m.get_all(user_id="alice"))["results"]) == 1
        assert (await m.get(memory_id))["memory"] == "I like asynchronous code"
        await m.update(memory_id, "I like async code")
        assert len(await m.history(memory_id)) == 1
        await m.delete(memory_id)
        await m.add("x y z", user_id="alice")
        await m.delete_all(user_id="alice")
        await m.reset()
        assert (await m.get_all(user_id="alice"))["results"] == []

    asyncio.run(main())


def test_an_embedder_searches_by_meaning() -> None:
    from _toy import serve, toy

    direct = Memory(embedder=toy, embedding_dimension=4)
    direct.add("I adopted a kitten", user_id="ann")
    bike = direct.add("The bike has a flat tyre", user_id="ann")["results"][0]["id"]
    found = direct.search("which cat do I have?", user_id="ann")["results"]
    assert found[0]["memory"] == "I adopted a kitten"
    direct.update(bike, "I baked bread")  # embedded again
    found = direct.search("what did I cook?", user_id="ann")["results"]
    assert found[0]["memory"] == "I baked bread"

    with serve() as url:
        configured = Memory.from_config({"embedder": {"provider": "openai", "config": {
            "openai_base_url": url, "model": "toy", "embedding_dims": 4, "api_key": "k"}}})
        configured.add("I baked a chocolate cake", user_id="ann")
        configured.add("The bike has a flat tyre", user_id="ann")
        found = configured.search("what did I cook?", user_id="ann")["results"]
        assert found[0]["memory"] == "I baked a chocolate cake"

    words_only = Memory()
    words_only.add("I adopted a kitten", user_id="ann")
    assert words_only.search("which cat do I have?", user_id="ann")["results"] == []


@pytest.mark.parametrize(
    ("embedder", "field"),
    [
        ("openai", "embedder"),
        ({"provider": "cohere", "config": {}}, "embedder.provider"),
        ({"provider": "ollama", "config": {"model": "nomic-embed-text"}},
         "embedder.config.embedding_dims"),
        ({"provider": "lmstudio", "config": {"embedding_dims": 4}}, "embedder.config.model"),
        ({"provider": "openai", "config": "x"}, "embedder.config"),
    ],
)
def test_an_embedder_config_that_cannot_be_used_is_refused(embedder: object, field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        Memory.from_config({"embedder": embedder})
    assert raised.value.field == field


def test_ollama_is_reached_through_its_openai_compatible_api() -> None:
    from agent_memory.mem0 import _embedder_service

    service = _embedder_service({"provider": "ollama", "config": {
        "model": "nomic-embed-text", "embedding_dims": 768}})
    assert service == {"base_url": "http://localhost:11434/v1", "model": "nomic-embed-text",
                       "dimension": 768}
    assert _embedder_service({"provider": "openai"})["dimension"] == 1536


def test_huggingface_is_a_local_model_or_a_service(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from _toy import serve, toy

    from agent_memory.mem0 import _embedder_service

    loaded: list[tuple[str, dict]] = []

    class SentenceTransformer:
        def __init__(self, model: str, **kwargs: object) -> None:
            loaded.append((model, kwargs))

        def get_sentence_embedding_dimension(self) -> int:
            return 4

        def encode(self, texts: list[str]) -> list[list[float]]:
            return toy(texts)

    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = SentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    local = Memory.from_config({"embedder": {"provider": "huggingface", "config": {
        "model_kwargs": {"device": "cpu"}}}})
    assert loaded == [("multi-qa-MiniLM-L6-cos-v1", {"device": "cpu"})]
    local.add("I adopted a kitten", user_id="ann")
    local.add("The bike has a flat tyre", user_id="ann")
    assert local.search("which cat do I have?", user_id="ann")["results"][0]["memory"] == (
        "I adopted a kitten")

    with serve() as url:
        tei = Memory.from_config({"embedder": {"provider": "huggingface", "config": {
            "huggingface_base_url": url, "model": "toy", "embedding_dims": 4}}})
        tei.add("I baked a chocolate cake", user_id="ann")
        tei.add("The bike has a flat tyre", user_id="ann")
        found = tei.search("what did I cook?", user_id="ann")["results"]
        assert found[0]["memory"] == "I baked a chocolate cake"
    assert _embedder_service({"provider": "huggingface", "config": {
        "huggingface_base_url": "http://tei:8080/v1/"}})["model"] == "multi-qa-MiniLM-L6-cos-v1"

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed
    with pytest.raises(InvalidInputError) as raised:
        Memory.from_config({"embedder": {"provider": "huggingface"}})
    assert raised.value.field == "embedder.provider"
    assert "pip install sentence-transformers" in raised.value.problem


def test_limits_are_whole_numbers_of_at_least_zero(m: Memory) -> None:
    m.add("I like hiking", user_id="alice")
    assert m.search("hiking", user_id="alice", limit=0)["results"] == []
    assert m.get_all(user_id="alice", limit=0)["results"] == []
    for bad in [-1, 1.5, "3", True]:
        with pytest.raises(InvalidInputError) as raised:
            m.search("hiking", user_id="alice", limit=bad)
        assert raised.value.field == "limit"
        with pytest.raises(InvalidInputError) as raised:
            m.get_all(user_id="alice", top_k=bad)
        assert raised.value.field == "top_k"
    with pytest.raises(InvalidInputError) as raised:
        m.add("noted", user_id="alice", metadata={"_pinned": True})
    assert raised.value.field == "metadata"


def test_update_keeps_the_fact_key_and_the_pin(m: Memory) -> None:
    # An update had written the text anew without its fact key and pin: a later value of the
    # fact left it current beside the new one, and maintenance could evict it.
    paris = m.memory.remember("mem0/user:u", "The user lives in Paris", fact_key="user.city", metadata={"user_id": "u"})
    m.memory.pin("mem0/user:u", paris.id)
    m.update(paris.id, "The user lives in Paris, France")
    record = m.memory.get("mem0/user:u", paris.id)
    assert (record.text, record.fact_key, record.pinned) == ("The user lives in Paris, France", "user.city", True)
    berlin = m.memory.remember("mem0/user:u", "The user lives in Berlin", fact_key="user.city", metadata={"user_id": "u"})
    assert [r["id"] for r in m.get_all(user_id="u")["results"]] == [berlin.id]


def test_an_ended_version_is_not_updated(m: Memory) -> None:
    paris = m.memory.remember("mem0/user:u", "The user lives in Paris", fact_key="user.city", metadata={"user_id": "u"})
    berlin = m.memory.remember("mem0/user:u", "The user lives in Berlin", fact_key="user.city", metadata={"user_id": "u"})
    with pytest.raises(InvalidInputError) as raised:
        m.update(paris.id, "The user lives in Rome")
    assert raised.value.field == "memory_id"
    assert [r["id"] for r in m.get_all(user_id="u")["results"]] == [berlin.id]


def test_malformed_filters_data_and_prefix_are_refused_by_name(m: Memory) -> None:
    m.add("I like tea", user_id="alice")
    for filters in [{1: "x"}, {"OR": {"topic": "pets"}}, {"AND": "topic"}, {"NOT": [5]}]:
        with pytest.raises(InvalidInputError) as refused:
            m.search("tea", user_id="alice", filters=filters)
        assert refused.value.field == "filters", filters
    found = m.search("tea", user_id="alice", filters={"OR": [{"topic": "pets"}, {"user_id": "alice"}]})
    assert isinstance(found["results"], list)
    memory_id = m.get_all(user_id="alice")["results"][0]["id"]
    with pytest.raises(InvalidInputError) as refused:
        m.update(memory_id, None)  # type: ignore[arg-type]
    assert refused.value.field == "data"
    assert m.get(memory_id)["memory"] == "I like tea"
    native = NativeMemory()
    native.remember("app/user-1", "Unrelated app memory")
    for prefix in ["", "/", "//"]:
        with pytest.raises(InvalidInputError) as refused:
            Memory(memory=native, prefix=prefix)
        assert refused.value.field == "prefix"
    assert native.namespaces() == ["app/user-1"]
