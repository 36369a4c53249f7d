"""paracrypt's exceptions and warnings.

Every error paracrypt raises is a :class:`Error`. Its subclasses follow the kind of failure the
Rust core reports (``Error.kind``): a request that cannot be carried out (:class:`UsageError`,
also a :class:`ValueError`), data that is not what it should be (:class:`DataError` and its
subclasses), and failed I/O (:class:`IoError`, also an :class:`OSError`). Arguments of the wrong
Python type raise :class:`TypeError`, as everywhere in Python.
"""

from typing import Any, Optional


class Error(Exception):
    """Base class of every error paracrypt raises.

    ``kind`` is the core's kind of failure: ``"usage"``, ``"data"``, ``"signature"``,
    ``"io"`` or ``"internal"`` (``"partial"``: a tree done in part, :class:`IncompleteTreeError`); ``chunk`` is the index of the chunk that failed, when one did (the lowest
    failing one, whatever the thread count).
    """

    kind: str = "internal"
    chunk: Optional[int] = None


class UsageError(Error, ValueError):
    """The request cannot be carried out as made: an unknown cipher or provider, a key or IV of
    the wrong length, a malformed key file, recipient or identity, an unusable chunk size, an
    output that exists. Nothing was read or written."""

    kind = "usage"


class DataError(Error):
    """The data is not what it should be (its subclasses say how): wrong key, failed
    authentication, damaged or truncated input, bad padding."""

    kind = "data"


class WrongKeyError(DataError):
    """The key, password or identities do not open this file (or are of the wrong kind for it;
    or an age plugin said its key does not open it, e.g. a wrong PIN): checked on the header,
    before any output."""


class AuthenticationError(DataError):
    """A chunk (``chunk``) or the header failed authentication: the data was altered, reordered
    or spliced from another file."""


class FormatError(DataError):
    """The input is not a file this call reads, or is damaged: not a paracrypt or age file, an
    unsupported version, a damaged header or armor, truncated after a chunk, trailing data."""


class SignatureError(DataError):
    """The data is not proven to come from the expected signer (``verify_with=``): a chunk
    whose signature does not verify, a file signed by another key, or a file with no signature
    where one was required. Nothing is left at the destination."""

    kind = "signature"


class TreeChangedError(DataError):
    """An encrypted tree differs from its manifest (:func:`paracrypt.verify_tree`): ``changes``
    holds one line per file added, removed, renamed or changed (the lines ``paracrypt verify
    --recursive`` prints); ``complete`` is ``False`` when the manifest says the run that wrote
    it did not finish every file. :func:`paracrypt.rekey_tree` raises it for a tree it refuses
    whole (a file missing, swapped, or an old manifest put back), ``changes`` naming each such
    file."""

    changes: list[str] = []
    complete: bool = True


class IncompleteTreeError(Error):
    """A tree was done in part (:func:`paracrypt.encrypt_tree`, :func:`paracrypt.decrypt_tree`;
    the command line's exit 6): every file it names in ``failures`` failed (each an
    :class:`Error` of its kind whose message names the file), every other file is complete,
    and the tree is not. ``summary`` is the dict the call returns for a whole tree (its
    ``files``, ``unchanged``, ``not_started``). Running the encryption again with
    ``update=True`` finishes the tree."""

    kind = "partial"
    failures: list[Error] = []
    summary: dict[str, Any] = {}


class IoError(Error, OSError):
    """Reading or writing failed. ``errno`` is set when the system gave one."""

    kind = "io"


class ProviderError(Error):
    """The cryptographic provider failed internally (not a problem with the input)."""

    kind = "internal"


class LegacyWarning(UserWarning):
    """A legacy algorithm (DES, 3DES, Blowfish, RC4, ECB) or an unauthenticated mode was chosen:
    kept for compatibility, never a default."""


class InsecureTransportWarning(UserWarning):
    """Key material is about to travel in clear: :mod:`paracrypt.dask` sends each task the keys
    derived for the file (and, with ``sign=``, the signing key), and the cluster's connections
    are neither TLS nor confined to this host. Connect the client with TLS (Dask's
    ``security=``)."""


# Shown (and pickled) as `paracrypt.WrongKeyError`, where users import them from.
for _class in (Error, UsageError, DataError, WrongKeyError, AuthenticationError, FormatError,
               SignatureError, TreeChangedError, IncompleteTreeError, IoError, ProviderError, LegacyWarning, InsecureTransportWarning):
    _class.__module__ = "paracrypt"
del _class
