#!/usr/bin/env python3
"""Issue #26 item 5: the Python package against the CLI, the Rust Runner, pyrage and
pyca/cryptography, and paracrypt.dask with 2 workers against 1. Ratios of medians taken in one
run; never a test.

Run it with the Python that has the package (scripts/test.sh's venv, after `maturin develop`;
build the CLI first, and for figures to compare use the same profile for both):

    target/py-venv/bin/pip install -r scripts/py-bench-requirements.txt   # the anchors (optional)
    target/py-venv/bin/python scripts/py-bench.py [--bin target/release/paracrypt] [--size 1GiB]

Rows:
  file      1 GiB file to file: paracrypt.encrypt_file / `paracrypt encrypt` (target >= 0.95)
  memory    64 MiB encrypt(bytes) / the Rust Runner in memory, `paracrypt bench` (target >= 0.9)
  anchors   64 MiB encrypt(bytes) / pyrage (age, X25519) and / pyca ChaCha20-Poly1305 one-shot
            (target >= 1.9 at 2 threads); skipped when the package is not installed
  dask      paracrypt.dask.encrypt_file, a LocalCluster of 2 worker processes / of 1 (target
            >= 1.7; compute-bound: ChaCha20-Poly1305 on RustCrypto, the file in the page cache)
"""

from __future__ import annotations

import argparse
import json
import os
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


def fill(path: Path, length: int) -> None:
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        left = length
        while left > 0:
            f.write(block[: min(left, MiB)])
            left -= MiB


def row(name: str, ours: float, theirs: float, target: str, what: str) -> dict[str, object]:
    ratio = theirs / ours  # speed ratio: time of theirs over time of ours
    print(f"{name:<10} {ratio:6.2f}x  (target {target})  {what}: ours {ours:.3f} s, "
          f"theirs {theirs:.3f} s (medians)")
    return {"row": name, "ratio": ratio, "ours_s": ours, "theirs_s": theirs, "target": target}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=str(ROOT / "target" / "debug" / "paracrypt"))
    parser.add_argument("--size", default="1GiB", help="the file-to-file row's file")
    parser.add_argument("--memory", default="64MiB", help="the in-memory rows' buffer")
    parser.add_argument("--dask-size", default="256MiB", help="the Dask row's file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", default="file,memory,anchors,dask")
    parser.add_argument("--dir", default=None, help="where the files go (default: a temp dir)")
    parser.add_argument("--json", default=None, help="write the rows here too")
    args = parser.parse_args()
    rows = set(args.rows.split(","))
    threads, repeat = args.threads, args.repeat
    out: list[dict[str, object]] = []
    print(f"paracrypt {paracrypt.__version__}, {os.cpu_count()} CPUs, {threads} threads, "
          f"CLI {args.bin}; ratios > 1: Python/paracrypt faster")
    work = Path(tempfile.mkdtemp(prefix="py-bench-", dir=args.dir))
    try:
        key = paracrypt.Key.generate()
        key.save(work / "key")
        if "file" in rows:
            plain = work / "plain"
            fill(plain, size(args.size))

            def python_file() -> None:
                paracrypt.encrypt_file(plain, work / "py.pcr", key=key, overwrite=True,
                                       threads=threads)

            def cli_file() -> None:
                subprocess.run([args.bin, "encrypt", "-q", "-f", "-j", str(threads), "-k",
                                str(work / "key"), str(plain), "-o", str(work / "cli.pcr")],
                               check=True)

            out.append(row("file", median_s(python_file, repeat), median_s(cli_file, repeat),
                           ">= 0.95", f"{args.size} encrypt_file vs paracrypt encrypt"))
            plain.unlink()
            for name in ("py.pcr", "cli.pcr"):
                (work / name).unlink(missing_ok=True)
        data = os.urandom(size(args.memory))
        ours_mem = median_s(lambda: paracrypt.encrypt(data, key=key, threads=threads), repeat)
        if "memory" in rows:
            report = work / "bench.json"
            subprocess.run([args.bin, "bench", "--algorithms", "container/aes-256-gcm",
                            "--modes", "memory", "--sizes", args.memory, "--threads",
                            str(threads), "--repeat", str(max(repeat, 3)), "--json", str(report)],
                           check=True, capture_output=True)
            rust = [m for m in json.loads(report.read_text())["measurements"]
                    if m["algorithm"].endswith("/encrypt")][0]["stats"]["median_s"]
            out.append(row("memory", ours_mem, rust, ">= 0.9",
                           f"{args.memory} encrypt(bytes) vs the Rust Runner (paracrypt bench)"))
        if "anchors" in rows:
            try:
                import pyrage  # type: ignore[import-not-found]

                ident = pyrage.x25519.Identity.generate()
                ours_age = median_s(lambda: paracrypt.encrypt(
                    data, recipients=[str(ident.to_public())], format="age", threads=threads),
                    repeat)
                theirs = median_s(lambda: pyrage.encrypt(data, [ident.to_public()]), repeat)
                out.append(row("pyrage", ours_age, theirs, ">= 1.9",
                               f"{args.memory} age to X25519: encrypt(format='age') vs pyrage"))
            except ImportError:
                print("pyrage     skipped (pip install -r scripts/py-bench-requirements.txt)")
            try:
                from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

                aead = ChaCha20Poly1305(ChaCha20Poly1305.generate_key())
                nonce = os.urandom(12)
                ours_cc = median_s(lambda: paracrypt.encrypt(
                    data, key=key, cipher="chacha20-poly1305", threads=threads), repeat)
                theirs = median_s(lambda: aead.encrypt(nonce, data, None), repeat)
                out.append(row("pyca", ours_cc, theirs, ">= 1.9",
                               f"{args.memory} ChaCha20-Poly1305: encrypt() vs pyca one-shot"))
            except ImportError:
                print("pyca       skipped (pip install -r scripts/py-bench-requirements.txt)")
        if "dask" in rows:
            out.append(dask_row(work, key, size(args.dask_size), args.dask_size, repeat))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


def dask_row(work: Path, key: paracrypt.Key, length: int, label: str, repeat: int) -> dict[str, object]:
    from distributed import Client, LocalCluster

    import paracrypt.dask

    plain = work / "dask-plain"
    fill(plain, length)
    times = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
                Client(cluster) as client:

            def encrypt() -> None:
                paracrypt.dask.encrypt_file(client, plain, work / "dask.pcr", key=key,
                                            cipher="chacha20-poly1305", provider="rustcrypto",
                                            overwrite=True)

            times[workers] = median_s(encrypt, repeat)
    plain.unlink()
    (work / "dask.pcr").unlink(missing_ok=True)
    return row("dask", times[2], times[1], ">= 1.7",
               f"{label} paracrypt.dask.encrypt_file, 2 workers vs 1 (ChaCha20-Poly1305, "
               "RustCrypto)")


if __name__ == "__main__":
    sys.exit(main())
