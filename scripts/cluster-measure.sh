#!/usr/bin/env bash
# Reproduces docs/SCALING.md's table of the emulated cluster: container encryption of SIZE_MIB
# (default 256) over 3 hosts (scripts/cluster.sh, TCP only, links rate-limited both ways), one
# rank per host and one thread per rank, for each link rate, schedule and transport; ROUNDS
# (default 3) runs each, the median of rank 0's `--verbose` work time ("chunks in … s"), and,
# for the messages transport under the static schedule, the time the model gives for
# full-duplex links: the two thirds of the file the workers transform cross rank 0's link out
# and back at the same time, T = (HOSTS-1)/HOSTS × size / rate, and the same with TCP/IP and
# Ethernet framing (1514 bytes on the wire per 1448 of data).
#
#   sudo bash scripts/cluster-measure.sh
#   SIZE_MIB=512 ROUNDS=5 RATES="100mbit 1gbit" BIN=target/release/paracrypt sudo -E bash scripts/cluster-measure.sh
#
# Needs root, Open MPI and a release build with MPI (it makes one when BIN is not given). The
# messages transport runs with a private directory per host (only rank 0 sees the files).
set -euo pipefail
cd "$(dirname "$0")/.."

size_mib="${SIZE_MIB:-256}"
rounds="${ROUNDS:-3}"
rates="${RATES:-100mbit 1gbit}"
hosts=3
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p paracrypt-cli --features mpi
  BIN="$PWD/target/release/paracrypt"
fi
BIN="$(realpath "$BIN")"

work="$(mktemp -d /tmp/paracrypt-cluster-measure.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/private"
head -c "$((size_mib << 20))" /dev/urandom >"$work/input"
"$BIN" keygen -o "$work/key" >/dev/null 2>&1

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bits() { # 100mbit -> 100000000
  python3 -c 'import re,sys; m=re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", sys.argv[1]); print(int(float(m[1]) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m[2]]))' "$1"
}

printf '| link | schedule | transport | median work (s) | runs (s) | full-duplex model (s) | with framing (s) | median / model |\n'
printf '|---|---|---|---:|---|---:|---:|---:|\n'
for rate in $rates; do
  for case in static/messages dynamic/messages static/shared-fs dynamic/shared-fs; do
    schedule="${case%/*}" transport="${case#*/}"
    private=()
    [ "$transport" = messages ] && private=(--private "$work/private")
    runs=()
    for _ in $(seq "$rounds"); do
      rm -f "$work/output"
      seconds="$(bash scripts/cluster.sh run -n "$hosts" --rate "$rate" "${private[@]}" --timeout 600 -- \
        "$BIN" encrypt --distributed --schedule "$schedule" --transport "$transport" --verbose -j1 \
        -k "$work/key" -o "$work/output" "$work/input" 2>&1 |
        sed -n 's/.*chunks in \([0-9.]*\) s.*/\1/p')"
      [ -n "$seconds" ] || { echo "cluster-measure: a run failed ($rate $case)" >&2; exit 1; }
      runs+=("$seconds")
    done
    med="$(printf '%s\n' "${runs[@]}" | median)"
    model='' framed='' ratio=''
    if [ "$case" = static/messages ]; then
      read -r model framed ratio < <(python3 -c '
import sys
size, hosts, rate, med = int(sys.argv[1]) << 20, int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
model = (hosts - 1) / hosts * size * 8 / rate
framed = model * 1514 / 1448
print(f"{model:.2f} {framed:.2f} {med / model:.2f}x")' "$size_mib" "$hosts" "$(bits "$rate")" "$med")
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$rate" "$schedule" "$transport" "$med" \
      "${runs[*]}" "${model:-}" "${framed:-}" "${ratio:-}"
  done
done
