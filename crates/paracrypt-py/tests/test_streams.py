"""Streams: file objects that work with shutil, tarfile and io, the must-close rule of the
writer, verified reads, and the same bytes as the other drivers."""

from __future__ import annotations

import gc
import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import data, same_salt

import paracrypt
from paracrypt import raw



@pytest.fixture()
def key() -> paracrypt.Key:
    return paracrypt.Key.generate()


def test_writer_gives_the_bytes_of_encrypt(key: paracrypt.Key, cli: Any,
                                           tmp_path: Path) -> None:
    plain = data(50_000)
    out = io.BytesIO()
    with paracrypt.encryptor(out, key=key, chunk_size=4096, threads=3) as w:
        for n in range(0, len(plain), 3333):
            assert w.write(plain[n:n + 3333]) == len(plain[n:n + 3333])
    key.save(tmp_path / "key")
    # The bytes of the CLI (and so of encrypt()) under the same salt.
    assert out.getvalue() == same_salt(cli, out.getvalue(), plain, "--chunk-size", "4KiB", "-k",
                                       str(tmp_path / "key"))
    assert not out.closed, "the underlying file object stays open"


def test_reader_gives_the_plaintext_in_any_read_size(key: paracrypt.Key) -> None:
    plain = data(70_000)
    sealed = paracrypt.encrypt(plain, key=key, chunk_size=4096)
    reader = paracrypt.decryptor(io.BytesIO(sealed), key=key)
    got = bytearray()
    while chunk := reader.read(1001):
        got += chunk
    assert bytes(got) == plain
    assert paracrypt.decryptor(io.BytesIO(sealed), key=key).read() == plain
    buffered = io.BufferedReader(paracrypt.decryptor(io.BytesIO(sealed), key=key))
    assert buffered.read(5) == plain[:5] and buffered.peek(1)[:1] == plain[5:6]
    assert buffered.read() == plain[5:]


def test_shutil_copyfileobj_both_ways(tmp_path: Path, key: paracrypt.Key, cli: object) -> None:
    plain = data(3 * (1 << 20) + 7)
    (tmp_path / "p").write_bytes(plain)
    key.save(tmp_path / "key")
    with open(tmp_path / "p", "rb") as src, open(tmp_path / "c", "wb") as dst:
        with paracrypt.encryptor(dst, key=key) as w:
            shutil.copyfileobj(src, w)
    # The CLI reads what the stream wrote, and Python's stream reads it back.
    assert cli("decrypt", "-k", str(tmp_path / "key"), str(tmp_path / "c")).stdout == plain  # type: ignore[operator]
    with open(tmp_path / "c", "rb") as src, open(tmp_path / "d", "wb") as dst:
        shutil.copyfileobj(paracrypt.decryptor(src, key=key), dst)
    assert (tmp_path / "d").read_bytes() == plain


def test_tarfile_streams_through(tmp_path: Path, key: paracrypt.Key) -> None:
    (tmp_path / "dir").mkdir()
    for n in range(5):
        (tmp_path / "dir" / f"f{n}").write_bytes(data(30_000 * n, seed=n))
    sealed = io.BytesIO()
    with paracrypt.encryptor(sealed, password="pw") as w:
        with tarfile.open(fileobj=w, mode="w|") as tar:
            tar.add(tmp_path / "dir", arcname="dir")
    sealed.seek(0)
    with tarfile.open(fileobj=paracrypt.decryptor(sealed, password="pw"), mode="r|") as tar:
        names = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    assert names == {f"dir/f{n}": data(30_000 * n, seed=n) for n in range(5)}


def test_text_through_the_reader(key: paracrypt.Key) -> None:
    text = "ligne accentuée\n" * 1000
    sealed = paracrypt.encrypt(text.encode(), key=key, chunk_size=1024)
    wrapper = io.TextIOWrapper(io.BufferedReader(paracrypt.decryptor(io.BytesIO(sealed), key=key)),
                               encoding="utf-8")
    assert wrapper.readline() == "ligne accentuée\n"
    assert len(wrapper.readlines()) == 999


def test_a_writer_left_by_an_exception_leaves_a_truncated_file(key: paracrypt.Key) -> None:
    out = io.BytesIO()
    with pytest.raises(RuntimeError):
        with paracrypt.encryptor(out, key=key, chunk_size=1024) as w:
            w.write(data(10_000))
            raise RuntimeError("the pipeline failed")
    assert w.closed
    with pytest.raises(paracrypt.FormatError, match="truncated"):
        paracrypt.decrypt(out.getvalue(), key=key)


def test_an_unclosed_writer_leaves_no_valid_file(key: paracrypt.Key) -> None:
    out = io.BytesIO()
    w = paracrypt.encryptor(out, key=key, chunk_size=1024)
    w.write(data(10_000))
    del w
    gc.collect()
    with pytest.raises(paracrypt.FormatError):
        paracrypt.decrypt(out.getvalue(), key=key)
    # Nothing written at all: the header alone.
    out = io.BytesIO()
    w = paracrypt.encryptor(out, key=key)
    w.abort()
    with pytest.raises(paracrypt.FormatError, match="truncated after the header"):
        paracrypt.decrypt(out.getvalue(), key=key)


def test_closed_file_objects(tmp_path: Path, key: paracrypt.Key) -> None:
    closed = io.BytesIO()
    closed.close()
    with pytest.raises(ValueError, match="closed file"):
        paracrypt.encryptor(closed, key=key)
    with pytest.raises(ValueError, match="closed file"):
        paracrypt.decryptor(closed, key=key)
    # The file object closed under a running writer: its write raises, the writer is broken.
    target = open(tmp_path / "out", "wb")  # noqa: SIM115 - closed below on purpose
    w = paracrypt.encryptor(target, key=key, chunk_size=1024, threads=1)
    w.write(data(100))
    target.close()
    with pytest.raises(ValueError, match="closed file"):
        w.write(data(10_000))
        w.close()
    with pytest.raises(ValueError):
        w.write(b"more")
    # A closed writer or reader refuses further use.
    w2 = paracrypt.encryptor(io.BytesIO(), key=key)
    w2.close()
    with pytest.raises(ValueError, match="closed file"):
        w2.write(b"x")
    r = paracrypt.decryptor(io.BytesIO(paracrypt.encrypt(b"abc", key=key)), key=key)
    r.close()
    with pytest.raises(ValueError, match="closed file"):
        r.read()


def test_the_reader_verifies_before_handing_out(key: paracrypt.Key) -> None:
    plain = data(4096 * 10)
    sealed = bytearray(paracrypt.encrypt(plain, key=key, chunk_size=4096))
    sealed[116 + 7 * (4096 + 16) + 9] ^= 1
    reader = paracrypt.decryptor(io.BytesIO(bytes(sealed)), key=key, threads=2)
    got = bytearray()
    with pytest.raises(paracrypt.AuthenticationError) as raised:
        while chunk := reader.read(1000):
            got += chunk
    assert raised.value.chunk == 7
    assert bytes(got) == plain[:7 * 4096], "every byte before the damaged chunk, nothing after"
    with pytest.raises(ValueError, match="the stream failed"):
        reader.read(10)
    with pytest.raises(paracrypt.WrongKeyError):
        paracrypt.decryptor(io.BytesIO(bytes(sealed)), key=paracrypt.Key.generate())
    cut = paracrypt.decryptor(io.BytesIO(bytes(sealed[:116 + 2 * (4096 + 16)])), key=key)
    with pytest.raises(paracrypt.FormatError, match="truncated after chunk 1"):
        cut.read()


def test_age_streams_armored_and_binary(tmp_path: Path, age_bin: str) -> None:
    import subprocess

    identity = tmp_path / "me.key"
    subprocess.run(["age-keygen", "-o", str(identity)], check=True, capture_output=True)
    ids = paracrypt.Identities.load(identity)
    recipient = ids.recipients()
    plain = data(200_000)
    for armor in (False, True):
        out = io.BytesIO()
        with paracrypt.encryptor(out, recipients=recipient, format="age", armor=armor) as w:
            w.write(plain)
        sealed = out.getvalue()
        assert sealed.startswith(b"-----BEGIN AGE" if armor else b"age-encryption.org/v1")
        age = subprocess.run([age_bin, "-d", "-i", str(identity)], input=sealed,
                             capture_output=True, check=True)
        assert age.stdout == plain
        assert paracrypt.decryptor(io.BytesIO(sealed), identities=ids).read() == plain


def test_raw_streams_match_raw_bytes() -> None:
    plain = data(20_000)
    args = {"cipher": "aes-128-cbc", "key": bytes(range(16)), "iv": bytes(16)}
    out = io.BytesIO()
    with pytest.warns(paracrypt.LegacyWarning, match="no integrity protection"):
        with raw.encryptor(out, chunk_size=64, **args) as w:  # type: ignore[arg-type]
            w.write(plain)
    with pytest.warns(paracrypt.LegacyWarning):
        assert out.getvalue() == raw.encrypt(plain, **args)  # type: ignore[arg-type]
        assert raw.decryptor(io.BytesIO(out.getvalue()), **args).read() == plain  # type: ignore[arg-type]


def test_stream_progress(key: paracrypt.Key) -> None:
    plain = data(3 << 20)
    seen: list[int] = []
    out = io.BytesIO()
    with paracrypt.encryptor(out, key=key, progress=seen.append) as w:
        w.write(plain)
    seen_read: list[int] = []
    assert sum(seen) == len(plain)
    paracrypt.decryptor(io.BytesIO(out.getvalue()), key=key, progress=seen_read.append).read()
    assert sum(seen_read) == len(out.getvalue())
