#!/usr/bin/env python3
"""Issue #26 item 5: the Python package against the CLI, the Rust Runner, pyrage and
pyca/cryptography, and paracrypt.dask with 2 workers against 1. Ratios of medians taken in one
run; never a test.

Compare like with like: the extension and the CLI from ONE release build, with the same
providers compiled in (this cargo command builds both; `pip install ./crates/paracrypt-py`
builds a release extension too, but without OpenSSL, so its default ChaCha20-Poly1305 on an
AVX-512 CPU is aws-lc's where the CLI's is OpenSSL's). From the repository's root, with the
environment scripts/test.sh makes (target/py-venv, which imports the package from
crates/paracrypt-py/python), in a quiet window (the script prints the load average):

    export CARGO_INCREMENTAL=0
    PYO3_BUILD_EXTENSION_MODULE=1 nice -n 10 cargo build --release --locked \
        -p paracrypt-cli -p paracrypt-py --features paracrypt-py/openssl
    cp target/release/lib_paracrypt.so crates/paracrypt-py/python/paracrypt/_paracrypt.abi3.so
    target/py-venv/bin/pip install -r scripts/py-bench-requirements.txt   # the anchors
    target/py-venv/bin/python scripts/py-bench.py --bin target/release/paracrypt

(scripts/test.sh copies its debug extension back over the release one when it next runs.) The
script refuses a debug extension or CLI unless given --allow-debug, and prints the CPU's flags,
both builds' profiles, the provider each primitive runs on, and the load average after each row.

Rows (each "ours" and "theirs" run with the same provider and thread count):
  file      1 GiB file to file: paracrypt.encrypt_file / `paracrypt encrypt` (target >= 0.95)
  memory    64 MiB encrypt(bytes) / the Rust Runner in memory, `paracrypt bench`, one row per
            provider (target >= 0.9). The Runner writes into an output buffer it keeps between
            runs; encrypt() returns a new `bytes` object each call, whose fresh pages the
            kernel must map: that cost is in this row, as it is in every Python call that
            returns a new 64 MiB object (pyca's included).
  into      the same with encrypt_into() into a bytearray kept between calls: like with like
            with the Runner's kept buffer
  anchors   64 MiB encrypt(bytes) / pyrage (age, X25519) and / pyca ChaCha20-Poly1305 one-shot
            (target >= 1.9 at 2 threads; ours on the build's default provider); skipped when
            the package is not installed
  dask      paracrypt.dask.encrypt_file, a LocalCluster of 2 worker processes / of 1, one
            thread each (target >= 1.7; compute-bound: ChaCha20-Poly1305 on RustCrypto, 1 GiB
            so Dask's fixed cost per call is small beside it, and the files on tmpfs,
            /dev/shm by default (--dask-dir), the previous output removed before each run
            outside its time, so that no disk write-back or freeing of the last output is
            timed; the row prints the filesystem)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import paracrypt

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20
FLAGS = ("avx512f", "avx512vl", "avx512ifma", "vaes", "vpclmulqdq", "avx2", "aes", "sha_ni")


def size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def median_s(run: Callable[[], object], repeat: int) -> float:
    run()  # warm-up (page cache, thread pools)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired(ours: Callable[[], object], theirs: Callable[[], object],
           repeat: int, before: Callable[[], object] = lambda: None) -> tuple[float, float]:
    """Medians of both, their runs interleaved (ours, theirs, ours, ...) so that a change in
    the machine's load during the row weighs on both sides alike. ``before`` runs before each
    run, outside its time."""
    for run in (ours, theirs):  # warm-up (page cache, thread pools)
        before()
        run()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for run, into in ((ours, times[0]), (theirs, times[1])):
            before()
            start = time.perf_counter()
            run()
            into.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def fill(path: Path, length: int) -> None:
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        left = length
        while left > 0:
            f.write(block[: min(left, MiB)])
            left -= MiB


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} CPUs"


def filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` is on (``tmpfs``, ``ext4``, ...), from
    /proc/mounts."""
    best, kind = "", "?"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            mount = fields[1].replace("\\040", " ")
            inside = str(path.resolve()) == mount or str(path.resolve()).startswith(
                mount.rstrip("/") + "/")
            if inside and len(mount) >= len(best):
                best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


def dask_dir(choice: str, work: Path, length: int) -> Path:
    """Where the Dask row's files go: ``--dask-dir``, or by default /dev/shm when it is a tmpfs
    with room for the input and the output, else the other rows' directory."""
    if choice:
        return Path(choice)
    shm = Path("/dev/shm")
    if shm.is_dir() and filesystem(shm) == "tmpfs" and \
            shutil.disk_usage(shm).free > 2 * length + 256 * MiB:
        return shm
    return work


def row(name: str, ours: float, theirs: float, target: str, what: str) -> dict[str, object]:
    ratio = theirs / ours  # speed ratio: time of theirs over time of ours
    print(f"{name:<10} {ratio:6.2f}x  (target {target})  {what}: ours {ours * 1e3:.1f} ms, "
          f"theirs {theirs * 1e3:.1f} ms (medians; {load()})", flush=True)
    return {"row": name, "ratio": ratio, "ours_s": ours, "theirs_s": theirs, "target": target,
            "what": what, "loadavg": os.getloadavg()[0]}


def cpu() -> tuple[str, list[str]]:
    model, flags = "?", set[str]()
    try:
        text = Path("/proc/cpuinfo").read_text()
        found = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
        model = found.group(1) if found else model
        first = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
        flags = set(first.group(1).split()) if first else flags
    except OSError:
        pass
    return model, [f for f in FLAGS if f in flags]


def cli_profile(binary: str) -> str:
    parent = Path(binary).resolve().parent.name
    return parent if parent in ("release", "debug") else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(ROOT / "target" / "release" / "paracrypt"))
    parser.add_argument("--size", default="1GiB", help="the file-to-file row's file")
    parser.add_argument("--memory", default="64MiB", help="the in-memory rows' buffer")
    parser.add_argument("--dask-size", default="1GiB", help="the Dask row's file")
    parser.add_argument("--dask-dir", default="",
                        help="where the Dask row's files go (default: /dev/shm when it is a "
                             "tmpfs with room, so that no disk write-back is timed; else --dir)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", default="file,memory,anchors,dask")
    parser.add_argument("--providers", default=None,
                        help="the memory rows' providers (default: every one compiled into the "
                             "extension); the file row uses the first")
    parser.add_argument("--allow-debug", action="store_true",
                        help="run with a debug-profile extension or CLI (figures not comparable)")
    parser.add_argument("--dir", default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--json", default=None, help="write the rows here too")
    args = parser.parse_args()
    rows = set(args.rows.split(","))
    threads, repeat = args.threads, args.repeat
    build = paracrypt._paracrypt._build_info()
    model, flags = cpu()
    print(f"paracrypt {paracrypt.__version__}; CPU {model}, {os.cpu_count()} CPUs, flags "
          f"{' '.join(flags) or 'none of ' + ' '.join(FLAGS)}; {load()}")
    print(f"extension: {build['profile']} build ({paracrypt._paracrypt.__file__}), providers "
          f"{', '.join(build['providers'])}; default provider per primitive: "
          + ", ".join(f"{k} {v}" for k, v in build["fastest"].items()))
    print(f"CLI: {cli_profile(args.bin)} build ({args.bin}); {threads} threads on both sides; "
          "ratios > 1: Python/paracrypt faster")
    if "debug" in (build["profile"], cli_profile(args.bin)) and not args.allow_debug:
        sys.exit("a debug build: build both in release as this script's help says "
                 "(or pass --allow-debug for figures that compare nothing)")
    providers = args.providers.split(",") if args.providers else list(build["providers"])
    out: list[dict[str, object]] = []
    work = Path(tempfile.mkdtemp(prefix="py-bench-", dir=args.dir))
    try:
        key = paracrypt.Key.generate()
        key.save(work / "key")
        if "file" in rows:
            plain = work / "plain"
            fill(plain, size(args.size))
            provider = providers[0]

            def python_file() -> None:
                paracrypt.encrypt_file(plain, work / "py.pcr", key=key, overwrite=True,
                                       threads=threads, provider=provider)

            def cli_file() -> None:
                subprocess.run([args.bin, "--provider", provider, "encrypt", "-q", "-f", "-j",
                                str(threads), "-k", str(work / "key"), str(plain), "-o",
                                str(work / "cli.pcr")], check=True)

            out.append(row("file", *paired(python_file, cli_file, repeat), ">= 0.95",
                           f"{args.size} encrypt_file vs paracrypt encrypt, AES-256-GCM on "
                           f"{provider}"))
            plain.unlink()
            for name in ("py.pcr", "cli.pcr"):
                (work / name).unlink(missing_ok=True)
        data = os.urandom(size(args.memory))
        if "memory" in rows:
            # `paracrypt bench` runs in its own process: one call of it (its median of 3) and
            # the same number of encrypt() calls per round, rounds interleaved.
            report = work / "bench.json"
            command = [args.bin]
            for provider in providers:
                command += ["--provider", provider]
            command += ["bench", "--algorithms", "container/aes-256-gcm", "--modes", "memory",
                        "--sizes", args.memory, "--threads", str(threads), "--repeat", "3",
                        "--json", str(report)]
            rounds: dict[str, tuple[list[float], list[float]]] = {p: ([], []) for p in providers}
            into: dict[str, list[float]] = {p: [] for p in providers}
            kept = bytearray(len(paracrypt.encrypt(data, key=key)))
            for _ in range(max(1, repeat // 2)):
                subprocess.run(command, check=True, capture_output=True)
                measured = json.loads(report.read_text())["measurements"]
                for provider in providers:
                    rust = [m for m in measured if m["algorithm"].endswith("/encrypt")
                            and m.get("provider") == provider]
                    rounds[provider][1].append(rust[0]["stats"]["median_s"])
                    rounds[provider][0].append(median_s(lambda: paracrypt.encrypt(
                        data, key=key, threads=threads, provider=provider), 3))
                    into[provider].append(median_s(lambda: paracrypt.encrypt_into(
                        data, kept, key=key, threads=threads, provider=provider), 3))
            for provider in providers:
                ours_s, theirs_s = rounds[provider]
                out.append(row("memory", statistics.median(ours_s), statistics.median(theirs_s),
                               ">= 0.9", f"{args.memory} encrypt(bytes) vs the Rust Runner in "
                               f"memory, AES-256-GCM on {provider}"))
                out.append(row("into", statistics.median(into[provider]),
                               statistics.median(theirs_s), ">= 0.9",
                               f"{args.memory} encrypt_into(bytes, a kept bytearray) vs the Rust "
                               f"Runner in memory (its kept buffer), AES-256-GCM on {provider}"))
        if "anchors" in rows:
            try:
                import pyrage  # type: ignore[import-not-found]

                ident = pyrage.x25519.Identity.generate()
                out.append(row("pyrage", *paired(lambda: paracrypt.encrypt(
                    data, recipients=[str(ident.to_public())], format="age", threads=threads),
                    lambda: pyrage.encrypt(data, [ident.to_public()]), repeat), ">= 1.9",
                               f"{args.memory} age to X25519: encrypt(format='age') vs pyrage, "
                               f"ChaCha20-Poly1305 on {build['fastest'].get('ChaCha20-Poly1305')}"))
            except ImportError:
                print("pyrage     skipped (pip install -r scripts/py-bench-requirements.txt)")
            try:
                from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

                aead = ChaCha20Poly1305(ChaCha20Poly1305.generate_key())
                nonce = os.urandom(12)
                out.append(row("pyca", *paired(lambda: paracrypt.encrypt(
                    data, key=key, cipher="chacha20-poly1305", threads=threads),
                    lambda: aead.encrypt(nonce, data, None), repeat), ">= 1.9",
                               f"{args.memory} ChaCha20-Poly1305: encrypt() on "
                               f"{build['fastest'].get('ChaCha20-Poly1305')} vs pyca one-shot"))
            except ImportError:
                print("pyca       skipped (pip install -r scripts/py-bench-requirements.txt)")
        if "dask" in rows:
            length = size(args.dask_size)
            out.append(dask_row(dask_dir(args.dask_dir, work, length), key, length,
                                args.dask_size, repeat, args.bin, work / "key"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def dask_row(where: Path, key: paracrypt.Key, length: int, label: str,
             repeat: int, cli: str, key_file: Path) -> dict[str, object]:
    from distributed import Client, LocalCluster

    import paracrypt.dask

    work = Path(tempfile.mkdtemp(prefix="py-bench-dask-", dir=where))
    plain, sealed = work / "dask-plain", work / "dask.pcr"
    on = f"{filesystem(work)} ({where})"
    print(f"dask       files on {on}; the previous output is removed before each run, "
          "outside its time", flush=True)
    try:
        fill(plain, length)
        # One cluster up at a time, in alternating blocks (1 worker, 2 workers, 1, 2, ...), so
        # that a change in the machine's load weighs on both alike: an idle LocalCluster (its
        # scheduler, nannies and workers' heartbeats) takes a few percent of a core, which on
        # two cores comes out of the other cluster's tasks (both up at once gave 1.57x where
        # this gives 1.76x, in the same minutes). One thread per worker process and one per
        # task (paracrypt.dask's default threads=1): with 1 worker one core works, with 2 both
        # do. The output is removed before each run: the kernel freeing the last run's 1 GiB
        # (and, on a disk, waiting for its write-back) when the new file replaces it is the
        # filesystem's cost, the same for 1 worker and 2, not Dask's; on tmpfs nothing is
        # written back at all.
        times: dict[int, list[float]] = {1: [], 2: []}
        blocks = 3
        per_block = max(1, -(-repeat // blocks))
        for _ in range(blocks):
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
                        Client(cluster) as client:
                    for run in range(per_block + 1):  # the first is a warm-up
                        sealed.unlink(missing_ok=True)
                        start = time.perf_counter()
                        paracrypt.dask.encrypt_file(
                            client, plain, sealed, key=key, cipher="chacha20-poly1305",
                            provider="rustcrypto", threads=1, overwrite=True)
                        if run:
                            times[workers].append(time.perf_counter() - start)
        one_s, two_s = statistics.median(times[1]), statistics.median(times[2])
        # The ceiling on this machine: the same work in one process, `encrypt -j1` against
        # `-j2`, on the same files in the same minutes.
        ceiling: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(blocks):
            for threads in (1, 2):
                for run in range(per_block + 1):
                    sealed.unlink(missing_ok=True)
                    start = time.perf_counter()
                    subprocess.run([cli, "--provider", "rustcrypto", "encrypt", "-q", "--cipher",
                                    "chacha20-poly1305", "-j", str(threads), "--key-file",
                                    str(key_file), str(plain), "-o", str(sealed)], check=True)
                    if run:
                        ceiling[threads].append(time.perf_counter() - start)
        one_process = statistics.median(ceiling[1]) / statistics.median(ceiling[2])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return row("dask", two_s, one_s, ">= 1.7",
               f"{label} paracrypt.dask.encrypt_file, 2 workers vs 1, one thread each "
               f"(ChaCha20-Poly1305, RustCrypto; files on {on}); one process, "
               f"`encrypt -j2` vs `-j1` on the same files: {one_process:.2f}x")


if __name__ == "__main__":
    main()
