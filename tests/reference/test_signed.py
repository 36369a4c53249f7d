"""Signed containers (format version 3) from the `paracrypt` binary, read and verified by the
reference reader written from docs/FORMAT.md: every key kind, and the failures a signed file
adds (another signer, an unsigned file, a chunk whose signature fails while its tag holds).
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import paracrypt_reader as reader
import paracrypt_sig
import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("PARACRYPT_BIN", ROOT / "target" / "debug" / "paracrypt"))
CHUNK = 4096


def run(*args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run([str(BINARY), *args], input=stdin, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def signing_key(tmp: Path, kind: str) -> tuple[Path, Path]:
    key, public = tmp / f"{kind}.pem", tmp / f"{kind}.pub"
    command = [kind, "keygen"] if kind in ("rsa", "ecdsa") else ["keygen", "--kind", kind]
    run(*command, "-o", str(key), "--public-out", str(public))
    return key, public


def key_file(tmp: Path) -> tuple[Path, reader.Key]:
    path = tmp / "key"
    run("keygen", "-o", str(path))
    return path, reader.parse_key_file(path.read_text())


def public(path: Path):
    return paracrypt_sig.load_public_key(path.read_bytes())


def read_all(sealed: bytes, secret, expected) -> bytes:
    return b"".join(reader.decrypt(io.BytesIO(sealed), secret, expected))


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa", "rsa", "ml-dsa-65"])
def test_signed_files_read_and_verify(tmp_path: Path, kind: str) -> None:
    signer, signer_pub = signing_key(tmp_path, kind)
    path, secret = key_file(tmp_path)
    for size in (0, 1, CHUNK, 3 * CHUNK + 17):
        plain = os.urandom(size)
        sealed = run(
            "encrypt", "-q", "-k", str(path), "--sign", str(signer), "--chunk-size", "4KiB",
            stdin=plain,
        )
        header = reader.parse_header(sealed)
        assert header.signer is not None
        assert read_all(sealed, secret, public(signer_pub)) == plain
        assert read_all(sealed, secret, None) == plain


def test_signed_failures(tmp_path: Path) -> None:
    signer, signer_pub = signing_key(tmp_path, "ed25519")
    other = tmp_path / "other"
    other.mkdir()
    _, other_pub = signing_key(other, "ed25519")
    path, secret = key_file(tmp_path)
    plain = os.urandom(4 * CHUNK + 5)
    sealed = run(
        "encrypt", "-q", "-k", str(path), "--sign", str(signer), "--chunk-size", "4KiB",
        stdin=plain,
    )
    h = len(reader.parse_header(sealed).raw)
    stride = CHUNK + 16 + 64

    def fails(data: bytes, expected, kind: str, message: str, released: int) -> None:
        out = []
        with pytest.raises(reader.FormatError) as failure:
            for chunk in reader.decrypt(io.BytesIO(data), secret, expected):
                out.append(chunk)
        assert failure.value.kind == kind, failure.value.message
        assert failure.value.message.startswith(message), failure.value.message
        assert b"".join(out) == plain[: released * CHUNK]

    fails(sealed, public(other_pub), reader.SIGNATURE_FAILURE, "signed by another key", 0)
    unsigned = run("encrypt", "-q", "-k", str(path), "--chunk-size", "4KiB", stdin=plain)
    fails(unsigned, public(signer_pub), reader.SIGNATURE_FAILURE, "the file is not signed", 0)
    flipped = bytearray(sealed)
    flipped[h + 2 * stride + CHUNK + 16 + 3] ^= 1
    fails(
        bytes(flipped), public(signer_pub), reader.SIGNATURE_FAILURE,
        "chunk 2 is not signed by the file's signer", 2,
    )
    flipped = bytearray(sealed)
    flipped[h + stride + 7] ^= 1
    fails(bytes(flipped), public(signer_pub), reader.PAYLOAD_FAILURE, "chunk 1 failed", 1)
    fails(
        sealed[: h + 2 * stride], public(signer_pub), reader.PAYLOAD_FAILURE,
        "file truncated after chunk 1", 1,
    )
    # The Rust reader agrees: the same messages from the binary.
    for data, needle in [(bytes(flipped), "chunk 1 failed authentication")]:
        done = subprocess.run(
            [str(BINARY), "decrypt", "-k", str(path), "--verify-with", str(signer_pub), "-"],
            input=data, capture_output=True, check=False,
        )
        assert done.returncode == 1 and needle in done.stderr.decode()


def test_ecdsa_signatures_have_one_form(tmp_path: Path) -> None:
    """An ECDSA chunk signature is read only with a low s: chunk 1's (r, s) replaced by its
    other form (r, n - s), a valid ECDSA signature of the same statement, is refused as an
    altered signature, by this reader and by the binary (exit 5)."""
    signer, signer_pub = signing_key(tmp_path, "ecdsa")
    path, secret = key_file(tmp_path)
    plain = os.urandom(3 * CHUNK + 5)
    sealed = run(
        "encrypt", "-q", "-k", str(path), "--sign", str(signer), "--chunk-size", "4KiB",
        stdin=plain,
    )
    h = len(reader.parse_header(sealed).raw)
    stride = CHUNK + 16 + 64
    at = h + stride + CHUNK + 16 + 32
    s = int.from_bytes(sealed[at:at + 32], "big")
    assert s <= paracrypt_sig.P256_ORDER // 2, "the writer's s is the low one"
    flipped = bytearray(sealed)
    flipped[at:at + 32] = (paracrypt_sig.P256_ORDER - s).to_bytes(32, "big")
    out = []
    with pytest.raises(reader.FormatError) as failure:
        for chunk in reader.decrypt(io.BytesIO(bytes(flipped)), secret, public(signer_pub)):
            out.append(chunk)
    assert failure.value.kind == reader.SIGNATURE_FAILURE, failure.value.message
    assert failure.value.message.startswith("chunk 1 is not signed by the file's signer")
    assert b"".join(out) == plain[:CHUNK]
    done = subprocess.run(
        [str(BINARY), "decrypt", "-k", str(path), "--verify-with", str(signer_pub), "-"],
        input=bytes(flipped), capture_output=True, check=False,
    )
    assert done.returncode == 5, done.stderr.decode()
    assert "chunk 1 is not signed by the file's signer" in done.stderr.decode()
