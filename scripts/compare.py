#!/usr/bin/env python3
"""Times shell commands interleaved round-robin and prints medians and ratios.

Used for the measured tables of docs/guide/performance.md: interleaving makes every contender face the same
machine state (writeback, reclaim, other load), the order is shuffled every round (seeded) so
that no command always follows the same neighbour, and medians resist outliers.

usage: compare.py [--rounds N] [--prepare CMD] NAME=COMMAND [NAME=COMMAND ...]
"""
import argparse
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--prepare", default="", help="run (untimed) before every command")
    parser.add_argument("--json", help="write the raw times here")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    args = parser.parse_args()
    named = [c.split("=", 1) for c in args.commands]
    times = {name: [] for name, _ in named}
    import random
    rng = random.Random(args.seed)
    for _ in range(args.rounds):
        order = list(named)
        rng.shuffle(order)
        for name, command in order:
            if args.prepare:
                subprocess.run(args.prepare, shell=True, check=True)
            start = time.perf_counter()
            done = subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}: {command}", file=sys.stderr)
                return 1
            times[name].append(elapsed)
    medians = {name: statistics.median(t) for name, t in times.items()}
    first = named[0][0]
    print(f"{'command':<28} {'median s':>9} {'min s':>7} {'max s':>7}  ratio to {first}")
    for name, _ in named:
        t = times[name]
        print(f"{name:<28} {medians[name]:>9.3f} {min(t):>7.3f} {max(t):>7.3f}  {medians[name] / medians[first]:.2f}")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"times": times, "medians": medians}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
