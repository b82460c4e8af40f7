"""How much a recall costs from Python beside the same recall in Rust.

A LoCoMo-sized conversation (600 turns of two speakers over 30 dated sessions, each turn
one memory with its speaker and the turn it answers as context, as `cargo xtask eval`
stores LoCoMo) in one namespace of an in-memory Memory; then 100 questions, each recalled
many times:

- rust:   the recall timed inside Rust, call by call, with no Python between calls
          (Memory._time_recall: the cost of the library alone);
- python: `memory.recall(namespace, question)` timed call by call from Python (argument
          conversion, the GIL released and taken back, the result object);
- python + read: the same, then each hit's text and score read (20 hits by default);
- rank_bm25: BM25Okapi.get_scores over the same turns, then the top 20 (if rank_bm25 is
          installed), the plain-BM25 reference of the README's evaluation.

Build the extension optimised first, or the figures mean nothing:

    maturin develop --release --manifest-path crates/agent-memory-py/Cargo.toml
    python crates/agent-memory-py/bench/recall.py [--rounds 30]

Timings are wall-clock medians and move with the machine's load; no figure is asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import datetime, timedelta, timezone

from agent_memory import Memory

SPEAKERS = ("Caroline", "Melanie")
TOPICS = [
    ("painting", "a sunset over the lake", "the art class"),
    ("hiking", "the trail near the waterfall", "the mountain trip"),
    ("adoption", "the agency interview", "the adoption papers"),
    ("running", "the charity race", "the new shoes"),
    ("pottery", "a blue bowl", "the pottery workshop"),
    ("camping", "the tent by the river", "the camping weekend"),
    ("music", "the violin concert", "the guitar lessons"),
    ("books", "a novel about the sea", "the book club"),
    ("cooking", "the lasagna recipe", "the dinner party"),
    ("volunteering", "the shelter downtown", "the support group"),
    ("gardening", "the tomato plants", "the community garden"),
    ("travel", "the trip to Sweden", "the flight home"),
    ("photography", "the old camera", "the photo exhibition"),
    ("family", "the kids' school play", "the family reunion"),
    ("career", "the counseling job", "the job interview"),
]
OPENERS = [
    "I finally went to {thing} last week and loved it.",
    "Have you ever tried {topic}? I started because of {place}.",
    "We talked about {thing} for hours at {place}.",
    "Honestly {topic} has helped me a lot since {place}.",
    "My friend showed me {thing}, and now I can't stop thinking about {topic}.",
    "I signed up for {place} because {topic} makes me feel calm.",
    "Remember {thing}? I went back there yesterday.",
    "It was hard at first, but {topic} is becoming part of my routine.",
]
REPLIES = [
    "That sounds wonderful! How did {place} go?",
    "Wow, {thing} must have been amazing to see.",
    "I'm so glad {topic} is working out for you.",
    "You should bring photos of {thing} next time.",
    "I've been wanting to try {topic} myself since {place}.",
    "That's great news about {place}, congratulations!",
]
QUESTIONS = [
    "What did {speaker} say about {topic}?",
    "When did {speaker} go to {place}?",
    "Why did {speaker} start {topic}?",
    "What does {speaker} think of {thing}?",
]


def conversation(rng: random.Random, turns: int = 600, sessions: int = 30):
    """(speaker, text, context, time) for each turn, oldest first."""
    start = datetime(2023, 5, 8, 13, 0, tzinfo=timezone.utc)
    out = []
    previous = None
    per_session = turns // sessions
    for session in range(sessions):
        when = start + timedelta(days=7 * session)
        for turn in range(per_session):
            speaker = SPEAKERS[turn % 2]
            topic, thing, place = rng.choice(TOPICS)
            template = rng.choice(OPENERS if turn % 2 == 0 else REPLIES)
            text = f"{speaker}: " + template.format(topic=topic, thing=thing, place=place)
            out.append((speaker, text, previous, when + timedelta(minutes=turn)))
            previous = text
    return out


def questions(rng: random.Random, count: int = 100) -> list[str]:
    out = []
    for _ in range(count):
        topic, thing, place = rng.choice(TOPICS)
        out.append(rng.choice(QUESTIONS).format(speaker=rng.choice(SPEAKERS), topic=topic, thing=thing, place=place))
    return out


def median_us(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e6


def percentile_us(seconds: list[float], p: float) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="passes over the questions (default 30)")
    args = parser.parse_args()
    rng = random.Random(7)
    turns = conversation(rng)
    asked = questions(rng)
    namespace = "locomo/conv-1"

    memory = Memory(facts={"candidates": 0})  # every turn stored, as the eval stores them
    for n, (speaker, text, context, when) in enumerate(turns):
        memory.remember(namespace, text, id=f"D{n}", metadata={"speaker": speaker}, context=context, created_at=when)
    stored = memory.stats(namespace)["total"]

    for question in asked[:20]:  # warm up
        memory.recall(namespace, question)

    rust: list[float] = []
    python: list[float] = []
    python_read: list[float] = []
    clock = time.perf_counter
    for _ in range(args.rounds):
        rust.extend(memory._time_recall(namespace, asked))
        for question in asked:
            begin = clock()
            memory.recall(namespace, question)
            python.append(clock() - begin)
        for question in asked:
            begin = clock()
            for hit in memory.recall(namespace, question):
                hit.text
                hit.score
            python_read.append(clock() - begin)
    hits = statistics.mean(len(memory.recall(namespace, q)) for q in asked)

    rows = [("rust (inside the library)", rust), ("python recall", python), ("python recall + read hits", python_read)]
    try:
        from rank_bm25 import BM25Okapi

        tokenized = [text.lower().split() for _, text, _, _ in turns]
        bm25 = BM25Okapi(tokenized)
        reference: list[float] = []
        for _ in range(max(1, args.rounds // 10)):
            for question in asked:
                begin = clock()
                scores = bm25.get_scores(question.lower().split())
                sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:20]
                reference.append(clock() - begin)
        rows.append(("rank_bm25 (BM25Okapi, top 20)", reference))
    except ImportError:
        pass

    print(f"{stored} memories in one namespace, {len(asked)} questions x {args.rounds} rounds, {hits:.1f} hits per recall")
    print(f"{'':32} {'median':>10} {'p95':>10}")
    for name, samples in rows:
        print(f"{name:32} {median_us(samples):8.1f} us {percentile_us(samples, 0.95):8.1f} us")
    overhead = median_us(python) - median_us(rust)
    print(f"python - rust: {overhead:.1f} us per call; target: python <= 2 x rust + 10 us = {2 * median_us(rust) + 10:.1f} us")


if __name__ == "__main__":
    main()
