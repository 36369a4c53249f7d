"""A second, independent reader of the paracrypt container format (docs/FORMAT.md).

Written from docs/FORMAT.md alone, on another crypto library (pyca/cryptography, which wraps
OpenSSL), to prove that the document is enough to read what paracrypt writes. It never
encrypts: every byte it checks was written by paracrypt (the test vectors and the CLI).

    python paracrypt_reader.py --key-file my.key big.tar.pcr -o big.tar
    python paracrypt_reader.py -i me.key to-me.pcr -o plain
    PARACRYPT_PASSWORD=... python paracrypt_reader.py big.tar.pcr > big.tar

The structure follows the document: `parse_header` (header checks 1-5, no secret needed),
`open_header` (checks 6-8 and the key schedule), `open_chunks` (the chunk framing of every
suite and the failure rules of "What a reader reports"). The header is one function on purpose:
when the format's header changes, that is where the reader changes. Version 2 (files encrypted
to recipients) adds the recipient block; its stanzas are read and opened in `recipients.py`.
Version 3 (signed files) adds the signer block, and `SignedChunkOpener` checks each chunk's
signature (schemes from `paracrypt_sig.py`) before it opens the chunk; `--verify-with PUB`
requires the signer:

    python paracrypt_reader.py -k my.key --verify-with me.pub big.tar.spcr -o big.tar
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.decrepit.ciphers.algorithms import ARC4, Blowfish, TripleDES
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

import paracrypt_sig
import recipients

# ---------------------------------------------------------------------------------------------
# Errors: the two kinds a test vector's `expect:` line names, each with its exact message.

HEADER_FAILURE = "header failure"
PAYLOAD_FAILURE = "payload failure"
# Signed files (version 3): the signer is not the expected one, or a chunk's tag holds while its
# signature does not.
SIGNATURE_FAILURE = "signature failure"


class FormatError(Exception):
    """A file the format rejects: `kind` is the vector's `expect:` kind, `message` its
    `error:` line; `chunk` is the failing chunk's index for payload failures."""

    def __init__(self, kind: str, message: str, chunk: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.chunk = chunk


def header_error(message: str) -> FormatError:
    return FormatError(HEADER_FAILURE, message)


def chunk_error(index: int, message: str) -> FormatError:
    return FormatError(PAYLOAD_FAILURE, message, index)


def chunk_auth_error(index: int) -> FormatError:
    return chunk_error(
        index, f"chunk {index} failed authentication (damaged, reordered or from another file)"
    )


# ---------------------------------------------------------------------------------------------
# Header (FORMAT.md "Header").

MAGIC = b"PARACRYPT"
VERSION = 1
VERSION_RECIPIENTS = 2
VERSION_SIGNED = 3
HEADER_LEN = 116  # version 1; version 2 is 116 + R; version 3 is 119 + R + P
MAX_PUBLIC_KEY = 4096
MAX_FRAMING = 4096
SIGNED_CHUNK_CONTEXT = b"paracrypt-signed-chunk-v1"
MAX_RECIPIENT_BLOCK = 1 << 20
MAX_CHUNK = 1 << 30
MAX_M_COST_KIB = 4 * 1024 * 1024  # 4 GiB in KiB
MAX_T_COST = 64
MAX_P_COST = 64
KDF_KEY_FILE = 0
KDF_ARGON2ID = 1
KDF_RECIPIENTS = 2
# Recipients, in a rekeyed header: the first stanza carries what the chunks are bound to.
KDF_REKEYED = 3
BINDING_TAG = "paracrypt-bound"


@dataclass(frozen=True)
class Suite:
    """One row of FORMAT.md's suite table."""

    id: int
    name: str
    enc_len: int  # payload bytes before the MAC key (the whole payload for AEAD suites)
    aead: bool

    @property
    def payload_len(self) -> int:
        return self.enc_len + (0 if self.aead else 32)

    @property
    def tag_len(self) -> int:
        return 16 if self.aead else 32

    def sealed_len(self, chunk_size: int) -> int:
        """`S`, the sealed length of a full chunk."""
        padding = 8 if self.name in CBC_SUITES else 0
        return chunk_size + padding + self.tag_len


CBC_SUITES = {"des-ede3-cbc-hmac-sha256", "bf-cbc-hmac-sha256"}
SUITES = {
    s.id: s
    for s in [
        Suite(1, "aes-256-gcm", 32, True),
        Suite(2, "aes-128-gcm", 16, True),
        Suite(3, "chacha20-poly1305", 32, True),
        Suite(16, "aes-256-ctr-hmac-sha256", 32, False),
        Suite(17, "des-ede3-cbc-hmac-sha256", 24, False),
        Suite(18, "bf-cbc-hmac-sha256", 16, False),
        Suite(19, "rc4-hmac-sha256", 32, False),
    ]
}


@dataclass(frozen=True)
class Header:
    """A header that passed checks 1-5 (the ones that need no secret)."""

    raw: bytes
    suite: Suite
    kdf: int
    chunk_size: int
    m_cost: int
    t_cost: int
    p_cost: int
    salt: bytes
    key_check: bytes
    mac: bytes
    stanzas: list  # version 2: the recipient block's stanzas
    binding: bytes  # what the chunks authenticate: the header MAC, or a rekeyed header's binding
    signer: tuple | None = None  # version 3: (scheme id, public key, public key field)
    sig_len: int = 0  # version 3: the signature every chunk carries


def signer_at(raw: bytes) -> int | None:
    """Where a version 3 header's signer block starts: after the recipient block (kdf 2 and 3
    only). None until `raw` says it."""
    if len(raw) < 12:
        return None
    if raw[11] not in (KDF_RECIPIENTS, KDF_REKEYED):
        return 76
    if len(raw) < 20:
        return None
    (block,) = struct.unpack(">I", raw[16:20])
    if not 1 <= block <= MAX_RECIPIENT_BLOCK:
        raise header_error("header damaged: invalid recipient block length")
    return 76 + block


def header_length(raw: bytes) -> int | None:
    """The header's length once the first bytes say it: 116 for version 1; 116 + R for version
    2, R being the block length at bytes 16..20 (checked: 1 to 1 MiB)."""
    if len(raw) <= len(MAGIC):
        return None
    if raw[len(MAGIC)] == VERSION_SIGNED:
        at = signer_at(raw)
        if at is None:
            return None
        if len(raw) < at + 3:
            return at + 3  # a lower bound: read that much, and ask again
        (key_len,) = struct.unpack(">H", raw[at + 1 : at + 3])
        if not 1 <= key_len <= MAX_PUBLIC_KEY:
            raise header_error("header damaged: invalid signer")
        return at + 3 + key_len + 40
    if raw[len(MAGIC)] != VERSION_RECIPIENTS:
        return HEADER_LEN
    if len(raw) < 20:
        return None
    (block,) = struct.unpack(">I", raw[16:20])
    if not 1 <= block <= MAX_RECIPIENT_BLOCK:
        raise header_error("header damaged: invalid recipient block length")
    return HEADER_LEN + block


def parse_header(raw: bytes) -> Header:
    """FORMAT.md's header checks 1-5, in order, on the file's first bytes (at least the whole
    header when the file has one): everything that needs no secret."""
    if raw[: len(MAGIC)] != MAGIC:
        raise header_error("not a paracrypt file (no PARACRYPT header)")
    if len(raw) > len(MAGIC) and raw[len(MAGIC)] not in (
        VERSION,
        VERSION_RECIPIENTS,
        VERSION_SIGNED,
    ):
        raise header_error(
            f"unsupported paracrypt format version {raw[len(MAGIC)]} "
            f"(this build reads versions {VERSION} to {VERSION_SIGNED})"
        )
    length = header_length(raw)
    if length is None or len(raw) < length:
        raise header_error("header damaged: file shorter than a header")
    raw = raw[:length]
    version = raw[len(MAGIC)]
    checksum_at = length - 40
    if hashlib.sha256(raw[0:checksum_at]).digest()[:8] != raw[checksum_at : checksum_at + 8]:
        raise header_error("header damaged: checksum mismatch")
    suite_id, kdf = raw[10], raw[11]
    chunk_size, m_cost, t_cost, p_cost = struct.unpack(">IIII", raw[12:28])
    suite = SUITES.get(suite_id)
    if suite is None:
        raise header_error("header damaged: invalid suite")
    if chunk_size % 16 != 0 or not 16 <= chunk_size <= MAX_CHUNK:
        raise header_error("header damaged: invalid chunk size")
    stanzas = []
    binding = raw[length - 32 : length]
    # Version 3 is version 1 or 2 (by the kdf) with a signer block before the checksum.
    block_end = checksum_at
    layout = version
    if version == VERSION_SIGNED:
        block_end = signer_at(raw)
        layout = VERSION if block_end == 76 else VERSION_RECIPIENTS
    if layout == VERSION_RECIPIENTS:
        if kdf not in (KDF_RECIPIENTS, KDF_REKEYED) or raw[20:28] != bytes(8):
            raise header_error("header damaged: invalid key derivation")
        try:
            stanzas = recipients.parse_stanzas(raw[76:block_end])
            if kdf == KDF_REKEYED:
                first = stanzas.pop(0)
                if first.type != BINDING_TAG or len(first.args) != 1 or first.body or not stanzas:
                    raise ValueError("no binding stanza")
                binding = recipients._b64(first.args[0])
                if len(binding) != 32:
                    raise ValueError("binding length")
            if any(stanza.type == BINDING_TAG for stanza in stanzas):
                raise ValueError("a binding stanza after the first")
        except (ValueError, UnicodeDecodeError):
            raise header_error("header damaged: invalid recipient block") from None
    else:
        if kdf == KDF_KEY_FILE and (m_cost, t_cost, p_cost) != (0, 0, 0) or kdf > KDF_ARGON2ID:
            raise header_error("header damaged: invalid key derivation")
        if kdf == KDF_ARGON2ID and not (
            1 <= t_cost <= MAX_T_COST
            and 1 <= p_cost <= MAX_P_COST
            and 8 * p_cost <= m_cost <= MAX_M_COST_KIB
        ):
            raise header_error("header damaged: invalid Argon2 parameters")
    signer, sig_len = None, 0
    if version == VERSION_SIGNED:
        scheme, field = raw[block_end], raw[block_end + 3 : checksum_at]
        try:
            key = paracrypt_sig.key_from_field(scheme, field)
        except (ValueError, TypeError, Exception):  # noqa: BLE001 - any parse failure
            raise header_error("header damaged: invalid signer") from None
        sig_len = paracrypt_sig.signature_len(scheme, key)
        if sig_len + 40 > MAX_FRAMING:
            raise header_error("header damaged: invalid signer")
        signer = (scheme, key, field)
    return Header(
        raw=raw,
        suite=suite,
        kdf=kdf,
        chunk_size=chunk_size,
        m_cost=m_cost,
        t_cost=t_cost,
        p_cost=p_cost,
        salt=raw[28:60],
        key_check=raw[60:76],
        mac=raw[length - 32 : length],
        stanzas=stanzas,
        binding=binding,
        signer=signer,
        sig_len=sig_len,
    )


# ---------------------------------------------------------------------------------------------
# Secrets and the key schedule (FORMAT.md "Key schedule").


@dataclass(frozen=True)
class Key:
    """A 32-byte key (kdf = 0)."""

    bytes: bytes


@dataclass(frozen=True)
class Password:
    """A password (kdf = 1), as the bytes that go into Argon2id."""

    bytes: bytes


@dataclass(frozen=True)
class Identities:
    """Identities (version 2): the private keys an identity file holds."""

    identities: list


Secret = Key | Password | Identities


def parse_key_file(text: str) -> Key:
    """A key file: lines are trimmed; blank lines and `#` lines are ignored; exactly one line
    of 64 hex digits remains."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if len(lines) != 1 or len(lines[0]) != 64:
        raise ValueError("a key file holds exactly one line of 64 hex digits")
    return Key(bytes.fromhex(lines[0]))


def hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    """RFC 5869 section 2.2: PRK = HMAC-Hash(salt, IKM)."""
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    return HKDFExpand(algorithm=hashes.SHA256(), length=length, info=info).derive(prk)


@dataclass(frozen=True)
class FileKeys:
    """What a header that passed all eight checks yields: its fields and the payload key."""

    header: Header
    payload: bytes


def open_header(header: Header, secret: Secret) -> FileKeys:
    """Header checks 6-8: the secret's kind, the key check, the header MAC (and the key
    schedule they need)."""
    if header.kdf in (KDF_RECIPIENTS, KDF_REKEYED):
        if not isinstance(secret, Identities):
            raise header_error(
                "this file was encrypted with public keys (decrypt it with an identity)"
            )
        ikm = recipients.unwrap(secret.identities, header.stanzas)
        if ikm is None:
            n = sum(1 for stanza in header.stanzas if not stanza.type.endswith("-grease"))
            raise header_error(
                f"no identity matches this file; it was encrypted to {n} recipient"
                + ("" if n == 1 else "s")
            )
    elif header.kdf == KDF_KEY_FILE:
        if not isinstance(secret, Key):
            raise header_error("this file was encrypted with a key file")
        ikm = secret.bytes
    else:
        if not isinstance(secret, Password):
            raise header_error("this file was encrypted with a password")
        ikm = Argon2id(
            salt=header.salt,
            length=32,
            iterations=header.t_cost,
            lanes=header.p_cost,
            memory_cost=header.m_cost,
        ).derive(secret.bytes)
    prk = hkdf_extract(header.salt, ikm)
    key_check = hkdf_expand(prk, b"paracrypt v1 key check", 16)
    if not hmac.compare_digest(key_check, header.key_check):
        raise header_error("wrong key or password")
    header_key = hkdf_expand(prk, b"paracrypt v1 header mac", 32)
    mac = hmac.new(header_key, header.raw[0 : len(header.raw) - 32], hashlib.sha256).digest()
    if not hmac.compare_digest(mac, header.mac):
        raise header_error("header damaged: authentication failed")
    info = b"paracrypt v1 payload " + header.suite.name.encode("ascii")
    payload = hkdf_expand(prk, info, header.suite.payload_len)
    return FileKeys(header, payload)


# ---------------------------------------------------------------------------------------------
# Signers (FORMAT.md "Version 3: signed files").


def fingerprint(scheme: int, field: bytes) -> str:
    """`SCHEME SHA256:…` as paracrypt prints a key: for Ed25519 the SHA-256 of the OpenSSH
    wire encoding, for the others of the public key field; unpadded base64."""
    import base64

    names = {1: "ed25519", 2: "ecdsa-p256", 3: "rsa-pkcs1v15", 4: "rsa-pss", 5: "ml-dsa-65"}
    if scheme == 1:
        wire = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + field
        digest = hashlib.sha256(wire).digest()
    else:
        digest = hashlib.sha256(field).digest()
    return f"{names[scheme]} SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def check_signer(header: Header, expected) -> None:
    """With a public key to expect (`--verify-with`): the header must name it."""
    schemes, field = paracrypt_sig.key_field(expected)
    want = fingerprint(min(schemes), field)
    if header.signer is None:
        raise FormatError(
            SIGNATURE_FAILURE, f"the file is not signed (a signature by {want} was required)"
        )
    scheme, _, signer_field = header.signer
    if scheme not in schemes or signer_field != field:
        raise FormatError(
            SIGNATURE_FAILURE,
            f"signed by another key ({fingerprint(scheme, signer_field)}), "
            f"not by the given public key ({want})",
        )


def chunk_statement(
    scheme: int, field: bytes, binding: bytes, index: int, last: bool, sealed: bytes
) -> bytes:
    return (
        SIGNED_CHUNK_CONTEXT
        + bytes([0, scheme])
        + hashlib.sha256(field).digest()
        + binding
        + index.to_bytes(8, "big")
        + bytes([last])
        + paracrypt_sig.leaf(index, sealed)
    )


# ---------------------------------------------------------------------------------------------
# Chunks (FORMAT.md "Chunks").


class ChunkOpener:
    """Opens one sealed chunk at a time: `open(i, last, sealed)` returns the plaintext or None
    when the chunk does not authenticate with that (index, flag)."""

    def __init__(self, keys: FileKeys):
        header = keys.header
        self.suite = header.suite
        self.chunk_size = header.chunk_size
        self.aad = header.binding
        if self.suite.aead:
            cls = ChaCha20Poly1305 if self.suite.name == "chacha20-poly1305" else AESGCM
            self.aead = cls(keys.payload)
        else:
            self.enc_key = keys.payload[: self.suite.enc_len]
            self.mac_key = keys.payload[-32:]

    def open(self, index: int, last: bool, sealed: bytes) -> bytes | None:
        return self.open_sealed(index, last, sealed)

    def open_sealed(self, index: int, last: bool, sealed: bytes) -> bytes | None:
        if self.suite.aead:
            nonce = index.to_bytes(11, "big") + bytes([last])
            try:
                return self.aead.decrypt(nonce, sealed, self.aad)
            except InvalidTag:
                return None
        ciphertext, tag = sealed[:-32], sealed[-32:]
        expected = hmac.new(
            self.mac_key,
            self.aad + index.to_bytes(8, "big") + bytes([last]) + ciphertext,
            hashlib.sha256,
        ).digest()
        if not hmac.compare_digest(expected, tag):
            return None
        return self.decrypt(index, ciphertext)

    def decrypt(self, index: int, ciphertext: bytes) -> bytes | None:
        """The encrypt-then-MAC suites' `Encrypt_i`, inverted (the tag already verified)."""
        name = self.suite.name
        if name == "aes-256-ctr-hmac-sha256":
            counter = (index * self.chunk_size // 16) % (1 << 128)
            cipher = Cipher(algorithms.AES(self.enc_key), modes.CTR(counter.to_bytes(16, "big")))
            return cipher.decryptor().update(ciphertext)
        if name in CBC_SUITES:
            algorithm = TripleDES if name.startswith("des") else Blowfish
            ecb = Cipher(algorithm(self.enc_key), modes.ECB()).encryptor()
            iv = ecb.update(index.to_bytes(8, "big")) + ecb.finalize()
            dec = Cipher(algorithm(self.enc_key), modes.CBC(iv)).decryptor()
            padded = dec.update(ciphertext) + dec.finalize()
            pad = padded[-1] if padded else 0
            if not 1 <= pad <= 8 or padded[-pad:] != bytes([pad]) * pad:
                return None  # no writer pads like this: the chunk fails like a damaged one
            return padded[:-pad]
        if name == "rc4-hmac-sha256":
            info = b"paracrypt v1 rc4 chunk " + index.to_bytes(8, "big")
            chunk_key = hkdf_expand(self.enc_key, info, 32)
            rc4 = Cipher(ARC4(chunk_key), mode=None).decryptor()
            rc4.update(bytes(3072))
            return rc4.update(ciphertext)
        raise AssertionError(f"no decryption for suite {name}")


class SignedChunkOpener(ChunkOpener):
    """A signed file's chunks: the signature (the last `G` bytes) is checked before the sealed
    chunk is opened; a chunk whose signature fails while its tag holds is a signature
    failure."""

    def __init__(self, keys: FileKeys):
        super().__init__(keys)
        self.scheme, self.key, self.field = keys.header.signer
        self.sig_len = keys.header.sig_len

    def open(self, index: int, last: bool, chunk: bytes) -> bytes | None:
        if len(chunk) < self.sig_len:
            return None
        sealed, signature = chunk[: len(chunk) - self.sig_len], chunk[len(chunk) - self.sig_len :]
        statement = chunk_statement(self.scheme, self.field, self.aad, index, last, sealed)
        if paracrypt_sig.verifies(self.scheme, self.key, statement, signature):
            return self.open_sealed(index, last, sealed)
        if self.open_sealed(index, last, sealed) is not None:
            raise FormatError(
                SIGNATURE_FAILURE,
                f"chunk {index} is not signed by the file's signer (its signature was altered, "
                "or someone who holds the file key rewrote it)",
                index,
            )
        return None


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    """Up to n bytes: fewer only at the end of the stream."""
    parts, want = [], n
    while want > 0:
        part = stream.read(want)
        if not part:
            break
        parts.append(part)
        want -= len(part)
    return b"".join(parts)


# FORMAT.md lets a reader bound the search for an early end; this is paracrypt's bound.
END_SEARCH_BUDGET = 256 << 20
# In a signed file each try checks a signature too: paracrypt counts it as this many bytes.
SIGNED_SEARCH_COST = 128 << 10


def ends_inside(
    opener: "ChunkOpener", index: int, sealed: bytes, tag_len: int, cost: int = 0
) -> bool:
    """Whether a shorter prefix of a failed chunk (still holding a tag) authenticates as the
    last chunk: bytes were appended after a short last chunk. Longest prefixes first, within
    the budget of bytes authenticated."""
    budget = END_SEARCH_BUDGET
    for prefix in range(len(sealed) - 1, tag_len - 1, -1):
        if prefix + cost > budget:
            return False
        budget -= prefix + cost
        if opener.open(index, True, sealed[:prefix]) is not None:
            return True
    return False


def open_chunks(keys: FileKeys, stream: BinaryIO) -> Iterator[bytes]:
    """Verified plaintext chunks, in order, reading the sealed chunks that follow the header.

    Streams with one chunk of look-ahead (to know which chunk is physically last), so memory
    holds two chunks whatever the file size. Stops with a FormatError at the first failure,
    which is the lowest failing chunk.
    """
    signed = keys.header.signer is not None
    opener = SignedChunkOpener(keys) if signed else ChunkOpener(keys)
    chunk_size = keys.header.chunk_size
    size = keys.header.suite.sealed_len(chunk_size) + keys.header.sig_len
    tag_len = keys.header.suite.tag_len + keys.header.sig_len
    cost = SIGNED_SEARCH_COST if signed else 0
    current = _read_exact(stream, size)
    if not current:
        raise header_error("file truncated after the header (no chunks)")
    index = 0
    while True:
        following = _read_exact(stream, size) if len(current) == size else b""
        last = not following
        if len(current) < tag_len:
            raise chunk_error(index, f"input truncated inside chunk {index}")
        plaintext = opener.open(index, last, current)
        if plaintext is None:
            if opener.open(index, not last, current) is not None:
                if last:
                    raise chunk_error(index, f"file truncated after chunk {index}")
                raise chunk_error(index, f"trailing data after the last chunk (chunk {index})")
            if ends_inside(opener, index, current, tag_len, cost):
                raise chunk_error(index, f"trailing data after the last chunk (chunk {index})")
            raise chunk_auth_error(index)
        # Lengths no writer produces: every plaintext has exactly one encoding.
        if last:
            canonical = 0 < len(plaintext) <= chunk_size or (index == 0 and not plaintext)
        else:
            canonical = len(plaintext) == chunk_size
        if not canonical:
            raise chunk_auth_error(index)
        yield plaintext
        if last:
            return
        index, current = index + 1, following


def decrypt(stream: BinaryIO, secret: Secret, verify_with=None) -> Iterator[bytes]:
    """The whole reader: header checks 1-8, the signer when one is expected (`verify_with`, a
    public key of pyca/cryptography), then the verified chunks in order."""
    raw = _read_exact(stream, HEADER_LEN)
    length = header_length(raw)
    while length is not None and length > len(raw):
        more = _read_exact(stream, length - len(raw))
        if not more:
            break
        raw += more
        length = header_length(raw)
    header = parse_header(raw)
    keys = open_header(header, secret)
    if verify_with is not None:
        check_signer(header, verify_with)
    return open_chunks(keys, stream)


# ---------------------------------------------------------------------------------------------
# Command line.


def _secret_from_args(args: argparse.Namespace) -> Secret:
    if args.identity:
        found = []
        for path in args.identity:
            with open(path, "rb") as f:
                found += recipients.load_identities(f.read())
        return Identities(found)
    if args.key_file:
        with open(args.key_file, encoding="utf-8") as f:
            return parse_key_file(f.read())
    if args.password_file:
        with open(args.password_file, "rb") as f:
            lines = f.read().splitlines()
        return Password(lines[0] if lines else b"")
    password = os.environ.get("PARACRYPT_PASSWORD")
    if password is None:
        raise SystemExit("reader: give --key-file, --password-file or PARACRYPT_PASSWORD")
    return Password(password.encode("utf-8"))


def main(argv: list | None = None) -> int:
    """Decrypts INPUT to OUTPUT as a streaming reader: on failure OUTPUT holds the verified
    chunks before the failing one, and the exit status is 1."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a paracrypt file, or - for stdin")
    parser.add_argument("-o", "--output", default="-", help="plaintext file, or - for stdout")
    parser.add_argument("-k", "--key-file")
    parser.add_argument("--password-file")
    parser.add_argument("-i", "--identity", action="append", help="an identity file (version 2)")
    parser.add_argument("--verify-with", help="the signer's public key (version 3)")
    args = parser.parse_args(argv)
    expected = None
    if args.verify_with:
        with open(args.verify_with, "rb") as f:
            expected = paracrypt_sig.load_public_key(f.read())
    try:
        secret = _secret_from_args(args)
    except ValueError as e:
        print(f"reader: bad key file: {e}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as files:
        source = (
            sys.stdin.buffer if args.input == "-" else files.enter_context(open(args.input, "rb"))
        )
        sink = (
            sys.stdout.buffer
            if args.output == "-"
            else files.enter_context(open(args.output, "wb"))
        )
        try:
            for plaintext in decrypt(source, secret, expected):
                sink.write(plaintext)
        except FormatError as e:
            print(f"reader: {e.kind}: {e.message}", file=sys.stderr)
            return 1
        finally:
            sink.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
