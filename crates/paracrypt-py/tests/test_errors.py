"""Bad input: each a typed exception, and nothing at the destination (no temporary file
either)."""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import pytest
from conftest import data, listing

import paracrypt
import paracrypt.dask

CHUNK = 4096
SEALED_CHUNK = CHUNK + 16


@pytest.fixture()
def sealed(tmp_path: Path) -> tuple[paracrypt.Key, bytes, bytes]:
    key = paracrypt.Key.generate()
    plain = data(CHUNK * 6 + 100)
    return key, plain, paracrypt.encrypt(plain, key=key, chunk_size=CHUNK)


def decrypt_fails(tmp_path: Path, blob: bytes, error: type[Exception], **secret: object) -> Exception:
    """Decrypting `blob` fails with `error`, in memory and file to file, leaving no output."""
    (tmp_path / "in").write_bytes(blob)
    with pytest.raises(error) as in_memory:
        paracrypt.decrypt(blob, **secret)  # type: ignore[arg-type]
    with pytest.raises(error) as from_file:
        paracrypt.decrypt_file(tmp_path / "in", tmp_path / "out", **secret)  # type: ignore[arg-type]
    assert str(in_memory.value) == str(from_file.value)
    assert listing(tmp_path) == ["in"], "nothing at the destination, no temporary file"
    return from_file.value


def test_wrong_key(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes]) -> None:
    _, _, blob = sealed
    e = decrypt_fails(tmp_path, blob, paracrypt.WrongKeyError, key=paracrypt.Key.generate())
    assert str(e) == "wrong key or password" and e.kind == "data"  # type: ignore[attr-defined]
    e = decrypt_fails(tmp_path, blob, paracrypt.WrongKeyError, password="guess")
    assert "encrypted with a key file" in str(e)


@pytest.mark.parametrize("chunk", [0, 3, 6])
def test_damaged_chunk(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes], chunk: int) -> None:
    key, _, blob = sealed
    damaged = bytearray(blob)
    damaged[116 + chunk * SEALED_CHUNK + 7] ^= 0x40
    e = decrypt_fails(tmp_path, bytes(damaged), paracrypt.AuthenticationError, key=key)
    assert e.chunk == chunk  # type: ignore[attr-defined]
    assert f"chunk {chunk} failed authentication" in str(e)


def test_swapped_chunks(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes]) -> None:
    key, _, blob = sealed
    a = 116 + SEALED_CHUNK
    swapped = blob[:a] + blob[a + SEALED_CHUNK:a + 2 * SEALED_CHUNK] + blob[a:a + SEALED_CHUNK] + blob[a + 2 * SEALED_CHUNK:]
    e = decrypt_fails(tmp_path, swapped, paracrypt.AuthenticationError, key=key)
    assert e.chunk == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (116 + SEALED_CHUNK * 6, "truncated after chunk 5"),
        (116 + SEALED_CHUNK * 2 + 5, "truncated inside chunk 2"),
        (116, "truncated after the header"),
        (50, "header damaged"),
    ],
)
def test_truncated_file(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes], cut: int,
                        message: str) -> None:
    key, _, blob = sealed
    e = decrypt_fails(tmp_path, blob[:cut], paracrypt.FormatError, key=key)
    assert message in str(e)


def test_trailing_data_and_strangers(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes]) -> None:
    key, _, blob = sealed
    assert "trailing data" in str(decrypt_fails(tmp_path, blob + b"x" * 20, paracrypt.FormatError, key=key))
    e = decrypt_fails(tmp_path, b"hello, world" * 100, paracrypt.FormatError, key=key)
    assert "not a paracrypt or age file" in str(e)


def test_altered_header(tmp_path: Path, sealed: tuple[paracrypt.Key, bytes, bytes]) -> None:
    key, _, blob = sealed
    altered = bytearray(blob)
    altered[30] ^= 1  # the salt: the checksum still reads right only if we fix it, so a damage
    decrypt_fails(tmp_path, bytes(altered), paracrypt.DataError, key=key)


def test_wrong_types_are_type_errors(tmp_path: Path) -> None:
    key = paracrypt.Key.generate()
    with pytest.raises(TypeError):
        paracrypt.encrypt("a str is not bytes", key=key)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt(b"x", key=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt(b"x", password=b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt(b"x", key=key, threads="many")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt(b"x", key=key, chunk_size=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt_file(12, tmp_path / "o", key=key)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        paracrypt.encrypt(b"x", recipients=[1, 2])  # type: ignore[list-item]
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "Python: key=, password= or recipients="),
        ({"password": "a", "key": paracrypt.Key.generate()}, "give one of"),
        ({"password": ""}, "the password is empty"),
        ({"password": "a", "cipher": "rot13"}, "unknown cipher `rot13`"),
        ({"password": "a", "chunk_size": 17}, "invalid chunk size 17"),
        ({"password": "a", "chunk_size": "lots"}, "`lots`"),
        ({"password": "a", "threads": 0}, "threads=0"),
        ({"password": "a", "provider": "hsm"}, "unknown provider `hsm`"),
        ({"password": "a", "format": "zip"}, "unknown format"),
        ({"password": "a", "armor": True}, "armor applies to age files"),
        ({"key": paracrypt.Key.generate(), "format": "age"}, "not a key"),
        ({"recipients": ["age1nope"]}, "recipient 1"),
    ],
)
def test_bad_requests_are_usage_errors(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    (tmp_path / "p").write_bytes(b"data")
    with pytest.raises(paracrypt.UsageError, match=message) as raised:
        paracrypt.encrypt_file(tmp_path / "p", tmp_path / "o", **kwargs)  # type: ignore[arg-type]
    assert raised.value.kind == "usage"
    assert isinstance(raised.value, ValueError)
    assert listing(tmp_path) == ["p"]


def test_missing_input_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(paracrypt.IoError) as raised:
        paracrypt.decrypt_file(tmp_path / "nope", tmp_path / "o", password="pw")
    assert raised.value.errno == 2 and isinstance(raised.value, OSError)
    assert listing(tmp_path) == []


def test_missing_output_directory(tmp_path: Path) -> None:
    (tmp_path / "p").write_bytes(b"x")
    with pytest.raises(paracrypt.IoError):
        paracrypt.encrypt_file(tmp_path / "p", tmp_path / "no" / "o", password="pw")


def test_the_package_has_no_test_hooks() -> None:
    """No keyword seals two plaintexts under one salt: the test hooks of the CLI's test builds
    (--fixed-salt) have no counterpart in the package, whatever features it was built with."""
    key = paracrypt.Key.generate()
    calls = [
        lambda: paracrypt.encrypt(b"x", key=key, _fixed_salt=bytes(32)),
        lambda: paracrypt.encrypt_into(b"x", bytearray(200), key=key, _fixed_salt=bytes(32)),
        lambda: paracrypt.encryptor(io.BytesIO(), key=key, _fixed_salt=bytes(32)),
        lambda: paracrypt.DistributedJob.encrypt(__file__, key=key, _fixed_salt=bytes(32)),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="_fixed_salt"):
            call()
    for function in (paracrypt.encrypt, paracrypt.encrypt_file, paracrypt.encrypt_into,
                     paracrypt.encryptor, paracrypt.dask.encrypt_file):
        text = getattr(function, "__text_signature__", None) or str(inspect.signature(function))
        assert "fixed" not in text, function
