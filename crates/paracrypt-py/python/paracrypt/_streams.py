"""The file objects :func:`paracrypt.encryptor` and :func:`paracrypt.decryptor` return."""

from __future__ import annotations

import io
from types import TracebackType
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from paracrypt._paracrypt import StreamDecryptor, StreamEncryptor


class EncryptingWriter(io.RawIOBase):
    """A writable file object: what is written to it is encrypted into the file object it was
    made for, a wave of chunks at a time, on every core.

    The file is complete only once :meth:`close` ran (it writes the last chunk). Leaving a
    ``with`` block on an exception, or dropping the writer unclosed, abandons it instead: what
    was written then fails to decrypt (as truncated), so a crash never leaves a file that looks
    whole. The underlying file object is never closed here.
    """

    def __init__(self, inner: StreamEncryptor) -> None:
        super().__init__()
        self._inner = inner

    def writable(self) -> bool:
        return True

    def write(self, data: Buffer) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self._inner.write(data)

    def close(self) -> None:
        """Writes the last chunk and closes the writer."""
        if self.closed:
            return
        try:
            self._inner.finish()
        finally:
            super().close()

    def abort(self) -> None:
        """Closes the writer without its last chunk: what was written reads as truncated."""
        if not self.closed:
            self._inner.abort()
            super().close()

    def __exit__(
        self,
        kind: Optional[type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # io.IOBase's finalizer would close (finish) the file: an unclosed writer is abandoned.
        try:
            self.abort()
        except Exception:  # noqa: BLE001 - nothing can be raised from a finalizer
            pass


class DecryptingReader(io.RawIOBase):
    """A readable file object: reading it decrypts the file object it was made for, a wave of
    chunks at a time, on every core; every chunk is verified before any of it is read out.
    Wrap it in :class:`io.BufferedReader` for many small reads, or :class:`io.TextIOWrapper`
    for text."""

    def __init__(self, inner: StreamDecryptor) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Buffer) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self._inner.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
            super().close()
