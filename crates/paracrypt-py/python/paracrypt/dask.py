"""One file encrypted or decrypted by many Dask workers, with the same bytes as one process.

Needs Dask's distributed scheduler (``pip install "./crates/paracrypt-py[dask]"``). The header
is made (or read and checked) once, here on the client; the chunks are cut into contiguous
runs, one Dask task each; every task makes the same job again from the header and writes its
run at its own offsets in one temporary file beside ``dst``; the file takes ``dst``'s place
only when every task succeeded. On any failure (a damaged chunk, a worker that died, an
interrupt) the temporary file is removed, nothing is left at ``dst``, and the error is raised:
paracrypt's own (:class:`paracrypt.AuthenticationError`, …), or Dask's (a task whose worker
died raises :class:`distributed.KilledWorker` once the scheduler stops retrying it; a retried
task writes the same bytes again). ``src`` and ``dst``'s directory must be on a filesystem
every worker sees (a local disk for a ``LocalCluster``, NFS or a parallel filesystem for a
cluster).

>>> from dask.distributed import Client, LocalCluster          # doctest: +SKIP
>>> import paracrypt, paracrypt.dask                           # doctest: +SKIP
>>> with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
...     paracrypt.dask.encrypt_file(client, "big.tar", "big.tar.pc", key="my.key")
...     paracrypt.dask.decrypt_file(client, "big.tar.pc", "back.tar", key="my.key")

The work each task does is :meth:`paracrypt.DistributedJob.run`; :func:`run` drives any
:class:`paracrypt.DistributedJob` on a Dask client, and other schedulers can do the same.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from paracrypt._paracrypt import DistributedJob, Identities, Key, Recipients

if TYPE_CHECKING:
    from distributed import Client as _Client

__all__ = ["decrypt_file", "encrypt_file", "run"]

_StrPath = Union[str, "os.PathLike[str]"]


def encrypt_file(
    client: _Client,
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[Union[Key, _StrPath]] = None,
    password: Optional[str] = None,
    recipients: Optional[Union[Recipients, str, Sequence[str]]] = None,
    format: str = "paracrypt",
    cipher: str = "aes-256-gcm",
    chunk_size: Optional[Union[int, str]] = None,
    parts: Optional[int] = None,
    threads: int = 1,
    overwrite: bool = False,
    provider: Optional[str] = None,
    progress: Optional[Callable[[int], object]] = None,
    sign: Optional[_StrPath] = None,
    sync: bool = False,
    _fixed_salt: Optional[bytes] = None,
) -> int:
    """Encrypts the file ``src`` into ``dst`` with the workers of ``client``; returns the bytes
    written. The secret and format arguments are :func:`paracrypt.encrypt_file`'s (a binary age
    file with ``format="age"``: armor is written in order, never in parts). ``parts`` (default:
    the cluster's worker threads) is how many tasks share the chunks; ``threads`` how many
    threads each task uses (default 1: one per Dask worker thread). ``progress`` is called on
    the client with the chunk count of each task that finished (``tqdm(total=job.chunks)``'s
    ``update`` fits). ``sign=`` signs every chunk (the signing key file is read here and its
    contents go to the tasks with the job). ``sync=True`` makes the output durable before
    it takes ``dst``'s place, as ``paracrypt encrypt --sync``: every task flushes what it
    wrote (``fdatasync``; on a network filesystem, the moment one machine's writes are on the
    server) and the client flushes the file (``fsync``) before the rename; by default, as the
    CLI, ``cp`` and :func:`paracrypt.encrypt_file`, nothing is flushed. The bytes are those of
    ``paracrypt encrypt -j1`` with the same header, whatever ``parts`` and the cluster."""
    job = DistributedJob.encrypt(
        src,
        key=key,
        password=password,
        recipients=recipients,
        format=format,
        cipher=cipher,
        chunk_size=chunk_size,
        provider=provider,
        sign=sign,
        _fixed_salt=_fixed_salt,
    )
    return run(client, job, src, dst, parts=parts, threads=threads, overwrite=overwrite,
               progress=progress, sync=sync)


def decrypt_file(
    client: _Client,
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[Union[Key, _StrPath]] = None,
    password: Optional[str] = None,
    identities: Optional[Union[Identities, _StrPath, Sequence[Union[Identities, _StrPath]]]] = None,
    verify_with: Optional[_StrPath] = None,
    parts: Optional[int] = None,
    threads: int = 1,
    overwrite: bool = False,
    provider: Optional[str] = None,
    progress: Optional[Callable[[int], object]] = None,
    sync: bool = False,
) -> int:
    """Decrypts the file ``src`` (a container or a binary age file) into ``dst`` with the
    workers of ``client``, every chunk verified; returns the bytes written. The header is
    checked here first (a wrong key raises :class:`paracrypt.WrongKeyError` before any task
    runs), and so is the signer with ``verify_with=`` (:class:`paracrypt.SignatureError`).
    Other arguments as :func:`encrypt_file`."""
    job = DistributedJob.decrypt(src, key=key, password=password, identities=identities,
                                 verify_with=verify_with, provider=provider)
    return run(client, job, src, dst, parts=parts, threads=threads, overwrite=overwrite,
               progress=progress, sync=sync)


def _run_part(job: DistributedJob, src: str, dst: str, part: tuple[int, int],
              threads: int, sync: bool) -> Optional[int]:
    """One Dask task: the chunks ``part`` into the staged output. Returns where the output
    ends for the part holding the last chunk, else ``None``."""
    return job.run(src, dst, part, threads=threads, sync=sync)


def run(
    client: _Client,
    job: DistributedJob,
    src: _StrPath,
    dst: _StrPath,
    *,
    parts: Optional[int] = None,
    threads: int = 1,
    overwrite: bool = False,
    progress: Optional[Callable[[int], object]] = None,
    sync: bool = False,
) -> int:
    """Runs ``job`` (made on this process for the file ``src``) with the workers of ``client``
    into ``dst``, as :func:`encrypt_file` describes; returns the bytes written."""
    from distributed import as_completed

    dask_client: Any = client  # distributed is not typed
    if parts is None:
        parts = max(1, sum(dask_client.nthreads().values()))
    blocks = job.parts(parts)
    staged = job.stage(dst, overwrite=overwrite)
    src_path, out = os.fspath(src), os.fspath(staged.path)
    name = f"paracrypt-part-{uuid.uuid4().hex}"
    futures: list[Any] = []
    try:
        futures = [
            dask_client.submit(_run_part, job, src_path, out, block, threads, sync,
                               key=f"{name}-{i}", pure=False)
            for i, block in enumerate(blocks)
        ]
        end: Optional[int] = None
        for future in as_completed(futures):
            # The first failure raises here (and the rest are cancelled below).
            part_end = future.result()
            if part_end is not None:
                end = part_end
            if progress is not None:
                first, last = blocks[futures.index(future)]
                progress(last - first)
        if end is None:  # every chunk is in one part, the last one too
            raise RuntimeError("internal error (a bug in paracrypt): no part ended the output")
        return int(staged.commit(end, sync=sync))
    except BaseException:
        dask_client.cancel(futures)
        raise
    finally:
        staged.discard()
