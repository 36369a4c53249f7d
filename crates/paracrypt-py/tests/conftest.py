"""Shared fixtures: the `paracrypt` binary (``$PARACRYPT_BIN``, default target/debug/paracrypt)
and the `age` binaries, which the interop tests run; a missing one fails, it never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("PARACRYPT_BIN", ROOT / "target" / "debug" / "paracrypt"))


def run(args: list[str], stdin: Optional[bytes] = None, env: Optional[dict[str, str]] = None,
        check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Runs a command; a failure shows its stderr."""
    result = subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}: {result.stderr.decode()}")
    return result


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """Runs the `paracrypt` binary with the given arguments."""
    assert BINARY.is_file(), f"{BINARY} not built (cargo build, or set PARACRYPT_BIN)"

    def call(*args: str, stdin: Optional[bytes] = None, env: Optional[dict[str, str]] = None,
             check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return run([str(BINARY), *args], stdin=stdin, env=env, check=check)

    return call


@pytest.fixture(scope="session")
def age_bin() -> str:
    """The `age` binary (Debian package `age`, installed by scripts/test.sh)."""
    path = shutil.which("age")
    assert path, "age is not installed (scripts/test.sh installs the Debian package)"
    return path


def data(size: int, seed: int = 1) -> bytes:
    """`size` bytes that differ from chunk to chunk (so that swapped chunks would show)."""
    block = bytes((seed * 7 + i * 13) % 251 for i in range(4096))
    out = bytearray()
    n = 0
    while len(out) < size:
        out += n.to_bytes(8, "little") + block[8:]
        n += 1
    return bytes(out[:size])


def listing(directory: Path) -> list[str]:
    """The names in `directory`, hidden ones (temporary files) included."""
    return sorted(p.name for p in directory.iterdir())


def same_salt(cli: Callable[..., subprocess.CompletedProcess[bytes]], sealed: bytes, plain: bytes,
              *args: str) -> bytes:
    """What ``paracrypt encrypt -j1 ARGS`` writes for ``plain`` under the salt of the container
    ``sealed`` (its header's bytes 28..60): the bytes ``sealed`` must be, wherever and however
    it was made. (A test build of the CLI has ``--fixed-salt``; the package has no way to
    choose a salt.)"""
    with tempfile.TemporaryDirectory() as scratch:
        src, dst = Path(scratch, "plain"), Path(scratch, "sealed")
        src.write_bytes(plain)
        cli("encrypt", "-q", "-j1", "--fixed-salt", sealed[28:60].hex(), *args, str(src), "-o",
            str(dst))
        return dst.read_bytes()
