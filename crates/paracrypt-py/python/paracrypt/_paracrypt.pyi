"""Types of paracrypt's compiled module (checked by mypy and mypy.stubtest in the suite)."""

import os
from typing import Any, Callable, Iterable, Literal, Optional, Sequence, Union, final

from typing_extensions import Buffer

from paracrypt._streams import DecryptingReader, EncryptingWriter

_StrPath = Union[str, "os.PathLike[str]"]
_ChunkSize = Union[int, str]
_Progress = Callable[[int], object]
_KeyArg = Union["Key", _StrPath]
_RecipientsArg = Union["Recipients", str, Iterable[str]]
_IdentitiesArg = Union["Identities", _StrPath, Sequence[Union["Identities", _StrPath]]]
# The names the functions take (the runtime also takes them in any case, and a few aliases).
_Format = Literal["paracrypt", "age"]
_Suite = Literal[
    "aes-256-gcm",
    "aes-128-gcm",
    "chacha20-poly1305",
    "aes-256-ctr-hmac-sha256",
    "des-ede3-cbc-hmac-sha256",
    "bf-cbc-hmac-sha256",
    "rc4-hmac-sha256",
]
_RawCipher = Literal[
    "aes-128-ecb",
    "aes-128-cbc",
    "aes-128-ctr",
    "aes-192-ecb",
    "aes-192-cbc",
    "aes-192-ctr",
    "aes-256-ecb",
    "aes-256-cbc",
    "aes-256-ctr",
    "des-ecb",
    "des-cbc",
    "des-ede3",
    "des-ede3-cbc",
    "bf-ecb",
    "bf-cbc",
    "rc4",
]
_KeyKind = Literal["key", "x25519", "pq", "ed25519", "ml-dsa-65"]
_ProviderName = Literal["fastest", "aws-lc", "openssl", "rustcrypto"]

__all__ = [
    "Key",
    "Recipients",
    "Identities",
    "encrypt_file",
    "decrypt_file",
    "encrypt",
    "decrypt",
    "encrypt_into",
    "decrypt_into",
    "decrypt_range",
    "verify_file",
    "raw_encrypt",
    "raw_decrypt",
    "raw_encrypt_file",
    "raw_decrypt_file",
    "encryptor",
    "decryptor",
    "raw_encryptor",
    "raw_decryptor",
    "StreamEncryptor",
    "StreamDecryptor",
    "keygen",
    "info",
    "DistributedJob",
    "StagedOutput",
    "rekey",
    "encrypt_tree",
    "decrypt_tree",
    "rekey_tree",
    "sign_tree",
    "verify_tree",
    "info_tree",
    "TreeJob",
    "run_tree_task",
    "__version__",
    "_build_info",
]

__version__: str

def _build_info() -> dict[str, Any]:
    """How this extension was built, for benchmarks: ``profile``, ``providers``, ``fastest``."""

@final
class Key:
    @staticmethod
    def generate() -> Key: ...
    @staticmethod
    def from_bytes(data: Buffer) -> Key: ...
    @staticmethod
    def from_text(text: str) -> Key: ...
    @staticmethod
    def load(path: _StrPath) -> Key: ...
    def save(self, path: _StrPath) -> None: ...
    def to_text(self) -> str: ...
    def to_bytes(self) -> bytes: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> tuple[object, tuple[bytes]]: ...

@final
class Recipients:
    def __new__(
        cls,
        recipients: Optional[Union[str, Iterable[str]]] = None,
        *,
        files: Optional[Union[_StrPath, Iterable[_StrPath]]] = None,
    ) -> Recipients: ...
    def __len__(self) -> int: ...

@final
class Identities:
    @staticmethod
    def load(*paths: _StrPath) -> Identities: ...
    @staticmethod
    def from_text(text: Union[str, Buffer], name: str = "identity") -> Identities: ...
    @staticmethod
    def kms() -> Identities: ...
    def recipients(self) -> list[str]: ...
    def open_ahead(self, paths: Sequence[_StrPath]) -> None: ...
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[object, tuple[list[tuple[str, bytes]], bool]]: ...
    @staticmethod
    def _from_pickle(sources: Sequence[tuple[str, bytes]], kms: bool = False) -> Identities: ...

def encrypt_file(
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    format: _Format = "paracrypt",
    armor: bool = False,
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[_ChunkSize] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
    sign: Optional[_StrPath] = None,
) -> int: ...
def decrypt_file(
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> int: ...
def encrypt(
    data: Buffer,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    format: _Format = "paracrypt",
    armor: bool = False,
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    sign: Optional[_StrPath] = None,
) -> bytes: ...
def decrypt(
    data: Buffer,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
) -> bytes: ...
def encrypt_into(
    data: Buffer,
    out: Buffer,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    format: _Format = "paracrypt",
    armor: bool = False,
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    sign: Optional[_StrPath] = None,
) -> int: ...
def decrypt_into(
    data: Buffer,
    out: Buffer,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
) -> int: ...
def decrypt_range(
    src: _StrPath,
    offset: int,
    length: int,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> bytes: ...
def verify_file(
    src: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    offset: Optional[int] = None,
    length: Optional[int] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> int: ...
def raw_encrypt(
    data: Buffer,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
) -> bytes: ...
def raw_decrypt(
    data: Buffer,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
) -> bytes: ...
def raw_encrypt_file(
    src: _StrPath,
    dst: _StrPath,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> int: ...
def raw_decrypt_file(
    src: _StrPath,
    dst: _StrPath,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> int: ...

@final
class StreamEncryptor:
    def write(self, data: Buffer) -> int: ...
    def finish(self) -> None: ...
    def abort(self) -> None: ...

@final
class StreamDecryptor:
    def readinto(self, buffer: Buffer) -> int: ...
    def close(self) -> None: ...

def encryptor(
    fileobj: object,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    format: _Format = "paracrypt",
    armor: bool = False,
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
    sign: Optional[_StrPath] = None,
) -> EncryptingWriter: ...
def decryptor(
    fileobj: object,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> DecryptingReader: ...
def raw_encryptor(
    fileobj: object,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> EncryptingWriter: ...
def raw_decryptor(
    fileobj: object,
    *,
    cipher: _RawCipher,
    key: Optional[Buffer] = None,
    iv: Optional[Buffer] = None,
    password: Optional[str] = None,
    pbkdf2: bool = True,
    iterations: Optional[int] = None,
    md: str = "sha256",
    padding: bool = True,
    chunk_size: Optional[_ChunkSize] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
) -> DecryptingReader: ...
def keygen(
    path: _StrPath, *, kind: _KeyKind = "key", public_out: Optional[_StrPath] = None
) -> Optional[str]: ...
def info(src: Union[_StrPath, Buffer], *, provider: Optional[_ProviderName] = None) -> dict[str, Any]: ...
def rekey(
    src: _StrPath,
    dst: Optional[_StrPath] = None,
    *,
    identities: Optional[_IdentitiesArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    new_password: Optional[str] = None,
    overwrite: bool = False,
) -> None: ...
def encrypt_tree(
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    format: _Format = "paracrypt",
    armor: bool = False,
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[_ChunkSize] = None,
    sign: Optional[_StrPath] = None,
    hide_names: bool = False,
    update: bool = False,
    checksum: bool = False,
    identities: Optional[_IdentitiesArg] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
    dry_run: bool = False,
) -> dict[str, Any]: ...
def decrypt_tree(
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
    min_generation: Optional[int] = None,
    dry_run: bool = False,
) -> dict[str, Any]: ...
def rekey_tree(
    src: _StrPath,
    dst: _StrPath,
    *,
    identities: Optional[_IdentitiesArg] = None,
    password: Optional[str] = None,
    recipients: Optional[_RecipientsArg] = None,
    new_password: Optional[str] = None,
    sign: Optional[_StrPath] = None,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    progress: Optional[_Progress] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
    dry_run: bool = False,
) -> dict[str, Any]: ...
def sign_tree(
    src: _StrPath,
    sig: Optional[_StrPath] = None,
    *,
    key: _StrPath,
    overwrite: bool = False,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
) -> dict[str, Any]: ...
def verify_tree(
    src: _StrPath,
    paths: Optional[Sequence[_StrPath]] = None,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    signature: Optional[_StrPath] = None,
    threads: Optional[int] = None,
    provider: Optional[_ProviderName] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
) -> dict[str, Any]: ...
def info_tree(
    src: _StrPath,
    *,
    key: Optional[_KeyArg] = None,
    password: Optional[str] = None,
    identities: Optional[_IdentitiesArg] = None,
    verify_with: Optional[_StrPath] = None,
    provider: Optional[_ProviderName] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
) -> dict[str, Any]: ...

@final
class StagedOutput:
    @property
    def path(self) -> str: ...
    def commit(self, end: int, *, sync: bool = False) -> int: ...
    def discard(self) -> None: ...

@final
class TreeJob:
    @staticmethod
    def encrypt(
        src: _StrPath,
        dst: _StrPath,
        *,
        key: Optional[_KeyArg] = None,
        password: Optional[str] = None,
        recipients: Optional[_RecipientsArg] = None,
        format: _Format = "paracrypt",
        cipher: Optional[_Suite] = None,
        chunk_size: Optional[_ChunkSize] = None,
        sign: Optional[_StrPath] = None,
        hide_names: bool = False,
        update: bool = False,
        checksum: bool = False,
        identities: Optional[_IdentitiesArg] = None,
        overwrite: bool = False,
        threads: Optional[int] = None,
        provider: Optional[_ProviderName] = None,
        upload_concurrency: Optional[int] = None,
        download_concurrency: Optional[int] = None,
        retries: Optional[int] = None,
    ) -> TreeJob: ...
    @staticmethod
    def decrypt(
        src: _StrPath,
        dst: _StrPath,
        *,
        key: Optional[_KeyArg] = None,
        password: Optional[str] = None,
        identities: Optional[_IdentitiesArg] = None,
        verify_with: Optional[_StrPath] = None,
        overwrite: bool = False,
        threads: Optional[int] = None,
        provider: Optional[_ProviderName] = None,
        upload_concurrency: Optional[int] = None,
        download_concurrency: Optional[int] = None,
        retries: Optional[int] = None,
        min_generation: Optional[int] = None,
    ) -> TreeJob: ...
    @property
    def files(self) -> int: ...
    def tasks(self, at_least: int = 1) -> list[tuple[int, int]]: ...
    def task(self, part: tuple[int, int]) -> bytes: ...
    def add(self, result: bytes) -> None: ...
    def lost(self, part: tuple[int, int], why: str) -> None: ...
    def finish(self) -> dict[str, Any]: ...

def run_tree_task(
    task: bytes,
    *,
    threads: Optional[int] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
) -> bytes: ...

@final
class DistributedJob:
    @staticmethod
    def encrypt(
        src: _StrPath,
        *,
        key: Optional[_KeyArg] = None,
        password: Optional[str] = None,
        recipients: Optional[_RecipientsArg] = None,
        format: _Format = "paracrypt",
        cipher: Optional[_Suite] = None,
        chunk_size: Optional[_ChunkSize] = None,
        provider: Optional[_ProviderName] = None,
        sign: Optional[_StrPath] = None,
    ) -> DistributedJob: ...
    @staticmethod
    def decrypt(
        src: _StrPath,
        *,
        key: Optional[_KeyArg] = None,
        password: Optional[str] = None,
        identities: Optional[_IdentitiesArg] = None,
        verify_with: Optional[_StrPath] = None,
        provider: Optional[_ProviderName] = None,
    ) -> DistributedJob: ...
    @property
    def chunks(self) -> int: ...
    @property
    def input_len(self) -> int: ...
    @property
    def header(self) -> bytes: ...
    def parts(self, n: int) -> list[tuple[int, int]]: ...
    def stage(self, dst: _StrPath, *, overwrite: bool = False) -> StagedOutput: ...
    def run(
        self,
        src: _StrPath,
        dst: _StrPath,
        part: tuple[int, int],
        *,
        threads: Optional[int] = None,
        sync: bool = False,
    ) -> Optional[int]: ...
    def __reduce__(self) -> tuple[object, tuple[object, ...]]: ...
    @staticmethod
    def _from_pickle(
        encrypting: bool,
        header: bytes,
        shared_key: bytes,
        input: bytes,
        provider: str,
        src: _StrPath,
        signer_file: Optional[bytes],
    ) -> DistributedJob: ...
