"""Recipient stanzas and identities (FORMAT.md "Version 2: encrypted to recipients"), for the
reference reader: the stanza encoding and the mlkem768x25519 (post-quantum), X25519, ssh-ed25519
and ssh-rsa stanzas of the age v1 specification (C2SP age), written from the specification on
pyca/cryptography.

An identity file holds `AGE-SECRET-KEY-PQ-1…` and `AGE-SECRET-KEY-1…` lines, an OpenSSH private key (ed25519 or RSA), or an
RSA private key in PEM. `unwrap` returns the 16-byte file key, or None when no identity matches.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, hpke, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, mlkem, padding, rsa, x25519
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

FILE_KEY_LEN = 16


@dataclass(frozen=True)
class Stanza:
    type: str
    args: list
    body: bytes


def _b64(text: str) -> bytes:
    """Canonical base64 without padding (RFC 4648), as the specification requires."""
    if "=" in text or "\n" in text:
        raise ValueError("padded or wrapped base64")
    data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    if base64.b64encode(data).decode().rstrip("=") != text:
        raise ValueError("non-canonical base64")
    return data


def parse_stanzas(block: bytes) -> list:
    """The stanzas of a recipient block: each a line `-> TYPE ARG…`, then its body in base64
    lines of exactly 64 columns ending with a shorter (possibly empty) line. At least one."""
    text = block.decode("ascii")
    if not text.endswith("\n"):
        raise ValueError("the block does not end with a newline")
    lines = text[:-1].split("\n")
    stanzas, i = [], 0
    while i < len(lines):
        words = lines[i].split(" ")
        if words[0] != "->" or len(words) < 2 or any(
            not w or any(not 33 <= ord(c) <= 126 for c in w) for w in words[1:]
        ):
            raise ValueError(f"stanza {len(stanzas) + 1}: bad first line")
        i += 1
        body = ""
        while True:
            if i == len(lines):
                raise ValueError(f"stanza {len(stanzas) + 1}: body does not end")
            line = lines[i]
            i += 1
            if len(line) > 64:
                raise ValueError(f"stanza {len(stanzas) + 1}: body line longer than 64")
            body += line
            if len(line) < 64:
                break
        stanzas.append(Stanza(words[1], words[2:], _b64(body)))
    if not stanzas:
        raise ValueError("no stanza")
    return stanzas


def _hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def _aead_open(key: bytes, body: bytes) -> bytes | None:
    try:
        plain = ChaCha20Poly1305(key).decrypt(bytes(12), body, None)
    except InvalidTag:
        return None
    return plain if len(plain) == FILE_KEY_LEN else None


# --- X25519 --------------------------------------------------------------------------------

_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_decode(text: str) -> tuple:
    """BIP 173 bech32: (human-readable part, data bytes)."""
    text = text.lower()
    hrp, _, data = text.rpartition("1")
    values = [_CHARSET.index(c) for c in data]

    def polymod(vs):
        gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
        chk = 1
        for v in vs:
            top = chk >> 25
            chk = (chk & 0x1FFFFFF) << 5 ^ v
            for i in range(5):
                chk ^= gen[i] if (top >> i) & 1 else 0
        return chk

    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    if polymod(expanded + values) != 1:
        raise ValueError("bad bech32 checksum")
    acc, bits, out = 0, 0, bytearray()
    for v in values[:-6]:
        acc, bits = acc << 5 | v, bits + 5
        if bits >= 8:
            bits -= 8
            out.append(acc >> bits & 0xFF)
    return hrp, bytes(out)


class X25519Identity:
    def __init__(self, line: str):
        hrp, secret = _bech32_decode(line)
        if hrp != "age-secret-key-" or len(secret) != 32:
            raise ValueError("not an AGE-SECRET-KEY-1 line")
        self.key = x25519.X25519PrivateKey.from_private_bytes(secret)
        self.public = self.key.public_key().public_bytes_raw()

    def unwrap(self, stanza: Stanza) -> bytes | None:
        if stanza.type != "X25519" or len(stanza.args) != 1 or len(stanza.body) != 32:
            return None
        share = _b64(stanza.args[0])
        shared = self.key.exchange(x25519.X25519PublicKey.from_public_bytes(share))
        key = _hkdf(shared, share + self.public, b"age-encryption.org/v1/X25519")
        return _aead_open(key, stanza.body)


# --- MLKEM768-X25519 (post-quantum) ---------------------------------------------------------


class MlKem768X25519Identity:
    """An `AGE-SECRET-KEY-PQ-1…` line: a 32-byte seed. As filippo.io/hpke-pq's expandKey, the
    seed's SHAKE256 output gives the ML-KEM-768 seed (64 bytes, FIPS 203's d ‖ z) and the X25519
    private key (32 bytes); the stanza `-> mlkem768x25519 <base64 enc>` (enc: 1120 bytes) holds
    the file key sealed with HPKE base mode: KEM MLKEM768-X25519, HKDF-SHA256,
    ChaCha20-Poly1305, info "age-encryption.org/mlkem768x25519", no associated data."""

    INFO = b"age-encryption.org/mlkem768x25519"
    ENC_LEN = 1088 + 32

    def __init__(self, line: str):
        hrp, seed = _bech32_decode(line)
        if hrp != "age-secret-key-pq-" or len(seed) != 32:
            raise ValueError("not an AGE-SECRET-KEY-PQ-1 line")
        expanded = hashlib.shake_256(seed).digest(64 + 32)
        self.key = hpke.MLKEM768X25519PrivateKey(
            mlkem.MLKEM768PrivateKey.from_seed_bytes(expanded[:64]),
            x25519.X25519PrivateKey.from_private_bytes(expanded[64:]),
        )
        self.suite = hpke.Suite(
            hpke.KEM.MLKEM768_X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.CHACHA20_POLY1305
        )

    def unwrap(self, stanza: Stanza) -> bytes | None:
        if stanza.type != "mlkem768x25519":
            return None
        if len(stanza.args) != 1 or len(stanza.body) != FILE_KEY_LEN + 16:
            raise ValueError("malformed mlkem768x25519 stanza")
        enc = _b64(stanza.args[0])
        if len(enc) != self.ENC_LEN:
            raise ValueError("malformed mlkem768x25519 stanza")
        try:
            return self.suite.decrypt(enc + stanza.body, self.key, info=self.INFO)
        except InvalidTag:
            return None


def _age_identity(line: str):
    """One line of an age identity file."""
    if line.upper().startswith("AGE-SECRET-KEY-PQ-"):
        return MlKem768X25519Identity(line)
    return X25519Identity(line)


# --- SSH ------------------------------------------------------------------------------------


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _mpint(n: int) -> bytes:
    """RFC 4251 mpint of a positive integer: minimal, with a zero byte before a set top bit."""
    raw = n.to_bytes(n.bit_length() // 8 + 1, "big")
    while len(raw) > 1 and raw[0] == 0 and raw[1] < 0x80:
        raw = raw[1:]
    return _ssh_string(raw)


def _tag(ssh_key: bytes) -> str:
    return base64.b64encode(hashlib.sha256(ssh_key).digest()[:4]).decode().rstrip("=")


P25519 = 2**255 - 19


class SshEd25519Identity:
    def __init__(self, key: ed25519.Ed25519PrivateKey):
        public = key.public_key().public_bytes_raw()
        self.ssh_key = _ssh_string(b"ssh-ed25519") + _ssh_string(public)
        seed = key.private_bytes_raw()
        self.scalar = x25519.X25519PrivateKey.from_private_bytes(hashlib.sha512(seed).digest()[:32])
        y = int.from_bytes(public, "little") & ((1 << 255) - 1)
        u = (1 + y) * pow(1 - y, P25519 - 2, P25519) % P25519
        self.montgomery = u.to_bytes(32, "little")
        label = b"age-encryption.org/v1/ssh-ed25519"
        self.tweak = x25519.X25519PrivateKey.from_private_bytes(_hkdf(b"", self.ssh_key, label))

    def unwrap(self, stanza: Stanza) -> bytes | None:
        if stanza.type != "ssh-ed25519" or len(stanza.args) != 2 or len(stanza.body) != 32:
            return None
        if stanza.args[0] != _tag(self.ssh_key):
            return None
        share = _b64(stanza.args[1])
        shared = self.scalar.exchange(x25519.X25519PublicKey.from_public_bytes(share))
        shared = self.tweak.exchange(x25519.X25519PublicKey.from_public_bytes(shared))
        label = b"age-encryption.org/v1/ssh-ed25519"
        return _aead_open(_hkdf(shared, share + self.montgomery, label), stanza.body)


class SshRsaIdentity:
    def __init__(self, key: rsa.RSAPrivateKey):
        numbers = key.public_key().public_numbers()
        self.ssh_key = _ssh_string(b"ssh-rsa") + _mpint(numbers.e) + _mpint(numbers.n)
        self.key = key

    def unwrap(self, stanza: Stanza) -> bytes | None:
        if stanza.type != "ssh-rsa" or stanza.args != [_tag(self.ssh_key)]:
            return None
        oaep = padding.OAEP(
            mgf=padding.MGF1(hashes.SHA256()),
            algorithm=hashes.SHA256(),
            label=b"age-encryption.org/v1/ssh-rsa",
        )
        try:
            plain = self.key.decrypt(stanza.body, oaep)
        except ValueError:
            return None
        return plain if len(plain) == FILE_KEY_LEN else None


def load_identities(data: bytes) -> list:
    """The identities of an identity file."""
    if b"-----BEGIN OPENSSH PRIVATE KEY-----" in data:
        key = serialization.load_ssh_private_key(data, password=None)
    elif b"-----BEGIN " in data:
        key = serialization.load_pem_private_key(data, password=None)
    else:
        lines = [line.strip() for line in data.decode("ascii").splitlines()]
        return [_age_identity(line) for line in lines if line and not line.startswith("#")]
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return [SshEd25519Identity(key)]
    if isinstance(key, rsa.RSAPrivateKey):
        return [SshRsaIdentity(key)]
    raise ValueError("not an identity kind the reader knows")


def unwrap(identities: list, stanzas: list) -> bytes | None:
    """The file key from the first stanza an identity opens, or None."""
    for identity in identities:
        for stanza in stanzas:
            key = identity.unwrap(stanza)
            if key is not None:
                return key
    return None
