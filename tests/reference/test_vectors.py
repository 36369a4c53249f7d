"""Every file in tests/testdata/container/, read by the reference reader (one test per file).

The file format is FORMAT.md's "Test vectors": a text header of `key: value` lines, a blank
line, then the container's bytes.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import paracrypt_reader as reader
import pytest

VECTORS = Path(__file__).resolve().parents[1] / "testdata" / "container"
EXPECTS = ("success", reader.HEADER_FAILURE, reader.PAYLOAD_FAILURE, reader.SIGNATURE_FAILURE)


@dataclass
class Vector:
    name: str
    expect: str
    secret: reader.Secret
    container: bytes
    plaintext_len: int = -1
    plaintext_sha256: str = ""
    error: str = ""
    verify_with: object = None  # version 3: the public key the reader requires


def parse_vector(path: Path) -> Vector:
    data = path.read_bytes()
    head, sep, container = data.partition(b"\n\n")
    assert sep, f"{path.name}: no blank line after the text header"
    fields = {}
    for line in head.decode("utf-8").split("\n"):
        key, sep, value = line.partition(": ")
        assert sep and key not in fields, f"{path.name}: bad header line {line!r}"
        fields[key] = value
    expect = fields.pop("expect")
    assert expect in EXPECTS, f"{path.name}: unknown expect {expect!r}"
    kind, _, value = fields.pop("secret").partition(" ")
    secret = {
        "key": lambda: reader.Key(bytes.fromhex(value)),
        "password": lambda: reader.Password(value.encode("utf-8")),
        "identity": lambda: reader.Identities(
            reader.recipients.load_identities(value.encode("ascii"))
        ),
    }[kind]()
    fields.pop("comment")
    vector = Vector(path.name, expect, secret, container)
    if "verify-with" in fields:
        scheme, _, public = fields.pop("verify-with").partition(" ")
        assert scheme == "ed25519", f"{path.name}: unknown scheme {scheme}"
        vector.verify_with = reader.paracrypt_sig.key_from_field(1, bytes.fromhex(public))
    if expect == "success":
        size, _, digest = fields.pop("plaintext").partition(" bytes, sha256 ")
        vector.plaintext_len, vector.plaintext_sha256 = int(size), digest
    else:
        vector.error = fields.pop("error")
    assert not fields, f"{path.name}: unexpected header lines {sorted(fields)}"
    return vector


def all_vectors() -> list:
    paths = sorted(p for p in VECTORS.iterdir() if p.is_file())
    assert paths, f"no test vectors in {VECTORS}"
    return paths


def read_all(vector: Vector) -> tuple:
    """(verified plaintext, FormatError or None), as a streaming reader produces them."""
    out = bytearray()
    try:
        for chunk in reader.decrypt(io.BytesIO(vector.container), vector.secret, vector.verify_with):
            out += chunk
    except reader.FormatError as e:
        return bytes(out), e
    return bytes(out), None


@pytest.mark.parametrize("path", all_vectors(), ids=lambda p: p.name)
def test_vector(path: Path) -> None:
    vector = parse_vector(path)
    plaintext, error = read_all(vector)
    if vector.expect == "success":
        assert error is None, f"{vector.name}: {error.kind}: {error.message}"
        assert len(plaintext) == vector.plaintext_len
        assert hashlib.sha256(plaintext).hexdigest() == vector.plaintext_sha256
    else:
        assert error is not None, f"{vector.name}: read {len(plaintext)} bytes, expected an error"
        assert (error.kind, error.message) == (vector.expect, vector.error)
        # A streaming reader writes only the verified chunks before the failing one (full
        # chunks, since only the last may be short).
        if error.kind == reader.HEADER_FAILURE or error.chunk is None:
            assert plaintext == b""
        else:
            chunk_size = reader.parse_header(vector.container).chunk_size
            assert len(plaintext) == error.chunk * chunk_size


def test_every_suite_has_every_expect() -> None:
    """The walk above is not vacuous: each suite, and version 2 (`recipients-*`), has success,
    header and payload cases; version 3 (`signed-*`) signature failures too."""
    seen = {}
    for path in all_vectors():
        vector = parse_vector(path)
        if path.name.startswith("recipients-"):
            group = "recipients"
        elif path.name.startswith("signed-"):
            group = "signed"
        else:
            group = next(
                s.name for s in reader.SUITES.values() if path.name.startswith(s.name + "-")
            )
        seen.setdefault(group, set()).add(vector.expect)
    assert set(seen) == {s.name for s in reader.SUITES.values()} | {"recipients", "signed"}
    assert seen.pop("signed") == set(EXPECTS), seen
    assert all(kinds == set(EXPECTS[:3]) for kinds in seen.values()), seen


def test_worked_example() -> None:
    """FORMAT.md's worked example, field by field, is the aes-256-gcm-empty vector."""
    vector = parse_vector(VECTORS / "aes-256-gcm-empty")
    assert vector.secret == reader.Key(b"paracrypt testkit key (32 bytes)")
    header = reader.parse_header(vector.container)
    assert (header.suite.name, header.kdf, header.chunk_size) == ("aes-256-gcm", 0, 64)
    assert header.salt == b"\xa5" * 32
    assert header.key_check.hex() == "aa1fbbcd009bd496361fbc49b926e856"
    assert vector.container[76:84].hex() == "62db9fb580c39dfe"
    assert header.mac.hex() == "61769904a5c49ec6914cc6d575f0d8ef70090c35c87a49f7a8a1112c00ba256c"
    assert vector.container[116:].hex() == "6a8232478e06cc9fc00ecf4f03ce38c2"
    assert read_all(vector) == (b"", None)
