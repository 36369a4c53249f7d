"""paracrypt.dask on a real dask.distributed LocalCluster of worker processes: the same bytes
as `paracrypt encrypt -j1` and as one task, every format and secret kind, and no output at dst
(nor a temporary file beside it) when a chunk is damaged or a worker dies mid-job."""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import cloudpickle
import dask
import pytest
from conftest import data, listing, same_salt
from distributed import Client, KilledWorker, LocalCluster, WorkerPlugin

import paracrypt
import paracrypt.dask

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
    # The cluster's two workers (one part each), one task alone, and more parts than workers;
    # sync=True (every task fdatasyncs, the client fsyncs before the rename): each output is the
    # CLI's bytes (`encrypt -j1`) under its salt.
    for parts, sync in ((None, False), (1, False), (7, False), (None, True)):
        out = tmp_path / f"dask-{parts}-{sync}.pcr"
        seen: list[int] = []
        written = paracrypt.dask.encrypt_file(client, tmp_path / "plain", out, key=key,
                                              chunk_size=CHUNK, parts=parts,
                                              progress=seen.append, sync=sync)
        ours = out.read_bytes()
        theirs = same_salt(cli, ours, plain, "--chunk-size", "16KiB", "-k", str(tmp_path / "key"))
        assert ours == theirs and written == len(theirs)
        assert sum(seen) == paracrypt.DistributedJob.decrypt(out, key=key).chunks
        assert len(seen) == (parts or 2)
    (tmp_path / "cli.pcr").write_bytes(theirs)
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
    with pytest.raises(paracrypt.UsageError, match="already exists"):
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
    for parts in (None, 3):
        out = tmp_path / f"dask-{parts}.pcr"
        paracrypt.dask.encrypt_file(client, tmp_path / "plain", out, key=key, chunk_size=CHUNK,
                                    parts=parts, sign=tmp_path / "alice.pem")
        theirs = same_salt(cli, out.read_bytes(), plain, "--chunk-size", "16KiB", "-k",
                           str(tmp_path / "key"), "--sign", str(tmp_path / "alice.pem"))
        assert out.read_bytes() == theirs
    (tmp_path / "cli.pcr").write_bytes(theirs)
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


def test_a_job_seals_one_input(tmp_path: Path, client: Client) -> None:
    """A job's header fixes its keys and nonces: it runs over the input it was made for only.
    Another file (even of the same length), or the same file grown or rewritten, is refused by
    every task and by the commit; running a part again on the same input is allowed (the same
    bytes)."""
    key = paracrypt.Key.generate()
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(data(SIZE, seed=1))
    b.write_bytes(data(SIZE, seed=2))
    job = paracrypt.DistributedJob.encrypt(a, key=key, chunk_size=CHUNK)
    first, *_ = job.parts(3)
    staged = job.stage(tmp_path / "out")
    once = job.run(a, staged.path, first)
    assert job.run(a, staged.path, first) == once  # a retry on the same input
    with pytest.raises(paracrypt.UsageError, match="not the input the job was made for"):
        job.run(b, staged.path, first)
    # Through Dask too: nothing at dst.
    with pytest.raises(paracrypt.UsageError, match="not the input the job was made for"):
        paracrypt.dask.run(client, job, b, tmp_path / "dask-out")
    assert not (tmp_path / "dask-out").exists()
    # The same file, grown: an error, not a silent cut.
    with a.open("ab") as grow:
        grow.write(b"more")
    with pytest.raises(paracrypt.DataError, match="grew"):
        job.run(a, staged.path, first)
    staged.discard()
    # The commit checks once more: rewritten (same length) between the parts and the commit.
    a.write_bytes(data(SIZE, seed=1))
    job = paracrypt.DistributedJob.encrypt(a, key=key, chunk_size=CHUNK)
    staged = job.stage(tmp_path / "out")
    end = None
    for part in job.parts(2):
        end = job.run(a, staged.path, part) or end
    assert end is not None
    os.utime(a, (1_000_000, 1_000_000))
    with pytest.raises(paracrypt.DataError, match="changed"):
        staged.commit(end)
    staged.discard()
    assert not (tmp_path / "out").exists()


def test_a_rewrite_in_place_is_refused_and_an_encryption_is_committed_once(
        tmp_path: Path) -> None:
    """A file rewritten in place with its length and modification time put back (`cp -p`,
    `touch -r`, `rsync -t --inplace`) is not the input the job was made for: its change time
    moved. And a job whose encryption was committed stages no second one."""
    key = paracrypt.Key.generate()
    src = tmp_path / "src"
    src.write_bytes(data(SIZE, seed=1))
    job = paracrypt.DistributedJob.encrypt(src, key=key, chunk_size=CHUNK)
    then = src.stat().st_mtime_ns
    time.sleep(0.05)  # a tick of the filesystem's clock later, as another program's rewrite
    with src.open("r+b") as rewrite:
        rewrite.write(data(SIZE, seed=2))
    os.utime(src, ns=(then, then))
    assert (src.stat().st_size, src.stat().st_mtime_ns) == (SIZE, then)
    staged = job.stage(tmp_path / "out")
    with pytest.raises(paracrypt.DataError, match="modified"):
        job.run(src, staged.path, job.parts(1)[0])
    staged.discard()

    job = paracrypt.DistributedJob.encrypt(src, key=key, chunk_size=CHUNK)
    staged = job.stage(tmp_path / "out")
    end = job.run(src, staged.path, job.parts(1)[0])
    assert end is not None and staged.commit(end) == end
    with pytest.raises(paracrypt.UsageError, match="committed already"):
        job.stage(tmp_path / "again")
    assert not (tmp_path / "again").exists()
    assert not [name for name in listing(tmp_path) if name.startswith(".")]
    # A decryption may run as often as asked.
    back = paracrypt.DistributedJob.decrypt(tmp_path / "out", key=key)
    for dst in ("back", "back-again"):
        staged = back.stage(tmp_path / dst)
        end = back.run(tmp_path / "out", staged.path, back.parts(1)[0])
        assert end is not None and staged.commit(end) == end
        assert (tmp_path / dst).read_bytes() == data(SIZE, seed=2)


def test_tasks_carry_no_long_term_secret(tmp_path: Path, cli: Cli) -> None:
    """What a task is given (the job's pickle) holds the keys derived for this one file, never
    the key file's key, the password or the identities it was made with."""
    plain = data(SIZE, seed=4)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    password = "correct horse battery staple"
    me = paracrypt.keygen(tmp_path / "me", kind="x25519")
    identity = (tmp_path / "me").read_text().strip().splitlines()[-1]
    sealed = paracrypt.encrypt(plain, recipients=[me], chunk_size=CHUNK)
    (tmp_path / "to-me.pcr").write_bytes(sealed)
    (tmp_path / "pw.pcr").write_bytes(paracrypt.encrypt(plain, password=password))
    jobs = [
        (paracrypt.DistributedJob.encrypt(tmp_path / "plain", key=key), key.to_text()),
        (paracrypt.DistributedJob.encrypt(tmp_path / "plain", password=password), password),
        (paracrypt.DistributedJob.decrypt(tmp_path / "pw.pcr", password=password), password),
        (paracrypt.DistributedJob.decrypt(tmp_path / "to-me.pcr", identities=tmp_path / "me"),
         identity),
    ]
    raw_key = bytes.fromhex(key.to_text().strip().splitlines()[-1])
    for job, secret in jobs:
        pickled = cloudpickle.dumps(job)
        assert secret.encode() not in pickled and raw_key not in pickled
        # What the pickle holds is enough: the job runs from it alone.
        again = cloudpickle.loads(pickled)
        assert again.header == job.header and again.chunks == job.chunks


def test_in_clear_addresses_are_named() -> None:
    from paracrypt.dask import _in_clear

    assert _in_clear(["tls://10.0.0.5:8786", "inproc://10.0.0.5/1/2", "tcp://127.0.0.1:1",
                      "tcp://[::1]:2", "tcp://localhost:3"]) == []
    assert _in_clear(["tcp://10.0.0.5:8786", "tcp://[2001:db8::1]:9", "ucx://node7:1"]) == [
        "tcp://10.0.0.5:8786", "tcp://[2001:db8::1]:9", "ucx://node7:1"]


def test_a_tls_cluster(tmp_path: Path, cli: Cli) -> None:
    """Dask's TLS (``security=``): the job's keys travel encrypted; the same bytes, and no
    InsecureTransportWarning."""
    from distributed.security import Security

    security = Security.temporary()
    plain = data(SIZE, seed=6)
    (tmp_path / "plain").write_bytes(plain)
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      protocol="tls", security=security, dashboard_address="127.0.0.1:0",
                      worker_dashboard_address="127.0.0.1:0") as tls, \
            Client(tls, security=security) as client:
        assert client.scheduler.address.startswith("tls://")
        with warnings.catch_warnings():
            warnings.simplefilter("error", paracrypt.InsecureTransportWarning)
            paracrypt.dask.encrypt_file(client, tmp_path / "plain", tmp_path / "out", key=key,
                                        chunk_size=CHUNK)
    ours = (tmp_path / "out").read_bytes()
    assert ours == same_salt(cli, ours, plain, "--chunk-size", "16KiB", "-k", str(tmp_path / "key"))


def _tree(root: Path) -> None:
    """test_trees' tree, and 40 small files more (so that the tasks are several)."""
    from test_trees import make_tree
    root.mkdir()
    make_tree(root)
    (root / "many").mkdir()
    for i in range(40):
        (root / "many" / f"f{i:02}").write_bytes(data(i * 300, seed=i))


def test_a_tree_over_the_workers(tmp_path: Path, client: Client, cli: Cli) -> None:
    """One tree's files spread over the two workers lists the same tree as one process
    (``paracrypt.encrypt_tree``, at 1 and 4 threads): the same manifest entries, sizes and
    BLAKE3 roots, the same signer; it decrypts with the CLI to the same tree; with a
    password too (one Argon2id, on the client)."""
    from test_trees import same_tree
    plain = tmp_path / "plain"
    _tree(plain)
    cli("keygen", "--kind", "ed25519", "-o", str(tmp_path / "alice.pem"), "--public-out",
        str(tmp_path / "alice.pub"))
    key = paracrypt.Key.generate()
    key.save(tmp_path / "key")
    entries = []
    for threads in (1, 4):
        local = paracrypt.encrypt_tree(plain, tmp_path / f"local-{threads}", key=key,
                                       chunk_size=CHUNK, sign=tmp_path / "alice.pem",
                                       threads=threads)
        entries.append(paracrypt.info_tree(tmp_path / f"local-{threads}", key=key)["entries"])
    spread = paracrypt.dask.encrypt_tree(client, plain, tmp_path / "dask", key=key,
                                         chunk_size=CHUNK, sign=tmp_path / "alice.pem")
    assert spread == local and spread["complete"] and spread["files"] == 45
    about = paracrypt.info_tree(tmp_path / "dask", key=key, verify_with=tmp_path / "alice.pub")
    assert about["complete"] and about["entries"] == entries[0] == entries[1]
    cli("decrypt", "--recursive", "-k", str(tmp_path / "key"), "--verify-with",
        str(tmp_path / "alice.pub"), str(tmp_path / "dask"), "-o", str(tmp_path / "back"))
    same_tree(plain, tmp_path / "back")
    paracrypt.verify_tree(tmp_path / "dask", key=key)

    spread = paracrypt.dask.encrypt_tree(client, plain, tmp_path / "pw", password="tree pw",
                                         hide_names=True)
    assert spread["complete"] and spread["files"] == 45
    paracrypt.decrypt_tree(tmp_path / "pw", tmp_path / "pw-back", password="tree pw")
    same_tree(plain, tmp_path / "pw-back")
    assert not [name for name in listing(tmp_path) if name.startswith(".")]


def test_a_tree_task_that_fails_leaves_the_tree_done_in_part(tmp_path: Path,
                                                              client: Client) -> None:
    """A file changed after the plan fails on its worker, naming it, and a task that never
    came back fails its files: the others are complete, the manifest lists them marked
    incomplete (``IncompleteTreeError``), and ``update=True`` finishes the tree."""
    from test_trees import same_tree
    plain = tmp_path / "plain"
    _tree(plain)
    key = paracrypt.Key.generate()
    job = paracrypt.TreeJob.encrypt(plain, tmp_path / "out", key=key)
    parts = job.tasks(4)
    assert len(parts) == 4 and parts[0][0] == 0 and parts[-1][1] == job.files == 45
    # "a.txt" is the first file (the tree's order), in the first task.
    (plain / "a.txt").write_bytes(b"changed after the plan")
    tasks = [job.task(part) for part in parts]
    # The last task is lost; the others run on the workers.
    for result in client.gather([client.submit(paracrypt.run_tree_task, task, pure=False)
                                 for task in tasks[:-1]]):
        job.add(result)
    job.lost(parts[-1], "its worker died")
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        job.finish()
    lost = parts[-1][1] - parts[-1][0]
    failures = [str(e) for e in raised.value.failures]
    assert len(failures) == lost + 1
    assert "a.txt" in failures[0] and "changed" in failures[0], failures
    assert raised.value.summary["files"] == 45 - lost - 1
    with pytest.raises(paracrypt.UsageError):
        job.finish()
    done = paracrypt.dask.encrypt_tree(client, plain, tmp_path / "out", key=key, update=True)
    assert done["complete"] and done["files"] + done["unchanged"] == 45
    paracrypt.decrypt_tree(tmp_path / "out", tmp_path / "back", key=key)
    same_tree(plain, tmp_path / "back")
    with pytest.raises(paracrypt.UsageError):
        paracrypt.run_tree_task(b"not a task")


def test_a_client_that_dies_leaves_a_checkpoint_update_goes_on_from(tmp_path: Path) -> None:
    """``TreeJob.add`` writes a checkpoint as results come back (the first at once): a client
    that dies after one task's result, before ``finish()``, leaves a manifest marked
    incomplete that lists that task's files, and ``update=True`` keeps them and seals the
    rest."""
    from test_trees import same_tree
    plain = tmp_path / "plain"
    _tree(plain)
    key = paracrypt.Key.generate()
    job = paracrypt.TreeJob.encrypt(plain, tmp_path / "out", key=key)
    parts = job.tasks(4)
    first = parts[0][1] - parts[0][0]
    assert 0 < first < job.files
    job.add(paracrypt.run_tree_task(job.task(parts[0])))
    del job  # the client dies: no finish()
    about = paracrypt.info_tree(tmp_path / "out", key=key)
    assert not about["complete"]
    assert len([e for e in about["entries"] if e["kind"] == "file"]) == first, about["entries"]
    done = paracrypt.encrypt_tree(plain, tmp_path / "out", key=key, update=True)
    assert done["complete"] and (done["unchanged"], done["files"]) == (first, 45 - first)
    paracrypt.decrypt_tree(tmp_path / "out", tmp_path / "back", key=key)
    same_tree(plain, tmp_path / "back")


def test_a_tree_decrypted_over_the_workers(tmp_path: Path, client: Client, cli: Cli) -> None:
    """An encrypted tree's files decrypted on the two workers give back the tree (bytes, modes,
    links, directory times as one process gives them), for a key-file tree signed by alice (the
    signer required), a password tree with hidden names and a tree to an age recipient (the
    identity stays here: each file's header is opened on the client). A swapped file fails
    alone, named (IncompleteTreeError); an armored age tree is refused before anything is
    made."""
    from test_trees import same_tree
    plain = tmp_path / "plain"
    _tree(plain)
    cli("keygen", "--kind", "ed25519", "-o", str(tmp_path / "alice.pem"), "--public-out",
        str(tmp_path / "alice.pub"))
    cli("keygen", "--kind", "x25519", "-o", str(tmp_path / "id.txt"))
    recipient = [line.split(": ")[1] for line in (tmp_path / "id.txt").read_text().splitlines()
                 if line.startswith("# public key: ")][0]
    key = paracrypt.Key.generate()
    paracrypt.encrypt_tree(plain, tmp_path / "signed", key=key, chunk_size=CHUNK,
                           sign=tmp_path / "alice.pem")
    paracrypt.encrypt_tree(plain, tmp_path / "pw", password="tree pw", hide_names=True)
    paracrypt.encrypt_tree(plain, tmp_path / "age", recipients=recipient, format="age")
    for name, secrets in [
        ("signed", {"key": key, "verify_with": tmp_path / "alice.pub"}),
        ("pw", {"password": "tree pw"}),
        ("age", {"identities": tmp_path / "id.txt"}),
    ]:
        local = paracrypt.decrypt_tree(tmp_path / name, tmp_path / f"{name}-local", **secrets)
        spread = paracrypt.dask.decrypt_tree(client, tmp_path / name, tmp_path / f"{name}-dask",
                                             **secrets)
        assert spread == local and spread["files"] == 45, name
        same_tree(plain, tmp_path / f"{name}-dask")
        assert (tmp_path / f"{name}-dask" / "sub").stat().st_mtime == \
            (tmp_path / f"{name}-local" / "sub").stat().st_mtime
    assert paracrypt.decrypt_tree(tmp_path / "signed", tmp_path / "x", key=key,
                                  verify_with=tmp_path / "alice.pub")["signer"]["required"]

    # Two files swapped: each fails alone, named; the others are written.
    a, b = tmp_path / "signed" / "many" / "f01.pcr", tmp_path / "signed" / "many" / "f02.pcr"
    held = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(held)
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        paracrypt.dask.decrypt_tree(client, tmp_path / "signed", tmp_path / "swapped", key=key)
    failures = [str(e) for e in raised.value.failures]
    assert len(failures) == 2 and failures[0].startswith("many/f01: its encrypted file"), failures
    assert raised.value.summary["files"] == 43
    assert not (tmp_path / "swapped" / "many" / "f01").exists()

    # Armor is read in order, on one process.
    paracrypt.encrypt_tree(plain, tmp_path / "armored", recipients=recipient, format="age",
                           armor=True)
    with pytest.raises(paracrypt.UsageError, match="armored age tree"):
        paracrypt.dask.decrypt_tree(client, tmp_path / "armored", tmp_path / "armored-back",
                                    identities=tmp_path / "id.txt")
    assert not (tmp_path / "armored-back").exists()
    assert not [name for name in listing(tmp_path) if name.startswith(".")]
