"""Every method of Memory and what it returns."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from agent_memory import ConflictError, Hit, InvalidInputError, Memory, MemoryRecord, NotFoundError, RecallResult, Remembered


def test_remember_and_recall_with_explained_scores(any_memory: Memory) -> None:
    done = any_memory.remember("user-42", "The user likes the Rust programming language")
    assert isinstance(done, Remembered)
    assert done.outcome == "added" and done.conflicts == [] and done.superseded == []
    any_memory.remember("user-42", "The user has a cat called Miso")

    result = any_memory.recall("user-42", "programming")
    assert isinstance(result, RecallResult)
    assert result.query == "programming" and result.total_found >= 1 and len(result) == 1
    best = result[0]
    assert isinstance(best, Hit)
    assert best.source == "memory" and best.id == done.id and best.namespace == "user-42"
    assert "Rust" in best.text and 0.0 < best.score <= 1.0
    breakdown = best.breakdown
    assert breakdown["channels"] == ["memory"]
    relevance = breakdown["signals"]["relevance"]
    assert relevance["value"] == 1.0 and relevance["contribution"] == pytest.approx(0.7)
    total = sum(signal["contribution"] for signal in breakdown["signals"].values())
    assert total == pytest.approx(best.score, abs=1e-5)
    assert best.to_dict()["breakdown"] == breakdown


def test_result_is_a_sequence(memory: Memory) -> None:
    for n in range(5):
        memory.remember("u", f"note {n} about gardening and tomatoes", id=f"n{n}")
    result = memory.recall("u", "gardening", max_results=3)
    assert len(result) == 3 and bool(result)
    assert [hit.id for hit in result] == [hit.id for hit in result.hits]
    assert result[-1].id == result.hits[2].id
    assert result.texts() == [hit.text for hit in result]
    with pytest.raises(IndexError):
        result[3]
    with pytest.raises(IndexError):
        result[-4]
    # Sliced as any sequence.
    ids = [hit.id for hit in result]
    assert [hit.id for hit in result[0:2]] == ids[0:2]
    assert [hit.id for hit in result[::-1]] == ids[::-1]
    assert [hit.id for hit in result[1:]] == ids[1:]
    assert result[5:9] == []
    with pytest.raises(TypeError):
        result["first"]
    assert not memory.recall("u", "astronomy")
    assert "RecallResult" in repr(result) and "Hit" in repr(result[0])


def test_remember_with_every_option(memory: Memory) -> None:
    at = datetime(2024, 5, 17, 9, 30, 12, 345678, tzinfo=timezone.utc)
    metadata = {"speaker": "Ada", "n": 3, "big": 2**63, "ratio": 0.25, "ok": True, "none": None,
                "list": [1, "two", [3.5]], "nested": {"a": {"b": "c"}}}
    done = memory.remember(
        "user-1/agent",
        "Ada finished the marathon in Berlin",
        kind="semantic",
        importance=0.9,
        tags=["Sport", "running events"],
        metadata=metadata,
        id="fact-1",
        source="chat",
        context="How did the race go?",
        created_at=at,
        pinned=True,
        valid_from=at,
        valid_until=at + timedelta(days=36500),
        credibility=0.8,
    )
    assert done.id == "fact-1"
    record = memory.get("user-1/agent", "fact-1")
    assert isinstance(record, MemoryRecord)
    assert record.text == "Ada finished the marathon in Berlin"
    assert record.kind == "semantic" and record.importance == 0.9 and record.credibility == 0.8
    assert record.tags == ["sport", "running-events"]
    assert record.metadata == metadata
    assert record.source == "chat" and record.context == "How did the race go?"
    assert record.pinned and record.original == record.text
    assert record.created_at == at and record.valid_from == at
    assert record.valid_until == at + timedelta(days=36500)
    assert record.access_count == 0 and record.last_accessed is None
    assert record.ended is None and record.fact_key is None
    as_dict = record.to_dict()
    assert as_dict["id"] == "fact-1" and as_dict["metadata"] == metadata
    # The context is searchable, so a question finds its answer.
    assert memory.recall("user-1", "race", kinds=["semantic"])[0].id == "fact-1"


def test_times_in_every_form(memory: Memory) -> None:
    naive = datetime(2023, 1, 2, 3, 4, 5)
    memory.remember("t", "naive time", id="a", created_at=naive)
    memory.remember("t", "string time", id="b", created_at="2023-01-02T04:04:05+01:00")
    memory.remember("t", "epoch time", id="c", created_at=1672628645.5)
    expected = naive.replace(tzinfo=timezone.utc)
    assert memory.get("t", "a").created_at == expected
    assert memory.get("t", "b").created_at == expected
    assert memory.get("t", "c").created_at == expected + timedelta(milliseconds=500)


def test_recall_options(memory: Memory) -> None:
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    memory.remember("u", "The user visited Lisbon for the conference", kind="episodic", tags=["travel"], created_at=old)
    memory.remember("u", "Lisbon is the capital of Portugal", kind="semantic")
    memory.remember("u/s1", "user: I will visit Lisbon again", kind="short_term")

    assert len(memory.recall("u", "Lisbon")) == 2  # short-term messages are left out
    assert len(memory.recall("u", "Lisbon", kinds=["short_term"])) == 1
    assert [h.text for h in memory.recall("u", "Lisbon", kinds=["semantic"])] == ["Lisbon is the capital of Portugal"]
    assert len(memory.recall("u", "Lisbon", tags=["travel"])) == 1
    assert len(memory.recall("u", "Lisbon", since=datetime(2021, 1, 1))) == 1
    assert len(memory.recall("u", "Lisbon", until=datetime(2021, 1, 1))) == 1
    assert len(memory.recall("u", "Lisbon", max_results=1)) == 1
    assert len(memory.recall("u", "Lisbon", min_score=0.99)) == 0
    assert len(memory.recall("u/s1", "Lisbon", exact=True, kinds=["short_term"])) == 1
    assert len(memory.recall("u", "Lisbon", exact=True, kinds=["short_term"])) == 0
    assert len(memory.recall("", "Lisbon")) == 2  # "" is every namespace
    assert len(memory.recall("u", "Lisbon", strategy="memory_only")) == 2
    assert len(memory.recall("u", "Lisbon", strategy="graph_only")) == 0
    only_relevance = memory.recall("u", "Lisbon", scoring="relevance")
    assert set(only_relevance[0].breakdown["signals"]) == {"relevance"}
    weighted = memory.recall("u", "Lisbon", scoring={"strategy": "hybrid", "relevance": 1.0, "importance": 0.0})
    assert weighted[0].breakdown["signals"]["relevance"]["contribution"] > 0
    rrf = memory.recall("u", "Lisbon", fusion={"fusion": "reciprocal_rank", "k": 60})
    assert "rrf" in rrf[0].breakdown["signals"]
    assert len(memory.recall("u", "Lisbon", graph_depth=0)) == 2


def test_recall_by_metadata(memory: Memory) -> None:
    memory.remember("u", "Ann's flight to Oslo leaves at noon", metadata={"user": "ann", "seat": 12})
    memory.remember("u", "Bob's flight to Oslo leaves at dawn", metadata={"user": "bob", "seat": "12"})
    assert len(memory.recall("u", "flight Oslo")) == 2
    assert [h.text for h in memory.recall("u", "flight Oslo", metadata={"user": "ann"})] == [
        "Ann's flight to Oslo leaves at noon"
    ]
    # Values compare as JSON: the number 12 is not the string "12".
    assert [h.text for h in memory.recall("u", "flight Oslo", metadata={"seat": "12"})] == [
        "Bob's flight to Oslo leaves at dawn"
    ]
    assert len(memory.recall("u", "flight Oslo", metadata={"user": "ann", "seat": "12"})) == 0
    with pytest.raises(InvalidInputError, match="metadata"):
        memory.recall("u", "flight", metadata={1: "ann"})
    with pytest.raises(InvalidInputError, match="metadata"):
        memory.recall("u", "flight", metadata={f"k{n}": n for n in range(40)})


def test_facts_supersede_history_and_views(memory: Memory) -> None:
    paris = memory.remember("user-7", "The user lives in Paris", fact_key="user.city")
    berlin = memory.remember("user-7", "The user moved to Berlin", fact_key="user.city")
    assert berlin.outcome == "superseded" and berlin.superseded == [paris.id]
    assert [h.id for h in memory.recall("user-7", "where does the user live")] == [berlin.id]
    everything = memory.recall("user-7", "user", view="all")
    assert {h.id for h in everything} == {paris.id, berlin.id}
    stale = next(h for h in everything if h.id == paris.id)
    assert "stale" in stale.breakdown["signals"]
    old = memory.get("user-7", paris.id)
    assert old.ended["reason"] == "superseded" and old.ended["by"] == berlin.id
    assert memory.get("user-7", berlin.id).supersedes == [paris.id]
    assert memory.get("user-7", berlin.id).fact_key == "user.city"
    assert [r.id for r in memory.history("user-7", berlin.id)] == [paris.id, berlin.id]
    # As of a time before Berlin was remembered, Paris was the answer.
    before = memory.get("user-7", paris.id).created_at + timedelta(microseconds=1)
    if before < memory.get("user-7", berlin.id).created_at:
        assert [h.id for h in memory.recall("user-7", "user lives", as_of=before)] == [paris.id]
    # A time names its own view: a view beside it is refused, not ignored.
    for view in ["all", "current", "al"]:
        with pytest.raises(InvalidInputError) as raised:
            memory.recall("user-7", "user lives", view=view, as_of=before)
        assert raised.value.field == "view"
    assert [r.id for r in memory.list("user-7")] == [berlin.id]
    assert {r.id for r in memory.list("user-7", view="all")} == {paris.id, berlin.id}
    assert [r.id for r in memory.list("user-7", fact_key="user.city", view="all")] == [paris.id, berlin.id]


def test_duplicates_merge_and_conflicts_flag(memory: Memory) -> None:
    first = memory.remember("u", "The user is 30 years old")
    again = memory.remember("u", "The user is 30 years old")
    assert again.outcome == "merged" and again.id == first.id
    later = memory.remember("u", "The user is 31 years old")
    assert [c["id"] for c in later.conflicts] == [first.id] and later.conflicts[0]["reason"]
    assert memory.conflicts("u") == [{"namespace": "u", "older": first.id, "newer": later.id}]
    assert memory.maintain("u")["conflicts_found"] == 1


def test_supersede_retract_pin_compress(memory: Memory) -> None:
    a = memory.remember("u", "The meeting is on Monday").id
    b = memory.remember("u", "The meeting moved to Tuesday morning").id
    memory.supersede("u", a, b)
    assert memory.get("u", a).ended["by"] == b
    memory.retract("u", b, "cancelled")
    assert memory.get("u", b).ended == {"at": memory.get("u", b).ended["at"], "reason": "retracted", "why": "cancelled"}
    assert memory.recall("u", "meeting").hits == []

    c = memory.remember("u", "A long story about the first trip to the mountains with friends").id
    assert memory.pin("u", c) and memory.get("u", c).pinned
    assert memory.pin("u", c, False) and not memory.get("u", c).pinned
    assert not memory.pin("u", "missing")
    assert memory.compress("u", c, "Mountain trip with friends")
    record = memory.get("u", c)
    assert record.text == "Mountain trip with friends"
    assert record.original.startswith("A long story")
    assert not memory.compress("u", "missing", "x")


def test_put_replaces_by_id(memory: Memory) -> None:
    memory.put("kv", "k1", "first text", metadata={"v": 1})
    created = memory.get("kv", "k1").created_at
    memory.put("kv", "k1", "first text", metadata={"v": 2}, kind="semantic", importance=0.7, tags=["x"])
    record = memory.get("kv", "k1")
    assert record.metadata == {"v": 2} and record.kind == "semantic" and record.tags == ["x"]
    assert record.created_at == created and record.updated_at >= created
    # No duplicate merging: the same text under another id is another memory.
    memory.put("kv", "k2", "first text")
    assert len(memory.list("kv")) == 2


def test_put_and_remember_leave_a_history_whole(memory: Memory) -> None:
    old = memory.remember("h", "The server is zeus", id="s1")
    new = memory.remember("h", "The server is hera", id="s2")
    memory.supersede("h", old.id, new.id)
    for id in (old.id, new.id):
        with pytest.raises(InvalidInputError) as raised:
            memory.put("h", id, "boats are fast on water")
        assert raised.value.field == "id"
        with pytest.raises(InvalidInputError) as raised:
            memory.remember("h", "boats are fast on water", id=id)
        assert raised.value.field == "id"
    # The same memory sent again writes nothing.
    again = memory.remember("h", "The server is zeus", id="s1")
    assert again.outcome == "merged" and again.id == "s1"
    assert [record.text for record in memory.history("h", "s2")] == ["The server is zeus", "The server is hera"]


def test_update_changes_what_it_names_and_keeps_the_rest(memory: Memory) -> None:
    city = memory.remember("u", "The user lives in Paris", fact_key="user.city", importance=0.8,
                           tags=["home"], metadata={"src": "chat"}, source="onboarding")
    memory.pin("u", city.id)
    before = memory.get("u", city.id)
    after = memory.update("u", city.id, text="The user lives in Paris, France")
    assert after.text == "The user lives in Paris, France" == memory.get("u", city.id).text
    assert (after.fact_key, after.pinned, after.importance, after.tags, after.metadata, after.source) == (
        "user.city", True, pytest.approx(0.8), ["home"], {"src": "chat"}, "onboarding")
    assert after.created_at == before.created_at and after.updated_at >= before.updated_at
    # The fact key kept: a later value of the fact supersedes the updated one.
    berlin = memory.remember("u", "The user lives in Berlin", fact_key="user.city")
    assert [r.id for r in memory.list("u", fact_key="user.city")] == [berlin.id]
    # Only what is named changes; a refused change writes nothing.
    memory.update("u", berlin.id, tags=["moved"], metadata={"src": "form"})
    with pytest.raises(InvalidInputError) as raised:
        memory.update("u", berlin.id, text="", importance=0.1)
    assert raised.value.field == "text"
    record = memory.get("u", berlin.id)
    assert (record.text, record.tags, record.metadata) == ("The user lives in Berlin", ["moved"], {"src": "form"})
    assert record.importance != pytest.approx(0.1)
    with pytest.raises(NotFoundError):
        memory.update("u", "missing", text="x")
    # An ended version may be corrected, unless the update is for the current one only.
    with pytest.raises(InvalidInputError) as raised:
        memory.update("u", city.id, text="The user lived in Lyon", only_current=True)
    assert raised.value.field == "id"
    assert memory.get("u", city.id).text == "The user lives in Paris, France"
    assert memory.update("u", city.id, text="The user lived in Paris").ended is not None


def test_the_librarys_own_metadata_keys_are_refused(memory: Memory) -> None:
    # They are a record's context, pin, original and decay state, never shown in `metadata`:
    # a value under one would change those behind their arguments.
    pinned = memory.remember("u", "pinned text", pinned=True)
    for key in ("_pinned", "_context", "_original", "_decay"):
        with pytest.raises(InvalidInputError) as raised:
            memory.remember("u", "plain", metadata={key: "x"})
        assert raised.value.field == "metadata"
        with pytest.raises(InvalidInputError) as raised:
            memory.update("u", pinned.id, metadata={key: False})
        assert raised.value.field == "metadata"
        with pytest.raises(InvalidInputError) as raised:
            memory.put("u", "p1", "put text", metadata={key: 1})
        assert raised.value.field == "metadata"
        with pytest.raises(InvalidInputError) as raised:
            memory.remember_dialogue("chat", [{"text": "hi", "metadata": {key: 1}}])
        assert raised.value.field == "turns[0].metadata"
    assert memory.get("u", pinned.id).pinned
    assert [r.text for r in memory.list("u")] == ["pinned text"]
    # Other keys starting with `_` are the caller's.
    done = memory.remember("u", "own key", metadata={"_mine": 1})
    assert memory.get("u", done.id).metadata == {"_mine": 1}


def test_context_and_conversation(memory: Memory) -> None:
    memory.remember("user-42", "The user likes the Rust programming language")
    memory.remember("user-42/chat", "user: hello there", kind="short_term")
    text = memory.context("user-42", "what does the user like?", 200)
    assert text.startswith("Relevant memories:") and "Rust" in text
    with_session = memory.context("user-42", "Rust", 200, session="user-42/chat", turns=5)
    assert with_session.startswith("Recent conversation:") and "hello there" in with_session
    assert memory.context("user-42", "Rust", 1) == ""


def test_forget_clear_get_list_namespaces(memory: Memory) -> None:
    ids = [memory.remember("a/b", f"memory number {n} about apples", tags=["fruit"] if n % 2 else [],
                           metadata={"n": n, "even": n % 2 == 0}).id for n in range(4)]
    memory.remember("a/c", "another about pears")
    memory.remember("z", "elsewhere entirely")
    assert memory.namespaces() == ["a/b", "a/c", "z"]
    assert memory.namespaces("a") == ["a/b", "a/c"]
    assert [r.id for r in memory.list("a/b")] == ids
    assert [r.id for r in memory.list("a/b", newest_first=True, limit=2)] == ids[::-1][:2]
    assert len(memory.list("a")) == 5 and len(memory.list("a", exact=True)) == 0
    assert len(memory.list()) == 6
    assert [r.id for r in memory.list("a", tags=["fruit"])] == [ids[1], ids[3]]
    assert [r.id for r in memory.list("a", metadata={"even": True})] == [ids[0], ids[2]]
    assert [r.id for r in memory.list("a", id_prefix=ids[2])] == [ids[2]]
    assert len(memory.list("a", kinds=["semantic"])) == 0
    assert memory.forget("a/b", ids[0]) and not memory.forget("a/b", ids[0])
    assert memory.get("a/b", ids[0]) is None
    assert memory.clear("a") == 4
    assert memory.namespaces() == ["z"]


def test_list_a_page_at_a_time(any_memory: Memory) -> None:
    ids = [any_memory.remember("pages", f"note number {n}").id for n in range(7)]
    whole = [r.id for r in any_memory.list("pages")]
    assert sorted(whole) == sorted(ids)
    first = any_memory.list("pages", limit=3)
    # Between pages, a listed memory is forgotten and one is added: nothing is skipped.
    assert any_memory.forget("pages", first[0].id)
    added = any_memory.remember("pages", "a note added between pages").id
    seen, page = [r.id for r in first], first
    while len(page) == 3:
        page = any_memory.list("pages", limit=3, after=page[-1])
        seen += [r.id for r in page]
    assert seen == whole + [added]
    newest = any_memory.list("pages", newest_first=True, limit=2)
    older = any_memory.list("pages", newest_first=True, after=newest[-1])
    assert [r.id for r in newest + older] == [added] + whole[::-1][:-1]
    with pytest.raises(TypeError):
        any_memory.list("pages", after="not a record")  # type: ignore[arg-type]
    # A time range that ends before it starts holds nothing.
    now = datetime.now(timezone.utc)
    assert any_memory.list("pages", since=now, until=now - timedelta(days=1)) == []


def test_stats_maintain_and_eviction() -> None:
    memory = Memory(eviction={"policy": "capacity", "max_items": 4}, check_interval=1)
    for n in range(10):
        memory.remember("u", f"distinct memory {n} about topic {n * 7}", id=f"m{n}")
    stats = memory.stats("u")
    assert stats["total"] <= 4 and stats["per_kind"] == {"episodic": stats["total"]}
    assert stats["per_namespace"] == {"u": stats["total"]}
    assert stats["capacity_use"] <= 1.0 and stats["pages"] == 0 and stats["entities"] == 0
    assert stats["recalled"] == 0 and stats["mean_recall_score"] is None
    report = memory.maintain("u")
    assert set(report) >= {"expired", "decayed", "evicted", "compressed", "failed_write_passes", "conflicts_found"}
    assert all(isinstance(value, int) for value in report.values())


def test_recall_statistics_and_flush(memory: Memory) -> None:
    done = memory.remember("u", "Recall statistics are recorded for every hit")
    for _ in range(3):
        memory.recall("u", "statistics")
    memory.flush()
    record = memory.get("u", done.id)
    assert record.access_count >= 3 and record.last_accessed is not None
    stats = memory.stats("u")
    assert stats["mean_access"] >= 3
    assert stats["recalled"] == 1 and 0.0 < stats["mean_recall_score"] <= 1.0


def test_settings_from_dicts() -> None:
    memory = Memory(
        retriever={"max_results": 1, "min_score": 0.0},
        facts={"duplicates": "keep_both"},
        decay={"daily_rate": 0.5},
        single_valued_relations=["lives_in"],
    )
    memory.remember("u", "same words twice here")
    assert memory.remember("u", "same words twice here").outcome == "added"
    memory.remember("u", "another with words")
    assert len(memory.recall("u", "words")) == 1


def test_a_retriever_setting_that_does_not_exist_is_refused() -> None:
    from agent_memory import InvalidInputError

    with pytest.raises(InvalidInputError) as error:
        Memory(retriever={"drop_time_word": True})
    assert error.value.field == "retriever"
    assert "drop_time_word" in str(error.value)
    Memory(retriever={"drop_time_words": True})


def test_context_manager_and_repr(sqlite_path) -> None:
    with Memory(sqlite_path) as memory:
        memory.remember("u", "kept in a file")
        assert memory.location == str(sqlite_path)
        assert repr(memory) == f"Memory({str(sqlite_path)!r})"
    assert Memory().location == ":memory:"
    assert Memory(":memory:").location == ":memory:"
    assert Memory(f"sqlite:{sqlite_path}").recall("u", "file")[0].text == "kept in a file"


def test_version() -> None:
    import agent_memory

    assert agent_memory.__version__.count(".") == 2


def test_remember_dialogue_links_neighbours_and_weighs_roles(any_memory: Memory) -> None:
    at = datetime(2023, 5, 8, 12, tzinfo=timezone.utc)
    done = any_memory.remember_dialogue(
        "chat",
        [
            {"speaker": "user", "role": "user", "text": "I adopted a greyhound named Pixel.",
             "id": "t0", "session": 1, "at": at},
            {"speaker": "assistant", "role": "assistant", "id": "t1", "session": 1, "at": at,
             "text": "Congratulations on the greyhound you adopted, enjoy the walks!"},
            {"speaker": "user", "role": "user", "text": "Thanks, we walk daily.", "id": "t2",
             "session": 2, "at": at},
        ],
    )
    assert [d.id for d in done] == ["t0", "t1", "t2"]
    first = any_memory.get("chat", "t0")
    assert first is not None
    assert first.text == "[8 May 2023] user: I adopted a greyhound named Pixel."
    assert first.metadata["role"] == "user" and first.metadata["session"] == "1"
    # The turn after it in its session is its context; a new session is not.
    assert first.context == "assistant: Congratulations on the greyhound you adopted, enjoy the walks!"
    assert any_memory.get("chat", "t2").context is None
    # The user's own statement ranks above the assistant's restatement.
    assert any_memory.recall("chat", "adopted greyhound")[0].id == "t0"


def test_remember_dialogue_names_the_bad_turn(memory: Memory) -> None:
    from agent_memory import InvalidInputError

    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"text": "hi"}, {"text": "hello", "role": "robot"}])
    assert error.value.field == "turns[1].role"
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"speaker": "user"}])
    assert error.value.field == "turns[0].text"
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"text": "x", "speaker": "s" * 300}])
    assert error.value.field == "turns[0].speaker"
    # A misspelt key is refused, not dropped; a bool is no speaker or session number.
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"text": "x", "sesion": "s1"}])
    assert error.value.field == "turns[0].sesion"
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"text": "x", "speaker": True}])
    assert error.value.field == "turns[0].speaker"
    # The date the dialogue writes before a turn's text counts against the content limit:
    # checked before the first turn is stored.
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue("chat", [{"text": "hi"}, {"speaker": "a", "text": "x" * 1_048_573}])
    assert error.value.field == "turns[1].text"
    # One id twice: the later turn would have replaced the earlier, both answered as stored.
    with pytest.raises(InvalidInputError) as error:
        memory.remember_dialogue(
            "chat",
            [{"text": "hi", "id": "t1"}, {"text": "hello", "id": "t2"}, {"text": "again", "id": "t1"}],
        )
    assert error.value.field == "turns[2].id"
    assert "turns[0]" in str(error.value)
    assert memory.list("chat") == []


def test_knowledge_pages(memory: Memory) -> None:
    runbook = memory.put_page("kb", "runbook", "Deploy runbook", summary="How we deploy", tags=["Ops"])
    assert runbook["title"] == "Deploy runbook" and runbook["tags"] == ["ops"]
    assert runbook["referrers"] == []
    memory.put_page("kb", "release", "Release checklist", content="Follow the runbook.", references=["runbook", "later"])
    # What links here, whether or not the page is written yet.
    assert memory.get_page("kb", "runbook")["referrers"] == ["release"]
    assert memory.get_page("kb", "later") is None
    assert memory.get_page("kb", "release")["references"] == ["runbook", "later"]
    index = memory.pages("kb")
    # By title: the wiki's table of contents.
    assert [(entry["id"], entry["referenced_by"]) for entry in index] == [("runbook", 1), ("release", 0)]
    assert memory.pages("other") == []
    # Writing it again replaces it and keeps when it was created.
    again = memory.put_page("kb", "runbook", "Deploy runbook v2")
    assert again["title"] == "Deploy runbook v2" and again["summary"] == ""
    assert again["created_at"] == runbook["created_at"]
    # Recall's knowledge channel finds it.
    assert any(hit.source == "page" and hit.id == "release" for hit in memory.recall("kb", "release checklist"))
    with pytest.raises(InvalidInputError) as refused:
        memory.put_page("kb", "blank", " ")
    assert refused.value.field == "title"
    assert memory.get_page("kb", "blank") is None
    assert memory.remove_page("kb", "release") is True
    assert memory.remove_page("kb", "release") is False
    assert memory.get_page("kb", "runbook")["referrers"] == []


def test_a_page_lists_a_page_of_what_cites_it(memory: Memory) -> None:
    memory.put_page("kb", "index", "Index")
    for n in range(102):
        memory.put_page("kb", f"p{n:03}", f"Page {n}", references=["index"])
    index = memory.get_page("kb", "index")
    assert index["referrers"] == [f"p{n:03}" for n in range(100)]
    assert index["referrers_truncated"] is True
    assert memory.get_page("kb", "p000")["referrers_truncated"] is False


def test_a_page_edit_from_an_old_copy_is_refused(memory: Memory) -> None:
    read = memory.put_page("kb", "runbook", "Runbook", content="deploy on Tuesdays")
    first = memory.put_page("kb", "runbook", "Runbook", content="deploy on Thursdays", if_updated_at=read["updated_at"])
    assert first["content"] == "deploy on Thursdays" and first["updated_at"] != read["updated_at"]
    # A second edit from the same copy: refused, and the first edit stays.
    with pytest.raises(ConflictError):
        memory.put_page("kb", "runbook", "Runbook", content="deploy on Fridays", if_updated_at=read["updated_at"])
    assert memory.get_page("kb", "runbook")["content"] == "deploy on Thursdays"
    with pytest.raises(NotFoundError):
        memory.put_page("kb", "nowhere", "Nowhere", if_updated_at=read["updated_at"])
    assert memory.get_page("kb", "nowhere") is None
    with pytest.raises(InvalidInputError) as refused:
        memory.put_page("kb", "runbook", "Runbook", if_updated_at="Tuesday")
    assert refused.value.field == "if_updated_at"


def test_a_single_valued_relation_closes_the_current_one() -> None:
    memory = Memory(single_valued_relations=["lives_in"])
    for id, name in [("ava", "Ava"), ("paris", "Paris"), ("berlin", "Berlin")]:
        memory.add_entity("kb", id, name, "thing")
    assert memory.add_relation("kb", "ava", "paris", "lives_in") == []
    closed = memory.add_relation("kb", "ava", "berlin", "lives_in")
    assert [(r["target_id"], r["valid_until"] is not None) for r in closed] == [("paris", True)]
    # The walk follows the current relation only; both stay, the old one closed.
    assert [hit["entity"]["id"] for hit in memory.related("kb", "ava", depth=1)] == ["berlin"]
    assert len(memory.relations("kb", "ava")) == 2
    # A type not declared single-valued keeps every relation current.
    assert memory.add_relation("kb", "ava", "paris", "visited") == []
    assert memory.add_relation("kb", "ava", "berlin", "visited") == []


def test_the_knowledge_graph(memory: Memory) -> None:
    memory.add_entity("kb", "ana", "Ana Lima", "person", tags=["team"], attributes={"born": 1990, "city": "Lisbon"})
    memory.add_entity("kb", "acme", "Acme", "company", description="Makes anvils")
    memory.add_relation("kb", "acme", "ana", "employs", 0.8, attributes={"since": 2019})
    ana = memory.get_entity("kb", "ana")
    assert ana["name"] == "Ana Lima" and ana["tags"] == ["team"]
    assert ana["attributes"] == {"born": 1990, "city": "Lisbon"}
    assert memory.get_entity("kb", "nobody") is None
    assert [e["id"] for e in memory.entities("kb")] == ["acme", "ana"]
    assert memory.entities("other") == []
    # A page at a time, each after the last entity of the one before.
    first = memory.entities("kb", limit=1)
    assert [e["id"] for e in first] == ["acme"]
    assert [e["id"] for e in memory.entities("kb", limit=1, after=first[-1])] == ["ana"]
    assert memory.entities("kb", after={"namespace": "kb", "id": "ana"}) == []
    with pytest.raises(InvalidInputError) as refused:
        memory.entities("kb", after={"id": "ana"})
    assert refused.value.field == "after"
    assert [(r["source_id"], r["relation_type"], r["target_id"]) for r in memory.relations("kb", "ana")] == [
        ("acme", "employs", "ana")
    ]
    reached = memory.related("kb", "acme", depth=1)
    assert [hit["entity"]["id"] for hit in reached] == ["ana"] and reached[0]["hops"] == 1
    assert reached[0]["path"][0]["weight"] == pytest.approx(0.8)
    assert reached[0]["path"][0]["attributes"] == {"since": 2019}
    memory.add_relation("kb", "acme", "ana", "employs", 0.9)
    assert "attributes" not in memory.relations("kb", "acme")[0]  # adding again replaces them
    # Adding again replaces the entity; its relations stay.
    memory.add_entity("kb", "ana", "Ana Lima", "person", attributes={"city": "Porto"})
    assert memory.get_entity("kb", "ana")["attributes"] == {"city": "Porto"}
    assert len(memory.relations("kb", "ana")) == 1
    # Recall's graph channel finds it by name.
    assert any(hit.id == "ana" for hit in memory.recall("kb", "Ana Lima"))
    with pytest.raises(InvalidInputError, match="attributes"):
        memory.add_entity("kb", "x", "X", "thing", attributes=["Lisbon"])
    with pytest.raises(InvalidInputError) as refused:
        memory.add_entity("kb", "x", "X", "thing", tags=[f"t{n}" for n in range(9)])
    assert refused.value.field == "tags"
    assert memory.get_entity("kb", "x") is None
    with pytest.raises(InvalidInputError, match="weight"):
        memory.add_relation("kb", "acme", "ana", "employs", 2.0)
    assert memory.remove_entity("kb", "ana") is True
    assert memory.remove_entity("kb", "ana") is False
    assert memory.relations("kb", "acme") == []


def test_context_names_a_bad_session(memory: Memory) -> None:
    for session in ["a b", ""]:
        with pytest.raises(InvalidInputError) as refused:
            memory.context("u", "hey", session=session)
        assert refused.value.field == "session", session


def test_results_pickle_and_compare(memory: Memory) -> None:
    import copy
    import pickle

    done = memory.remember("u", "Ana moved to Lisbon", tags=["travel"], metadata={"where": "chat"})
    found = memory.recall("u", "Lisbon")
    record = memory.get("u", done.id)
    assert record is not None
    for value in (done, found, found[0], record):
        again = pickle.loads(pickle.dumps(value))
        assert type(again) is type(value)
        assert again == value
        assert copy.deepcopy(value) == value
    assert pickle.loads(pickle.dumps(found)).texts() == found.texts()
    assert pickle.loads(pickle.dumps(found[0])).breakdown == found[0].breakdown
    assert pickle.loads(pickle.dumps(record)).metadata == {"where": "chat"}
    assert memory.get("u", done.id) == record, "the same memory read again"
    other = memory.remember("u", "Ben stayed in Porto")
    assert memory.get("u", other.id) != record
    assert record != "not a record"
    assert len({record, memory.get("u", done.id), memory.get("u", other.id)}) == 2, "hashable, as equal"
    assert len({hit for hit in found} | set(pickle.loads(pickle.dumps(found)))) == len(found)
    assert hash(done) == hash(pickle.loads(pickle.dumps(done)))
