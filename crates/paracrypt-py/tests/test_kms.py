"""AWS KMS recipients through the Python package (issue #36 item 4), against moto's KMS on
127.0.0.1 (tests/s3/server.py, the server of the S3 tests, from target/s3-venv): ``awskms:`` in
``recipients=``, ``Identities.kms()`` in ``identities=`` (and through a pickle, as Dask hands
them over), both formats, beside an X25519 key; a refusal by KMS is an IoError naming the key,
and nothing is written."""

from __future__ import annotations

import json
import pickle
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT, data, listing

import paracrypt


@pytest.fixture(scope="module")
def moto() -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    python = ROOT / "target" / "s3-venv" / "bin" / "python"
    assert python.exists(), "the KMS tests need moto's server (scripts/test.sh makes target/s3-venv)"
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


def command(server: subprocess.Popen[str], cmd: dict[str, object]) -> object:
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(cmd) + "\n")
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    assert answer["ok"], answer
    return answer["result"]


@pytest.fixture
def kms(moto: tuple[subprocess.Popen[str], dict[str, str]],
        monkeypatch: pytest.MonkeyPatch) -> subprocess.Popen[str]:
    """The server's settings in the environment (the KMS client reads them when first used)."""
    server, env = moto
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_KMS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return server


@pytest.mark.parametrize("fmt", ["paracrypt", "age"])
def test_a_kms_key_and_an_x25519_key_open_one_file(kms: subprocess.Popen[str], tmp_path: Path,
                                                    fmt: str) -> None:
    arn = command(kms, {"op": "kms_key"})["arn"]  # type: ignore[index]
    recipient = paracrypt.keygen(tmp_path / "me.key", kind="x25519")
    assert recipient is not None
    plain = data(200_000)
    sealed = paracrypt.encrypt(plain, recipients=[f"awskms:{arn}", recipient], format=fmt)
    assert paracrypt.decrypt(sealed, identities=paracrypt.Identities.kms()) == plain
    assert paracrypt.decrypt(sealed, identities=tmp_path / "me.key") == plain
    # Through a pickle, as Dask hands identities to its workers.
    again = pickle.loads(pickle.dumps(paracrypt.Identities.kms()))
    assert paracrypt.decrypt(sealed, identities=again) == plain
    info = paracrypt.info(sealed)
    keys = info["kms_keys"] if fmt == "age" else info["secret"]["kms_keys"]
    assert keys == [arn]
    # Files too: decrypt_file with KMS beside a key file.
    src = tmp_path / "sealed"
    src.write_bytes(sealed)
    paracrypt.decrypt_file(src, tmp_path / "out",
                           identities=[tmp_path / "me.key", paracrypt.Identities.kms()])
    assert (tmp_path / "out").read_bytes() == plain


def test_a_refusal_by_kms_is_an_io_error_naming_the_key(kms: subprocess.Popen[str],
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(paracrypt.IoError, match="KMS key alias/none: no such key in region"):
        paracrypt.encrypt(b"x", recipients=["awskms:alias/none"])
    command(kms, {"op": "kms_key", "alias": "alias/py"})
    src = tmp_path / "plain"
    src.write_bytes(data(1000))
    paracrypt.encrypt_file(src, tmp_path / "sealed", recipients=["awskms:alias/py"])
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    with pytest.raises(paracrypt.IoError, match="KMS key alias/py: no such key in region eu-west-3"):
        paracrypt.decrypt_file(tmp_path / "sealed", tmp_path / "out",
                               identities=paracrypt.Identities.kms())
    assert listing(tmp_path) == ["plain", "sealed"]


@pytest.mark.parametrize("fmt", ["paracrypt", "age"])
def test_a_tree_to_a_kms_key_is_updated_by_a_host_that_cannot_open_it(
        kms: subprocess.Popen[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fmt: str) -> None:
    """One run key per run (the CLI's tests count the requests); the update takes what it keeps
    from the host's own record, with no identity and no ``Identities.kms()``."""
    monkeypatch.setenv("PARACRYPT_STATE_DIR", str(tmp_path / "state"))
    arn = command(kms, {"op": "kms_key"})["arn"]  # type: ignore[index]
    src = tmp_path / "in"
    for i in range(12):
        (src / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (src / f"d{i % 3}" / f"f{i}").write_bytes(data(1000 + i))
    enc = tmp_path / "enc"
    paracrypt.encrypt_tree(src, enc, recipients=[f"awskms:{arn}"], format=fmt)
    (src / "d0" / "f0").write_bytes(b"changed since the first run")
    paracrypt.encrypt_tree(src, enc, recipients=[f"awskms:{arn}"], format=fmt, update=True)
    out = tmp_path / "out"
    paracrypt.decrypt_tree(enc, out, identities=paracrypt.Identities.kms())
    for path in src.rglob("*"):
        if path.is_file():
            assert (out / path.relative_to(src)).read_bytes() == path.read_bytes(), path


def test_a_key_arn_naming_another_host_is_refused_in_one_line(
        kms: subprocess.Popen[str]) -> None:
    hostile = "arn:aws:kms:x@attacker.example/:123456789012:key/1"
    with pytest.raises(paracrypt.Error, match="not an AWS KMS key ARN: the region must be"):
        paracrypt.encrypt(b"x", recipients=[f"awskms:{hostile}"])
