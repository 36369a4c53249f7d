"""The README's Python examples run as they are, each a script of its own, in order, in an empty
directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import ROOT

SECTION = "## Using it from Python"


def python_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", readme[start:end], flags=re.S | re.M)
    return [textwrap.dedent(code) for _, code in blocks]


def test_the_readme_examples_run(tmp_path: Path) -> None:
    """Each example is a script of its own, run as a user runs it (``python example.py``), in
    order, in one directory: run in this process they would miss what only a script meets
    (Dask's worker processes import the script again)."""
    blocks = python_blocks()
    assert blocks, "the Python section has examples"
    out = ""
    for n, block in enumerate(blocks):
        script = tmp_path / f"example{n}.py"
        script.write_text(block)
        done = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"README example {n} failed:\n{block}\n{done.stderr}"
        out += done.stdout
    assert "wrong key or password" in out
    assert "['notes.txt']" in out
    assert not os.path.exists(tmp_path / "x")
    assert (tmp_path / "notes.dask.out").read_bytes() == (tmp_path / "notes.txt").read_bytes()
