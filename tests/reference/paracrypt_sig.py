"""A second verifier of paracrypt's signature files, written from docs/SIGNATURES.md alone.

BLAKE3 from the `blake3` package, the signature schemes from pyca/cryptography (ML-DSA-65 from
the OpenSSL 3.5+ inside its wheel). Usage:

    python paracrypt_sig.py PUBLIC_KEY FILE [SIGNATURE] [--range OFFSET:LENGTH]

prints `FILE: OK` and exits 0, or prints the failure and exits 5 (a signature check) or 1 (a
malformed signature file).
"""

from __future__ import annotations

import hashlib
import struct
import sys
from dataclasses import dataclass

import blake3
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

MAGIC = b"PARACRYPTSIG"
CONTEXT = b"paracrypt-signed-file-v1"
SCHEMES = {1: "ed25519", 2: "ecdsa-p256", 3: "rsa-pkcs1v15", 4: "rsa-pss", 5: "ml-dsa-65"}
MAX_CHUNKS = 1 << 26
MAX_KEY = 4096
MAX_SIG = 8192
# P-256's group order: an ECDSA signature's s must be at most half of it (the low s).
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


class Malformed(Exception):
    """The signature file is not well formed (exit 1)."""


class NotVerified(Exception):
    """A signature check failed (exit 5)."""


def leaf(index: int, chunk: bytes) -> bytes:
    return blake3.blake3(b"\x00" + struct.pack(">Q", index) + chunk).digest()


def node(left: bytes, right: bytes) -> bytes:
    return blake3.blake3(b"\x01" + left + right).digest()


def mth(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    m = 1
    while m * 2 < len(leaves):
        m *= 2
    return node(mth(leaves[:m]), mth(leaves[m:]))


def file_digest(chunk_size: int, length: int, root: bytes) -> bytes:
    return blake3.blake3(b"\x02" + struct.pack(">IQ", chunk_size, length) + root).digest()


def chunk_count(chunk_size: int, length: int) -> int:
    return max(1, -(-length // chunk_size))


def statement(scheme: int, digest: bytes) -> bytes:
    return CONTEXT + b"\x00" + bytes([scheme]) + digest


@dataclass
class Signature:
    scheme: int
    chunk_size: int
    length: int
    key: bytes
    signature: bytes
    leaves: list[bytes]

    @staticmethod
    def parse(data: bytes) -> "Signature":
        if data[:12] != MAGIC:
            raise Malformed("no PARACRYPTSIG header")
        if len(data) < 30:
            raise Malformed("the file is shorter than its header")
        version, scheme, hash_id, reserved, chunk_size, length, key_len = struct.unpack(
            ">BBBBIQH", data[12:30]
        )
        if version != 1:
            raise Malformed(f"unsupported version {version}")
        if scheme not in SCHEMES:
            raise Malformed(f"unknown signature scheme {scheme}")
        if hash_id != 1:
            raise Malformed(f"unknown hash {hash_id}")
        if reserved != 0:
            raise Malformed("reserved byte is not zero")
        if chunk_size % 16 or not 16 <= chunk_size <= 1 << 30:
            raise Malformed(f"invalid chunk size {chunk_size}")
        n = chunk_count(chunk_size, length)
        if n > MAX_CHUNKS:
            raise Malformed(f"{n} chunks")
        if not 1 <= key_len <= MAX_KEY:
            raise Malformed(f"public key of {key_len} bytes")
        at = 30 + key_len
        if len(data) < at + 2:
            raise Malformed("the file is shorter than its header")
        (sig_len,) = struct.unpack(">H", data[at : at + 2])
        if not 1 <= sig_len <= MAX_SIG:
            raise Malformed(f"signature of {sig_len} bytes")
        leaves_at = at + 2 + sig_len
        if len(data) != leaves_at + 32 * n:
            raise Malformed(f"{len(data)} bytes where the header announces {leaves_at + 32 * n}")
        leaves = [data[leaves_at + 32 * i : leaves_at + 32 * (i + 1)] for i in range(n)]
        return Signature(scheme, chunk_size, length, data[30:at], data[at + 2 : leaves_at], leaves)


def key_field(public_key) -> tuple[set[int], bytes]:
    """The schemes a public key verifies and its field, as the signature file stores it."""
    raw = serialization.Encoding.Raw
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return {1}, public_key.public_bytes(raw, serialization.PublicFormat.Raw)
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        point = public_key.public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {2}, point
    if isinstance(public_key, rsa.RSAPublicKey):
        der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
        return {3, 4}, der
    if isinstance(public_key, mldsa.MLDSA65PublicKey):
        return {5}, public_key.public_bytes_raw()
    raise ValueError("unsupported key type")


def load_public_key(data: bytes):
    text = data.strip()
    if text.startswith(b"ssh-"):
        return serialization.load_ssh_public_key(text.splitlines()[0])
    if b"-----BEGIN PUBLIC KEY-----" in data:
        return serialization.load_pem_public_key(data)
    if b"-----BEGIN" in data:
        return serialization.load_pem_private_key(data, password=None).public_key()
    return serialization.load_der_public_key(data)


def key_from_field(scheme: int, field: bytes):
    """The public key of `scheme` whose field (as a signature file or a signed container's
    header stores it) is `field`; ValueError when it is none."""
    if scheme == 1:
        return ed25519.Ed25519PublicKey.from_public_bytes(field)
    if scheme == 2:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), field)
    if scheme in (3, 4):
        key = serialization.load_der_public_key(field)
        if not isinstance(key, rsa.RSAPublicKey):
            raise ValueError("not an RSA key")
        if key_field(key)[1] != field:
            raise ValueError("not PKCS#1 DER")
        return key
    if scheme == 5:
        return mldsa.MLDSA65PublicKey.from_public_bytes(field)
    raise ValueError(f"unknown scheme {scheme}")


def signature_len(scheme: int, public_key) -> int:
    """The length of every signature of `scheme` by `public_key`."""
    if scheme in (1, 2):
        return 64
    if scheme in (3, 4):
        return (public_key.key_size + 7) // 8
    return 3309


def verifies(scheme: int, public_key, message: bytes, signature: bytes) -> bool:
    """Whether `signature` is `public_key`'s signature of `message` under `scheme`."""
    try:
        if scheme in (1, 5):
            # Ed25519 (PureEdDSA), ML-DSA-65 (ML-DSA.Verify, empty context).
            public_key.verify(signature, message)
        elif scheme == 2:
            if len(signature) != 64:
                return False
            r = int.from_bytes(signature[:32], "big")
            s = int.from_bytes(signature[32:], "big")
            if s > P256_ORDER // 2:
                return False
            public_key.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
        elif scheme == 3:
            public_key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
        else:
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)
            public_key.verify(signature, message, pss, hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def check_signature(sig: Signature, public_key) -> None:
    schemes, field = key_field(public_key)
    if sig.scheme not in schemes or sig.key != field:
        raise NotVerified("signed by another key")
    message = statement(sig.scheme, file_digest(sig.chunk_size, sig.length, mth(sig.leaves)))
    try:
        if sig.scheme in (1, 5):
            # Ed25519 (PureEdDSA), ML-DSA-65 (ML-DSA.Verify, empty context).
            public_key.verify(sig.signature, message)
        elif sig.scheme == 2:
            if len(sig.signature) != 64:
                raise InvalidSignature()
            r = int.from_bytes(sig.signature[:32], "big")
            s = int.from_bytes(sig.signature[32:], "big")
            if s > P256_ORDER // 2:
                raise InvalidSignature()
            public_key.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))
        elif sig.scheme == 3:
            public_key.verify(sig.signature, message, padding.PKCS1v15(), hashes.SHA256())
        else:
            pss = padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.AUTO)
            public_key.verify(sig.signature, message, pss, hashes.SHA256())
    except InvalidSignature:
        raise NotVerified("the signature does not verify") from None


def verify(sig: Signature, public_key, path: str, rng: tuple[int, int] | None = None) -> None:
    check_signature(sig, public_key)
    with open(path, "rb") as f:
        data_len = f.seek(0, 2)
        if data_len != sig.length:
            raise NotVerified(f"the file is {data_len} bytes long, the signature covers {sig.length}")
        n = len(sig.leaves)
        if rng is None:
            chunks = range(n)
        else:
            offset, length = rng
            if offset > sig.length:
                raise NotVerified("range beyond the end")
            end = min(offset + length, sig.length)
            first = min(offset // sig.chunk_size, n - 1)
            last = (end - 1) // sig.chunk_size + 1 if end > offset else first + 1
            chunks = range(first, min(last, n))
        for i in chunks:
            f.seek(i * sig.chunk_size)
            if leaf(i, f.read(sig.chunk_size)) != sig.leaves[i]:
                raise NotVerified(f"chunk {i} does not match the signature")


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--range")]
    rng = None
    for a in argv:
        if a.startswith("--range="):
            offset, length = a.split("=", 1)[1].split(":")
            rng = (int(offset), int(length))
    public_path, path = args[0], args[1]
    sig_path = args[2] if len(args) > 2 else path + ".psig"
    try:
        with open(public_path, "rb") as f:
            public_key = load_public_key(f.read())
        with open(sig_path, "rb") as f:
            sig = Signature.parse(f.read())
        verify(sig, public_key, path, rng)
    except Malformed as e:
        print(f"not a valid paracrypt signature: {e}", file=sys.stderr)
        return 1
    except NotVerified as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 5
    print(f"{path}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
