#!/usr/bin/env bash
# Issue #51's target for a backup host that holds no identity: on a tree of FILES (default 4000)
# files log-uniform from 1 KiB to 4 MiB plus BIG (default 4) files of BIG_MIB (default 128) MiB,
# on tmpfs, at -j JOBS (default 2), hyperfine medians (ROUNDS, default 5) of
#   - the full encryption to an X25519 recipient (`-r`, no identity anywhere),
#   - `--update -r` after one file changed, kept from the host's record (no identity),
#   - the same update of a key-file tree (`-k`), for comparison.
# Target: the write-only update <= 5 % of the full run, as for key-file trees.
#
#   BIN=target/release/paracrypt bash scripts/backup-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts="$PWD/scripts"
files="${FILES:-4000}"; big="${BIG:-4}"; big_mib="${BIG_MIB:-128}"
jobs="${JOBS:-2}"; rounds="${ROUNDS:-5}"
command -v hyperfine >/dev/null || { echo "backup-bench: needs hyperfine" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p paracrypt-cli
  BIN="$PWD/target/release/paracrypt"
fi
BIN="$(realpath "$BIN")"
work="$(mktemp -d /dev/shm/paracrypt-backup-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# The record of the trees this run writes, away from the user's own.
export PARACRYPT_STATE_DIR="$work/state"
python3 "$scripts/make-tree.py" tree "$files" "$big" "$big_mib" 2.2
"$BIN" keygen -o tree.key 2>/dev/null
"$BIN" keygen --kind x25519 -o id.key 2>/dev/null
recipient="$("$BIN" keygen -y id.key)"
mv id.key "$work/.."/paracrypt-backup-bench-id.$$   # no identity on this "host"
trap 'rm -rf "$work" "$work/../paracrypt-backup-bench-id.$$"' EXIT
"$BIN" encrypt --recursive -q -j "$jobs" -r "$recipient" tree -o to-r
"$BIN" encrypt --recursive -q -j "$jobs" -k tree.key tree -o to-k
hyperfine --style basic --runs "$rounds" --export-json times.json \
  -n encrypt-r --prepare 'rm -rf full' "$BIN encrypt --recursive -q -j $jobs -r $recipient tree -o full" \
  -n update-r --prepare "head -c 1000 /dev/urandom >> tree/d00/e00/f00000" \
    "$BIN encrypt --recursive --update -q -j $jobs -r $recipient tree -o to-r" \
  -n update-k --prepare "head -c 1000 /dev/urandom >> tree/d00/e00/f00000" \
    "$BIN encrypt --recursive --update -q -j $jobs -k tree.key tree -o to-k"
python3 - times.json <<'PY'
import json, statistics, sys
runs = {r["command"]: statistics.median(r["times"]) for r in json.load(open(sys.argv[1]))["results"]}
for name, t in runs.items():
    print(f"{name:>10}: {t:8.3f} s (median)")
print(f"write-only update / full run: {100 * runs['update-r'] / runs['encrypt-r']:.1f} % (target <= 5 %)")
print(f"key-file update / full run:   {100 * runs['update-k'] / runs['encrypt-r']:.1f} %")
PY
