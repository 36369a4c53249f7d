#!/usr/bin/env bash
# Issue #35's target for one tree across MPI ranks: `mpirun -n RANKS paracrypt encrypt
# --recursive --distributed` at >= 0.9x the time of the local `encrypt --recursive -j JOBS` of
# the same tree (default 2 ranks against -j 2, each rank with the cores Open MPI binds it to),
# and `decrypt --recursive --distributed` against the local `decrypt --recursive -j JOBS` of the
# encrypted tree.
# The tree: FILES (default 3000) files whose sizes are log-uniform from 1 KiB to 4 MiB, plus BIG
# (default 2) files of BIG_MIB (default 64) MiB, on tmpfs (/dev/shm). hyperfine, ROUNDS runs
# each (default 5), medians; prints both and the ratio for each direction, and the load average
# before and after.
#
#   bash scripts/tree-mpi-bench.sh
#   FILES=20000 BIG=4 BIG_MIB=256 RANKS=4 JOBS=4 BIN=target/release/paracrypt bash scripts/tree-mpi-bench.sh
#   MPI_ARGS='--mca mtl ^ofi,psm2,psm' bash scripts/tree-mpi-bench.sh   # extra mpirun arguments
#
# Needs hyperfine, mpirun (Open MPI) and python3; makes a release build with MPI when BIN is
# not given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts="$PWD/scripts"

files="${FILES:-3000}"
big="${BIG:-2}"
big_mib="${BIG_MIB:-64}"
ranks="${RANKS:-2}"
jobs="${JOBS:-2}"
rounds="${ROUNDS:-5}"
for tool in hyperfine mpirun python3; do
  command -v "$tool" >/dev/null || { echo "tree-mpi-bench: needs $tool" >&2; exit 2; }
done
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p paracrypt-cli --features mpi
  BIN="$PWD/target/release/paracrypt"
fi
BIN="$(realpath "$BIN")"
mpi=(mpirun -n "$ranks")
if [ -n "${MPI_ARGS:-}" ]; then
  read -r -a extra <<<"$MPI_ARGS"
  mpi+=("${extra[@]}")
fi
if [ "$(id -u)" = 0 ]; then
  mpi+=(--allow-run-as-root)
fi

work="$(mktemp -d /dev/shm/paracrypt-tree-mpi-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The tree (scripts/make-tree.py): sizes drawn from a fixed seed, contents random.
python3 "$scripts/make-tree.py" tree "$files" "$big" "$big_mib" 3.2
"$BIN" keygen -o tree.key

echo "tree-mpi-bench: load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
hyperfine --runs "$rounds" --warmup 1 --export-json times.json \
  --prepare 'rm -rf local.enc ranks.enc' \
  -n "local -j $jobs" "'$BIN' encrypt --recursive -q -j $jobs -k tree.key tree -o local.enc" \
  -n "mpirun -n $ranks" "${mpi[*]} '$BIN' encrypt --recursive -q -k tree.key tree -o ranks.enc --distributed"
"$BIN" encrypt --recursive -q -j "$jobs" -k tree.key tree -o local.enc
hyperfine --runs "$rounds" --warmup 1 --export-json times-decrypt.json \
  --prepare 'rm -rf local.dec ranks.dec' \
  -n "decrypt local -j $jobs" "'$BIN' decrypt --recursive -q -j $jobs -k tree.key local.enc -o local.dec" \
  -n "decrypt mpirun -n $ranks" "${mpi[*]} '$BIN' decrypt --recursive -q -k tree.key local.enc -o ranks.dec --distributed"
echo "tree-mpi-bench: load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - <<'PY'
import json
for name in ["times.json", "times-decrypt.json"]:
    results = json.load(open(name))["results"]
    median = {r["command"]: r["median"] for r in results}
    (local, lt), (ranks, rt) = median.items()
    print(f"{local}: {lt:.3f} s (median)\n{ranks}: {rt:.3f} s (median)")
    print(f"{ranks} at {lt / rt:.2f}x the speed of {local} (target >= 0.9x)")
PY
