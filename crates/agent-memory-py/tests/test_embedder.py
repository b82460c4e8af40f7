"""The optional embedding channel: a Python callable or an /embeddings service as embedder."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from _toy import serve, toy

from agent_memory import InvalidInputError, Memory, UnavailableError


def ids(hits: list) -> list[str]:
    return [hit.id for hit in hits]


def test_a_callable_finds_memories_by_meaning() -> None:
    calls: list[list[str]] = []

    def embedder(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return toy(texts)

    memory = Memory(embedder=embedder, embedding_dimension=4)
    kitten = memory.remember("u", "I adopted a kitten last spring").id
    memory.remember("u", "The car needs new tyres")
    hits = memory.recall("u", "which cat do I have?")
    assert ids(hits)[0] == kitten
    assert hits[0].breakdown["channels"] == ["embedding"]
    assert hits[0].breakdown["signals"]["embedding"]["value"] > 0.9
    assert any("which cat do I have?" in texts for texts in calls), calls

    plain = Memory()
    plain.remember("u", "I adopted a kitten last spring")
    assert ids(plain.recall("u", "which cat do I have?")) == [], "keyword-only: cat is not kitten"


def test_a_numpy_like_return_value_is_read() -> None:
    class Rows:
        """A sequence of sequences that is no list, as a NumPy array is."""

        def __init__(self, rows: list[list[float]]) -> None:
            self.rows = rows

        def __len__(self) -> int:
            return len(self.rows)

        def __getitem__(self, index: int) -> tuple[float, ...]:
            return tuple(self.rows[index])

    memory = Memory(embedder=lambda texts: Rows(toy(texts)), embedding_dimension=4)
    kitten = memory.remember("u", "a puppy joined us").id
    assert ids(memory.recall("u", "dog"))[0] == kitten


def test_a_failing_embedder_stores_nothing() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model not loaded")

    memory = Memory(embedder=broken, embedding_dimension=4)
    with pytest.raises(UnavailableError, match="model not loaded") as raised:
        memory.remember("u", "I adopted a kitten")
    assert isinstance(raised.value.__cause__, RuntimeError), "the embedder's error is the cause"
    assert memory.list("u") == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), SystemExit(3)])
def test_an_interrupt_in_the_embedder_is_raised_as_it_was(stop: BaseException) -> None:
    def interrupted(texts: list[str]) -> list[list[float]]:
        raise stop

    memory = Memory(embedder=interrupted, embedding_dimension=4)
    with pytest.raises(type(stop)):
        memory.remember("u", "I adopted a kitten")
    assert memory.list("u") == []

    for bad, what in [
        (lambda texts: [[1.0, 0.0]] * len(texts), "wrong length"),
        (lambda texts: [], "no vector"),
        (lambda texts: [[float("nan"), 0.0, 0.0, 0.0]] * len(texts), "not finite"),
        (lambda texts: "not vectors", "not a sequence"),
    ]:
        memory = Memory(embedder=bad, embedding_dimension=4)
        with pytest.raises(InvalidInputError) as raised:
            memory.remember("u", "I adopted a kitten")
        assert raised.value.field == "embedding", what
        assert memory.list("u") == [], what


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"embedder": lambda texts: toy(texts)}, "embedding_dimension"),
        ({"embedder": lambda texts: toy(texts), "embedding_dimension": 0}, "embedding_dimension"),
        ({"embedding_dimension": 4}, "embedding_dimension"),
        ({"embedder": 42}, "embedder"),
        ({"embedder": {"base_url": "http://127.0.0.1:9/v1", "model": "toy"}}, "embedder"),
        ({"embedder": {"base_url": "http://127.0.0.1:9/v1", "model": "toy", "dimension": 0}},
         "embedder.dimension"),
        ({"embedder": {"base_url": "", "model": "toy", "dimension": 4}}, "embedder.base_url"),
        ({"embedder": {"base_url": "http://127.0.0.1:9/v1", "model": "toy", "dimension": 4,
                       "key": "x"}}, "embedder"),
        ({"embedder": {"base_url": "http://127.0.0.1:9/v1", "model": "toy", "dimension": 4},
          "embedding_dimension": 4}, "embedding_dimension"),
    ],
)
def test_bad_embedder_settings_name_their_field(options: dict, field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        Memory(**options)
    assert raised.value.field == field


@pytest.fixture
def service() -> Iterator[str]:
    with serve() as url:
        yield url


def test_a_service_dict_finds_memories_by_meaning(service: str) -> None:
    memory = Memory(embedder={"base_url": service, "model": "toy", "dimension": 4})
    cake = memory.remember("u", "I baked a chocolate cake for Sam").id
    memory.remember("u", "The bike has a flat tyre")
    assert ids(memory.recall("u", "what did I cook?"))[0] == cake


class QueryForm:
    """Shaped as a LangChain ``Embeddings``: stored texts and queries in distinct forms."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return toy(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return toy([f"query: {text}"])[0]


def test_an_embeddings_object_embeds_queries_in_their_form() -> None:
    model = QueryForm()
    memory = Memory(embedder=model, embedding_dimension=4)
    kitten = memory.remember("u", "I adopted a kitten last spring").id
    memory.remember("u", "The car needs new tyres")
    hits = memory.recall("u", "which animal do I have?")
    assert ids(hits)[0] == kitten
    assert hits[0].breakdown["signals"]["embedding"]["value"] > 0.9
    assert model.queries == ["which animal do I have?"]

    # The same model's documents form for the query finds no pet.
    memory = Memory(embedder=model.embed_documents, embedding_dimension=4)
    memory.remember("u", "I adopted a kitten last spring")
    hits = memory.recall("u", "which animal do I have?")
    assert all(hit.breakdown["signals"].get("embedding", {}).get("value", 0.0) < 0.5 for hit in hits)


def test_a_failing_embed_query_leaves_the_recall_to_the_keywords() -> None:
    class Broken(QueryForm):
        def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("query model not loaded")

    memory = Memory(embedder=Broken(), embedding_dimension=4)
    kitten = memory.remember("u", "I adopted a kitten").id
    assert ids(memory.recall("u", "which animal?")) == [], "found by meaning only"
    hits = memory.recall("u", "the kitten")
    assert ids(hits) == [kitten]
    assert hits[0].breakdown["channels"] == ["memory"]

    class Interrupted(QueryForm):
        def embed_query(self, text: str) -> list[float]:
            raise KeyboardInterrupt

    memory = Memory(embedder=Interrupted(), embedding_dimension=4)
    memory.remember("u", "I adopted a kitten")
    with pytest.raises(KeyboardInterrupt):
        memory.recall("u", "the kitten")

    class Short(QueryForm):
        def embed_query(self, text: str) -> list[float]:
            return [1.0]

    memory = Memory(embedder=Short(), embedding_dimension=4)
    memory.remember("u", "I adopted a kitten")
    with pytest.raises(InvalidInputError) as raised:
        memory.recall("u", "which animal?")
    assert raised.value.field == "embedding"


def test_a_service_dict_takes_query_and_document_prefixes(service: str) -> None:
    settings = {"base_url": service, "model": "toy", "dimension": 4}
    memory = Memory(embedder={**settings, "query_prefix": "query: ", "document_prefix": "passage: "})
    kitten = memory.remember("u", "I adopted a kitten last spring").id
    memory.remember("u", "The bike has a flat tyre")
    assert ids(memory.recall("u", "which animal do I have?"))[0] == kitten

    memory = Memory(embedder=settings)
    memory.remember("u", "I adopted a kitten last spring")
    hits = memory.recall("u", "which animal do I have?")
    assert all(hit.breakdown["signals"].get("embedding", {}).get("value", 0.0) < 0.5 for hit in hits)


def test_a_numpy_array_is_read() -> None:
    np = pytest.importorskip("numpy")
    memory = Memory(embedder=lambda texts: np.array(toy(texts), dtype=np.float32),
                    embedding_dimension=4)
    puppy = memory.remember("u", "a puppy joined us").id
    assert ids(memory.recall("u", "dog"))[0] == puppy


def test_put_embeds_as_remember_does() -> None:
    memory = Memory(embedder=toy, embedding_dimension=4)
    memory.put("u", "pet", "I adopted a kitten")
    memory.put("u", "ride", "The bike has a flat tyre")
    assert ids(memory.recall("u", "which cat do I have?"))[0] == "pet"

    broken = Memory(embedder=lambda texts: [[1.0]] * len(texts), embedding_dimension=4)
    with pytest.raises(InvalidInputError) as raised:
        broken.put("u", "pet", "I adopted a kitten")
    assert raised.value.field == "embedding"
    assert broken.list("u") == []


def test_reembed_embeds_memories_remembered_without_an_embedder(tmp_path) -> None:
    path = str(tmp_path / "store.db")
    plain = Memory(path)
    kitten = plain.remember("u", "I adopted a kitten last spring").id
    plain.remember("u", "The car needs new tyres")
    with pytest.raises(InvalidInputError) as raised:
        plain.reembed("u")
    assert raised.value.field == "embedder"
    plain.close()

    memory = Memory(path, embedder=toy, embedding_dimension=4)
    assert kitten not in ids(memory.recall("u", "which cat do I have?"))
    assert memory.reembed("u") == {"examined": 2, "embedded": 2, "skipped": 0}
    assert ids(memory.recall("u", "which cat do I have?"))[0] == kitten
    assert memory.reembed("u")["embedded"] == 0
    assert memory.reembed("u", all=True)["embedded"] == 2


class SentenceTransformerLike:
    """Shaped as a sentence-transformers model: ``encode`` (and from version 5
    ``encode_query`` and ``encode_document``), and the length it tells."""

    def __init__(self, forms: bool) -> None:
        self.calls: list[str] = []
        if forms:
            self.encode_query = self._encode_query
            self.encode_document = self._encode_document

    def get_sentence_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls.append("encode")
        return toy(texts)

    def _encode_document(self, texts: list[str]) -> list[list[float]]:
        self.calls.append("encode_document")
        return toy(texts)

    def _encode_query(self, text: str) -> list[float]:
        self.calls.append("encode_query")
        return toy([f"query: {text}"])[0]

    def __call__(self, features: object) -> object:
        raise AssertionError("a model's forward pass is no embedder")


def test_a_sentence_transformers_model_is_taken_as_it_is() -> None:
    model = SentenceTransformerLike(forms=True)
    memory = Memory(embedder=model)
    kitten = memory.remember("u", "I adopted a kitten last spring").id
    memory.remember("u", "The car needs new tyres")
    assert ids(memory.recall("u", "which animal do I have?"))[0] == kitten
    assert model.calls == ["encode_document", "encode_document", "encode_query"]

    older = SentenceTransformerLike(forms=False)
    memory = Memory(embedder=older)
    puppy = memory.remember("u", "a puppy joined us").id
    assert ids(memory.recall("u", "dog"))[0] == puppy
    assert set(older.calls) == {"encode"}

    class Unknown(SentenceTransformerLike):
        def get_sentence_embedding_dimension(self) -> None:  # type: ignore[override]
            return None

    with pytest.raises(InvalidInputError) as raised:
        Memory(embedder=Unknown(forms=False))
    assert raised.value.field == "embedding_dimension"
    assert ids(Memory(embedder=Unknown(forms=False), embedding_dimension=4).recall("u", "dog")) == []


def test_a_memory_method_called_inside_the_embedder_raises_runtime_error() -> None:
    raised: list[BaseException] = []
    other = Memory()
    memory: Memory | None = None

    def embedder(texts: list[str]) -> list[list[float]]:
        for call in (lambda: other.remember("u", "from inside"), lambda: memory.list("u")):
            try:
                call()
            except RuntimeError as error:
                raised.append(error)
        return toy(texts)

    memory = Memory(embedder=embedder, embedding_dimension=4)
    kitten = memory.remember("u", "I adopted a kitten last spring").id
    assert len(raised) == 2 and all("from inside a callable" in str(e) for e in raised), raised
    assert other.list("u") == [], "the refused call wrote nothing"
    assert ids(memory.recall("u", "which cat do I have?"))[0] == kitten

    def calling(texts: list[str]) -> list[list[float]]:
        other.recall("u", "anything")
        return toy(texts)

    failing = Memory(embedder=calling, embedding_dimension=4)
    with pytest.raises(UnavailableError, match="from inside a callable"):
        failing.remember("u", "the embedder's error is the call's")
    assert failing.list("u") == []


def test_a_memory_dropped_inside_the_embedder_still_flushes(tmp_path) -> None:
    path = str(tmp_path / "store.db")
    held = [Memory(path)]
    note = held[0].remember("u", "Recall statistics are written when the memory goes").id
    for _ in range(3):
        held[0].recall("u", "statistics")

    def embedder(texts: list[str]) -> list[list[float]]:
        held.clear()  # the last handle, dropped on the thread the library runs this on
        return toy(texts)

    Memory(embedder=embedder, embedding_dimension=4).remember("u", "a kitten")
    assert held == []
    # The flush could not wait inside the callable: it runs on the runtime's workers.
    reopened = Memory(path)
    for _ in range(500):
        if reopened.get("u", note).access_count >= 3:
            break
        time.sleep(0.01)
    assert reopened.get("u", note).access_count >= 3


class _Agent:
    """An agent whose memory embeds with the agent's own methods: a reference cycle."""

    def __init__(self) -> None:
        self.memory = Memory(embedder=self.embed, embedding_dimension=2)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(text))] for text in texts]


class _LangChainAgent:
    """The same with an object of two methods (a LangChain `Embeddings`)."""

    def __init__(self) -> None:
        self.memory = Memory(embedder=self, embedding_dimension=2)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(text))] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, float(len(text))]


@pytest.mark.parametrize("agent_class", [_Agent, _LangChainAgent])
def test_a_memory_in_a_cycle_through_its_embedder_is_collected(agent_class) -> None:
    import gc
    import weakref

    agent = agent_class()
    agent.memory.remember("u", "a note")
    gone = weakref.ref(agent)
    del agent
    gc.collect()
    assert gone() is None
