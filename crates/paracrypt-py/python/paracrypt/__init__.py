"""paracrypt: parallel, authenticated, random-access encryption of large data.

Files, bytes and streams are cut into chunks that are sealed and opened on every core (the GIL
is released while they are), with the same bytes at any thread count, and the same bytes as
the ``paracrypt`` command line: a file written here opens with ``paracrypt decrypt`` (and, for
``format="age"``, with ``age``), and the reverse.

>>> import paracrypt
>>> key = paracrypt.Key.generate()
>>> sealed = paracrypt.encrypt(b"hello, many cores", key=key)
>>> paracrypt.decrypt(sealed, key=key)
b'hello, many cores'

Files: :func:`encrypt_file`, :func:`decrypt_file`, :func:`decrypt_range`,
:func:`verify_file`; bytes: :func:`encrypt`, :func:`decrypt`; streams: :func:`encryptor`,
:func:`decryptor`; keys and headers: :func:`keygen`, :func:`info`, :func:`rekey`; directory
trees: :func:`encrypt_tree`, :func:`decrypt_tree`, :func:`rekey_tree`, :func:`verify_tree`,
:func:`info_tree`, :func:`sign_tree`; raw
``openssl enc`` ciphers: :mod:`paracrypt.raw`; several processes on one file:
:mod:`paracrypt.dask` (and :class:`DistributedJob` for other schedulers; for one tree's files,
:class:`TreeJob` and :func:`run_tree_task`). Errors are
:class:`Error` and its subclasses.
"""

from paracrypt._errors import (
    AuthenticationError,
    DataError,
    Error,
    FormatError,
    IncompleteTreeError,
    InsecureTransportWarning,
    IoError,
    LegacyWarning,
    ProviderError,
    SignatureError,
    TreeChangedError,
    UsageError,
    WrongKeyError,
)
from paracrypt._paracrypt import (
    DistributedJob,
    Identities,
    Key,
    Recipients,
    TreeJob,
    __version__,
    decrypt,
    decrypt_file,
    decrypt_into,
    decrypt_range,
    decrypt_tree,
    decryptor,
    encrypt,
    encrypt_file,
    encrypt_into,
    encrypt_tree,
    encryptor,
    info,
    info_tree,
    keygen,
    rekey,
    rekey_tree,
    run_tree_task,
    sign_tree,
    verify_file,
    verify_tree,
)
from paracrypt._streams import DecryptingReader, EncryptingWriter

__all__ = [
    "AuthenticationError",
    "DataError",
    "DecryptingReader",
    "DistributedJob",
    "EncryptingWriter",
    "Error",
    "FormatError",
    "Identities",
    "IncompleteTreeError",
    "InsecureTransportWarning",
    "IoError",
    "Key",
    "LegacyWarning",
    "ProviderError",
    "Recipients",
    "SignatureError",
    "TreeChangedError",
    "TreeJob",
    "UsageError",
    "WrongKeyError",
    "__version__",
    "decrypt",
    "decrypt_file",
    "decrypt_into",
    "decrypt_range",
    "decrypt_tree",
    "decryptor",
    "encrypt",
    "encrypt_file",
    "encrypt_into",
    "encrypt_tree",
    "encryptor",
    "info",
    "info_tree",
    "keygen",
    "rekey",
    "rekey_tree",
    "run_tree_task",
    "sign_tree",
    "verify_file",
    "verify_tree",
]
