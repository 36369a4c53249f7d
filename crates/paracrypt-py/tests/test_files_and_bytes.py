"""Files, bytes and key files: round trips, the same bytes as the CLI, every buffer type, every
provider and thread count."""

from __future__ import annotations

import array
import os
import pickle
import stat
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from conftest import data, listing, same_salt

import paracrypt

Cli = Callable[..., Any]
SIZES = [0, 1, 4095, 4096, 4097, 3 * 4096, 3 * 4096 + 5, 100_000]


@pytest.fixture()
def key() -> paracrypt.Key:
    return paracrypt.Key.generate()


@pytest.mark.parametrize("size", SIZES)
def test_bytes_round_trip_at_chunk_boundaries(key: paracrypt.Key, size: int) -> None:
    plain = data(size)
    sealed = paracrypt.encrypt(plain, key=key, chunk_size=4096)
    assert isinstance(sealed, bytes) and sealed.startswith(b"PARACRYPT")
    assert paracrypt.decrypt(sealed, key=key) == plain


@pytest.mark.parametrize(
    "wrap",
    [
        bytes,
        bytearray,
        memoryview,
        lambda b: array.array("B", b),
        lambda b: np.frombuffer(b, dtype=np.uint8).copy(),
        lambda b: np.frombuffer(b, dtype=np.float64),
        lambda b: memoryview(b)[8:],
    ],
    ids=["bytes", "bytearray", "memoryview", "array", "numpy-u8", "numpy-f64", "slice"],
)
def test_every_buffer_is_read(key: paracrypt.Key, wrap: object, cli: Cli,
                              tmp_path: Path) -> None:
    plain = data(80_000)
    given = wrap(plain)  # type: ignore[operator]
    expected = bytes(memoryview(given).cast("B"))
    key.save(tmp_path / "key")
    sealed = paracrypt.encrypt(given, key=key, chunk_size="16KiB")
    assert sealed == same_salt(cli, sealed, expected, "--chunk-size", "16KiB", "-k",
                               str(tmp_path / "key"))
    assert paracrypt.decrypt(bytearray(sealed), key=key) == expected


def test_sizes_as_users_type_them(key: paracrypt.Key) -> None:
    """``chunk_size=`` takes sizes as the CLI does (one parser, the core's): KB/MB decimal,
    KiB/MiB and K/M binary; anything else is refused naming the forms it takes."""
    plain = data(2_500_000)
    sealed = paracrypt.encrypt(plain, key=key, chunk_size="1MB")
    assert paracrypt.info(sealed)["chunk_size"] == 1_000_000
    assert paracrypt.decrypt(sealed, key=key) == plain
    small = paracrypt.encrypt(b"x", key=key, chunk_size="64k")
    assert paracrypt.info(small)["chunk_size"] == 65536
    with pytest.raises(paracrypt.UsageError, match="multiple of 16"):
        paracrypt.encrypt(b"x", key=key, chunk_size="1KB")
    with pytest.raises(paracrypt.UsageError, match="KB/MB/GB/TB"):
        paracrypt.encrypt(b"x", key=key, chunk_size="1.5MB")


def test_a_strided_array_is_refused(key: paracrypt.Key) -> None:
    strided = np.arange(100, dtype=np.uint8)[::2]
    with pytest.raises((BufferError, ValueError)):
        paracrypt.encrypt(strided, key=key)


def test_same_bytes_at_any_thread_count_and_provider(key: paracrypt.Key, cli: Cli,
                                                      tmp_path: Path) -> None:
    plain = data(300_000)
    key.save(tmp_path / "key")
    for threads in (1, 2, 3):
        for provider in (None, "aws-lc", "openssl", "rustcrypto"):
            sealed = paracrypt.encrypt(plain, key=key, chunk_size=4096, threads=threads,
                                       provider=provider)
            assert sealed == same_salt(cli, sealed, plain, "--chunk-size", "4KiB", "-k",
                                       str(tmp_path / "key")), (threads, provider)


@pytest.mark.parametrize(
    "cipher",
    ["aes-256-gcm", "aes-128-gcm", "chacha20-poly1305", "aes-256-ctr-hmac-sha256",
     "des-ede3-cbc-hmac-sha256", "bf-cbc-hmac-sha256", "rc4-hmac-sha256"],
)
def test_every_suite_matches_the_cli(tmp_path: Path, cli: Cli, cipher: str) -> None:
    plain = data(20_000)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    legacy = cipher not in ("aes-256-gcm", "aes-128-gcm", "chacha20-poly1305")
    with pytest.warns(paracrypt.LegacyWarning) if legacy else _no_warning():
        written = paracrypt.encrypt_file(tmp_path / "plain", tmp_path / "py.pcr", key=key,
                                         cipher=cipher, chunk_size=1024)
    ours = (tmp_path / "py.pcr").read_bytes()
    assert written == len(ours)
    assert ours == same_salt(cli, ours, plain, "-c", cipher, "--chunk-size", "1KiB", "-k",
                             str(tmp_path / "key"))
    assert paracrypt.decrypt(ours, key=key) == plain


def test_a_large_result_is_whole(tmp_path: Path, cli: Cli) -> None:
    # Past 4 MiB the result's memory is advised to huge pages and zeroed in pieces on the
    # pool's threads before the chunks are written into it: every byte must still be the CLI's.
    plain = data(9 * 1024 * 1024 + 12345)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    for threads in (1, 2, 3):
        sealed = paracrypt.encrypt(plain, key=key, threads=threads)
        assert sealed == same_salt(cli, sealed, plain, "-k", str(tmp_path / "key"))
        assert paracrypt.decrypt(sealed, key=key, threads=threads) == plain


def test_into_a_kept_buffer(key: paracrypt.Key, cli: Cli, tmp_path: Path) -> None:
    plain = data(300_000)
    key.save(tmp_path / "key")
    sealed = paracrypt.encrypt(plain, key=key, chunk_size=4096)
    out = bytearray(len(sealed) + 7)
    for threads in (1, 2):
        n = paracrypt.encrypt_into(plain, out, key=key, chunk_size=4096, threads=threads)
        assert n == len(sealed)
        assert bytes(out[:n]) == same_salt(cli, bytes(out[:n]), plain, "--chunk-size", "4KiB",
                                           "-k", str(tmp_path / "key"))
    back = np.zeros(len(sealed), dtype=np.uint8)
    n = paracrypt.decrypt_into(memoryview(out)[: len(sealed)], back, key=key)
    assert n == len(plain) and bytes(back[:n]) == plain
    with pytest.raises(paracrypt.UsageError, match=f"needs {len(sealed)}"):
        paracrypt.encrypt_into(plain, bytearray(len(sealed) - 1), key=key, chunk_size=4096)
    shared = bytearray(2 * len(sealed))
    shared[: len(plain)] = plain
    with pytest.raises(paracrypt.UsageError, match="overlaps"):
        paracrypt.encrypt_into(memoryview(shared)[: len(plain)], memoryview(shared)[100:],
                               key=key)
    with pytest.raises(BufferError):
        paracrypt.encrypt_into(plain, bytes(len(sealed)), key=key)
    with pytest.raises(paracrypt.UsageError, match="armor"):
        paracrypt.encrypt_into(plain, out, password="pw", format="age", armor=True)
    damaged = bytearray(sealed)
    damaged[len(sealed) // 2] ^= 1
    with pytest.raises(paracrypt.AuthenticationError):
        paracrypt.decrypt_into(damaged, back, key=key)


class _no_warning:
    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error", paracrypt.LegacyWarning)

    def __exit__(self, *exc: object) -> None:
        self._catch.__exit__(*exc)


def test_cli_and_python_open_each_others_files(tmp_path: Path, cli: object) -> None:
    plain = data(3 * (1 << 20) + 17)
    (tmp_path / "plain").write_bytes(plain)
    cli("keygen", "-o", str(tmp_path / "cli.key"))
    key = paracrypt.Key.load(tmp_path / "cli.key")
    # Python writes, the CLI reads.
    paracrypt.encrypt_file(tmp_path / "plain", tmp_path / "a.pcr", key=key)
    cli("decrypt", "-k", str(tmp_path / "cli.key"), str(tmp_path / "a.pcr"), "-o",
        str(tmp_path / "a"))
    assert (tmp_path / "a").read_bytes() == plain
    # The CLI writes (a password), Python reads.
    env = dict(os.environ, PARACRYPT_PASSWORD="correct horse")
    cli("encrypt", "-q", str(tmp_path / "plain"), "-o", str(tmp_path / "b.pcr"), env=env)
    n = paracrypt.decrypt_file(tmp_path / "b.pcr", tmp_path / "b", password="correct horse")
    assert n == len(plain) and (tmp_path / "b").read_bytes() == plain
    # A password file from Python opens with the CLI.
    paracrypt.encrypt_file(tmp_path / "plain", tmp_path / "c.pcr", password="correct horse")
    out = cli("decrypt", str(tmp_path / "c.pcr"), env=env).stdout
    assert out == plain


def test_path_like_and_str_paths(tmp_path: Path, key: paracrypt.Key) -> None:
    (tmp_path / "p").write_bytes(b"abc")
    paracrypt.encrypt_file(str(tmp_path / "p"), os.fspath(tmp_path / "p.pcr"), key=key)
    paracrypt.decrypt_file(tmp_path / "p.pcr", tmp_path / "q", key=key)
    assert (tmp_path / "q").read_bytes() == b"abc"


def test_key_files(tmp_path: Path, cli: object) -> None:
    key = paracrypt.Key.generate()
    key.save(tmp_path / "k")
    assert stat.S_IMODE((tmp_path / "k").stat().st_mode) == 0o600
    # An existing file is never overwritten: a UsageError, as every existing output.
    with pytest.raises(paracrypt.UsageError, match="k already exists; keygen never overwrites"):
        key.save(tmp_path / "k")
    assert paracrypt.Key.load(tmp_path / "k") == key
    assert paracrypt.Key.from_text(key.to_text()) == key
    assert paracrypt.Key.from_bytes(bytes(32)) == paracrypt.Key.from_bytes(bytearray(32))
    assert pickle.loads(pickle.dumps(key)) == key
    assert repr(key) == "Key(..)"
    assert key != paracrypt.Key.generate()
    # A key file path does as key=.
    sealed = paracrypt.encrypt(b"x", key=tmp_path / "k")
    assert paracrypt.decrypt(sealed, key=key) == b"x"
    # The CLI's key file, and ours for the CLI.
    cli("encrypt", "-q", "-k", str(tmp_path / "k"), "-", "-o", str(tmp_path / "x.pcr"),
        stdin=b"from the cli")
    assert paracrypt.decrypt((tmp_path / "x.pcr").read_bytes(), key=key) == b"from the cli"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no key in the file"),
        ("# only a comment\n", "no key in the file"),
        ("abcd\n", "key is 2 bytes, expected 32"),
        ("zz" * 32, "64 hex digits"),
        ("-----BEGIN PRIVATE KEY-----\n", "PEM key"),
    ],
)
def test_bad_key_files_are_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "k").write_text(text)
    with pytest.raises(paracrypt.UsageError, match=message) as raised:
        paracrypt.Key.load(tmp_path / "k")
    assert str(tmp_path / "k") in str(raised.value) and isinstance(raised.value, ValueError)
    with pytest.raises(paracrypt.UsageError, match=message):
        paracrypt.Key.from_text(text)
    (tmp_path / "big").write_bytes(b"#" * (65 * 1024))
    with pytest.raises(paracrypt.UsageError, match="larger than 64 KiB"):
        paracrypt.Key.load(tmp_path / "big")
    with pytest.raises(paracrypt.UsageError, match="32 bytes"):
        paracrypt.Key.from_bytes(b"short")


def test_overwrite(tmp_path: Path, key: paracrypt.Key) -> None:
    (tmp_path / "p").write_bytes(b"new")
    (tmp_path / "out").write_bytes(b"old")
    os.chmod(tmp_path / "out", 0o640)
    with pytest.raises(paracrypt.UsageError, match=r"already exists \(use --force to overwrite; Python: overwrite=True\)"):
        paracrypt.encrypt_file(tmp_path / "p", tmp_path / "out", key=key)
    assert (tmp_path / "out").read_bytes() == b"old"
    paracrypt.encrypt_file(tmp_path / "p", tmp_path / "out", key=key, overwrite=True)
    assert paracrypt.decrypt((tmp_path / "out").read_bytes(), key=key) == b"new"
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o640
    assert listing(tmp_path) == ["out", "p"]
    with pytest.raises(paracrypt.UsageError, match="is the input file"):
        paracrypt.encrypt_file(tmp_path / "p", tmp_path / "p", key=key, overwrite=True)
    with pytest.raises(paracrypt.UsageError, match="is a directory"):
        paracrypt.encrypt_file(tmp_path / "p", tmp_path, key=key)


def test_progress_counts_the_input(tmp_path: Path, key: paracrypt.Key) -> None:
    plain = data(5 * (1 << 20) + 3)
    (tmp_path / "p").write_bytes(plain)
    seen: list[int] = []
    paracrypt.encrypt_file(tmp_path / "p", tmp_path / "c", key=key, threads=2,
                           progress=seen.append)
    assert sum(seen) == len(plain) and len(seen) >= 2
    seen.clear()
    paracrypt.decrypt_file(tmp_path / "c", tmp_path / "d", key=key, progress=seen.append)
    assert sum(seen) == (tmp_path / "c").stat().st_size  # the header included


def test_a_failing_progress_callback_fails_the_call(tmp_path: Path, key: paracrypt.Key) -> None:
    (tmp_path / "p").write_bytes(data(3 << 20))

    def broken(n: int) -> None:
        raise RuntimeError("progress bar broke")

    with pytest.raises(RuntimeError, match="progress bar broke"):
        paracrypt.encrypt_file(tmp_path / "p", tmp_path / "c", key=key, progress=broken)
    assert listing(tmp_path) == ["p"]


def test_the_gil_is_released_while_working(tmp_path: Path, key: paracrypt.Key) -> None:
    """The call reads a FIFO that only another Python thread feeds: holding the GIL it would
    wait forever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plain = data(2 << 20)
    result: list[object] = []

    def work() -> None:
        try:
            result.append(paracrypt.encrypt_file(fifo, tmp_path / "out", key=key))
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            result.append(e)

    worker = threading.Thread(target=work)
    worker.start()
    with open(fifo, "wb") as pipe:
        for n in range(0, len(plain), 65536):
            pipe.write(plain[n:n + 65536])
    worker.join(timeout=120)
    assert not worker.is_alive() and isinstance(result[0], int), result
    assert paracrypt.decrypt((tmp_path / "out").read_bytes(), key=key) == plain


@pytest.mark.parametrize("size", [0, 5000, 4096 * 5])
def test_ranges_read_only_what_they_need(tmp_path: Path, key: paracrypt.Key, size: int) -> None:
    plain = data(size)
    (tmp_path / "c").write_bytes(paracrypt.encrypt(plain, key=key, chunk_size=4096))
    for offset, length in [(0, 10), (4090, 20), (4096, 4096), (size - 3, 100), (0, size + 9)]:
        if offset < 0 or (offset >= size and size > 0) or (size == 0 and offset > 0):
            continue
        got = paracrypt.decrypt_range(tmp_path / "c", offset, length, key=key)
        assert got == plain[offset:offset + length], (offset, length)
    with pytest.raises(paracrypt.DataError, match="beyond the end"):
        paracrypt.decrypt_range(tmp_path / "c", size + 1, 1, key=key)


def test_a_range_reads_only_its_chunks(tmp_path: Path, key: paracrypt.Key) -> None:
    """A damaged chunk outside the range does not matter; inside it, it fails."""
    plain = data(4096 * 8)
    sealed = bytearray(paracrypt.encrypt(plain, key=key, chunk_size=4096))
    chunk = 4096 + 16
    sealed[len(sealed) - 3 * chunk + 100] ^= 1  # chunk 5
    (tmp_path / "c").write_bytes(sealed)
    assert paracrypt.decrypt_range(tmp_path / "c", 0, 8192, key=key) == plain[:8192]
    with pytest.raises(paracrypt.AuthenticationError) as raised:
        paracrypt.decrypt_range(tmp_path / "c", 4096 * 5, 10, key=key)
    assert raised.value.chunk == 5
