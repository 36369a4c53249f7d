#!/usr/bin/env bash
# Small chunks at big-chunk speed (issue #29 item 10): the ChaCha20-Poly1305 container at 1 MiB
# and 64 KiB chunks, age files (64 KiB chunks) made and read by paracrypt, `age -e`/`age -d`
# and `cp`, on a tmpfs, with hyperfine.
#
#   bash scripts/small-chunks.sh                        # 1 GiB, -j2, 5 rounds
#   BASE=/path/to/older/paracrypt bash scripts/small-chunks.sh   # also an older build, same run
#   SIZE_MIB=256 ROUNDS=3 THREADS=4 bash scripts/small-chunks.sh
#
# Every round runs every command once (hyperfine --runs 1, with a warm-up run), in a fresh
# shuffled order, so that a busy neighbour slows all contenders alike; the figures are medians
# over the rounds. The ratios are what the issue asks for: an age file (and the container at 64
# KiB chunks) against the container at 1 MiB chunks, for sealing and opening, and `age` against
# paracrypt. Needs a release build (it makes one), hyperfine, age and python3. DIR defaults to a
# directory under /dev/shm (tmpfs) and needs about 5 × SIZE_MIB of memory.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}
cargo build --release -q -p paracrypt-cli
P=$PWD/target/release/paracrypt
# VMs that hand freed memory back to the host (virtio-balloon free page reporting) make writing
# fresh pages randomly slow for every program, cp included: paused here as in scripts/measure.sh
# (as root; PAUSE_PAGE_REPORTING=0 keeps it on). Without the pause, one run of this script had
# the 1 MiB container opening at 0.81 s and the age file at 0.42 s, the reverse of their order.
REPORTING=/sys/module/page_reporting/parameters/page_reporting_order
if [ "${PAUSE_PAGE_REPORTING:-1}" = 1 ] && [ -w "$REPORTING" ]; then
  old_order=$(cat "$REPORTING")
  trap 'echo "$old_order" > "$REPORTING"' EXIT
  echo 11 > "$REPORTING"
  echo "(free page reporting paused for the measurement; order $old_order restored at exit)"
fi
DIR=$(mktemp -d "${DIR:-/dev/shm}/paracrypt-small.XXXXXX")
trap 'rm -rf "$DIR"; [ -n "${old_order:-}" ] && echo "$old_order" > "$REPORTING"' EXIT
head -c "${SIZE_MIB}M" /dev/urandom > "$DIR/in"
"$P" keygen -o "$DIR/key"
age-keygen -o "$DIR/age-key" 2>/dev/null
R=$(age-keygen -y "$DIR/age-key")
J=-j$THREADS
C="-c chacha20-poly1305 -k $DIR/key"
"$P" encrypt $C --chunk-size 1MiB "$DIR/in" -o "$DIR/c1m"
"$P" encrypt $C --chunk-size 64KiB "$DIR/in" -o "$DIR/c64k"
age -e -r "$R" -o "$DIR/in.age" "$DIR/in"

# name=command, for one paracrypt binary $1 labelled $2.
rows() {
  local p=$1 l=$2
  echo "$l seal container 1MiB=$p encrypt $C --chunk-size 1MiB $J $DIR/in -o $DIR/out"
  echo "$l seal container 64KiB=$p encrypt $C --chunk-size 64KiB $J $DIR/in -o $DIR/out"
  echo "$l seal age=$p encrypt --format age -r $R $J $DIR/in -o $DIR/out"
  echo "$l open container 1MiB=$p decrypt -k $DIR/key $J $DIR/c1m -o $DIR/out"
  echo "$l open container 64KiB=$p decrypt -k $DIR/key $J $DIR/c64k -o $DIR/out"
  echo "$l open age=$p decrypt -i $DIR/age-key $J $DIR/in.age -o $DIR/out"
}
{
  rows "$P" paracrypt
  if [ -n "${BASE:-}" ]; then rows "$BASE" base; fi
  echo "age -e=age -e -r $R -o $DIR/out $DIR/in"
  echo "age -d=age -d -i $DIR/age-key -o $DIR/out $DIR/in.age"
  echo "cp=cp $DIR/in $DIR/out"
} > "$DIR/commands"

for round in $(seq "$ROUNDS"); do
  args=()
  while IFS= read -r line; do
    args+=(-n "${line%%=*}" "${line#*=}")
  done < <(shuf "$DIR/commands")
  hyperfine -N --runs 1 --warmup 1 --prepare "rm -f $DIR/out" --style none \
    --export-json "$DIR/round-$round.json" "${args[@]}" > /dev/null
done

echo "## $SIZE_MIB MiB on tmpfs, -j$THREADS, medians of $ROUNDS shuffled rounds"
echo "## $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$DIR" "$ROUNDS" "${BASE:+base}" <<'PY'
import json, statistics, sys
d, rounds, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{d}/round-{r}.json"))["results"]:
        times.setdefault(res["command"], []).append(res["times"][0])
med = {k: statistics.median(v) for k, v in times.items()}
for k in sorted(med):
    print(f"{k:32} {med[k]:.3f} s")
print()
for l in ["paracrypt"] + ([base] if base else []):
    def r(a, b):
        return med[f"{l} {a}"] / med[f"{l} {b}"]
    print(f"[{l}] seal: age / container-1MiB {r('seal age', 'seal container 1MiB'):.2f}x, "
          f"container-64KiB / container-1MiB {r('seal container 64KiB', 'seal container 1MiB'):.2f}x")
    print(f"[{l}] open: age / container-1MiB {r('open age', 'open container 1MiB'):.2f}x, "
          f"container-64KiB / container-1MiB {r('open container 64KiB', 'open container 1MiB'):.2f}x")
    print(f"[{l}] age -e / paracrypt seal age {med['age -e'] / med[f'{l} seal age']:.2f}x, "
          f"age -d / paracrypt open age {med['age -d'] / med[f'{l} open age']:.2f}x, "
          f"paracrypt seal age / cp {med[f'{l} seal age'] / med['cp']:.2f}x")
PY
