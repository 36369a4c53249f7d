"""The mistakes table (tests/mistakes/table.json: read its "about") through the Python package:
each common mistake raises its class with one line that holds the row's words (the way out, for
the command line and for Python alike), leaves nothing at the output and changes no existing
file. The CLI runs the same table (crates/paracrypt-cli/tests/cli/mistakes.rs)."""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, listing

import paracrypt

TABLE = json.loads((ROOT / "tests" / "mistakes" / "table.json").read_text())
FILES = ROOT / "tests" / "refusals" / "files"


def rows() -> list[Any]:
    return [
        pytest.param(row, id=row["mistake"]) for row in TABLE["rows"] if row["python"] is not None
    ]


def test_every_row_has_a_door_or_says_why() -> None:
    for row in TABLE["rows"]:
        assert row["python"] is not None or row.get("why"), row["mistake"]
    assert len(rows()) >= 15


@pytest.mark.parametrize("row", rows())
def test_a_mistake_gets_its_hint_and_leaves_nothing(
    row: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FILES)
    monkeypatch.delenv("PARACRYPT_PASSWORD", raising=False)
    out, folder, exists = tmp_path / "out", tmp_path / "dir", tmp_path / "exists"
    folder.mkdir()
    exists.write_bytes(b"left as it was\n")

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return {"{out}": str(out), "{dir}": str(folder), "{exists}": str(exists)}.get(
                value, value
            )
        if isinstance(value, dict) and "bytes" in value:
            return os.urandom(value["bytes"])
        if isinstance(value, dict) and "Recipients" in value:
            return paracrypt.Recipients(**value["Recipients"])
        return value

    call = row["python"]
    name = TABLE["outcomes"][row["outcome"]]["python"]
    expected = getattr(paracrypt, name, None) or getattr(builtins, name)
    with pytest.raises(expected) as raised:
        getattr(paracrypt, call["call"])(
            *(fill(a) for a in call["args"]), **{k: fill(v) for k, v in call["kwargs"].items()}
        )
    message = str(raised.value)
    assert "\n" not in message, message
    for words in row["says"]:
        assert words in message, f"{words!r} not in {message!r}"
    assert not out.exists()
    assert listing(tmp_path) == ["dir", "exists"]
    assert listing(folder) == []
    assert exists.read_bytes() == b"left as it was\n"


def test_the_guide_lists_every_mistake() -> None:
    guide = (ROOT / "docs" / "guide" / "outputs.md").read_text()
    for row in TABLE["rows"]:
        assert f"| {row['mistake']} |" in guide, row["mistake"]
