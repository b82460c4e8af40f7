#!/usr/bin/env python3
"""Cross-validation of retrieval settings over LoCoMo and LongMemEval development files.

Runs the release `eval` binary once per configuration and benchmark with `--ranked`, then
chooses a configuration by leave-one-fold-out: the folds are LoCoMo's conversations and
LongMemEval's questions in 10 groups (by a hash of the question id). For each fold, the
configuration with the best mean of R@1, R@5 and R@10 over both benchmarks on the other
folds is chosen (only among configurations that beat plain BM25's published reference on
the whole of both files at R@1, R@5 and R@10, when given), and scored on the held-out fold.
Prints every configuration's figures, how often each was chosen, and the held-out mean and
standard deviation over folds.

    cargo build --release -p memory-benches --bin eval
    python3 benches/crossval.py --locomo ../shared/eval/locomo-dev \\
        --longmemeval ../shared/eval/longmemeval-dev/longmemeval_s_dev.json \\
        --config 'w0.45=--role-weight assistant=0.45' --config 'w0.65=--role-weight assistant=0.65'

Only the standard library is used; the data stays where it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KS = (1, 5, 10)
# Plain BM25 (rank_bm25) on the development files, from their READMEs: (R@1, R@5, R@10).
REFERENCE = {"L": (None, 53.3, 60.1), "M": (32.3, 66.3, 76.0)}


def recall(ranked: list[str], evidence: list[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def read_evidence(locomo: Path, longmemeval: Path) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {"L": {}, "M": {}}
    with open(locomo / "queries.jsonl", encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            if query.get("evidence"):
                out["L"][query["qid"]] = query["evidence"]
    with open(longmemeval, encoding="utf-8") as file:
        for question in json.load(file):
            if question["question_id"].endswith("_abs"):
                continue
            evidence = [
                f"s{index}:{position}"
                for index, session in enumerate(question["haystack_sessions"])
                for position, turn in enumerate(session)
                if turn.get("has_answer")
            ]
            if evidence:
                out["M"][question["question_id"]] = evidence
    return out


def fold_of(bench: str, qid: str) -> str:
    if bench == "L":
        return "L:" + qid.split("/")[0]
    return "M:%d" % (int(hashlib.md5(qid.encode()).hexdigest(), 16) % 10)


def run(binary: Path, args: list[str], flags: list[str], ranked: Path) -> None:
    subprocess.run(
        [str(binary), *args, *flags, "--ranked", str(ranked)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="the LoCoMo dev folder")
    parser.add_argument("--longmemeval", type=Path, required=True, help="the LongMemEval file")
    parser.add_argument("--config", action="append", required=True, help="NAME=eval flags")
    parser.add_argument("--eval", type=Path, default=Path("target/release/eval"))
    parser.add_argument("--no-reference", action="store_true", help="choose among all")
    options = parser.parse_args()

    evidence = read_evidence(options.locomo, options.longmemeval)
    benches = {
        "L": [
            "--memories", str(options.locomo / "memories.jsonl"),
            "--queries", str(options.locomo / "queries.jsonl"),
        ],
        "M": ["--longmemeval", str(options.longmemeval)],
    }
    # per configuration, per benchmark: qid -> (R@1, R@5, R@10)
    results: dict[str, dict[str, dict[str, tuple[float, ...]]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for spec in options.config:
            name, _, flags = spec.partition("=")
            results[name] = {}
            for bench, args in benches.items():
                ranked = Path(scratch) / f"{bench}-{name}.jsonl"
                run(options.eval, args, shlex.split(flags), ranked)
                per_question = {}
                with open(ranked, encoding="utf-8") as lines:
                    for line in lines:
                        row = json.loads(line)
                        if row["qid"] in evidence[bench]:
                            ev = evidence[bench][row["qid"]]
                            per_question[row["qid"]] = tuple(recall(row["turns"], ev, k) for k in KS)
                results[name][bench] = per_question
            print(f"ran {name}", file=sys.stderr)

    def mean(name: str, bench: str, k: int, keep=lambda fold: True) -> float | None:
        values = [m[k] for q, m in results[name][bench].items() if keep(fold_of(bench, q))]
        return 100 * sum(values) / len(values) if values else None

    def eligible(name: str) -> bool:
        if options.no_reference:
            return True
        return all(
            reference is None or (mean(name, bench, i) or 0.0) >= reference
            for bench, references in REFERENCE.items()
            for i, reference in enumerate(references)
        )

    print("| config | LoCoMo R@1 | R@5 | R@10 | LongMemEval R@1 | R@5 | R@10 | beats BM25 |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name in results:
        row = [mean(name, bench, i) for bench in "LM" for i in range(len(KS))]
        cells = " | ".join(f"{value:.1f}" for value in row)
        print(f"| {name} | {cells} | {'yes' if eligible(name) else 'no'} |")

    candidates = [name for name in results if eligible(name)]
    if not candidates:
        print("no configuration beats plain BM25 everywhere", file=sys.stderr)
        return 1
    folds = sorted({fold_of(b, q) for b in "LM" for q in evidence[b]})
    chosen: dict[str, int] = {}
    held: dict[str, list[list[float]]] = {b: [[] for _ in KS] for b in "LM"}
    for fold in folds:
        def objective(name: str) -> float:
            parts = [
                mean(name, bench, i, lambda f: f != fold) for bench in "LM" for i in range(len(KS))
            ]
            return statistics.mean(p for p in parts if p is not None)

        best = max(candidates, key=objective)
        chosen[best] = chosen.get(best, 0) + 1
        bench = fold[0]
        for i in range(len(KS)):
            value = mean(best, bench, i, lambda f: f == fold)
            if value is not None:
                held[bench][i].append(value)
    print(f"\nchosen per fold ({len(folds)} folds): {chosen}")
    for bench, label in (("L", "LoCoMo"), ("M", "LongMemEval")):
        parts = ", ".join(
            f"R@{k} {statistics.mean(v):.1f} ({statistics.stdev(v):.1f})"
            for k, v in zip(KS, held[bench])
        )
        print(f"{label} held-out mean (sd over folds): {parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
