#!/usr/bin/env bash
# Reproduces the measured tables of docs/guide/performance.md (issue targets of the raw engine, the container, age
# files and openssl password files).
#
#   bash scripts/measure.sh            # 1 GiB, 15 shuffled rounds per comparison
#   SIZE_MIB=256 ROUNDS=7 bash scripts/measure.sh
#
# Needs a release build (it makes one), openssl, age (`apt-get install -y age`), python3 and
# GNU time. Every comparison runs its contenders interleaved in a shuffled order each round
# (scripts/compare.py) and reports medians and minima. Before every timed run the previous
# output is removed and `sync`ed away and the input is read back into the page cache.
#
# VMs that hand freed memory back to the host (virtio-balloon free page reporting) make writing
# fresh pages randomly slow for every program, `cp` included (host page faults). When run as
# root on such a VM, the script pauses the reporting for its duration and restores it after;
# PAUSE_PAGE_REPORTING=0 keeps it on. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-15}
DIR=${DIR:-$(mktemp -d /tmp/paracrypt-measure.XXXXXX)}
N=$(nproc)
cargo build --release -q -p paracrypt-cli
P=$PWD/target/release/paracrypt
K=$(printf '11%.0s' {1..32}); IV=$(printf 'ab%.0s' {1..16})
REPORTING=/sys/module/page_reporting/parameters/page_reporting_order
if [ "${PAUSE_PAGE_REPORTING:-1}" = 1 ] && [ -w "$REPORTING" ]; then
  old_order=$(cat "$REPORTING")
  trap 'echo "$old_order" > "$REPORTING"' EXIT
  echo 11 > "$REPORTING"
  echo "(free page reporting paused for the measurement; order $old_order restored at exit)"
fi
mkdir -p "$DIR"
head -c "${SIZE_MIB}M" /dev/urandom > "$DIR/in"
cat "$DIR/in" > /dev/null
rm -f "$DIR/key" "$DIR/age-key"
"$P" keygen -o "$DIR/key"
age-keygen -o "$DIR/age-key" 2>/dev/null
R=$(age-keygen -y "$DIR/age-key")
prep="rm -f $DIR/out; sync; cat $DIR/in > /dev/null"

echo "## Machine: $N cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(openssl version | cut -d' ' -f1-2)"
echo
echo "## raw aes-256-ctr, ${SIZE_MIB} MiB page-cached file to file"
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "cp=cp $DIR/in $DIR/out" \
  "paracrypt raw -j$N=$P raw -e -c aes-256-ctr -K $K --iv $IV -j$N $DIR/in -o $DIR/out" \
  "paracrypt raw -j1=$P raw -e -c aes-256-ctr -K $K --iv $IV -j1 $DIR/in -o $DIR/out" \
  "openssl enc -aes-256-ctr=openssl enc -e -aes-256-ctr -K $K -iv $IV -in $DIR/in -out $DIR/out"
echo
echo "## container aes-256-gcm, ${SIZE_MIB} MiB page-cached file to file"
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "cp=cp $DIR/in $DIR/out" \
  "paracrypt encrypt -j$N=$P encrypt -k $DIR/key -j$N $DIR/in -o $DIR/out" \
  "paracrypt encrypt -j1=$P encrypt -k $DIR/key -j1 $DIR/in -o $DIR/out" \
  "age -e=age -e -r $R -o $DIR/out $DIR/in" \
  "openssl enc -aes-256-ctr=openssl enc -e -aes-256-ctr -K $K -iv $IV -in $DIR/in -out $DIR/out"
echo
echo "## age files, ${SIZE_MIB} MiB page-cached file to file (issue #13)"
rm -f "$DIR/theirs.age"
age -e -r "$R" -o "$DIR/theirs.age" "$DIR/in"
cat "$DIR/theirs.age" > /dev/null
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "paracrypt encrypt --format age -j$N=$P encrypt --format age -r $R -j$N $DIR/in -o $DIR/out" \
  "paracrypt encrypt --format age -j1=$P encrypt --format age -r $R -j1 $DIR/in -o $DIR/out" \
  "age -e=age -e -r $R -o $DIR/out $DIR/in"
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "paracrypt decrypt -j$N (age's file)=$P decrypt -i $DIR/age-key -j$N $DIR/theirs.age -o $DIR/out" \
  "paracrypt decrypt -j1 (age's file)=$P decrypt -i $DIR/age-key -j1 $DIR/theirs.age -o $DIR/out" \
  "age -d=age -d -i $DIR/age-key -o $DIR/out $DIR/theirs.age"
rm -f "$DIR/theirs.age"
echo
echo "## openssl enc -aes-256-cbc -pbkdf2 file, ${SIZE_MIB} MiB page-cached, decrypted (issue #13)"
echo "measure" > "$DIR/pw"
openssl enc -aes-256-cbc -pbkdf2 -pass "file:$DIR/pw" -in "$DIR/in" -out "$DIR/in.enc"
cat "$DIR/in.enc" > /dev/null
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "paracrypt raw -d --password-file -j$N=$P raw -d -c aes-256-cbc --password-file $DIR/pw --pbkdf2 -j$N $DIR/in.enc -o $DIR/out" \
  "paracrypt raw -d --password-file -j1=$P raw -d -c aes-256-cbc --password-file $DIR/pw --pbkdf2 -j1 $DIR/in.enc -o $DIR/out" \
  "openssl enc -d -pbkdf2=openssl enc -d -aes-256-cbc -pbkdf2 -pass file:$DIR/pw -in $DIR/in.enc -out $DIR/out"
rm -f "$DIR/in.enc" "$DIR/pw"
echo
echo "## ${SIZE_MIB} MiB stdin -> stdout, peak RSS"
for j in 1 "$N"; do
  /usr/bin/time -f "encrypt -j$j: %M KiB peak RSS" "$P" encrypt -k "$DIR/key" -j"$j" < "$DIR/in" > /dev/null
  "$P" encrypt -k "$DIR/key" < "$DIR/in" > "$DIR/sealed"
  /usr/bin/time -f "decrypt -j$j: %M KiB peak RSS" "$P" decrypt -k "$DIR/key" -j"$j" < "$DIR/sealed" > /dev/null
done
rm -f "$DIR/sealed"
echo
echo "## In memory, 64 MiB: every raw cipher and container suite, 1 vs $N threads"
"$P" bench --algorithms symmetric --sizes 64MiB --modes memory --threads "1,$N" --repeat 9 -q --json "$DIR/symmetric.json" > "$DIR/symmetric.txt"
python3 - "$DIR/symmetric.json" <<'PY'
import json, sys
rows = {}
for m in json.load(open(sys.argv[1]))["measurements"]:
    rows.setdefault(m["algorithm"], {})[m["threads"]] = m
threads = sorted({t for r in rows.values() for t in r})
print(f"| algorithm | 1 thread MB/s | {threads[-1]} threads MB/s | speed-up |")
print("|---|---:|---:|---:|")
for name, r in rows.items():
    one, many = r[threads[0]], r[threads[-1]]
    print(f"| {name} | {one['mb_per_s']:.0f} | {many['mb_per_s']:.0f} | {many['speedup']:.2f}× |")
PY
echo
echo "## Single-thread AES-256-CTR in memory vs openssl speed (16 KiB blocks), 7 alternating pairs"
for i in 1 2 3 4 5 6 7; do
  "$P" bench --algorithms raw/aes-256-ctr --sizes 64MiB --modes memory --threads 1 --repeat 9 -q --json "$DIR/ctr-$i.json" > /dev/null
  openssl speed -evp aes-256-ctr -bytes 16384 -seconds 1 2>/dev/null > "$DIR/speed-$i.txt"
done
python3 - "$DIR" <<'PY'
import json, statistics, sys
pairs = []
for i in range(1, 8):
    ours = json.load(open(f"{sys.argv[1]}/ctr-{i}.json"))["measurements"][0]["mb_per_s"]
    line = [l for l in open(f"{sys.argv[1]}/speed-{i}.txt") if l.lower().startswith("aes-256-ctr")][-1]
    pairs.append((ours, float(line.split()[-1].rstrip("k")) / 1000))
ratios = sorted(100 * a / b for a, b in pairs)
print(f"paracrypt {statistics.median(a for a, _ in pairs):.0f} MB/s, openssl speed {statistics.median(b for _, b in pairs):.0f} MB/s (medians);")
print(f"paracrypt / openssl per pair: median {statistics.median(ratios):.0f} %, range {ratios[0]:.0f}-{ratios[-1]:.0f} %")
PY
rm -rf "$DIR"
