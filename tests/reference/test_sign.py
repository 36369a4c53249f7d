"""Signature files from the `paracrypt` binary, checked by the reference verifier
(paracrypt_sig.py, written from docs/SIGNATURES.md), for every scheme, chunk boundary and
thread count; and the failures it must find (an altered chunk, a truncated file, another key).
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import paracrypt_sig as ref
import pytest
from test_cli import BINARY, paracrypt

SEED = 20261125


def keypair(tmp: Path, kind: str) -> tuple[Path, Path]:
    key, public = tmp / f"{kind}.pem", tmp / f"{kind}.pub"
    if kind == "ed25519":
        paracrypt("keygen", "--kind", "ed25519", "-o", str(key), "--public-out", str(public))
    else:
        paracrypt(kind, "keygen", "-o", str(key), "--public-out", str(public))
    return key, public


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa", "rsa"])
def test_every_scheme_verifies(tmp_path: Path, kind: str) -> None:
    key, public = keypair(tmp_path, kind)
    public_key = ref.load_public_key(public.read_bytes())
    rng = random.Random(SEED)
    for case in range(6):
        chunk = rng.choice([16, 64, 4096, 65536])
        size = rng.choice([0, 1, chunk - 1, chunk, chunk + 1, 5 * chunk + 3, rng.randint(0, 300_000)])
        data = rng.randbytes(size)
        path = tmp_path / f"f{case}"
        path.write_bytes(data)
        extra = ["--rsa-scheme", "pss"] if kind == "rsa" and case % 2 else []
        threads = str(rng.randint(1, 4))
        paracrypt("sign", "-k", str(key), "--chunk-size", str(chunk), "-j", threads, *extra, str(path))
        sig = ref.Signature.parse((tmp_path / f"f{case}.psig").read_bytes())
        assert sig.chunk_size == chunk and sig.length == size
        ref.verify(sig, public_key, str(path))
        if size > 0:
            ref.verify(sig, public_key, str(path), (size // 2, 1))


def test_failures_are_found(tmp_path: Path) -> None:
    key, public = keypair(tmp_path, "ed25519")
    _, other = keypair(tmp_path, "ecdsa")
    data = random.Random(SEED).randbytes(10 * 4096 + 5)
    path = tmp_path / "f"
    path.write_bytes(data)
    paracrypt("sign", "-k", str(key), "--chunk-size", "4096", str(path))
    raw = (tmp_path / "f.psig").read_bytes()
    sig = ref.Signature.parse(raw)
    public_key = ref.load_public_key(public.read_bytes())
    altered = bytearray(data)
    altered[7 * 4096 + 1] ^= 1
    path.write_bytes(altered)
    with pytest.raises(ref.NotVerified, match="chunk 7 does not match"):
        ref.verify(sig, public_key, str(path))
    ref.verify(sig, public_key, str(path), (0, 4096))  # a range that misses chunk 7
    path.write_bytes(data[:-1])
    with pytest.raises(ref.NotVerified, match="bytes long"):
        ref.verify(sig, public_key, str(path))
    path.write_bytes(data)
    with pytest.raises(ref.NotVerified, match="another key"):
        ref.verify(sig, ref.load_public_key(other.read_bytes()), str(path))
    forged = bytearray(raw)
    forged[-1] ^= 1  # the last leaf
    with pytest.raises(ref.NotVerified, match="does not verify"):
        ref.verify(ref.Signature.parse(bytes(forged)), public_key, str(path))
    for cut in [0, 11, 29, 40, len(raw) - 1]:
        with pytest.raises(ref.Malformed):
            ref.Signature.parse(raw[:cut])
    # And the binary agrees with the reference on the same files.
    result = subprocess.run(
        [str(BINARY), "verify", "-p", str(public), str(path)], capture_output=True
    )
    assert result.returncode == 0, result.stderr
