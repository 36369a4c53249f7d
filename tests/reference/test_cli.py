"""Fresh files from the `paracrypt` binary, read back by the reference reader.

Every case draws its suite, chunk size, plaintext size, secret (key file or password, given
through --password-file or PARACRYPT_PASSWORD), thread count and input path (file or stdin)
from `random.Random(SEED + case)`. The seed is printed in every failure; rerun one with
`PARACRYPT_READER_SEED=N`. The binary is $PARACRYPT_BIN (default target/debug/paracrypt); a
missing binary fails the test, it never skips.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import subprocess
from pathlib import Path

import paracrypt_reader as reader
import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("PARACRYPT_BIN", ROOT / "target" / "debug" / "paracrypt"))
SEED = int(os.environ.get("PARACRYPT_READER_SEED", "20261123"))
SUITE_NAMES = [s.name for s in reader.SUITES.values()]
CASES_PER_SUITE = 10
DEFAULT_CHUNK = 1 << 20  # what `encrypt` uses without --chunk-size
# 3DES runs at ~15 MB/s, so its files stay small; the others go past several chunks of 64 KiB
# (and, with the default chunk size, past a few MiB).
MAX_SIZE = {"des-ede3-cbc-hmac-sha256": 40_000}


def draw(case: int) -> dict:
    rng = random.Random(SEED + case)
    suite = SUITE_NAMES[case % len(SUITE_NAMES)]
    chunk = rng.choice([16, 32, 48, 64, 80, 1008, 4096, 16 * rng.randint(1, 4096), 65536, None])
    limit = MAX_SIZE.get(suite, 300_000 if chunk else 3 * DEFAULT_CHUNK)
    chunk = chunk or DEFAULT_CHUNK
    default_chunk = chunk == DEFAULT_CHUNK
    # Sizes on the chunk boundaries (0, C-1, C, C+1, k*C, k*C+1) and anywhere.
    k = rng.randint(2, 5)
    candidates = [0, chunk - 1, chunk, chunk + 1, k * chunk, k * chunk + 1, rng.randint(0, limit)]
    size = rng.choice([n for n in candidates if n <= limit] or [0])
    return {
        "suite": suite,
        "chunk": chunk,
        "default_chunk": default_chunk,
        "size": size,
        "secret": rng.choice(["key-file", "password-file", "password-env"]),
        "threads": rng.randint(1, 4),
        "stdin": rng.random() < 0.3,
        "data_seed": rng.getrandbits(64),
    }


def paracrypt(*args: str, env: dict | None = None, stdin: bytes | None = None) -> bytes:
    assert BINARY.is_file(), f"{BINARY} not built (cargo build, or set PARACRYPT_BIN)"
    result = subprocess.run(
        [str(BINARY), *args],
        input=stdin,
        check=False,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    assert result.returncode == 0, f"paracrypt {' '.join(args)}: {result.stderr.decode()}"
    return result.stdout


@pytest.mark.parametrize("case", range(CASES_PER_SUITE * len(SUITE_NAMES)))
def test_reader_decrypts_what_the_cli_wrote(case: int, tmp_path: Path) -> None:
    p = draw(case)
    where = f"seed {SEED + case} (PARACRYPT_READER_SEED={SEED}, case {case}): {p}"
    plaintext = random.Random(p["data_seed"]).randbytes(p["size"])
    (tmp_path / "plain").write_bytes(plaintext)
    sealed = tmp_path / "sealed.pcr"
    args = ["encrypt", "-q", "-c", p["suite"], "-j", str(p["threads"]), "-o", str(sealed)]
    if not p["default_chunk"]:
        args += ["--chunk-size", str(p["chunk"])]
    env = {}
    password = f"pass {p['data_seed']:x} ünïcode"
    if p["secret"] == "key-file":
        paracrypt("keygen", "-o", str(tmp_path / "key"))
        args += ["-k", str(tmp_path / "key")]
        secret = reader.parse_key_file((tmp_path / "key").read_text())
    elif p["secret"] == "password-file":
        (tmp_path / "password").write_text(password + "\n")
        args += ["--password-file", str(tmp_path / "password")]
        secret = reader.Password(password.encode())
    else:
        env["PARACRYPT_PASSWORD"] = password
        secret = reader.Password(password.encode())
    if p["stdin"]:
        paracrypt(*args, "-", env=env, stdin=plaintext)
    else:
        paracrypt(*args, str(tmp_path / "plain"), env=env)

    data = sealed.read_bytes()
    header = reader.parse_header(data)
    assert (header.suite.name, header.chunk_size) == (p["suite"], p["chunk"]), where
    kdf = reader.KDF_KEY_FILE if p["secret"] == "key-file" else reader.KDF_ARGON2ID
    assert header.kdf == kdf, where
    chunks = max(1, -(-p["size"] // p["chunk"]))
    last = p["size"] - (chunks - 1) * p["chunk"]
    cbc = 8 - last % 8 if p["suite"] in reader.CBC_SUITES else 0
    expected_len = (
        reader.HEADER_LEN
        + (chunks - 1) * header.suite.sealed_len(p["chunk"])
        + last
        + cbc
        + header.suite.tag_len
    )
    assert len(data) == expected_len, where
    try:
        out = b"".join(reader.decrypt(io.BytesIO(data), secret))
    except reader.FormatError as e:
        pytest.fail(f"{where}: {e.kind}: {e.message}")
    assert hashlib.sha256(out).digest() == hashlib.sha256(plaintext).digest(), where


def test_reader_command_line(tmp_path: Path) -> None:
    """The reader's own command line reads a key-file container written by the CLI."""
    plaintext = random.Random(SEED).randbytes(100_000)
    (tmp_path / "plain").write_bytes(plaintext)
    paracrypt("keygen", "-o", str(tmp_path / "key"))
    paracrypt(
        "encrypt",
        "-q",
        "-k",
        str(tmp_path / "key"),
        "--chunk-size",
        "4KiB",
        str(tmp_path / "plain"),
        "-o",
        str(tmp_path / "sealed"),
    )
    assert (
        reader.main(
            ["-k", str(tmp_path / "key"), str(tmp_path / "sealed"), "-o", str(tmp_path / "out")]
        )
        == 0
    )
    assert (tmp_path / "out").read_bytes() == plaintext


def identity_kinds(tmp_path: Path) -> list:
    """(kind, recipient arguments of `paracrypt encrypt`, identity file) for every recipient
    kind: an X25519 identity from `paracrypt keygen`, an RSA key from `paracrypt rsa keygen`
    (its public key in PEM through -R), and an ssh-ed25519 key from ssh-keygen."""
    x25519 = tmp_path / "x.key"
    paracrypt("keygen", "--kind", "x25519", "-o", str(x25519))
    x_pub = paracrypt("keygen", "-y", str(x25519)).decode().strip()
    rsa, rsa_pub = tmp_path / "rsa.pem", tmp_path / "rsa.pub.pem"
    paracrypt("rsa", "keygen", "--bits", "2048", "-o", str(rsa), "--public-out", str(rsa_pub))
    ed = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ed)], check=True)
    ed_pub = (tmp_path / "id_ed25519.pub").read_text().strip()
    return [
        ("X25519", ["-r", x_pub], x25519),
        ("RSA PEM", ["-R", str(rsa_pub)], rsa),
        ("ssh-ed25519", ["-r", ed_pub], ed),
    ]


def test_reader_decrypts_files_to_recipients(tmp_path: Path) -> None:
    """Version 2: the CLI encrypts to every recipient kind, and to all three at once; the
    reader's own command line opens each with its identity."""
    kinds = identity_kinds(tmp_path)
    rng = random.Random(SEED)
    plaintext = rng.randbytes(3 * 4096 + 17)
    (tmp_path / "plain").write_bytes(plaintext)
    everyone = [arg for _, args, _ in kinds for arg in args]
    for kind, args, identity in kinds:
        for to, name in [(args, kind), (everyone, "all three")]:
            sealed = tmp_path / "sealed.pcr"
            sealed.unlink(missing_ok=True)
            plain = str(tmp_path / "plain")
            paracrypt("encrypt", "-q", "--chunk-size", "4KiB", *to, plain, "-o", str(sealed))
            assert reader.parse_header(sealed.read_bytes()).kdf == reader.KDF_RECIPIENTS
            out = tmp_path / "out"
            out.unlink(missing_ok=True)
            assert reader.main(["-i", str(identity), str(sealed), "-o", str(out)]) == 0, name
            assert out.read_bytes() == plaintext, f"{kind}, to {name}"


def test_reader_decrypts_files_to_post_quantum_recipients(tmp_path: Path) -> None:
    """A post-quantum identity from `paracrypt keygen --kind pq` (its 1959-character age1pq1…
    recipient, a stanza argument of 1494 base64 characters in the recipient block): the CLI
    encrypts to it, alone and beside a second post-quantum recipient, and the reader opens the
    file with it. A post-quantum recipient beside a classical one is refused (exit 2)."""
    keys = []
    for name in ["pq1.key", "pq2.key"]:
        paracrypt("keygen", "--kind", "pq", "-o", str(tmp_path / name))
        public = paracrypt("keygen", "-y", str(tmp_path / name)).decode().strip()
        assert public.startswith("age1pq1") and len(public) == 1959
        keys.append((tmp_path / name, public))
    plaintext = random.Random(SEED).randbytes(2 * 4096 + 5)
    plain = tmp_path / "plain"
    plain.write_bytes(plaintext)
    for to in [["-r", keys[0][1]], ["-r", keys[1][1], "-r", keys[0][1]]]:
        sealed = tmp_path / "sealed.pcr"
        sealed.unlink(missing_ok=True)
        paracrypt("encrypt", "-q", "--chunk-size", "4KiB", *to, str(plain), "-o", str(sealed))
        header = reader.parse_header(sealed.read_bytes())
        assert header.kdf == reader.KDF_RECIPIENTS
        out = tmp_path / "out"
        out.unlink(missing_ok=True)
        assert reader.main(["-i", str(keys[0][0]), str(sealed), "-o", str(out)]) == 0
        assert out.read_bytes() == plaintext
    x25519 = tmp_path / "x.key"
    paracrypt("keygen", "--kind", "x25519", "-o", str(x25519))
    x_pub = paracrypt("keygen", "-y", str(x25519)).decode().strip()
    mixed = subprocess.run(
        [str(BINARY), "encrypt", "-q", "-r", keys[0][1], "-r", x_pub, str(plain), "-o",
         str(tmp_path / "mixed.pcr")],
        capture_output=True,
        check=False,
    )
    assert mixed.returncode == 2, mixed.stderr
    assert b"post-quantum" in mixed.stderr
    assert not (tmp_path / "mixed.pcr").exists()


def test_reader_decrypts_a_rekeyed_container(tmp_path: Path) -> None:
    """`paracrypt rekey` gives a container a new header (kdf 3: a binding stanza, then the new
    recipients) and keeps its chunks: the reader opens it with the new identity only, twice
    rekeyed, and its chunks are the original file's bytes."""
    keys = []
    for name in ["a.key", "b.key", "c.key"]:
        paracrypt("keygen", "--kind", "x25519", "-o", str(tmp_path / name))
        keys.append((tmp_path / name, paracrypt("keygen", "-y", str(tmp_path / name)).decode().strip()))
    plaintext = random.Random(SEED).randbytes(3 * 4096 + 7)
    plain = tmp_path / "plain"
    plain.write_bytes(plaintext)
    sealed = tmp_path / "sealed.pcr"
    paracrypt("encrypt", "-q", "--chunk-size", "4KiB", "-r", keys[0][1], str(plain), "-o", str(sealed))
    once, twice = tmp_path / "once.pcr", tmp_path / "twice.pcr"
    paracrypt("rekey", "-i", str(keys[0][0]), "-r", keys[1][1], str(sealed), "-o", str(once))
    paracrypt("rekey", "-i", str(keys[1][0]), "-r", keys[2][1], str(once), "-o", str(twice))
    original = reader.parse_header(sealed.read_bytes())
    for path, key in [(once, keys[1][0]), (twice, keys[2][0])]:
        header = reader.parse_header(path.read_bytes())
        assert header.kdf == reader.KDF_REKEYED
        assert header.binding == original.mac
        assert path.read_bytes()[len(header.raw):] == sealed.read_bytes()[len(original.raw):]
        out = tmp_path / "out"
        out.unlink(missing_ok=True)
        assert reader.main(["-i", str(key), str(path), "-o", str(out)]) == 0
        assert out.read_bytes() == plaintext
        out.unlink()
        assert reader.main(["-i", str(keys[0][0]), str(path), "-o", str(out)]) != 0
