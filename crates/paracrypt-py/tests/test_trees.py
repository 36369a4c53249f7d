"""Directory trees from Python: :func:`paracrypt.encrypt_tree`, :func:`decrypt_tree`,
:func:`verify_tree` and :func:`info_tree` against the CLI's ``--recursive`` commands both ways,
failures as the package's exceptions naming the file, and a tree done in part as
:class:`paracrypt.IncompleteTreeError` (the CLI's exit 6)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from conftest import data, listing

import paracrypt

Cli = Callable[..., "subprocess.CompletedProcess[bytes]"]


def make_tree(root: Path) -> dict[str, bytes]:
    """A small tree: nested directories, files from empty to a few chunks (at a 64 KiB chunk
    size), a mode that is not the default, a symbolic link. Returns the files' contents."""
    files = {
        "a.txt": b"alpha",
        "empty": b"",
        "sub/b.bin": data(200_000, seed=2),
        "sub/deeper/c.bin": data(70_000, seed=3),
        "sub/deeper/d.txt": b"delta" * 100,
    }
    for name, contents in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(contents)
    os.chmod(root / "a.txt", 0o640)
    os.symlink("deeper/c.bin", root / "sub" / "link")
    return files


def same_tree(left: Path, right: Path) -> None:
    """`right` holds what `left` holds: the same files, bytes, modes, links."""
    def walk(root: Path) -> dict[str, tuple[str, int, object]]:
        seen: dict[str, tuple[str, int, object]] = {}
        for path in sorted(root.rglob("*")):
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                seen[rel] = ("link", 0, os.readlink(path))
            elif path.is_dir():
                seen[rel] = ("dir", st.st_mode & 0o7777, None)
            else:
                seen[rel] = ("file", st.st_mode & 0o7777, path.read_bytes())
        return seen
    assert walk(left) == walk(right)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    make_tree(root)
    return root


def test_python_and_the_cli_open_each_others_trees(tmp_path: Path, tree: Path, cli: Cli) -> None:
    k = str(tmp_path / "tree.key")
    cli("keygen", "-o", k)
    # Python writes, the CLI decrypts, verifies and describes.
    done = paracrypt.encrypt_tree(tree, tmp_path / "py.enc", key=k, chunk_size="64KiB",
                                  threads=2)
    assert done["files"] == 5 and done["complete"] and done["signer"] is None
    assert (tmp_path / "py.enc" / "sub" / "b.bin.pcr").is_file()
    cli("decrypt", "-q", "--recursive", "-k", k, str(tmp_path / "py.enc"), "-o",
        str(tmp_path / "py.back"))
    same_tree(tree, tmp_path / "py.back")
    cli("verify", "--recursive", "-k", k, str(tmp_path / "py.enc"))
    # The CLI writes, Python decrypts, verifies and describes as the CLI does.
    cli("encrypt", "-q", "--recursive", "-k", k, "--chunk-size", "64KiB", str(tree), "-o",
        str(tmp_path / "cli.enc"))
    back = paracrypt.decrypt_tree(tmp_path / "cli.enc", tmp_path / "cli.back", key=k)
    assert back["files"] == 5 and back["bytes"] == sum(
        p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
    same_tree(tree, tmp_path / "cli.back")
    checked = paracrypt.verify_tree(tmp_path / "cli.enc", key=k)
    assert checked["files"] == 5
    assert paracrypt.verify_tree(tmp_path / "cli.enc", ["sub/b.bin"], key=k)["files"] == 1
    about = paracrypt.info_tree(tmp_path / "cli.enc", key=paracrypt.Key.load(k))
    printed = json.loads(cli("info", "--recursive", "-k", k, "--json",
                             str(tmp_path / "cli.enc")).stdout)
    assert about == printed
    assert about["files"] == 5 and about["links"] == 1 and about["complete"] is True
    assert {e["path"] for e in about["entries"] if e["kind"] == "symlink"} == {"sub/link"}


def test_password_signed_hidden_names(tmp_path: Path, tree: Path, cli: Cli) -> None:
    signer, public = tmp_path / "s.pem", tmp_path / "s.pub"
    cli("keygen", "--kind", "ed25519", "-o", str(signer), "--public-out", str(public))
    done = paracrypt.encrypt_tree(tree, tmp_path / "enc", password="correct horse", sign=signer,
                                  hide_names=True)
    assert done["complete"]
    about = paracrypt.info_tree(tmp_path / "enc", password="correct horse")
    assert about["signer"] is not None and about["hidden_names"] and about["carries_key"]
    # No real name is stored.
    stored = {p.name for p in (tmp_path / "enc").rglob("*")}
    assert not stored & {"a.txt", "sub", "b.bin.pcr", "deeper"}
    env = dict(os.environ, PARACRYPT_PASSWORD="correct horse")
    cli("verify", "--recursive", "--public", str(public), str(tmp_path / "enc"), env=env)
    back = paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back", password="correct horse",
                                  verify_with=public)
    assert back["signer"]["required"] is True
    same_tree(tree, tmp_path / "back")
    other = tmp_path / "o.pub"
    cli("keygen", "--kind", "ed25519", "-o", str(tmp_path / "o.pem"), "--public-out", str(other))
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.verify_tree(tmp_path / "enc", password="correct horse", verify_with=other)
    # An age tree to recipients: the CLI opens it with the identity.
    recipient = paracrypt.keygen(tmp_path / "id.txt", kind="x25519")
    assert recipient is not None
    paracrypt.encrypt_tree(tree, tmp_path / "age.enc", recipients=[recipient], format="age")
    cli("decrypt", "-q", "--recursive", "-i", str(tmp_path / "id.txt"),
        str(tmp_path / "age.enc"), "-o", str(tmp_path / "age.back"))
    same_tree(tree, tmp_path / "age.back")


def test_refusals_name_the_file_and_leave_nothing(tmp_path: Path, tree: Path) -> None:
    key = paracrypt.Key.generate()
    os.mkfifo(tree / "sub" / "pipe")
    with pytest.raises(paracrypt.UsageError, match="sub/pipe"):
        paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key)
    assert not (tmp_path / "enc").exists()
    os.unlink(tree / "sub" / "pipe")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_bytes(b"x")
    with pytest.raises(paracrypt.UsageError):
        paracrypt.encrypt_tree(tree, tmp_path / "full", key=key)
    assert listing(tmp_path / "full") == ["x"]
    with pytest.raises(paracrypt.UsageError, match="update"):
        paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, checksum=True)
    paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key)
    with pytest.raises(paracrypt.WrongKeyError):
        paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back",
                               key=paracrypt.Key.generate())
    assert not (tmp_path / "back").exists()


def test_a_damaged_file_fails_alone_named(tmp_path: Path, tree: Path) -> None:
    key = paracrypt.Key.generate()
    paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, chunk_size="64KiB")
    damaged = tmp_path / "enc" / "sub" / "b.bin.pcr"
    sealed = bytearray(damaged.read_bytes())
    sealed[-100] ^= 1
    damaged.write_bytes(bytes(sealed))
    with pytest.raises(paracrypt.TreeChangedError) as changed:
        paracrypt.verify_tree(tmp_path / "enc", key=key)
    assert len(changed.value.changes) == 1
    assert changed.value.changes[0].startswith("changed: sub/b.bin")
    assert changed.value.complete is True
    # The tree done in part: every other file complete, the failure named, of its own class.
    with pytest.raises(paracrypt.IncompleteTreeError) as partial:
        paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back", key=key)
    error = partial.value
    assert error.kind == "partial" and "sub/b.bin" in str(error)
    assert len(error.failures) == 1
    assert isinstance(error.failures[0], paracrypt.AuthenticationError)
    assert "sub/b.bin" in str(error.failures[0]) and error.failures[0].chunk is not None
    assert error.summary["files"] == 4 and error.summary["complete"] is False
    assert not (tmp_path / "back" / "sub" / "b.bin").exists()
    assert (tmp_path / "back" / "sub" / "deeper" / "c.bin").read_bytes() == data(70_000, seed=3)
    assert not [p for p in (tmp_path / "back").rglob("*") if p.name.startswith(".paracrypt")]


def test_update_reseals_only_what_changed(tmp_path: Path, tree: Path, cli: Cli) -> None:
    k = str(tmp_path / "tree.key")
    cli("keygen", "-o", k)
    paracrypt.encrypt_tree(tree, tmp_path / "enc", key=k)
    (tree / "sub" / "deeper" / "d.txt").write_bytes(b"changed")
    (tree / "a.txt").unlink()
    again = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=k, update=True)
    assert (again["files"], again["unchanged"], again["removed"]) == (1, 3, 1)
    with pytest.raises(paracrypt.UsageError, match="update"):
        paracrypt.encrypt_tree(tree, tmp_path / "enc", key=k)
    cli("decrypt", "-q", "--recursive", "-k", k, str(tmp_path / "enc"), "-o",
        str(tmp_path / "back"))
    same_tree(tree, tmp_path / "back")


def test_dry_run_says_what_each_run_would_do_and_writes_nothing(
        tmp_path: Path, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARACRYPT_STATE_DIR", str(tmp_path / "state"))
    key = paracrypt.Key.generate()

    def everything() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(tmp_path)): (p.lstat().st_mode, p.lstat().st_mtime_ns)
                for p in tmp_path.rglob("*")}

    before = everything()
    dry = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, dry_run=True)
    assert (dry["files"], dry["unchanged"], dry["removed"]) == (5, 0, 0)
    assert everything() == before
    assert not (tmp_path / "enc").exists() and not (tmp_path / "state").exists()
    paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key)
    (tree / "sub" / "deeper" / "d.txt").write_bytes(b"changed")
    (tree / "a.txt").unlink()
    before = everything()
    dry = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, update=True, dry_run=True)
    assert (dry["files"], dry["unchanged"], dry["removed"]) == (1, 3, 1)
    assert everything() == before
    dry = paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back", key=key, dry_run=True)
    assert dry["files"] == 5
    assert everything() == before
    # The run that follows does what the dry run said.
    done = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, update=True)
    assert (done["files"], done["unchanged"], done["removed"]) == (1, 3, 1)
    # The checks are the run's: another key does not open the manifest.
    with pytest.raises(paracrypt.DataError):
        paracrypt.encrypt_tree(tree, tmp_path / "enc", key=paracrypt.Key.generate(),
                               update=True, dry_run=True)


def test_checksum_compares_contents(tmp_path: Path, tree: Path) -> None:
    key = paracrypt.Key.generate()
    paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key)
    # The same size and modification time, other contents: only checksum=True sees it.
    target = tree / "sub" / "deeper" / "d.txt"
    before = target.stat()
    target.write_bytes(b"DELTA" * 100)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    same = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, update=True)
    assert (same["files"], same["unchanged"]) == (0, 5)
    summed = paracrypt.encrypt_tree(tree, tmp_path / "enc", key=key, update=True, checksum=True)
    assert (summed["files"], summed["unchanged"]) == (1, 4)
    paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back", key=key)
    same_tree(tree, tmp_path / "back")


def test_nothing_done_raises_the_failure_itself(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "only").write_bytes(data(100_000))
    key = paracrypt.Key.generate()
    paracrypt.encrypt_tree(tmp_path / "one", tmp_path / "enc", key=key)
    sealed = tmp_path / "enc" / "only.pcr"
    damaged = bytearray(sealed.read_bytes())
    damaged[-20] ^= 1
    sealed.write_bytes(bytes(damaged))
    # No file could be done: the file's own exception (the CLI's exit 1), nothing at dst.
    with pytest.raises(paracrypt.AuthenticationError, match="only"):
        paracrypt.decrypt_tree(tmp_path / "enc", tmp_path / "back", key=key)
    assert not (tmp_path / "back").exists()


def test_a_tree_to_recipients_is_updated_with_identities(tmp_path: Path, tree: Path,
                                                         cli: Cli) -> None:
    """update=True of a tree encrypted to recipients keeps from this host's record of the
    manifest it wrote, so no identity is needed (a backup host); with identities= too.
    identities= without update=True is refused."""
    cli("keygen", "--kind", "x25519", "-o", str(tmp_path / "id.txt"))
    recipient = [line.split(": ")[1] for line in (tmp_path / "id.txt").read_text().splitlines()
                 if line.startswith("# public key: ")][0]
    out = tmp_path / "out"
    paracrypt.encrypt_tree(tree, out, recipients=recipient)
    (tree / "a.txt").write_bytes(b"changed since")
    done = paracrypt.encrypt_tree(tree, out, recipients=recipient, update=True)
    assert done["files"] == 1 and done["unchanged"] >= 1 and done["complete"]
    with pytest.raises(paracrypt.UsageError, match="need update"):
        paracrypt.encrypt_tree(tree, tmp_path / "other", recipients=recipient,
                               identities=tmp_path / "id.txt")
    (tree / "a.txt").write_bytes(b"changed again")
    done = paracrypt.encrypt_tree(tree, out, recipients=recipient, update=True,
                                  identities=tmp_path / "id.txt")
    assert done["files"] == 1 and done["unchanged"] >= 1 and done["complete"]
    paracrypt.decrypt_tree(out, tmp_path / "back", identities=tmp_path / "id.txt")
    same_tree(tree, tmp_path / "back")


def test_an_update_takes_nothing_from_the_output_on_faith(
        tmp_path: Path, tree: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #51 from Python: a manifest planted at the output, encrypted to the owner's
    recipient but carrying its author's tree key, is refused (DataError) before anything is
    written; an older generation put back is refused by the host that wrote the newer one, and
    by decrypt_tree(min_generation=)."""
    monkeypatch.setenv("PARACRYPT_STATE_DIR", str(tmp_path / "state"))
    cli("keygen", "--kind", "x25519", "-o", str(tmp_path / "id.txt"))
    recipient = [line.split(": ")[1] for line in (tmp_path / "id.txt").read_text().splitlines()
                 if line.startswith("# public key: ")][0]
    out = tmp_path / "out"
    paracrypt.encrypt_tree(tree, out, recipients=recipient)
    # Her password tree's manifest, sealed again to the owner's recipient.
    paracrypt.encrypt_tree(tree, tmp_path / "hers", password="hers")
    plaintext = tmp_path / "her-manifest"
    paracrypt.decrypt_file(tmp_path / "hers" / "paracrypt-manifest", plaintext, password="hers")
    (out / "paracrypt-manifest").unlink()
    paracrypt.encrypt_file(plaintext, out / "paracrypt-manifest", recipients=recipient)
    before = listing(out)
    (tree / "a.txt").write_bytes(b"a secret for the owner only")
    with pytest.raises(paracrypt.DataError, match="carries a key of its own"):
        paracrypt.encrypt_tree(tree, out, recipients=recipient, update=True,
                               identities=tmp_path / "id.txt")
    assert listing(out) == before

    key = paracrypt.Key.generate()
    sealed = tmp_path / "sealed"
    paracrypt.encrypt_tree(tree, sealed, key=key)
    first = (sealed / "paracrypt-manifest").read_bytes()
    (tree / "a.txt").write_bytes(b"newer")
    paracrypt.encrypt_tree(tree, sealed, key=key, update=True)
    (sealed / "paracrypt-manifest").write_bytes(first)
    with pytest.raises(paracrypt.DataError, match="older than the generation 2 this host wrote"):
        paracrypt.encrypt_tree(tree, sealed, key=key, update=True)
    with pytest.raises(paracrypt.DataError, match="older than the generation 2 asked for"):
        paracrypt.decrypt_tree(sealed, tmp_path / "old", key=key, min_generation=2)
    assert not (tmp_path / "old").exists()


def test_rekey_tree_to_new_recipients_and_a_new_password(tmp_path: Path, tree: Path,
                                                          cli: Cli) -> None:
    alice = paracrypt.keygen(tmp_path / "alice.txt", kind="x25519")
    bob = paracrypt.keygen(tmp_path / "bob.txt", kind="x25519")
    assert alice is not None and bob is not None
    paracrypt.encrypt_tree(tree, tmp_path / "alice.enc", recipients=[alice])
    done = paracrypt.rekey_tree(tmp_path / "alice.enc", tmp_path / "bob.enc",
                                identities=tmp_path / "alice.txt", recipients=[bob], threads=2)
    assert done["files"] == 5 and done["complete"]
    # The CLI opens the rekeyed tree with Bob's identity, and not with Alice's.
    cli("decrypt", "-q", "--recursive", "-i", str(tmp_path / "bob.txt"),
        str(tmp_path / "bob.enc"), "-o", str(tmp_path / "bob.back"))
    same_tree(tree, tmp_path / "bob.back")
    with pytest.raises(paracrypt.DataError):
        paracrypt.decrypt_tree(tmp_path / "bob.enc", tmp_path / "no",
                               identities=tmp_path / "alice.txt")
    assert paracrypt.info_tree(tmp_path / "bob.enc", identities=tmp_path / "bob.txt")[
        "generation"] == 2
    # A password tree: the files are kept byte for byte, the manifest sealed again.
    paracrypt.encrypt_tree(tree, tmp_path / "pw.enc", password="old words")
    paracrypt.rekey_tree(tmp_path / "pw.enc", tmp_path / "pw2.enc", password="old words",
                         new_password="new words")
    for name in ("a.txt.pcr", "sub/b.bin.pcr"):
        assert (tmp_path / "pw.enc" / name).read_bytes() == (tmp_path / "pw2.enc" /
                                                              name).read_bytes()
    paracrypt.decrypt_tree(tmp_path / "pw2.enc", tmp_path / "pw.back", password="new words")
    same_tree(tree, tmp_path / "pw.back")
    # Refused before anything is written: a password for a recipient tree, a key-file tree.
    with pytest.raises(paracrypt.UsageError, match="rekeyed to recipients"):
        paracrypt.rekey_tree(tmp_path / "alice.enc", tmp_path / "x",
                             identities=tmp_path / "alice.txt", new_password="pw")
    k = str(tmp_path / "tree.key")
    cli("keygen", "-o", k)
    paracrypt.encrypt_tree(tree, tmp_path / "keyed.enc", key=k)
    with pytest.raises(paracrypt.DataError, match="encrypted with a key file"):
        paracrypt.rekey_tree(tmp_path / "keyed.enc", tmp_path / "x",
                             identities=tmp_path / "alice.txt", recipients=[bob])
    assert not (tmp_path / "x").exists()


def test_rekey_tree_names_what_it_leaves_behind_and_refuses_before_writing(
        tmp_path: Path, tree: Path, cli: Cli) -> None:
    alice = paracrypt.keygen(tmp_path / "alice.txt", kind="x25519")
    bob = paracrypt.keygen(tmp_path / "bob.txt", kind="x25519")
    assert alice is not None and bob is not None
    old = tmp_path / "alice.enc"
    paracrypt.encrypt_tree(tree, old, recipients=[alice])
    # What the manifest does not list is named in the summary, as the CLI names it on stderr
    # and verify names it added, and is not carried.
    (old / "sub" / "extra.pcr").write_bytes((old / "a.txt.pcr").read_bytes())
    (old / "more" / "deeper").mkdir(parents=True)
    (old / "more" / "deeper" / "notes.pcr").write_bytes(b"not listed")
    done = paracrypt.rekey_tree(old, tmp_path / "bob.enc", identities=tmp_path / "alice.txt",
                                recipients=[bob])
    assert done["complete"] and done["files"] == 5
    assert done["left_behind"] == ["more", "sub/extra.pcr"]
    assert not (tmp_path / "bob.enc" / "more").exists()
    assert not (tmp_path / "bob.enc" / "sub" / "extra.pcr").exists()
    said = cli("rekey", "--recursive", "-i", str(tmp_path / "alice.txt"), "-r", bob, str(old),
               "-o", str(tmp_path / "bob-cli.enc")).stderr.decode()
    for path in done["left_behind"]:
        assert f"left behind: {path} (in the encrypted tree, not in its manifest" in said, said
    # Every other tree call's summary has the key too, empty.
    assert paracrypt.encrypt_tree(tree, tmp_path / "again.enc", recipients=[alice])[
        "left_behind"] == []
    # A tampered tree is refused before anything is written: overwrite=True into a directory
    # holding a file of the tree's names leaves it as it was.
    (old / "sub" / "b.bin.pcr").write_bytes((old / "a.txt.pcr").read_bytes())
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "a.txt.pcr").write_bytes(b"mine")
    before = sorted((p.relative_to(out), p.lstat().st_mtime_ns,
                     p.read_bytes() if p.is_file() else None) for p in out.rglob("*"))
    with pytest.raises(paracrypt.TreeChangedError) as changed:
        paracrypt.rekey_tree(old, out, identities=tmp_path / "alice.txt", recipients=[bob],
                             overwrite=True)
    assert any("sub/b.bin.pcr is not the one the manifest lists" in line
               for line in changed.value.changes), changed.value.changes
    after = sorted((p.relative_to(out), p.lstat().st_mtime_ns,
                    p.read_bytes() if p.is_file() else None) for p in out.rglob("*"))
    assert after == before


def test_sign_tree_and_verify_it_against_the_signature(tmp_path: Path, tree: Path,
                                                       cli: Cli) -> None:
    signer, public = tmp_path / "s.pem", tmp_path / "s.pub"
    cli("keygen", "--kind", "ed25519", "-o", str(signer), "--public-out", str(public))
    done = paracrypt.sign_tree(tree, key=signer, threads=2)
    sig = tmp_path / "plain.psig"
    assert done["files"] == 5 and sig.is_file()
    # The CLI checks what Python signed, and the other way round.
    cli("verify", "--recursive", "-s", str(sig), "--public", str(public), str(tree))
    checked = paracrypt.verify_tree(tree, signature=sig, verify_with=public)
    assert checked["files"] == 5 and checked["signer"]["required"] is True
    (tree / "sub" / "deeper" / "d.txt").write_bytes(b"epsilon" * 100)
    with pytest.raises(paracrypt.TreeChangedError) as changed:
        paracrypt.verify_tree(tree, signature=sig, verify_with=public)
    assert changed.value.changes == ["changed: sub/deeper/d.txt: 700 bytes, signed as 500"]
    assert paracrypt.verify_tree(tree, ["a.txt"], signature=sig)["files"] == 1
    with pytest.raises(paracrypt.UsageError, match="inside the tree"):
        paracrypt.sign_tree(tree, tree / "x.psig", key=signer)
