"""Directory trees in object storage from Python (issue #35 items 1 and 6), against a real S3
server on 127.0.0.1 (moto, tests/s3/server.py, from target/s3-venv; SigV4 checked):
:func:`paracrypt.encrypt_tree` into ``s3://bucket/prefix/``, :func:`decrypt_tree`,
:func:`verify_tree` and :func:`info_tree` from one, :func:`decrypt_tree` into one, with the
exceptions of a local tree; what a
prefix does not offer is refused with the core's words (``paracrypt_store::prefix_run``, the
rule the CLI applies too), before anything is written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest
from conftest import BINARY, ROOT, data, listing

import paracrypt


@pytest.fixture(scope="module")
def moto() -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    python = ROOT / "target" / "s3-venv" / "bin" / "python"
    assert python.exists(), "the S3 tests need moto's server (scripts/test.sh makes target/s3-venv)"
    server = subprocess.Popen([str(python), str(ROOT / "tests" / "s3" / "server.py")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    assert server.stdin is not None and server.stdout is not None
    ready = server.stdout.readline().split()
    assert ready[:1] == ["READY"], ready
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{ready[1]}", "AWS_ALLOW_HTTP": "true",
           "AWS_ACCESS_KEY_ID": ready[2], "AWS_SECRET_ACCESS_KEY": ready[3],
           "AWS_REGION": "us-east-1"}
    yield server, env
    server.stdin.close()
    server.wait(timeout=30)


class Bucket:
    """A bucket of the server, made for one test, and what the tests inspect in it."""

    def __init__(self, server: subprocess.Popen[str], name: str) -> None:
        self.server = server
        self.name = name
        self.command({"op": "bucket"})

    def command(self, cmd: dict[str, object]) -> object:
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps({**cmd, "bucket": self.name}) + "\n")
        self.server.stdin.flush()
        answer = json.loads(self.server.stdout.readline())
        assert answer["ok"], answer
        return answer["result"]

    def url(self, prefix: str) -> str:
        return f"s3://{self.name}/{prefix}"

    def keys(self, prefix: str = "") -> list[str]:
        found = self.command({"op": "objects"})
        assert isinstance(found, list)
        return sorted(o["key"][len(prefix):] for o in found if o["key"].startswith(prefix))

    def uploads(self) -> list[object]:
        found = self.command({"op": "uploads"})
        assert isinstance(found, list)
        return found


@pytest.fixture
def s3(moto: tuple[subprocess.Popen[str], dict[str, str]],
       monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Bucket:
    """A new bucket, the server's settings in the environment (read when a prefix is opened)."""
    server, env = moto
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    name = request.node.name.replace("_", "-").lower()[:50].strip("-")
    return Bucket(server, name)


OLD = 1_200_000_000_000_000_005  # ns since the epoch: a time no test run writes


def make_tree(root: Path, large: bool = False) -> None:
    """Nested and empty directories, an empty file, files of several 64 KiB chunks, a mode and
    a time that are not the defaults, a link and a dangling link; with `large`, a file just
    past one 8 MiB part (a multipart upload)."""
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "empty dir").mkdir()
    (root / "empty").write_bytes(b"")
    (root / "x").write_bytes(data(70_000, seed=9))
    (root / "sub" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(root / "sub" / "run.sh", 0o755)
    (root / "sub" / "deeper" / "z").write_bytes(data(300_000, seed=8))
    if large:
        (root / "large").write_bytes(data((8 << 20) + 5, seed=7))
    os.symlink("sub/run.sh", root / "link to run")
    os.symlink("nowhere", root / "sub" / "dangling")
    os.utime(root / "sub" / "run.sh", ns=(OLD, OLD))
    os.utime(root / "empty dir", ns=(OLD, OLD))


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry of `root`: its kind, mode, modification time (a link's: its target) and
    contents."""
    seen: dict[str, tuple[object, ...]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        st = path.lstat()
        if path.is_symlink():
            seen[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            seen[rel] = ("dir", st.st_mode & 0o7777, st.st_mtime_ns)
        else:
            seen[rel] = ("file", st.st_mode & 0o7777, st.st_mtime_ns, path.read_bytes())
    return seen


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "tree.key"
    paracrypt.keygen(path)
    return path


def test_a_tree_round_trips_through_a_prefix(tmp_path: Path, s3: Bucket, key: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    url = s3.url("photos/")
    done = paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB", threads=2)
    assert done["files"] == 5 and done["complete"]
    # One object per file and the manifest, nothing else: no directories, no upload left.
    assert s3.keys("photos/") == ["empty.pcr", "large.pcr", "paracrypt-manifest",
                                  "sub/deeper/z.pcr", "sub/run.sh.pcr", "x.pcr"]
    assert s3.uploads() == []
    checked = paracrypt.verify_tree(url, key=key)
    assert checked["files"] == 5 and checked["bytes"] == 70_000 + 18 + 300_000 + (8 << 20) + 5
    assert paracrypt.verify_tree(url, ["sub/deeper/z"], key=key)["files"] == 1
    about = paracrypt.info_tree(url, key=key)
    assert about["files"] == 5 and about["links"] == 2 and about["complete"]
    assert {e["path"] for e in about["entries"]} >= {"sub/deeper/z", "link to run"}
    back = tmp_path / "back"
    again = paracrypt.decrypt_tree(url, back, key=key)
    assert again["files"] == 5 and again["complete"]
    assert snapshot(back) == snapshot(plain)
    assert (back / "sub" / "run.sh").lstat().st_mtime_ns == OLD


def test_an_existing_prefix_is_refused_without_overwrite(tmp_path: Path, s3: Bucket,
                                                         key: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    theirs = tmp_path / "theirs"
    theirs.write_bytes(b"someone else's")
    s3.command({"op": "put", "key": "p/theirs", "file": str(theirs)})
    with pytest.raises(paracrypt.UsageError, match=r"s3://.*/p/ is not empty"):
        paracrypt.encrypt_tree(plain, s3.url("p/"), key=key)
    assert s3.keys("p/") == ["theirs"]
    paracrypt.encrypt_tree(plain, s3.url("p/"), key=key, overwrite=True)
    assert "paracrypt-manifest" in s3.keys("p/") and "theirs" in s3.keys("p/")
    # What is there beside the tree is named as an addition.
    with pytest.raises(paracrypt.TreeChangedError, match="added: theirs"):
        paracrypt.verify_tree(s3.url("p/"), key=key)


def test_a_tampered_object_is_named_and_nothing_of_it_is_written(tmp_path: Path, s3: Bucket,
                                                                 key: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    paracrypt.encrypt_tree(plain, s3.url("t/"), key=key, chunk_size="64KiB")
    s3.command({"op": "flip", "key": "t/sub/deeper/z.pcr", "offset": 150_000})
    with pytest.raises(paracrypt.TreeChangedError, match="sub/deeper/z"):
        paracrypt.verify_tree(s3.url("t/"), key=key)
    back = tmp_path / "back"
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        paracrypt.decrypt_tree(s3.url("t/"), back, key=key)
    [failure] = raised.value.failures
    assert isinstance(failure, paracrypt.AuthenticationError)
    assert re.search(r"sub/deeper/z: chunk \d+ failed authentication", str(failure))
    assert not (back / "sub" / "deeper" / "z").exists()
    assert (back / "x").read_bytes() == data(70_000, seed=9)
    assert [n for n in listing(back / "sub" / "deeper") if n.startswith(".")] == []

    # A tree of that one file: nothing done, the failure itself, nothing at `dst`.
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "only").write_bytes(data(200_000, seed=3))
    paracrypt.encrypt_tree(lone, s3.url("lone/"), key=key, chunk_size="64KiB")
    s3.command({"op": "flip", "key": "lone/only.pcr", "offset": 100_000})
    with pytest.raises(paracrypt.AuthenticationError, match="only: chunk 1 failed"):
        paracrypt.decrypt_tree(s3.url("lone/"), tmp_path / "back-lone", key=key)
    assert not (tmp_path / "back-lone").exists()


def test_an_update_of_a_prefix_seals_only_what_changed(tmp_path: Path, s3: Bucket,
                                                       key: Path) -> None:
    """``update=True`` into a prefix, as into a local tree: the changed and added files sealed,
    the unchanged kept, the removed one's object deleted; with ``checksum=True`` a file changed
    under the same size and time too. What it cannot keep is refused before anything is
    written."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    url = s3.url("u/")
    paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB")
    (plain / "x").write_bytes(data(90_000, seed=4))
    (plain / "added").write_bytes(data(10_000, seed=5))
    (plain / "sub" / "deeper" / "z").unlink()
    done = paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB", update=True)
    assert (done["files"], done["unchanged"], done["removed"]) == (2, 2, 1)
    assert done["complete"]
    assert s3.keys("u/") == ["added.pcr", "empty.pcr", "paracrypt-manifest", "sub/run.sh.pcr",
                             "x.pcr"]
    assert paracrypt.verify_tree(url, key=key)["files"] == 4
    assert snapshot(paracrypt_back(tmp_path / "back", url, key)) == snapshot(plain)

    # `x` changed in place, under the same size and time: kept without checksum=True.
    stat = (plain / "x").stat()
    (plain / "x").write_bytes(data(90_000, seed=6))
    os.utime(plain / "x", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    done = paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB", update=True)
    assert (done["files"], done["unchanged"], done["removed"]) == (0, 4, 0)
    done = paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB", update=True,
                                  checksum=True)
    assert (done["files"], done["unchanged"], done["removed"]) == (1, 3, 0)
    assert snapshot(paracrypt_back(tmp_path / "back2", url, key)) == snapshot(plain)
    assert s3.uploads() == []

    # Refused before anything is written: the prefix is as it was.
    before = s3.keys("u/")
    manifest = tmp_path / "manifest"
    s3.command({"op": "get", "key": "u/paracrypt-manifest", "file": str(manifest)})
    (plain / "x").write_bytes(b"changed again")
    with pytest.raises(paracrypt.UsageError, match="cannot update: the tree keeps its names"):
        paracrypt.encrypt_tree(plain, url, key=key, update=True, hide_names=True)
    wrong = tmp_path / "wrong.key"
    paracrypt.keygen(wrong)
    with pytest.raises(paracrypt.DataError, match="paracrypt-manifest"):
        paracrypt.encrypt_tree(plain, url, key=wrong, update=True)
    assert s3.keys("u/") == before
    again = tmp_path / "manifest-again"
    s3.command({"op": "get", "key": "u/paracrypt-manifest", "file": str(again)})
    assert again.read_bytes() == manifest.read_bytes()


def paracrypt_back(back: Path, url: str, key: Path) -> Path:
    """The tree at `url` decrypted into `back`."""
    assert paracrypt.decrypt_tree(url, back, key=key)["complete"]
    return back


def test_what_a_prefix_does_not_offer_is_refused_before_anything_is_written(
        tmp_path: Path, s3: Bucket, key: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    url = s3.url("r/")
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: paracrypt.encrypt_tree(plain / "x", url, key=key),
         "x is not a directory"),
        (lambda: paracrypt.rekey_tree(url, s3.url("r/in/"), password="pw",
                                      new_password="new"),
         "overlap"),
        (lambda: paracrypt.sign_tree(url, key=key),
         "a prefix's signature has no place beside it"),
    ]
    for call, words in refusals:
        with pytest.raises(paracrypt.UsageError, match=words):
            call()
    assert s3.keys() == []
    assert sorted(listing(tmp_path)) == ["plain", "tree.key"]
    # A decryption's `dst` is checked as a local tree's, before the prefix is read.
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_bytes(b"mine")
    with pytest.raises(paracrypt.UsageError, match="full is not empty"):
        paracrypt.decrypt_tree(url, tmp_path / "full", key=key)
    # A prefix without a tree has no manifest.
    with pytest.raises(paracrypt.IoError, match=r"s3://.*/r/ has no manifest"):
        paracrypt.decrypt_tree(url, tmp_path / "o4", key=key)
    assert not (tmp_path / "o4").exists()


def plaintext_objects(s3: Bucket, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix`, by its key under it."""
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        into = Path(scratch) / "object"
        for rel in s3.keys(prefix):
            s3.command({"op": "get", "key": prefix + rel, "file": str(into)})
            found[rel] = into.read_bytes()
    return found


def plaintext_files(plain: Path) -> dict[str, bytes]:
    """Every regular file of `plain`, by its path under it (what a prefix holds of it)."""
    return {str(p.relative_to(plain)): p.read_bytes()
            for p in sorted(plain.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_a_tree_decrypts_into_a_prefix(tmp_path: Path, s3: Bucket, key: Path) -> None:
    """``decrypt_tree`` into a prefix, from a directory and from a prefix: one object per file,
    its plaintext (a file past one part uploaded in parts), nothing else; each link, which a
    prefix cannot hold, is a failure that names it (:class:`IncompleteTreeError`). A prefix that
    holds objects needs ``overwrite=True``; one that overlaps the prefix read is refused."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    paracrypt.encrypt_tree(plain, tmp_path / "sealed", key=key, chunk_size="64KiB")
    paracrypt.encrypt_tree(plain, s3.url("enc/"), key=key, chunk_size="64KiB")
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        paracrypt.decrypt_tree(tmp_path / "sealed", s3.url("from-dir/"), key=key,
                               upload_concurrency=1)
    named = sorted(str(f).split(":")[0] for f in raised.value.failures)
    assert named == ["link to run", "sub/dangling"], raised.value.failures
    assert plaintext_objects(s3, "from-dir/") == plaintext_files(plain)
    for prefix in ("from-prefix/", "again/"):
        with pytest.raises(paracrypt.IncompleteTreeError):
            paracrypt.decrypt_tree(s3.url("enc/"), s3.url(prefix), key=key, threads=2)
        assert plaintext_objects(s3, prefix) == plaintext_files(plain)
    with pytest.raises(paracrypt.UsageError, match="is not empty"):
        paracrypt.decrypt_tree(s3.url("enc/"), s3.url("again/"), key=key)
    with pytest.raises(paracrypt.IncompleteTreeError):
        paracrypt.decrypt_tree(s3.url("enc/"), s3.url("again/"), key=key, overwrite=True)
    with pytest.raises(paracrypt.UsageError, match="overlap"):
        paracrypt.decrypt_tree(s3.url("enc/"), s3.url("enc/back/"), key=key, overwrite=True)
    assert s3.keys("enc/") == ["empty.pcr", "large.pcr", "paracrypt-manifest",
                               "sub/deeper/z.pcr", "sub/run.sh.pcr", "x.pcr"]
    assert s3.uploads() == []


def test_a_tree_is_rekeyed_in_and_out_of_a_prefix(tmp_path: Path, s3: Bucket) -> None:
    """``rekey_tree`` from a prefix into a prefix and into a directory, and from a directory
    into a prefix: each new tree opens with the new identity, back to the tree; the old one is
    as it was. A password tree in a prefix keeps its files byte for byte. An output prefix that
    holds objects needs ``overwrite=True``; a tree of a key file is refused before anything is
    read past its manifest's header."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    alice = paracrypt.keygen(tmp_path / "alice.txt", kind="x25519")
    bob = paracrypt.keygen(tmp_path / "bob.txt", kind="x25519")
    assert alice is not None and bob is not None
    paracrypt.encrypt_tree(plain, s3.url("old/"), recipients=[alice], chunk_size="64KiB")
    paracrypt.encrypt_tree(plain, tmp_path / "old", recipients=[alice])
    before = plaintext_objects(s3, "old/")
    for n, (src, dst) in enumerate([(s3.url("old/"), s3.url("new/")),
                                    (s3.url("old/"), str(tmp_path / "new")),
                                    (str(tmp_path / "old"), s3.url("from-dir/"))]):
        done = paracrypt.rekey_tree(src, dst, identities=tmp_path / "alice.txt",
                                    recipients=[bob], threads=2, upload_concurrency=2,
                                    download_concurrency=2, retries=1)
        assert done["complete"] and done["files"] == 5, done
        back = tmp_path / f"back-{n}"
        assert paracrypt.decrypt_tree(dst, back, identities=tmp_path / "bob.txt")["complete"]
        assert snapshot(back) == snapshot(plain)
        with pytest.raises(paracrypt.DataError):
            paracrypt.decrypt_tree(dst, tmp_path / "no", identities=tmp_path / "alice.txt")
    assert plaintext_objects(s3, "old/") == before
    with pytest.raises(paracrypt.UsageError, match="is not empty"):
        paracrypt.rekey_tree(s3.url("old/"), s3.url("new/"), identities=tmp_path / "alice.txt",
                             recipients=[bob])
    paracrypt.rekey_tree(s3.url("old/"), s3.url("new/"), identities=tmp_path / "alice.txt",
                         recipients=[bob], overwrite=True)
    paracrypt.encrypt_tree(plain, s3.url("pw/"), password="old words")
    paracrypt.rekey_tree(s3.url("pw/"), s3.url("pw2/"), password="old words",
                         new_password="new words")
    was, now = plaintext_objects(s3, "pw/"), plaintext_objects(s3, "pw2/")
    assert was.keys() == now.keys()
    assert all(was[k] == now[k] for k in was if k != "paracrypt-manifest")
    back = tmp_path / "back-pw"
    assert paracrypt.decrypt_tree(s3.url("pw2/"), back, password="new words")["complete"]
    assert snapshot(back) == snapshot(plain)
    key = tmp_path / "tree.key"
    paracrypt.keygen(key)
    paracrypt.encrypt_tree(plain, s3.url("keyed/"), key=key)
    with pytest.raises(paracrypt.DataError, match="encrypted with a key file"):
        paracrypt.rekey_tree(s3.url("keyed/"), s3.url("k2/"), password="unused",
                             new_password="new")
    assert s3.keys("k2/") == []
    assert s3.uploads() == []


def test_a_plaintext_tree_in_a_prefix_encrypts(tmp_path: Path, s3: Bucket, key: Path) -> None:
    """``encrypt_tree`` from a prefix of plaintext objects (as another tool leaves them): into a
    directory and into a prefix, each object a file at its key's path (mode 644, directories
    755), decrypting to those files; ``sign_tree`` and ``verify_tree(signature=)`` of it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    for link in (plain / "link to run", plain / "sub" / "dangling"):
        link.unlink()
    (plain / "empty dir").rmdir()
    files = plaintext_files(plain)
    for rel in files:
        s3.command({"op": "put", "key": "src/" + rel, "file": str(plain / rel)})
    done = paracrypt.encrypt_tree(s3.url("src/"), tmp_path / "sealed", key=key,
                                  chunk_size="64KiB", threads=2)
    assert done["files"] == len(files) and done["complete"]
    done = paracrypt.encrypt_tree(s3.url("src/"), s3.url("enc/"), key=key, chunk_size="64KiB")
    assert done["files"] == len(files) and done["complete"]
    assert s3.keys("enc/") == sorted([rel + ".pcr" for rel in files] + ["paracrypt-manifest"])
    for n, src in enumerate((tmp_path / "sealed", s3.url("enc/"))):
        back = paracrypt_back(tmp_path / f"back{n}", str(src), key)
        assert plaintext_files(back) == files
        assert {oct(p.stat().st_mode & 0o777) for p in back.rglob("*") if p.is_file()} == {"0o644"}
        assert oct((back / "sub").stat().st_mode & 0o777) == "0o755"
    with pytest.raises(paracrypt.UsageError, match="overlap"):
        paracrypt.encrypt_tree(s3.url("src/"), s3.url("src/enc/"), key=key)
    assert s3.uploads() == []

    # Signed as a tree and checked against the signature, there (``sig`` required).
    signer, public = tmp_path / "s.pem", tmp_path / "s.pub"
    subprocess.run([str(BINARY), "keygen", "--kind", "ed25519", "-o", str(signer),
                    "--public-out", str(public)], check=True, capture_output=True)
    sig = tmp_path / "src.psig"
    done = paracrypt.sign_tree(s3.url("src/"), sig, key=signer, retries=0)
    assert done["files"] == len(files)
    checked = paracrypt.verify_tree(s3.url("src/"), signature=sig, verify_with=public)
    assert (checked["files"], checked["signer"]["required"]) == (len(files), True)
    assert paracrypt.verify_tree(s3.url("src/"), ["x"], signature=sig)["files"] == 1
    s3.command({"op": "put", "key": "src/x", "file": str(plain / "empty")})
    with pytest.raises(paracrypt.TreeChangedError) as changed:
        paracrypt.verify_tree(s3.url("src/"), signature=sig)
    assert changed.value.changes == ["changed: x: 0 bytes, signed as 70000"]


def test_a_missing_bucket_is_an_io_error(tmp_path: Path, s3: Bucket, key: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    with pytest.raises(paracrypt.IoError, match="no such bucket"):
        paracrypt.encrypt_tree(plain, "s3://no-such-bucket/p/", key=key)
    with pytest.raises(paracrypt.IoError, match="no such bucket"):
        paracrypt.info_tree("s3://no-such-bucket/p/", key=key)


def test_the_stores_options_are_keywords_bounded_as_the_clis_flags(tmp_path: Path, s3: Bucket,
                                                                   key: Path) -> None:
    """``upload_concurrency=``, ``download_concurrency=`` and ``retries=`` are the CLI's
    ``--upload-concurrency``, ``--download-concurrency`` and ``--retries``, with the store's
    bounds (``paracrypt_store::MAX_CONCURRENCY``, ``MAX_RETRIES``): one part in flight for the
    whole tree (several files of two parts each, on two threads) still finishes, and a value
    out of bounds is a ``UsageError`` naming it, before anything is written, for a prefix and
    for a local tree alike."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    (plain / "large2").write_bytes(data((8 << 20) + 9, seed=11))
    url = s3.url("k/")
    done = paracrypt.encrypt_tree(plain, url, key=key, threads=2, upload_concurrency=1,
                                  retries=0)
    assert done["files"] == 6 and done["complete"]
    assert s3.uploads() == []
    assert paracrypt.verify_tree(url, key=key, download_concurrency=1, retries=0)["files"] == 6
    assert paracrypt.info_tree(url, key=key, download_concurrency=256)["files"] == 6
    back = paracrypt_back(tmp_path / "back", url, key)
    assert snapshot(back) == snapshot(plain)
    again = paracrypt.decrypt_tree(url, tmp_path / "again", key=key, download_concurrency=1,
                                   retries=100)
    assert again["files"] == 6

    before = s3.keys()
    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: paracrypt.encrypt_tree(plain, s3.url("k2/"), key=key, upload_concurrency=0),
         r"upload_concurrency=0: give 1 to 256, or None for 8"),
        (lambda: paracrypt.encrypt_tree(plain, tmp_path / "local", key=key,
                                        upload_concurrency=257),
         r"upload_concurrency=257: give 1 to 256"),
        (lambda: paracrypt.encrypt_tree(plain, s3.url("k2/"), key=key, retries=-1),
         r"retries=-1: give 0 to 100, or None for 10"),
        (lambda: paracrypt.decrypt_tree(url, tmp_path / "o1", key=key,
                                        download_concurrency=0),
         r"download_concurrency=0: give 1 to 256"),
        (lambda: paracrypt.verify_tree(url, key=key, retries=101),
         r"retries=101: give 0 to 100"),
        (lambda: paracrypt.info_tree(url, key=key, download_concurrency=1 << 40),
         r"download_concurrency=1099511627776: give 1 to 256"),
    ]
    for call, words in refusals:
        with pytest.raises(paracrypt.UsageError, match=words):
            call()
    assert s3.keys() == before
    assert sorted(listing(tmp_path)) == ["again", "back", "plain", "tree.key"]


def test_dask_workers_encrypt_a_tree_into_a_prefix(tmp_path: Path, s3: Bucket, key: Path) -> None:
    """``paracrypt.dask.encrypt_tree`` into a prefix (issue #35 item 6): the client plans (the
    prefix checked, the tree walked), each worker uploads the files of its tasks with the
    credentials of its own environment (``AWS_*``, which these workers inherit), and the client
    writes the manifest, last. The tree is the one a single process writes: the same objects,
    decrypting to the same tree, on one process and with ``paracrypt.dask.decrypt_tree`` from
    the prefix; ``update=True`` over the workers seals only what changed and deletes what is
    gone; a prefix that holds objects is refused before any task."""
    from distributed import Client, LocalCluster

    import paracrypt.dask

    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain, large=True)
    url = s3.url("dask/")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0",
                      worker_dashboard_address="127.0.0.1:0") as two, Client(two) as client:
        # The store's options of the call go to every worker, checked first.
        with pytest.raises(paracrypt.UsageError, match="upload_concurrency=0: give 1 to 256"):
            paracrypt.dask.encrypt_tree(client, plain, url, key=key, upload_concurrency=0)
        with pytest.raises(paracrypt.UsageError, match="retries=101: give 0 to 100"):
            paracrypt.dask.decrypt_tree(client, url, tmp_path / "none", key=key, retries=101)
        assert s3.keys("dask/") == [] and not (tmp_path / "none").exists()
        done = paracrypt.dask.encrypt_tree(client, plain, url, key=key, chunk_size="64KiB",
                                           upload_concurrency=1, retries=0)
        assert done["files"] == 5 and done["complete"]
        assert s3.keys("dask/") == ["empty.pcr", "large.pcr", "paracrypt-manifest",
                                    "sub/deeper/z.pcr", "sub/run.sh.pcr", "x.pcr"]
        assert s3.uploads() == []
        assert paracrypt.verify_tree(url, key=key)["files"] == 5
        assert snapshot(paracrypt_back(tmp_path / "back", url, key)) == snapshot(plain)
        # And back over the workers: the client lists the prefix and reads the manifest, each
        # worker reads its tasks' objects with its own credentials.
        done = paracrypt.dask.decrypt_tree(client, url, tmp_path / "dask-back", key=key,
                                           download_concurrency=1, retries=0)
        assert (done["files"], done["bytes"], done["complete"]) == (5, (8 << 20) + 370_023, True)
        assert snapshot(tmp_path / "dask-back") == snapshot(plain)
        # And into a prefix over the workers: each worker uploads the files of its tasks; the
        # two links, which a prefix cannot hold, are the only failures.
        with pytest.raises(paracrypt.IncompleteTreeError) as raised:
            paracrypt.dask.decrypt_tree(client, url, s3.url("dask-plain/"), key=key,
                                        upload_concurrency=1)
        named = sorted(str(f).split(":")[0] for f in raised.value.failures)
        assert named == ["link to run", "sub/dangling"], raised.value.failures
        assert plaintext_objects(s3, "dask-plain/") == plaintext_files(plain)
        assert s3.uploads() == []
        # Those plaintext objects encrypt over the workers as a tree: the client lists the
        # prefix once, each worker reads its tasks' objects at the versions listed, into a
        # prefix or a directory.
        for n, out in enumerate((s3.url("dask-again/"), str(tmp_path / "dask-again"))):
            done = paracrypt.dask.encrypt_tree(client, s3.url("dask-plain/"), out, key=key,
                                               chunk_size="64KiB", download_concurrency=1)
            assert (done["files"], done["complete"]) == (5, True)
            back = paracrypt_back(tmp_path / f"again-back-{n}", out, key)
            assert plaintext_files(back) == plaintext_files(plain)
        assert s3.uploads() == []

        (plain / "x").write_bytes(data(90_000, seed=4))
        (plain / "sub" / "deeper" / "z").unlink()
        done = paracrypt.dask.encrypt_tree(client, plain, url, key=key, chunk_size="64KiB",
                                           update=True)
        assert (done["files"], done["unchanged"], done["removed"]) == (1, 3, 1)
        assert s3.keys("dask/") == ["empty.pcr", "large.pcr", "paracrypt-manifest",
                                    "sub/run.sh.pcr", "x.pcr"]
        assert snapshot(paracrypt_back(tmp_path / "back2", url, key)) == snapshot(plain)

        manifest = tmp_path / "manifest"
        s3.command({"op": "get", "key": "dask/paracrypt-manifest", "file": str(manifest)})
        with pytest.raises(paracrypt.UsageError, match=r"s3://.*/dask/ is not empty"):
            paracrypt.dask.encrypt_tree(client, plain, url, key=key)
        again = tmp_path / "manifest-again"
        s3.command({"op": "get", "key": "dask/paracrypt-manifest", "file": str(again)})
        assert again.read_bytes() == manifest.read_bytes()
    assert s3.uploads() == []


def test_a_plaintext_tree_in_a_prefix_is_encrypted_in_tasks_at_the_versions_listed(
        tmp_path: Path, s3: Bucket, key: Path) -> None:
    """The encryption of a prefix of plaintext objects cut into tasks (what ``paracrypt.dask``
    and ``mpirun … --distributed`` run): the prefix is listed once, by the plan, and each task
    carries its objects' lengths, times and ETags, never a credential. A task reads its objects
    with its own process's credentials at those versions: an object replaced after the listing
    (with bytes of the same length) fails by name, the other files are sealed, and the tree is
    reported incomplete; listed again, it encrypts whole."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    files = plaintext_files(plain)
    for rel in files:
        s3.command({"op": "put", "key": "ptasks/" + rel, "file": str(plain / rel)})
    job = paracrypt.TreeJob.encrypt(s3.url("ptasks/"), s3.url("ptasks-enc/"), key=key,
                                    chunk_size="64KiB")
    assert job.files == len(files)
    parts = job.tasks(1)
    tasks = [job.task(part) for part in parts]
    secret = os.environ["AWS_SECRET_ACCESS_KEY"].encode()
    assert not [task for task in tasks if secret in task]
    other = tmp_path / "other-x"
    other.write_bytes(bytes(reversed((plain / "x").read_bytes())))
    s3.command({"op": "put", "key": "ptasks/x", "file": str(other)})
    for task in tasks:
        job.add(paracrypt.run_tree_task(task, download_concurrency=1))
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        job.finish()
    failures = [str(e) for e in raised.value.failures]
    assert len(failures) == 1 and failures[0].startswith("x: "), failures
    assert raised.value.summary["files"] == len(files) - 1
    assert "x.pcr" not in s3.keys("ptasks-enc/")

    # Listed again, into a directory: the tree encrypts whole, the new x with it.
    job = paracrypt.TreeJob.encrypt(s3.url("ptasks/"), tmp_path / "sealed", key=key,
                                    retries=0)
    for part in job.tasks(2):
        job.add(paracrypt.run_tree_task(job.task(part), retries=0))
    assert job.finish()["files"] == len(files)
    files["x"] = other.read_bytes()
    assert plaintext_files(paracrypt_back(tmp_path / "back2", str(tmp_path / "sealed"),
                                          key)) == files
    assert s3.uploads() == []


def test_a_tree_in_a_prefix_is_decrypted_in_tasks_at_the_versions_listed(
        tmp_path: Path, s3: Bucket, key: Path) -> None:
    """The decryption of a tree in a prefix cut into tasks (what ``paracrypt.dask`` and
    ``mpirun … --distributed`` run): the prefix is listed once, by the plan, and each task
    carries its objects' lengths and ETags, never a credential. A task reads its objects with
    its own process's credentials, at those versions: an object replaced after the listing (here
    by the same file encrypted again, whose header the plan did not read) fails by name, the
    task's other files are decrypted, and the tree is reported incomplete."""
    plain = tmp_path / "plain"
    plain.mkdir()
    make_tree(plain)
    url = s3.url("tasks/")
    paracrypt.encrypt_tree(plain, url, key=key, chunk_size="64KiB")
    again = tmp_path / "again"
    paracrypt.encrypt_tree(plain, again, key=key, chunk_size="64KiB")

    job = paracrypt.TreeJob.decrypt(url, tmp_path / "back", key=key)
    assert job.files == 4
    parts = job.tasks(1)
    tasks = [job.task(part) for part in parts]
    secret = os.environ["AWS_SECRET_ACCESS_KEY"].encode()
    assert not [task for task in tasks if secret in task]
    # A task takes the store's options as the calls do, bounded alike.
    with pytest.raises(paracrypt.UsageError, match="download_concurrency=0: give 1 to 256"):
        paracrypt.run_tree_task(tasks[0], download_concurrency=0)
    # The object of `x` replaced after the listing: the same file, sealed again.
    first = tmp_path / "x.pcr"
    s3.command({"op": "get", "key": "tasks/x.pcr", "file": str(first)})
    s3.command({"op": "put", "key": "tasks/x.pcr", "file": str(again / "x.pcr")})
    for part, task in zip(parts, tasks):
        job.add(paracrypt.run_tree_task(task))
    with pytest.raises(paracrypt.IncompleteTreeError) as raised:
        job.finish()
    failures = [str(e) for e in raised.value.failures]
    assert len(failures) == 1 and failures[0].startswith("x: "), failures
    assert "changed" in failures[0], failures
    assert raised.value.summary["files"] == 3
    back = snapshot(tmp_path / "back")
    expected = snapshot(plain)
    del expected["x"]
    assert back == expected

    # Listed again with the first object put back (a new version of the same bytes), the tree
    # decrypts whole (over the workers' function, in this process).
    s3.command({"op": "put", "key": "tasks/x.pcr", "file": str(first)})
    job = paracrypt.TreeJob.decrypt(url, tmp_path / "back2", key=key, download_concurrency=1,
                                    retries=0)
    for part in job.tasks(2):
        job.add(paracrypt.run_tree_task(job.task(part), download_concurrency=1, retries=0))
    assert job.finish()["files"] == 4
    assert snapshot(tmp_path / "back2") == snapshot(plain)
