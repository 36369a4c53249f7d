"""A typed use of every public API, checked by `mypy --strict` in scripts/test.sh (and run by
pytest, so that what type-checks also works)."""

from __future__ import annotations

import io
import subprocess
import warnings
from pathlib import Path
from typing import Any, Optional

import paracrypt
from conftest import BINARY
from paracrypt import raw


def use_everything(directory: Path) -> None:
    key: paracrypt.Key = paracrypt.Key.generate()
    key.save(directory / "key")
    same: paracrypt.Key = paracrypt.Key.load(directory / "key")
    assert same == key and paracrypt.Key.from_text(key.to_text()) == key
    key_bytes: bytes = key.to_bytes()
    assert paracrypt.Key.from_bytes(key_bytes) == key
    sealed: bytes = paracrypt.encrypt(b"typed", key=key, chunk_size="64KiB", threads=2)
    plain: bytes = paracrypt.decrypt(bytearray(sealed), key=directory / "key")
    assert plain == b"typed"
    (directory / "plain").write_bytes(b"typed file")
    seen: list[int] = []
    written: int = paracrypt.encrypt_file(
        directory / "plain", str(directory / "sealed"), password="pw", cipher="aes-128-gcm",
        progress=seen.append, overwrite=True,
    )
    assert written > 0
    paracrypt.decrypt_file(directory / "sealed", directory / "back", password="pw",
                           provider="rustcrypto")
    part: bytes = paracrypt.decrypt_range(directory / "sealed", 2, 4, password="pw")
    checked: int = paracrypt.verify_file(directory / "sealed", password="pw")
    assert checked > 0
    assert part == b"ped "
    age: bytes = paracrypt.encrypt(memoryview(b"to age"), password="pw", format="age", armor=True)
    assert paracrypt.decrypt(age, password="pw") == b"to age"
    recipients = paracrypt.Recipients(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"])
    assert len(recipients) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", paracrypt.LegacyWarning)  # raw output: no integrity
        ctr: bytes = raw.encrypt(b"raw", cipher="aes-128-ctr", key=bytes(16), iv=bytes(16))
        assert raw.decrypt(ctr, cipher="aes-128-ctr", key=bytes(16), iv=bytes(16)) == b"raw"
    out = io.BytesIO()
    with paracrypt.encryptor(out, key=key) as writer:
        writer.write(b"streamed")
    reader: paracrypt.DecryptingReader = paracrypt.decryptor(io.BytesIO(out.getvalue()), key=key)
    assert reader.read() == b"streamed"
    try:
        paracrypt.decrypt(sealed, password="wrong")
    except paracrypt.WrongKeyError as e:
        kind: str = e.kind
        assert kind == "data" and e.chunk is None
    except paracrypt.Error:
        raise
    # Signed containers: an Ed25519 key from `paracrypt keygen`.
    subprocess.run([str(BINARY), "keygen", "--kind", "ed25519", "-o", str(directory / "s.pem"),
                    "--public-out", str(directory / "s.pub")], check=True, capture_output=True)
    signed: bytes = paracrypt.encrypt(b"signed", key=key, sign=directory / "s.pem")
    assert paracrypt.decrypt(signed, key=key, verify_with=str(directory / "s.pub")) == b"signed"
    signer = paracrypt.info(signed)["signer"]
    assert signer["scheme"] == "ed25519"
    # And one made from Python, its public key written beside it.
    fingerprint: Optional[str] = paracrypt.keygen(directory / "m.pem", kind="ml-dsa-65",
                                                  public_out=directory / "m.pub")
    pq_signed = paracrypt.encrypt(b"pq", key=key, sign=directory / "m.pem")
    assert paracrypt.decrypt(pq_signed, key=key, verify_with=directory / "m.pub") == b"pq"
    assert paracrypt.info(pq_signed)["signer"]["fingerprint"] == fingerprint
    try:
        paracrypt.decrypt(sealed, key=key, verify_with=directory / "s.pub")
        raise AssertionError("an unsigned file passed verify_with=")
    except paracrypt.SignatureError as e:
        assert e.kind == "signature"
    # A directory tree, its summary and its exceptions' attributes.
    (directory / "tree" / "sub").mkdir(parents=True)
    (directory / "tree" / "sub" / "f").write_bytes(b"in a tree")
    done: dict[str, Any] = paracrypt.encrypt_tree(directory / "tree", directory / "tree.enc",
                                                  key=key, hide_names=True, threads=2)
    assert done["files"] == 1
    try:
        assert paracrypt.verify_tree(directory / "tree.enc", ["sub/f"], key=key)["files"] == 1
    except paracrypt.TreeChangedError as e:
        lines: list[str] = e.changes
        raise AssertionError(f"{lines}") from e
    assert paracrypt.info_tree(directory / "tree.enc", key=key)["hidden_names"] is True
    try:
        paracrypt.decrypt_tree(directory / "tree.enc", directory / "tree.back", key=key)
    except paracrypt.IncompleteTreeError as e:
        failed: list[paracrypt.Error] = e.failures
        raise AssertionError(f"a whole tree failed in part: {failed}, {e.summary}") from e
    assert (directory / "tree.back" / "sub" / "f").read_bytes() == b"in a tree"


def test_typed_usage(tmp_path: Path) -> None:
    use_everything(tmp_path)
