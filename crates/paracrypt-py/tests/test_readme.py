"""The README's Python examples run as they are, in order, in an empty directory."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

SECTION = "## Using it from Python"


def python_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", readme[start:end], flags=re.S | re.M)
    return [textwrap.dedent(code) for _, code in blocks]


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    blocks = python_blocks()
    assert blocks, "the Python section has examples"
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - our own README
    out = capsys.readouterr().out
    assert "wrong key or password" in out
    assert "['notes.txt']" in out
    assert not os.path.exists(tmp_path / "x")
    assert (tmp_path / "notes.dask.out").read_bytes() == (tmp_path / "notes.txt").read_bytes()
