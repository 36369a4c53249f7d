#!/usr/bin/env bash
# The measurements behind docs/SCALING.md: `mpirun -n 2` × 1 thread against the local engine at
# 2 threads, every schedule and transport, and the per-chunk costs that calibrate the model in
# scripts/scaling-model.py. Prints one line per case: the median of RUNS wall-clock times.
#
#   cargo build --release -p paracrypt-cli --features mpi
#   bash scripts/scaling-local.sh            # SIZE_MIB=256 RUNS=7 by default; ONLY=REGEX
#
# Timings are noisy on a shared 2-core machine: the cases are interleaved round by round and
# only medians and ratios within one run are reported.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/paracrypt}
SIZE_MIB=${SIZE_MIB:-256}
CAL_MIB=${CAL_MIB:-32}
RUNS=${RUNS:-7}
MPIRUN=(mpirun -n 2)
MPIRUN1=(mpirun -n 1)
if [ "$(id -u)" -eq 0 ]; then MPIRUN+=(--allow-run-as-root); MPIRUN1+=(--allow-run-as-root); fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head -c "$((SIZE_MIB << 20))" /dev/urandom >"$dir/in"
head -c "$((CAL_MIB << 20))" /dev/urandom >"$dir/cal"
head -c 1 /dev/urandom >"$dir/tiny"
"$BIN" keygen -o "$dir/key"
K=$(printf '11%.0s' $(seq 32))
IV=$(printf '22%.0s' $(seq 16))

declare -A CASES
order=()
ONLY=${ONLY:-.}   # a regular expression: run only the cases whose name matches
add() { [[ $1 =~ $ONLY ]] || return 0; order+=("$1"); CASES[$1]=$2; }
enc="encrypt -q -k $dir/key $dir/in -o $dir/out"
raw="raw -e -c aes-256-ctr -K $K --iv $IV $dir/in -o $dir/out"
add "gcm local -j2" "$BIN $enc -j 2"
add "gcm mpirun-n2 static shared-fs" "${MPIRUN[*]} $BIN $enc --distributed --verbose"
add "gcm mpirun-n2 dynamic shared-fs" "${MPIRUN[*]} $BIN $enc --distributed --verbose --schedule dynamic"
add "gcm mpirun-n2 static messages" "${MPIRUN[*]} $BIN $enc --distributed --verbose --transport messages"
add "gcm mpirun-n2 dynamic messages" "${MPIRUN[*]} $BIN $enc --distributed --verbose --schedule dynamic --transport messages"
add "ctr local -j2" "$BIN $raw -j 2"
add "ctr mpirun-n2 static shared-fs" "${MPIRUN[*]} $BIN $raw --distributed --verbose"
add "ctr mpirun-n2 dynamic messages" "${MPIRUN[*]} $BIN $raw --distributed --verbose --schedule dynamic --transport messages"
# Calibration (CAL_MIB, one thread): compute + page-cache I/O per chunk, and I/O alone.
for suite in aes-256-gcm bf-cbc-hmac-sha256 des-ede3-cbc-hmac-sha256; do
  add "cal $suite local -j1" "$BIN encrypt -q -k $dir/key -c $suite $dir/cal -o $dir/out -j 1"
done
add "cal copy (read+write)" "dd if=$dir/cal of=$dir/out bs=1M status=none"
add "cal mpirun-n1 startup (1-byte file)" "${MPIRUN1[*]} $BIN raw -e -c aes-256-ctr -K $K --iv $IV $dir/tiny -o $dir/out --distributed"
add "cal local startup (1-byte file)" "$BIN raw -e -c aes-256-ctr -K $K --iv $IV $dir/tiny -o $dir/out"

declare -A TIMES INNER
for ((round = 0; round < RUNS; round++)); do
  for name in "${order[@]}"; do
    rm -f "$dir/out"
    start=$(date +%s%N)
    eval "${CASES[$name]}" >/dev/null 2>"$dir/err" || { echo "failed: $name" >&2; cat "$dir/err" >&2; exit 1; }
    end=$(date +%s%N)
    TIMES[$name]+="$(( (end - start) / 1000 )) "
    # With --verbose, rank 0 reports the time from MPI's start to the rename (no launch).
    inner=$(sed -n 's/.*chunks in [0-9.]* s, \([0-9.]*\) s from MPI start.*/\1/p' "$dir/err")
    [ -n "$inner" ] && INNER[$name]+="$(awk "BEGIN {print int($inner * 1e6)}") "
  done
done
for name in "${order[@]}"; do
  median=$(tr ' ' '\n' <<<"${TIMES[$name]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-40s median %8.3f s   (runs, µs: %s)\n' "$name" "$(awk "BEGIN {print $median / 1e6}")" "${TIMES[$name]}"
  if [ -n "${INNER[$name]:-}" ]; then
    inner=$(tr ' ' '\n' <<<"${INNER[$name]}" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-40s median %8.3f s   (MPI start to rename, without the launch)\n' "" "$(awk "BEGIN {print $inner / 1e6}")"
  fi
done
