#!/usr/bin/env bash
# Issue #35's targets for directory trees: a tree of FILES (default 20000) files whose sizes are
# log-uniform from 1 KiB to 4 MiB, plus BIG (default 4) files of BIG_MIB (default 256) MiB, on
# tmpfs (/dev/shm), at -j JOBS (default 2), timed by hyperfine (ROUNDS runs each, default 3,
# medians) against:
#   - `cp -a` of the same tree (the limit: `encrypt --recursive` within 1.0x of it),
#   - a shell loop running `age -r` per file (the target: >= 5x faster),
#   - `rclone copy` to a local `crypt` remote with `--transfers JOBS` (the target: >= 3x),
#   - `decrypt --recursive` against `cp -a` likewise,
#   - `encrypt --recursive --update` after one file changed (the target: <= 5 % of a full run).
# Prints each median and the ratios, and the peak resident memory of one encryption.
#
#   bash scripts/tree-bench.sh
#   FILES=2000 BIG=1 BIG_MIB=64 ROUNDS=5 BIN=target/release/paracrypt bash scripts/tree-bench.sh
#
# The full tree is some 11 GiB, and its encryption as much again: the script refuses a tree that
# /dev/shm cannot hold twice with room to spare, and makes the tree smaller (FILES/10, BIG_MIB/4,
# and says so) when the machine is busy (load average above 3), unless FORCE_SIZE=1. Needs
# hyperfine, age, age-keygen and rclone; makes a release build when BIN is not given.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts="$PWD/scripts"

files="${FILES:-20000}"
big="${BIG:-4}"
big_mib="${BIG_MIB:-256}"
jobs="${JOBS:-2}"
rounds="${ROUNDS:-3}"
for tool in hyperfine age age-keygen rclone python3; do
  command -v "$tool" >/dev/null || { echo "tree-bench: needs $tool" >&2; exit 2; }
done
load="$(cut -d' ' -f1 /proc/loadavg)"
if [ "${FORCE_SIZE:-0}" != 1 ] && python3 -c "import sys; sys.exit(0 if float('$load') > 3 else 1)"; then
  files=$((files / 10))
  big_mib=$((big_mib / 4))
  echo "tree-bench: load average $load > 3: a smaller tree ($files files, $big x $big_mib MiB)" >&2
fi
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p paracrypt-cli
  BIN="$PWD/target/release/paracrypt"
fi
BIN="$(realpath "$BIN")"

work="$(mktemp -d /dev/shm/paracrypt-tree-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# The tree (scripts/make-tree.py): sizes drawn from a fixed seed, contents random.
python3 "$scripts/make-tree.py" tree "$files" "$big" "$big_mib" 2.2

"$BIN" keygen -o tree.key 2>/dev/null
age-keygen -o age.key 2>/dev/null
recipient="$(age-keygen -y age.key)"
pass="$(rclone obscure bench-password)"
export RCLONE_CONFIG="$work/rclone.conf"
printf '[crypt]\ntype = crypt\nremote = %s/rclone-out\npassword = %s\n' "$work" "$pass" > "$RCLONE_CONFIG"
cat > age-loop.sh <<'EOF'
# One `age` per file, as a shell loop does it.
cd tree
find . -type d -exec mkdir -p ../age-out/{} \;
find . -type f | while IFS= read -r f; do age -r "$1" -o "../age-out/$f.age" "$f"; done
EOF
"$BIN" encrypt --recursive -q -j "$jobs" -k tree.key tree -o sealed

hyperfine --style basic --runs "$rounds" --export-json times.json \
  -n cp --prepare 'rm -rf copy' 'cp -a tree copy' \
  -n encrypt --prepare 'rm -rf out' "$BIN encrypt --recursive -q -j $jobs -k tree.key tree -o out" \
  -n decrypt --prepare 'rm -rf back' "$BIN decrypt --recursive -q -j $jobs -k tree.key sealed -o back" \
  -n age-loop --prepare 'rm -rf age-out' "bash age-loop.sh $recipient" \
  -n rclone --prepare 'rm -rf rclone-out' "rclone copy --transfers $jobs tree crypt:" \
  -n update --prepare "head -c 1000 /dev/urandom >> tree/d00/e00/f00000" \
    "$BIN encrypt --recursive --update -q -j $jobs -k tree.key tree -o sealed"

peak="$( { /usr/bin/time -f '%M' "$BIN" encrypt --recursive -q -j "$jobs" -k tree.key tree -o peak; } 2>&1 | tail -1)"
python3 - times.json "$peak" <<'EOF'
import json, statistics, sys
runs = {r["command"]: statistics.median(r["times"]) for r in json.load(open(sys.argv[1]))["results"]}
for name, t in runs.items():
    print(f"{name:>9}: {t:8.3f} s (median)")
ratio = lambda a, b: runs[a] / runs[b]
print(f"encrypt / cp -a:        {ratio('encrypt', 'cp'):.2f}x the time (target <= 1.0)")
print(f"age loop / encrypt:     {ratio('age-loop', 'encrypt'):.2f}x faster (target >= 5)")
print(f"rclone crypt / encrypt: {ratio('rclone', 'encrypt'):.2f}x faster (target >= 3)")
print(f"decrypt / cp -a:        {ratio('decrypt', 'cp'):.2f}x the time (target <= 1.0)")
print(f"update / encrypt:       {100 * ratio('update', 'encrypt'):.1f} % (target <= 5 %)")
print(f"peak resident memory of one encryption: {int(sys.argv[2]) >> 10} MiB")
EOF
