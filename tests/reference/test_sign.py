"""Signature files from the `paracrypt` binary, checked by the reference verifier
(paracrypt_sig.py, written from docs/SIGNATURES.md), for every scheme, chunk boundary and
thread count; and the failures it must find (an altered chunk, a truncated file, another key).
"""

from __future__ import annotations

import random
import struct
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
        [str(BINARY), "verify", "--public", str(public), str(path)], capture_output=True
    )
    assert result.returncode == 0, result.stderr


def leaves_of(data: bytes, chunk_size: int) -> list[bytes]:
    n = ref.chunk_count(chunk_size, len(data))
    return [ref.leaf(i, data[i * chunk_size : (i + 1) * chunk_size]) for i in range(n)]


def test_ml_dsa_65_with_openssl_both_ways(tmp_path: Path) -> None:
    """ML-DSA-65 against pyca/cryptography's (OpenSSL 3.5+ inside its wheel): the key files
    read both ways to the same public key, paracrypt's signatures verify here, and a signature
    file written here with OpenSSL's ML-DSA verifies with the binary."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import mldsa

    key, public = tmp_path / "pq.pem", tmp_path / "pq.pub"
    paracrypt("keygen", "--kind", "ml-dsa-65", "-o", str(key), "--public-out", str(public))
    theirs = serialization.load_pem_private_key(key.read_bytes(), password=None)
    assert isinstance(theirs, mldsa.MLDSA65PrivateKey)
    public_key = ref.load_public_key(public.read_bytes())
    assert public_key.public_bytes_raw() == theirs.public_key().public_bytes_raw()
    rng = random.Random(SEED)
    data = rng.randbytes(3 * 4096 + 5)
    path = tmp_path / "f"
    path.write_bytes(data)
    paracrypt("sign", "-k", str(key), "--chunk-size", "4096", "-j", "2", str(path))
    sig = ref.Signature.parse((tmp_path / "f.psig").read_bytes())
    assert sig.scheme == 5 and len(sig.signature) == 3309 and len(sig.key) == 1952
    ref.verify(sig, public_key, str(path))
    altered = bytearray(data)
    altered[4096] ^= 1
    path.write_bytes(altered)
    with pytest.raises(ref.NotVerified, match="chunk 1 does not match"):
        ref.verify(sig, public_key, str(path))
    path.write_bytes(data)

    # The other way: a key made by OpenSSL (its PKCS#8 as cryptography writes it), a
    # signature file written from docs/SIGNATURES.md and signed by OpenSSL's ML-DSA-65.
    made = mldsa.MLDSA65PrivateKey.generate()
    their_key = tmp_path / "openssl.pem"
    their_key.write_bytes(
        made.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    their_public = tmp_path / "openssl.pub"
    their_public.write_bytes(
        made.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    leaves = leaves_of(data, 4096)
    digest = ref.file_digest(4096, len(data), ref.mth(leaves))
    signature = made.sign(ref.statement(5, digest))
    field = made.public_key().public_bytes_raw()
    header = (
        ref.MAGIC
        + bytes([1, 5, 1, 0])
        + struct.pack(">IQH", 4096, len(data), len(field))
        + field
        + struct.pack(">H", len(signature))
        + signature
    )
    sig_path = tmp_path / "openssl.psig"
    sig_path.write_bytes(header + b"".join(leaves))
    for public_file in (their_public, their_key):
        paracrypt("verify", "--public", str(public_file), "-s", str(sig_path), str(path))
    # paracrypt signs with OpenSSL's key file too, and the signature verifies here.
    paracrypt("sign", "-k", str(their_key), "-f", "--chunk-size", "4096", str(path))
    ref.verify(
        ref.Signature.parse((tmp_path / "f.psig").read_bytes()),
        made.public_key(),
        str(path),
    )
    # A flipped bit of OpenSSL's signature: exit 5 from the binary.
    forged = bytearray(sig_path.read_bytes())
    forged[34 + 1952 + 50] ^= 1
    sig_path.write_bytes(bytes(forged))
    result = subprocess.run(
        [str(BINARY), "verify", "--public", str(their_public), "-s", str(sig_path), str(path)],
        capture_output=True,
    )
    assert result.returncode == 5, result.stderr
