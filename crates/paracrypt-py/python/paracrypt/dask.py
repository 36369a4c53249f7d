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

What each task carries: the job's header and the keys derived for this one file (never the
key file, password or identities given here), the input's identity (a task refuses another
file, or one that changed), and with ``sign=`` the signing key. Dask sends them in its task
messages: over a network, connect the client with TLS (``Client(..., security=...)``, Dask's
``Security``); :class:`paracrypt.InsecureTransportWarning` is raised as a warning when the
scheduler or a worker is reached in clear beyond this host.

:func:`encrypt_tree` spreads one directory tree's files over the workers: the tree is planned
here (walked, its secrets drawn, the output's directories made), its files cut into tasks (small
files together, a large file alone), each task sealed on a worker with
:func:`paracrypt.run_tree_task`, and the manifest written here from what the tasks returned
(docs/guide/trees.md, *One tree over many processes*). :func:`decrypt_tree` does the same for
an encrypted tree: its manifest read and checked here, each file's header opened here, the files
decrypted and checked on the workers, the links and directory times made here. A task carries
its files' headers and the keys derived for those files alone (never the key file, password,
identities or the tree's own key), and with ``sign=`` the signing key.
"""

from __future__ import annotations

import ipaddress
import os
import uuid
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, Union
from urllib.parse import urlsplit

from paracrypt._errors import InsecureTransportWarning
from paracrypt._paracrypt import (
    DistributedJob,
    Identities,
    Key,
    Recipients,
    TreeJob,
    run_tree_task,
)

if TYPE_CHECKING:
    from distributed import Client as _Client

    from paracrypt._paracrypt import _Format, _ProviderName, _Suite

__all__ = ["decrypt_file", "decrypt_tree", "encrypt_file", "encrypt_tree", "run"]

_StrPath = Union[str, "os.PathLike[str]"]


def encrypt_file(
    client: _Client,
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[Union[Key, _StrPath]] = None,
    password: Optional[str] = None,
    recipients: Optional[Union[Recipients, str, Sequence[str]]] = None,
    format: _Format = "paracrypt",
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[Union[int, str]] = None,
    parts: Optional[int] = None,
    threads: int = 1,
    overwrite: bool = False,
    provider: Optional[_ProviderName] = None,
    progress: Optional[Callable[[int], object]] = None,
    sign: Optional[_StrPath] = None,
    sync: bool = False,
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
    provider: Optional[_ProviderName] = None,
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


def encrypt_tree(
    client: _Client,
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[Union[Key, _StrPath]] = None,
    password: Optional[str] = None,
    recipients: Optional[Union[Recipients, str, Sequence[str]]] = None,
    format: _Format = "paracrypt",
    cipher: Optional[_Suite] = None,
    chunk_size: Optional[Union[int, str]] = None,
    sign: Optional[_StrPath] = None,
    hide_names: bool = False,
    update: bool = False,
    checksum: bool = False,
    identities: Optional[Union[Identities, _StrPath, Sequence[_StrPath]]] = None,
    overwrite: bool = False,
    threads: int = 1,
    provider: Optional[_ProviderName] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
) -> dict[str, Any]:
    """Encrypts the directory tree ``src`` into ``dst`` with the workers of ``client``, as
    :func:`paracrypt.encrypt_tree` does in one process: the same arguments (``armor=`` is
    written on one process, with :func:`paracrypt.encrypt_tree`), the same tree (it decrypts
    with :func:`paracrypt.decrypt_tree` or ``paracrypt decrypt --recursive``), the same dict
    returned. ``threads`` is how many threads each task uses (default 1: one per Dask worker
    thread). ``src`` must be on a filesystem every worker sees, or a prefix of plaintext
    objects (``"s3://bucket/plain/"``, listed once here: each worker reads its tasks' objects
    at the versions listed, with the credentials of its own environment, ``AWS_*``); so must
    ``dst``, or it is a prefix in object storage (``"s3://bucket/prefix/"``): each worker then
    uploads the files of its tasks with its own credentials, and the manifest is written here,
    last (docs/guide/trees.md, *One tree over many processes*).
    ``upload_concurrency=``, ``download_concurrency=`` and ``retries=`` are
    :func:`paracrypt.encrypt_tree`'s, here and on every worker (each worker's uploads bounded
    by its own ``upload_concurrency``).

    A file that fails on a worker (changed since the walk, unreadable) does not stop the others,
    and a task whose worker died (:class:`distributed.KilledWorker`) fails its files: when some
    files were done, :class:`paracrypt.IncompleteTreeError` is raised as
    :func:`paracrypt.encrypt_tree` raises it (the manifest lists the files done, marked
    incomplete; ``update=True`` goes on from it), each failure naming its file; when none was,
    the first failure's exception. An interrupt here cancels the tasks and writes no manifest
    (the files done are complete; ``update=True`` seals them again)."""
    dask_client: Any = client  # distributed is not typed
    _warn_if_in_clear(dask_client)
    job = TreeJob.encrypt(
        src,
        dst,
        key=key,
        password=password,
        recipients=recipients,
        format=format,
        cipher=cipher,
        chunk_size=chunk_size,
        sign=sign,
        hide_names=hide_names,
        update=update,
        checksum=checksum,
        identities=identities,
        overwrite=overwrite,
        provider=provider,
        upload_concurrency=upload_concurrency,
        download_concurrency=download_concurrency,
        retries=retries,
    )
    store = {"upload_concurrency": upload_concurrency,
             "download_concurrency": download_concurrency, "retries": retries}
    return _run_tree(dask_client, job, threads, store)


def decrypt_tree(
    client: _Client,
    src: _StrPath,
    dst: _StrPath,
    *,
    key: Optional[Union[Key, _StrPath]] = None,
    password: Optional[str] = None,
    identities: Optional[Union[Identities, _StrPath, Sequence[_StrPath]]] = None,
    verify_with: Optional[_StrPath] = None,
    overwrite: bool = False,
    threads: int = 1,
    provider: Optional[_ProviderName] = None,
    upload_concurrency: Optional[int] = None,
    download_concurrency: Optional[int] = None,
    retries: Optional[int] = None,
    min_generation: Optional[int] = None,
) -> dict[str, Any]:
    """Decrypts the encrypted tree ``src`` into ``dst`` with the workers of ``client``, as
    :func:`paracrypt.decrypt_tree` does in one process: the same arguments, the same tree, the
    same dict returned. The manifest is read and checked here (with ``verify_with=``, its
    signer), and each file's header is opened here; the workers decrypt and check the files
    (every chunk authenticated, each file's length and plaintext hash against the manifest) and
    give each its name once complete. ``threads`` is how many threads each task uses (default
    1). ``src`` and ``dst`` must each be on a filesystem every worker sees, or be a prefix in
    object storage (``"s3://bucket/prefix/"``): the client lists ``src`` once, and each worker
    reads the objects of its tasks at the versions listed (one replaced since fails by name),
    or uploads each file it decrypts as one object of ``dst``, with the credentials of its own
    environment (``AWS_*``) and ``upload_concurrency=``, ``download_concurrency=`` and
    ``retries=`` (:func:`paracrypt.decrypt_tree`'s, here and on every worker). An armored age
    tree is read on one process (:func:`paracrypt.decrypt_tree`): it raises
    :class:`paracrypt.UsageError`.

    A file that fails (swapped, missing, damaged) does not stop the others, and a task whose
    worker died fails its files: :class:`paracrypt.IncompleteTreeError` is raised when some
    files were done, naming each failure; when none was, the first failure's exception, and
    ``dst`` is left as it was."""
    dask_client: Any = client  # distributed is not typed
    _warn_if_in_clear(dask_client)
    job = TreeJob.decrypt(
        src,
        dst,
        key=key,
        password=password,
        identities=identities,
        verify_with=verify_with,
        overwrite=overwrite,
        provider=provider,
        upload_concurrency=upload_concurrency,
        download_concurrency=download_concurrency,
        retries=retries,
        min_generation=min_generation,
    )
    store = {"upload_concurrency": upload_concurrency,
             "download_concurrency": download_concurrency, "retries": retries}
    return _run_tree(dask_client, job, threads, store)


def _run_tree(dask_client: Any, job: TreeJob, threads: int,
              store: dict[str, Optional[int]]) -> dict[str, Any]:
    """Runs the tasks of ``job`` on the workers and finishes it here. The files are cut into at
    least one task per worker thread; a task is made here (its headers drawn or opened) only
    when fewer than two per worker thread are in flight, so that this process holds a bounded
    number of tasks' keys whatever the tree's size, and making the next tasks overlaps the
    workers' running. An interrupt cancels the tasks and raises without finishing."""
    from distributed import as_completed

    slots = max(1, sum(dask_client.nthreads().values()))
    parts = job.tasks(slots)
    name = f"paracrypt-tree-{uuid.uuid4().hex}"
    where: dict[str, tuple[int, int]] = {}
    futures: list[Any] = []
    submitted = 0

    def submit() -> Any:
        nonlocal submitted
        part = parts[submitted]
        future = dask_client.submit(_run_tree_task, job.task(part), threads, store,
                                    key=f"{name}-{submitted}", pure=False)
        submitted += 1
        where[future.key] = part
        futures.append(future)
        return future

    try:
        running = as_completed([submit() for _ in range(min(len(parts), 2 * slots))])
        for future in running:
            part = where[future.key]
            try:
                result = future.result()
            except Exception as error:  # a worker died, or the task could not run
                job.lost(part, f"its Dask task failed: {type(error).__name__}: {error}")
            else:
                job.add(result)
            future.release()
            if submitted < len(parts):
                running.add(submit())
    except BaseException:
        dask_client.cancel(futures)
        raise
    return job.finish()


def _run_tree_task(task: bytes, threads: int, store: dict[str, Optional[int]]) -> bytes:
    """One Dask task: the files of one task of a tree, with the store's options of the call."""
    return run_tree_task(task, threads=threads, **store)


def _in_clear(addresses: Iterable[str]) -> list[str]:
    """The Dask addresses (``tcp://host:port``, ``tls://…``, ``inproc://…``) over which what is
    sent can be read off the network: neither TLS nor in-process, and not on a loopback
    address (traffic that never leaves this host)."""
    clear = []
    for address in addresses:
        protocol, _, rest = address.partition("://")
        if protocol in ("tls", "inproc"):
            continue
        host = urlsplit("//" + rest).hostname or ""
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            clear.append(address)
    return clear


def _warn_if_in_clear(client: Any) -> None:
    """Warns (:class:`paracrypt.InsecureTransportWarning`) when the job's key material would
    cross the network in clear to reach the workers."""
    workers = client.scheduler_info().get("workers", {})
    clear = _in_clear([client.scheduler.address, *workers])
    if clear:
        warnings.warn(
            "paracrypt.dask sends every task the keys derived for this file (and, with sign=, "
            f"the signing key) over {', '.join(sorted(clear)[:3])}, which is not TLS: connect "
            "the client with TLS (Dask's security=)",
            InsecureTransportWarning,
            stacklevel=3,
        )


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
    _warn_if_in_clear(dask_client)
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
