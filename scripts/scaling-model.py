#!/usr/bin/env python3
"""Speed-up against ranks for paracrypt's MPI transports, past one machine (docs/SCALING.md).

A model calibrated by measured per-chunk costs (scripts/scaling-local.sh prints them): one
thread per rank, one rank per core, chunks of S = 1 MiB, a network link of B bit/s per node.

  c   compute seconds per chunk on one core (measured: one-thread run minus the copy time)
  io  seconds to read and write one chunk from the page cache (measured: dd of the same file)
  t   seconds to move one chunk over one link: S / B (+ latency, negligible for 1 MiB)

shared-fs, parallel filesystem (Lustre, GPFS, BeeGFS: aggregate bandwidth grows with nodes):
  each rank reads and writes its own chunks over its own link, one after the other per thread;
    T(p) = n/p * (c + 2t)
  baseline: one process on the same filesystem, T(1).

shared-fs, one NFS server on the same network (its single link carries every chunk twice):
    T(p) = max(n/p * (c + 2t), 2 n t)

messages (only rank 0 sees the storage; rank 0 sends batches, receives results, reads and
writes at the same time, each on a thread of its own, so a full-duplex link carries a chunk
out and its result back at once; rank 0 also transforms on another core; workers prefetch, so
their transfers overlap their compute):
    rate(p) = min(1 / max(t, io), (p - 1) / c) + 1 / (c + io)   chunks per second
    T(p) = n / rate(p)
  baseline: one process at rank 0 on its local storage, T = n (c + io).

Every distributed run also pays the launch (mpirun and MPI start, measured), once per file.

Usage: scripts/scaling-model.py [--cost NAME=MS_PER_MIB ...] [--io MS_PER_MIB]
"""

import argparse

MIB = 1 << 20
RANKS = [1, 2, 4, 8, 12, 16, 32, 128]
LINKS = {"1 Gbit/s": 1e9, "10 Gbit/s": 10e9}


def shared_parallel(p, c, io, t):
    """Seconds per chunk of the whole job, and of the one-process baseline."""
    return (c + 2 * t) / p, c + 2 * t


def shared_nfs(p, c, io, t):
    return max((c + 2 * t) / p, 2 * t), c + 2 * t


def messages(p, c, io, t):
    rate = min(1 / max(t, io), (p - 1) / c) + 1 / (c + io)
    return 1 / rate, c + io


TRANSPORTS = [
    ("shared-fs, parallel FS", shared_parallel),
    ("shared-fs, one NFS server", shared_nfs),
    ("messages", messages),
]


def stops_paying(speedups):
    """The first rank count whose efficiency falls under 50 %."""
    for p, s in zip(RANKS, speedups):
        if s / p < 0.5:
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cost", action="append", default=[],
                    help="NAME=MS: compute + page-cache I/O per MiB on one core, measured")
    ap.add_argument("--io", type=float, default=0.40, help="page-cache read + write, ms per MiB")
    ap.add_argument("--launch", type=float, default=0.34, help="mpirun launch + MPI start, seconds")
    ap.add_argument("--gib", type=float, default=10, help="file size in GiB")
    args = ap.parse_args()
    costs = dict(kv.split("=") for kv in args.cost) or {
        # Defaults: the medians in docs/SCALING.md (this 2-core VM).
        "aes-256-gcm": "1.45",
        "bf-cbc-hmac-sha256": "9.9",
        "des-ede3-cbc-hmac-sha256": "78",
    }
    io = args.io / 1e3
    n = args.gib * 1024
    print(f"File of {args.gib:g} GiB in 1 MiB chunks, launch {args.launch} s; "
          "speed-up against one plain process (efficiency = speed-up / ranks)")
    for name, total in costs.items():
        c = float(total) / 1e3 - io
        print(f"\n### {name}: c = {c * 1e3:.2f} ms, io = {io * 1e3:.2f} ms per 1 MiB chunk\n")
        print("| link | transport | " + " | ".join(f"p={p}" for p in RANKS) + " | < 50 % from |")
        print("|---|---|" + "---|" * len(RANKS) + "---|")
        for link, bits in LINKS.items():
            t = MIB * 8 / bits
            for label, model in TRANSPORTS:
                speedups = []
                for p in RANKS:
                    per_chunk, base = model(p, c, io, t)
                    speedups.append(n * base / (args.launch + n * per_chunk))
                stop = stops_paying(speedups)
                cells = " | ".join(f"{s:.1f}× ({100 * s / p:.0f} %)" for p, s in zip(RANKS, speedups))
                print(f"| {link} | {label} | {cells} | {stop or '—'} |")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        pass
