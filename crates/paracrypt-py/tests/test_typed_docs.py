"""help() shows each public function's types: its docstring opens with the typed signature of
the stub (python/paracrypt/_paracrypt.pyi), written into the Rust docs by tools/typed_docs.py
(CPython's inspect refuses annotations in ``__text_signature__``, so they cannot go there)."""

from __future__ import annotations

import inspect
import pydoc
import sys
from pathlib import Path

import pytest

import paracrypt._paracrypt as native

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import typed_docs  # noqa: E402

SIGNATURES = typed_docs.signatures()
TYPED = sorted(SIGNATURES)


def test_the_stub_has_the_functions() -> None:
    assert {"encrypt", "decrypt_file", "encrypt_tree", "verify_tree", "raw_encrypt"} <= set(TYPED)


@pytest.mark.parametrize("name", TYPED)
def test_help_shows_the_stub_s_types(name: str) -> None:
    function = getattr(native, name)
    typed = "\n".join(SIGNATURES[name])
    assert (function.__doc__ or "").startswith(typed), (
        f"{name}'s docstring does not open with the stub's signature: run "
        "`python tools/typed_docs.py` in crates/paracrypt-py and rebuild"
    )
    # The plain text signature stays, so inspect (and help's first line) still work.
    assert inspect.signature(function).parameters
    assert typed.splitlines()[0] in pydoc.render_doc(function)
