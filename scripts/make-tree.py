"""The benchmark tree of issue #35 (scripts/tree-bench.sh, scripts/tree-mpi-bench.sh).

    python3 scripts/make-tree.py DIR FILES BIG BIG_MIB ROOM

DIR gets FILES files whose sizes are log-uniform from 1 KiB to 4 MiB (drawn from a fixed seed;
contents random), in 100 × 20 directories, plus BIG files of BIG_MIB MiB at its top. Refuses
(exit 1) a tree that the filesystem cannot hold ROOM times, for the copies a benchmark makes.
"""

import math
import os
import random
import sys


def main() -> None:
    out, files, big, big_mib, room = sys.argv[1], *map(int, sys.argv[2:5]), float(sys.argv[5])
    rng = random.Random(35)
    sizes = [int(math.exp(rng.uniform(math.log(1 << 10), math.log(4 << 20)))) for _ in range(files)]
    total = sum(sizes) + big * (big_mib << 20)
    os.makedirs(out)
    stat = os.statvfs(out)
    free = stat.f_bavail * stat.f_frsize
    if room * total > free:
        sys.exit(f"make-tree: the tree ({total >> 20} MiB) and its copies do not fit "
                 f"({free >> 20} MiB free): set FILES or BIG_MIB lower")
    for i, size in enumerate(sizes):
        d = f"{out}/d{i % 100:02}/e{i // 100 % 20:02}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/f{i:05}", "wb") as f:
            f.write(os.urandom(size))
    for i in range(big):
        with open(f"{out}/big{i}", "wb") as f:
            for _ in range(big_mib):
                f.write(os.urandom(1 << 20))
    print(f"make-tree: {files} files + {big} x {big_mib} MiB = {total >> 20} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
