"""The Python examples of the repository's README, and of the package's own, run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[3] / "README.md"


def python_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.skipif(not README.exists(), reason="run from a checkout")
def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    examples = python_examples()
    assert len(examples) >= 2
    if any("langgraph" in example for example in examples):
        pytest.importorskip("langgraph.graph")
    monkeypatch.chdir(tmp_path)  # the examples' files go there
    for example in examples:
        exec(compile(example, str(README), "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "Berlin" in printed and "Rust" in printed
    assert "I love hiking in the Alps" in printed


PACKAGE_README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.skipif(not PACKAGE_README.exists(), reason="run from a checkout")
def test_package_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    examples = re.findall(r"```python\n(.*?)```", PACKAGE_README.read_text(encoding="utf-8"), flags=re.S)
    assert len(examples) == 1
    exec(compile(examples[0], str(PACKAGE_README), "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "Berlin" in printed and "Rust" in printed
