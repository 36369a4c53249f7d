"""paracrypt.dask on a real dask.distributed LocalCluster of worker processes: the same bytes
as `paracrypt encrypt -j1` and as one task, every format and secret kind, and no output at dst
(nor a temporary file beside it) when a chunk is damaged or a worker dies mid-job."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import cloudpickle
import dask
import pytest
from conftest import data, listing
from distributed import Client, KilledWorker, LocalCluster, WorkerPlugin

import paracrypt
import paracrypt.dask

SALT = bytes(range(32))
Cli = Callable[..., Any]

# Small files and chunks: several chunks per task, and the suite stays quick.
CHUNK = 16 * 1024
SIZE = 40 * CHUNK + 123


def cluster(**config: Any) -> LocalCluster:
    with dask.config.set(config):
        return LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                            host="127.0.0.1", dashboard_address="127.0.0.1:0",
                            worker_dashboard_address="127.0.0.1:0")


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with cluster() as two, Client(two) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        yield client


def test_same_bytes_as_the_cli_and_one_task(tmp_path: Path, client: Client, cli: Cli) -> None:
    plain = data(SIZE)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    cli("encrypt", "-q", "-j1", "--chunk-size", "16KiB", "--fixed-salt", SALT.hex(), "-k",
        str(tmp_path / "key"), str(tmp_path / "plain"), "-o", str(tmp_path / "cli.pcr"))
    theirs = (tmp_path / "cli.pcr").read_bytes()
    # The cluster's two workers (one part each), one task alone, and more parts than workers;
    # sync=True (every task fdatasyncs, the client fsyncs before the rename) the same bytes.
    for parts, sync in ((None, False), (1, False), (7, False), (None, True)):
        out = tmp_path / f"dask-{parts}-{sync}.pcr"
        seen: list[int] = []
        written = paracrypt.dask.encrypt_file(client, tmp_path / "plain", out, key=key,
                                              chunk_size=CHUNK, parts=parts, _fixed_salt=SALT,
                                              progress=seen.append, sync=sync)
        assert out.read_bytes() == theirs and written == len(theirs)
        assert sum(seen) == paracrypt.DistributedJob.decrypt(out, key=key).chunks
        assert len(seen) == (parts or 2)
    written = paracrypt.dask.decrypt_file(client, tmp_path / "cli.pcr", tmp_path / "back",
                                          key=tmp_path / "key", parts=3, sync=True)
    assert written == SIZE and (tmp_path / "back").read_bytes() == plain
    # No temporary file was left behind.
    assert not [name for name in listing(tmp_path) if name.startswith(".")]


def test_recipients_passwords_and_age(tmp_path: Path, client: Client, cli: Cli,
                                      age_bin: str) -> None:
    plain = data(3 * 65536 + 77, seed=3)
    (tmp_path / "plain").write_bytes(plain)
    me = paracrypt.keygen(tmp_path / "me", kind="x25519")
    assert me
    # To recipients, as a container (the file key is drawn on the client and handed to the
    # tasks) and as an age file; both open with the CLI.
    for fmt in ("paracrypt", "age"):
        out = tmp_path / f"to-me.{fmt}"
        paracrypt.dask.encrypt_file(client, tmp_path / "plain", out, recipients=[me],
                                    format=fmt, **({"chunk_size": CHUNK} if fmt == "paracrypt" else {}))
        got = cli("decrypt", "-i", str(tmp_path / "me"), str(out)).stdout
        assert got == plain
        paracrypt.dask.decrypt_file(client, out, tmp_path / f"back.{fmt}",
                                    identities=tmp_path / "me")
        assert (tmp_path / f"back.{fmt}").read_bytes() == plain
    # A container with a password (Argon2id on every task) and an age file with a passphrase
    # (scrypt once, on the client).
    paracrypt.dask.encrypt_file(client, tmp_path / "plain", tmp_path / "pw.pcr",
                                password="pw", chunk_size=CHUNK)
    assert paracrypt.decrypt((tmp_path / "pw.pcr").read_bytes(), password="pw") == plain
    sealed = paracrypt.encrypt(plain, password="pw", format="age")
    (tmp_path / "pw.age").write_bytes(sealed)
    paracrypt.dask.decrypt_file(client, tmp_path / "pw.age", tmp_path / "pw.back", password="pw")
    assert (tmp_path / "pw.back").read_bytes() == plain


def test_failures_leave_nothing(tmp_path: Path, client: Client) -> None:
    plain = data(SIZE, seed=5)
    key = paracrypt.Key.generate()
    sealed = bytearray(paracrypt.encrypt(plain, key=key, chunk_size=CHUNK))
    sealed[len(sealed) // 2] ^= 1  # a chunk in the middle: one task fails, others succeed
    (tmp_path / "bad").write_bytes(sealed)
    with pytest.raises(paracrypt.AuthenticationError) as failed:
        paracrypt.dask.decrypt_file(client, tmp_path / "bad", tmp_path / "out", key=key)
    assert failed.value.chunk is not None
    assert listing(tmp_path) == ["bad"]
    # A wrong key fails on the header, on the client.
    with pytest.raises(paracrypt.WrongKeyError):
        paracrypt.dask.decrypt_file(client, tmp_path / "bad", tmp_path / "out",
                                    key=paracrypt.Key.generate())
    # An existing output is kept unless overwrite=True.
    (tmp_path / "out").write_bytes(b"keep")
    (tmp_path / "plain").write_bytes(plain)
    with pytest.raises(paracrypt.IoError, match="already exists"):
        paracrypt.dask.encrypt_file(client, tmp_path / "plain", tmp_path / "out", key=key)
    assert (tmp_path / "out").read_bytes() == b"keep"
    paracrypt.dask.encrypt_file(client, tmp_path / "plain", tmp_path / "out", key=key,
                                chunk_size=CHUNK, overwrite=True)
    assert paracrypt.decrypt((tmp_path / "out").read_bytes(), key=key) == plain
    assert listing(tmp_path) == ["bad", "out", "plain"]


class KillOnSecondPart(WorkerPlugin):  # type: ignore[misc]
    """Kills its worker process (SIGKILL) as a second part of a paracrypt job starts on it,
    once in the whole cluster (a marker file decides which worker): the first part's chunks
    are then written, the second's not."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.started = 0

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or "paracrypt-part" not in str(key):
            return
        self.started += 1
        if self.started < 2:
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_job_leaves_nothing(tmp_path: Path) -> None:
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    work = tmp_path / "work"
    work.mkdir()
    plain = data(SIZE, seed=7)
    (work / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    # The scheduler gives up on a task whose worker died instead of running it again.
    with cluster(**{"distributed.scheduler.allowed-failures": 0}) as two, Client(two) as client:
        client.register_plugin(KillOnSecondPart(str(tmp_path / "killed")))
        with pytest.raises(KilledWorker):
            paracrypt.dask.encrypt_file(client, work / "plain", work / "out", key=key,
                                        chunk_size=CHUNK, parts=6)
        assert (tmp_path / "killed").exists()
    assert listing(work) == ["plain"]


def test_signed_container_same_bytes_as_the_cli(tmp_path: Path, client: Client,
                                                cli: Cli) -> None:
    """``sign=`` (Ed25519: deterministic) gives the CLI's bytes (``encrypt -j1 --sign``) on two
    worker processes; ``verify_with=`` checks the signer on the client and every chunk in the
    tasks, and a failure leaves nothing at ``dst``."""
    for name in ("alice", "mallory"):
        cli("keygen", "--kind", "ed25519", "-o", str(tmp_path / f"{name}.pem"), "--public-out",
            str(tmp_path / f"{name}.pub"))
    plain = data(SIZE, seed=9)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    cli("encrypt", "-q", "-j1", "--chunk-size", "16KiB", "--fixed-salt", SALT.hex(), "-k",
        str(tmp_path / "key"), "--sign", str(tmp_path / "alice.pem"), str(tmp_path / "plain"),
        "-o", str(tmp_path / "cli.pcr"))
    theirs = (tmp_path / "cli.pcr").read_bytes()
    for parts in (None, 3):
        out = tmp_path / f"dask-{parts}.pcr"
        paracrypt.dask.encrypt_file(client, tmp_path / "plain", out, key=key, chunk_size=CHUNK,
                                    parts=parts, sign=tmp_path / "alice.pem", _fixed_salt=SALT)
        assert out.read_bytes() == theirs
    paracrypt.dask.decrypt_file(client, tmp_path / "cli.pcr", tmp_path / "back", key=key,
                                verify_with=tmp_path / "alice.pub", parts=3)
    assert (tmp_path / "back").read_bytes() == plain
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.dask.decrypt_file(client, tmp_path / "cli.pcr", tmp_path / "x", key=key,
                                    verify_with=tmp_path / "mallory.pub")
    # A chunk's signature altered (its last byte, the last chunk's): found by a task.
    damaged = bytearray(theirs)
    damaged[-1] ^= 1
    (tmp_path / "damaged.pcr").write_bytes(bytes(damaged))
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.dask.decrypt_file(client, tmp_path / "damaged.pcr", tmp_path / "x", key=key,
                                    verify_with=tmp_path / "alice.pub", parts=3)
    assert not (tmp_path / "x").exists()
    assert not [name for name in listing(tmp_path) if name.startswith(".")]
