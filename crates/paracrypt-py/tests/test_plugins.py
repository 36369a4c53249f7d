"""age plugins through the Python package (issue #36): the test plugin `age-plugin-pctest`
(tests/age-plugin; scripts/test.sh builds it with every workspace binary, beside the CLI) on
PATH, its recipients and identities in every API that takes recipients or identities, both
formats, with `age` as the other client; a failing plugin is an IoError naming it (a wrong PIN a
WrongKeyError), and nothing is written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import BINARY, data, listing

import paracrypt

PLUGIN = BINARY.parent / "age-plugin-pctest"


@pytest.fixture
def pctest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, str]:
    """The test plugin on PATH, none of its switches set, and a new identity of it: (identity
    file, recipient)."""
    assert PLUGIN.is_file(), f"{PLUGIN} not built (cargo build -p paracrypt-test-plugin)"
    monkeypatch.setenv("PATH", f"{PLUGIN.parent}:{os.environ['PATH']}")
    for switch in ["PCTEST_LOG", "PCTEST_FAIL", "PCTEST_ASK", "PARACRYPT_PLUGIN_SECRET"]:
        monkeypatch.delenv(switch, raising=False)
    text = subprocess.run([str(PLUGIN), "kim"], capture_output=True, check=True).stdout.decode()
    recipient = next(line.split(": ")[1] for line in text.splitlines()
                     if line.startswith("# recipient: "))
    (tmp_path / "kim.id").write_text(text)
    return tmp_path / "kim.id", recipient


@pytest.mark.parametrize("fmt,armor", [("paracrypt", False), ("age", False), ("age", True)])
def test_a_plugin_recipient_and_identity_both_ways(pctest: tuple[Path, str], age_bin: str,
                                                   fmt: str, armor: bool) -> None:
    identity, recipient = pctest
    plain = data(100_000)
    sealed = paracrypt.encrypt(plain, recipients=[recipient], format=fmt, armor=armor)
    assert paracrypt.decrypt(sealed, identities=identity) == plain
    assert paracrypt.decrypt(sealed, identities=paracrypt.Identities.load(identity)) == plain
    if fmt == "age":
        got = subprocess.run([age_bin, "-d", "-i", str(identity)], input=sealed,
                             capture_output=True, check=True).stdout
        assert got == plain
        assert paracrypt.info(sealed)["plugin_stanzas"] == ["pctest"]
    else:
        assert paracrypt.info(sealed)["secret"]["plugin_stanzas"] == ["pctest"]


def test_age_encrypts_to_the_plugin_and_python_decrypts(pctest: tuple[Path, str], age_bin: str,
                                                        tmp_path: Path) -> None:
    identity, recipient = pctest
    (tmp_path / "plain").write_bytes(data(70_000, 2))
    subprocess.run([age_bin, "-a", "-r", recipient, "-o", str(tmp_path / "a.age"),
                    str(tmp_path / "plain")], check=True)
    assert paracrypt.decrypt_file(tmp_path / "a.age", tmp_path / "out",
                                  identities=identity) == 70_000
    assert (tmp_path / "out").read_bytes() == data(70_000, 2)


def test_a_pin_from_the_environment_and_a_failing_plugin(pctest: tuple[Path, str],
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    identity, recipient = pctest
    (tmp_path / "plain").write_bytes(b"pin")
    monkeypatch.setenv("PCTEST_ASK", "secret")
    monkeypatch.setenv("PARACRYPT_PLUGIN_SECRET", "1234")
    paracrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed", recipients=[recipient])
    assert paracrypt.decrypt(
        (tmp_path / "sealed").read_bytes(), identities=identity) == b"pin"
    monkeypatch.setenv("PARACRYPT_PLUGIN_SECRET", "9999")
    with pytest.raises(paracrypt.WrongKeyError, match="age-plugin-pctest: identity 1: wrong PIN"):
        paracrypt.decrypt_file(tmp_path / "sealed", tmp_path / "out", identities=identity)
    monkeypatch.delenv("PCTEST_ASK")
    monkeypatch.setenv("PCTEST_FAIL", "crash")
    with pytest.raises(paracrypt.IoError,
                       match="age-plugin-pctest: exited with status 101 while wrapping"):
        paracrypt.encrypt_file(tmp_path / "plain", tmp_path / "sealed2", recipients=[recipient])
    assert listing(tmp_path) == ["kim.id", "plain", "sealed"]


def test_open_ahead_opens_many_files_in_one_plugin_session(pctest: tuple[Path, str],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    identity, recipient = pctest
    paths = []
    for i, (fmt, armor) in enumerate([("paracrypt", False), ("age", False), ("age", True)] * 2):
        (tmp_path / f"p{i}").write_bytes(data(1000 + i, i))
        paths.append(tmp_path / f"s{i}")
        paracrypt.encrypt_file(tmp_path / f"p{i}", paths[-1], recipients=[recipient],
                               format=fmt, armor=armor)
    log = tmp_path / "starts.log"
    monkeypatch.setenv("PCTEST_LOG", str(log))
    ids = paracrypt.Identities.load(identity)
    ids.open_ahead(paths + [tmp_path / "missing", tmp_path / "p0"])
    for i, sealed in enumerate(paths):
        assert paracrypt.decrypt_file(sealed, tmp_path / f"o{i}", identities=ids) == 1000 + i
        assert (tmp_path / f"o{i}").read_bytes() == data(1000 + i, i)
    assert log.read_text() == "identity-v1\n"
    # Rekeying a set (armor cannot be rekeyed): its old identities open ahead, in one session.
    log.unlink()
    binary = [p for i, p in enumerate(paths) if i % 3 != 2]
    ids = paracrypt.Identities.load(identity)
    ids.open_ahead(binary)
    for sealed in binary:
        paracrypt.rekey(sealed, identities=ids, recipients=[recipient])
    assert log.read_text().splitlines().count("identity-v1") == 1
    assert paracrypt.decrypt(binary[-1].read_bytes(), identities=identity) == data(1004, 4)


@pytest.mark.parametrize("kind", ["p256tag", "mlkem768p256tag"])
def test_tagged_recipients_in_recipients_and_their_plugin_identity(
        pctest: tuple[Path, str], tmp_path: Path, kind: str) -> None:
    """age 1.3's tagged recipients (age1tag1…, age1tagpq1…) in `recipients=`, both formats,
    opened by the test plugin's software tag identity; tests/cli/tag.rs checks them against
    typage."""
    text = subprocess.run([str(PLUGIN), f"--{kind}"], capture_output=True,
                          check=True).stdout.decode()
    recipient = text.split("# recipient: ")[1].split()[0]
    (tmp_path / "tag.id").write_text(text)
    for fmt in ["paracrypt", "age"]:
        sealed = paracrypt.encrypt(data(5000), recipients=[recipient], format=fmt)
        assert paracrypt.decrypt(sealed, identities=tmp_path / "tag.id") == data(5000)
    assert paracrypt.info(sealed)["stanzas"][0]["kind"] == kind
    # The post-quantum one stays among its kind, as age1pq1… does.
    if kind == "mlkem768p256tag":
        with pytest.raises(paracrypt.UsageError, match="cannot share a file with classical"):
            paracrypt.encrypt(b"x", recipients=[recipient, pctest[1]])
