"""Signed containers (version 3): ``sign=`` and ``verify_with=`` on every API, both ways with
the CLI (``encrypt --sign``, ``decrypt --verify-with``), :class:`paracrypt.SignatureError`
with nothing left at the destination, and the same bytes at any thread count."""

from __future__ import annotations

import io
import json
import stat
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from conftest import data, listing, same_salt

import paracrypt

Cli = Callable[..., "subprocess.CompletedProcess[bytes]"]


def signing_key(cli: Cli, directory: Path, name: str, kind: str = "ed25519") -> tuple[str, str]:
    """A signing key and its public key, made by ``paracrypt keygen``."""
    private, public = directory / f"{name}.pem", directory / f"{name}.pub"
    cli("keygen", "--kind", kind, "-o", str(private), "--public-out", str(public))
    return str(private), str(public)


def test_signed_round_trip_on_every_api(tmp_path: Path, cli: Cli) -> None:
    private, public = signing_key(cli, tmp_path, "alice")
    key = paracrypt.Key.generate()
    plain = data(3 * 65536 + 17)
    sealed = paracrypt.encrypt(plain, key=key, chunk_size=65536, sign=private)
    assert paracrypt.decrypt(sealed, key=key, verify_with=public) == plain
    # Without verify_with= a signed file still opens (its chunks are checked against the key
    # its header names).
    assert paracrypt.decrypt(sealed, key=key) == plain

    info = paracrypt.info(sealed)
    assert info["version"] == 3
    signer = info["signer"]
    assert signer["scheme"] == "ed25519"
    (tmp_path / "sealed").write_bytes(sealed)
    theirs = json.loads(cli("info", "--json", str(tmp_path / "sealed")).stdout)["signer"]
    assert signer == theirs
    assert paracrypt.info(paracrypt.encrypt(plain, key=key))["signer"] is None

    out = bytearray(len(sealed))
    n = paracrypt.encrypt_into(plain, out, key=key, chunk_size=65536, sign=private)
    assert paracrypt.decrypt(bytes(out[:n]), key=key, verify_with=public) == plain
    back = bytearray(len(sealed))
    n = paracrypt.decrypt_into(sealed, back, key=key, verify_with=public)
    assert bytes(back[:n]) == plain

    (tmp_path / "p").write_bytes(plain)
    paracrypt.encrypt_file(tmp_path / "p", tmp_path / "c", key=key, chunk_size=65536,
                           sign=private)
    paracrypt.decrypt_file(tmp_path / "c", tmp_path / "d", key=key, verify_with=public)
    assert (tmp_path / "d").read_bytes() == plain
    assert paracrypt.decrypt_range(tmp_path / "c", 65530, 20, key=key,
                                   verify_with=public) == plain[65530:65550]

    sink = io.BytesIO()
    with paracrypt.encryptor(sink, key=key, chunk_size=65536, sign=private) as writer:
        writer.write(plain)
    streamed = sink.getvalue()
    with paracrypt.decryptor(io.BytesIO(streamed), key=key, verify_with=public) as reader:
        assert reader.read() == plain


def test_signed_files_cross_with_the_cli(tmp_path: Path, cli: Cli) -> None:
    private, public = signing_key(cli, tmp_path, "alice")
    paracrypt.keygen(tmp_path / "k")
    plain = data(200_000, seed=3)
    (tmp_path / "p").write_bytes(plain)
    paracrypt.encrypt_file(tmp_path / "p", tmp_path / "ours", key=tmp_path / "k",
                           chunk_size=65536, sign=private)
    got = cli("decrypt", "--key-file", str(tmp_path / "k"), "--verify-with", public,
              str(tmp_path / "ours"))
    assert got.stdout == plain
    cli("encrypt", "-q", "--key-file", str(tmp_path / "k"), "--chunk-size", "64KiB", "--sign",
        private, str(tmp_path / "p"), "-o", str(tmp_path / "theirs"))
    paracrypt.decrypt_file(tmp_path / "theirs", tmp_path / "back", key=tmp_path / "k",
                           verify_with=public)
    assert (tmp_path / "back").read_bytes() == plain
    # The CLI refuses our file for another signer, exit status 5.
    _, other = signing_key(cli, tmp_path, "mallory")
    refused = cli("decrypt", "--key-file", str(tmp_path / "k"), "--verify-with", other,
                  str(tmp_path / "ours"), check=False)
    assert refused.returncode == 5


def test_another_signer_or_no_signature_raises_signature_error(tmp_path: Path,
                                                                cli: Cli) -> None:
    private, public = signing_key(cli, tmp_path, "alice")
    _, other = signing_key(cli, tmp_path, "mallory")
    key = paracrypt.Key.generate()
    plain = data(150_000, seed=5)
    signed = paracrypt.encrypt(plain, key=key, chunk_size=65536, sign=private)
    unsigned = paracrypt.encrypt(plain, key=key, chunk_size=65536)
    for sealed, expected in ((signed, other), (unsigned, public)):
        with pytest.raises(paracrypt.SignatureError) as caught:
            paracrypt.decrypt(sealed, key=key, verify_with=expected)
        assert caught.value.kind == "signature"
        assert isinstance(caught.value, paracrypt.DataError)
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "c").write_bytes(sealed)
        with pytest.raises(paracrypt.SignatureError):
            paracrypt.decrypt_file(tmp_path / "out" / "c", tmp_path / "out" / "d", key=key,
                                   verify_with=expected)
        assert listing(tmp_path / "out") == ["c"]
        with pytest.raises(paracrypt.SignatureError):
            paracrypt.decrypt_range(tmp_path / "out" / "c", 0, 10, key=key,
                                    verify_with=expected)
        with pytest.raises(paracrypt.SignatureError):
            paracrypt.decrypt_into(sealed, bytearray(len(sealed)), key=key,
                                   verify_with=expected)
        (tmp_path / "out" / "c").unlink()
        (tmp_path / "out").rmdir()
    # An age file has no signature.
    paracrypt.keygen(tmp_path / "id", kind="x25519")
    ids = paracrypt.Identities.load(tmp_path / "id")
    aged = paracrypt.encrypt(plain, recipients=ids.recipients(), format="age")
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.decrypt(aged, identities=ids, verify_with=public)


def test_an_altered_chunk_signature_raises_signature_error(tmp_path: Path, cli: Cli) -> None:
    private, public = signing_key(cli, tmp_path, "alice")
    key = paracrypt.Key.generate()
    plain = data(150_000, seed=6)
    sealed = bytearray(paracrypt.encrypt(plain, key=key, chunk_size=65536, sign=private))
    # A chunk's last bytes are its signature (docs/FORMAT.md, version 3): flip one of the last
    # chunk's. Its tag still verifies, its signature does not.
    sealed[-1] ^= 1
    (tmp_path / "c").write_bytes(bytes(sealed))
    with pytest.raises(paracrypt.SignatureError) as caught:
        paracrypt.decrypt_file(tmp_path / "c", tmp_path / "d", key=key, verify_with=public,
                               threads=3)
    assert caught.value.chunk == 2
    assert listing(tmp_path) == ["alice.pem", "alice.pub", "c"]


def test_sign_refuses_age_and_bad_key_files(tmp_path: Path, cli: Cli) -> None:
    private, public = signing_key(cli, tmp_path, "alice")
    paracrypt.keygen(tmp_path / "id", kind="x25519")
    ids = paracrypt.Identities.load(tmp_path / "id")
    with pytest.raises(paracrypt.UsageError, match="container"):
        paracrypt.encrypt(b"x", recipients=ids.recipients(), format="age", sign=private)
    key = paracrypt.Key.generate()
    with pytest.raises(paracrypt.UsageError, match="alice.pub"):
        paracrypt.encrypt(b"x", key=key, sign=public)
    with pytest.raises(paracrypt.IoError):
        paracrypt.encrypt(b"x", key=key, sign=tmp_path / "missing")
    # A container key file is not a public key.
    paracrypt.keygen(tmp_path / "k")
    with pytest.raises(paracrypt.UsageError, match="k"):
        paracrypt.decrypt(paracrypt.encrypt(b"x", key=key), key=key, verify_with=tmp_path / "k")

@pytest.mark.parametrize("kind", ["ed25519"])
def test_signed_bytes_are_the_same_at_any_thread_count(tmp_path: Path, cli: Cli,
                                                       kind: str) -> None:
    private, public = signing_key(cli, tmp_path, "alice", kind)
    key = paracrypt.Key.generate()
    plain = data(10 * 65536 + 5, seed=7)
    key.save(tmp_path / "key")
    for threads in (1, 3):
        sealed = paracrypt.encrypt(plain, key=key, chunk_size=65536, sign=private,
                                   threads=threads)
        assert sealed == same_salt(cli, sealed, plain, "--chunk-size", "64KiB", "-k",
                                   str(tmp_path / "key"), "--sign", str(private))
        assert paracrypt.decrypt(sealed, key=key, verify_with=public, threads=3) == plain


@pytest.mark.parametrize("kind", ["ed25519", "ml-dsa-65"])
def test_keygen_signing_keys_cross_with_the_cli(tmp_path: Path, cli: Cli, kind: str) -> None:
    private, public = tmp_path / "alice.pem", tmp_path / "alice.pub"
    printed = paracrypt.keygen(private, kind=kind, public_out=public)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    # What `paracrypt keygen` prints: an ssh-ed25519 line, or an ML-DSA-65 key's fingerprint.
    if kind == "ed25519":
        assert printed is not None and printed.startswith("ssh-ed25519 ")
        assert cli("keygen", "-y", str(private)).stdout.decode().strip() == printed
    else:
        # `keygen -y` gives an ML-DSA-65 key's public key as SPKI PEM: the file written here.
        assert cli("keygen", "-y", str(private)).stdout.decode() == public.read_text()
    paracrypt.keygen(tmp_path / "k")
    plain = data(3 * 65536 + 9, seed=5)
    (tmp_path / "p").write_bytes(plain)

    # A key made in Python signs; the CLI verifies against the public key made in Python.
    paracrypt.encrypt_file(tmp_path / "p", tmp_path / "ours", key=tmp_path / "k",
                           chunk_size=65536, sign=private)
    signer = paracrypt.info(tmp_path / "ours")["signer"]
    assert signer["scheme"] == kind
    if kind == "ml-dsa-65":
        assert signer["fingerprint"] == printed
    got = cli("decrypt", "--key-file", str(tmp_path / "k"), "--verify-with", str(public),
              str(tmp_path / "ours"))
    assert got.stdout == plain

    # The reverse: the CLI signs with the Python-made key, Python verifies.
    cli("encrypt", "-q", "--key-file", str(tmp_path / "k"), "--chunk-size", "65536", "--sign",
        str(private), str(tmp_path / "p"), "-o", str(tmp_path / "theirs"))
    assert paracrypt.decrypt_file(tmp_path / "theirs", tmp_path / "d", key=tmp_path / "k",
                                  verify_with=public) == len(plain)
    assert (tmp_path / "d").read_bytes() == plain

    # Another Python-made key of the same kind is another signer, for both.
    paracrypt.keygen(tmp_path / "bob.pem", kind=kind, public_out=tmp_path / "bob.pub")
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.decrypt_file(tmp_path / "theirs", tmp_path / "e", key=tmp_path / "k",
                               verify_with=tmp_path / "bob.pub")
    refused = cli("decrypt", "--key-file", str(tmp_path / "k"), "--verify-with",
                  str(tmp_path / "bob.pub"), str(tmp_path / "ours"), check=False)
    assert refused.returncode != 0 and refused.stdout == b""
    assert "e" not in listing(tmp_path)


def test_keygen_refuses_unknown_kinds_and_never_overwrites(tmp_path: Path) -> None:
    with pytest.raises(paracrypt.UsageError, match="valid: key, x25519, pq, ed25519, ml-dsa-65"):
        paracrypt.keygen(tmp_path / "x", kind="rsa")
    # public_out= is for signing keys, and never the key itself.
    with pytest.raises(paracrypt.UsageError, match="signing keys"):
        paracrypt.keygen(tmp_path / "x", kind="x25519", public_out=tmp_path / "x.pub")
    with pytest.raises(paracrypt.UsageError, match="the key's own path"):
        paracrypt.keygen(tmp_path / "x", kind="ed25519", public_out=tmp_path / "x")
    assert listing(tmp_path) == []
    # An existing public key file: neither file is written (nor the key left alone).
    (tmp_path / "taken.pub").write_text("mine")
    with pytest.raises(paracrypt.UsageError, match="taken.pub already exists"):
        paracrypt.keygen(tmp_path / "x", kind="ml-dsa-65", public_out=tmp_path / "taken.pub")
    assert listing(tmp_path) == ["taken.pub"]
    assert (tmp_path / "taken.pub").read_text() == "mine"
    # An existing key file: left as it is, no public key written.
    with pytest.raises(paracrypt.UsageError, match="keygen never overwrites a key"):
        paracrypt.keygen(tmp_path / "taken.pub", kind="ed25519", public_out=tmp_path / "y.pub")
    assert listing(tmp_path) == ["taken.pub"]
    # A public key file that cannot be written: neither file is left.
    with pytest.raises(paracrypt.IoError, match="cannot create"):
        paracrypt.keygen(tmp_path / "z", kind="ed25519", public_out=tmp_path / "no" / "z.pub")
    assert listing(tmp_path) == ["taken.pub"]
    # The aliases the CLI takes.
    assert paracrypt.keygen(tmp_path / "m", kind="mldsa65") is not None
    assert paracrypt.info(paracrypt.encrypt(b"x", key=paracrypt.Key.generate(),
                                            sign=tmp_path / "m"))["signer"]["scheme"] == "ml-dsa-65"


def test_a_forged_chunk_never_reaches_the_callers_buffer(tmp_path: Path, cli: Cli) -> None:
    """Whoever holds a signed file's key can seal a chunk of their own whose tag holds; its
    signature fails, and nothing of its plaintext may reach the buffer decrypt_into fills (nor
    decrypt's result, nor a stream's reads) — not even for the moment it takes to tell a
    forgery from damage."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    private, public = signing_key(cli, tmp_path, "alice")
    key = paracrypt.Key.generate()
    chunk = 4096
    sealed = bytearray(paracrypt.encrypt(data(5 * chunk, seed=3), key=key, chunk_size=chunk,
                                         sign=private))
    (tmp_path / "signed.pcr").write_bytes(bytes(sealed))
    about = paracrypt.info(tmp_path / "signed.pcr")
    header = about["header_len"]
    # docs/FORMAT.md, "Key schedule": the payload key from the key file's key and the salt;
    # every chunk's associated data is the header's MAC.
    raw_key = bytes.fromhex(key.to_text().strip().splitlines()[-1])
    payload_key = HKDF(hashes.SHA256(), 32, bytes.fromhex(about["salt"]),
                       b"paracrypt v1 payload aes-256-gcm").derive(raw_key)
    nonce = (1).to_bytes(11, "big") + b"\0"  # STREAM: chunk 1's index, then "not last"
    forged_chunk = AESGCM(payload_key).encrypt(nonce, b"X" * chunk, bytes(sealed[header - 32:header]))
    stride = chunk + 16 + 64  # sealed chunk, tag, Ed25519 signature
    sealed[header + stride:header + stride + chunk + 16] = forged_chunk
    forged = bytes(sealed)
    out = bytearray(len(forged))
    with pytest.raises(paracrypt.SignatureError) as refused:
        paracrypt.decrypt_into(forged, out, key=key, verify_with=public, threads=2)
    assert refused.value.chunk == 1
    assert b"X" * 64 not in out, "the forged plaintext reached the caller's buffer"
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.decrypt(forged, key=key, verify_with=public)
    got = bytearray()
    with pytest.raises(paracrypt.SignatureError):
        with paracrypt.decryptor(io.BytesIO(forged), key=key, verify_with=public) as reader:
            while block := reader.read(1000):
                got += block
    assert b"X" * 64 not in got


def test_verify_file_checks_every_chunk_and_writes_nothing(tmp_path: Path, cli: Cli) -> None:
    """``verify_file``: the CLI's ``verify -k/-i/--password-file FILE`` through the same core
    call — a good container or age file with each kind of secret, a flipped byte, a cut file, a
    wrong key, another signer; nothing written."""
    private, public = signing_key(cli, tmp_path, "alice")
    _, other = signing_key(cli, tmp_path, "mallory")
    key = paracrypt.Key.generate()
    plain = data(5 * 4096 + 77, seed=9)
    d = tmp_path / "files"
    d.mkdir()
    (d / "k.pcr").write_bytes(paracrypt.encrypt(plain, key=key, chunk_size=4096))
    (d / "pw.pcr").write_bytes(paracrypt.encrypt(plain, password="pw"))
    paracrypt.keygen(tmp_path / "id", kind="x25519")
    ids = paracrypt.Identities.load(tmp_path / "id")
    (d / "r.age").write_bytes(paracrypt.encrypt(plain, recipients=ids.recipients(), format="age"))
    (d / "s.pcr").write_bytes(paracrypt.encrypt(plain, key=key, chunk_size=4096, sign=private))
    assert paracrypt.verify_file(d / "k.pcr", key=key) == len(plain)
    assert paracrypt.verify_file(d / "pw.pcr", password="pw") == len(plain)
    assert paracrypt.verify_file(d / "r.age", identities=ids) == len(plain)
    assert paracrypt.verify_file(d / "s.pcr", key=key, verify_with=public) == len(plain)
    assert paracrypt.verify_file(d / "k.pcr", key=key, offset=4096, length=10) == 10
    with pytest.raises(paracrypt.SignatureError):
        paracrypt.verify_file(d / "s.pcr", key=key, verify_with=other)
    good = (d / "k.pcr").read_bytes()
    flipped = bytearray(good)
    flipped[len(good) - 3 * (4096 + 16)] ^= 1
    (d / "flipped.pcr").write_bytes(bytes(flipped))
    with pytest.raises(paracrypt.DataError, match="chunk"):
        paracrypt.verify_file(d / "flipped.pcr", key=key)
    (d / "cut.pcr").write_bytes(good[:-5])
    with pytest.raises(paracrypt.DataError):
        paracrypt.verify_file(d / "cut.pcr", key=key)
    with pytest.raises(paracrypt.DataError):
        paracrypt.verify_file(d / "k.pcr", key=paracrypt.Key.generate())
    with pytest.raises(paracrypt.UsageError):
        paracrypt.verify_file(d / "k.pcr", key=key, offset=0)
    assert listing(d) == ["cut.pcr", "flipped.pcr", "k.pcr", "pw.pcr", "r.age", "s.pcr"]
