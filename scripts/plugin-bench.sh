#!/usr/bin/env bash
# One plugin session for many files (issue #36's target): a tree of FILES small files (1,000 by
# default, 1 KiB each) encrypted to the test plugin's recipient (`age-plugin-pctest`, which
# wraps in clear: its own cost is a process start and a few lines of protocol) and to an X25519
# recipient, then `decrypt --recursive` of each, RUNS times: prints the plugin's starts per
# decryption (the target: 1, whatever FILES is), the median time per file of each, and their
# ratio (the target: within 1.5x of X25519).
#
#   bash scripts/plugin-bench.sh                      # release binaries, built when missing
#   FILES=10000 RUNS=7 bash scripts/plugin-bench.sh target/release
#
# Each run writes into a fresh output directory (removed between runs); the input stays in the
# page cache (it is read once before). The two rows alternate run by run in one invocation, so
# their ratio holds on a shared machine even where the absolute figures do not.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
BIN=${1:-$here/target/release}
if [ ! -x "$BIN/paracrypt" ] || [ ! -x "$BIN/age-plugin-pctest" ]; then
  cargo build --release -q -p paracrypt-cli -p paracrypt-test-plugin
  BIN=$here/target/release
fi
FILES=${FILES:-1000}
RUNS=${RUNS:-5}
P=$BIN/paracrypt
export PATH="$BIN:$PATH"
unset PCTEST_FAIL PCTEST_ASK PCTEST_HALF PCTEST_SCRIPT PARACRYPT_PLUGIN_SECRET
work=$(mktemp -d "${TMPDIR:-/tmp}/plugin-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/plain"
for i in $(seq 1 "$FILES"); do
  head -c 1024 /dev/urandom >"$work/plain/f$i"
done
age-plugin-pctest bench >"$work/plugin.id"
plugin_recipient=$(sed -n 's/^# recipient: //p' "$work/plugin.id")
age-keygen -o "$work/x25519.key" 2>/dev/null
x25519_recipient=$(sed -n 's/^# public key: //p' "$work/x25519.key")
"$P" encrypt --recursive -r "$plugin_recipient" -o "$work/sealed-plugin" "$work/plain"
"$P" encrypt --recursive -r "$x25519_recipient" -o "$work/sealed-x25519" "$work/plain"
cat "$work"/sealed-*/* >/dev/null 2>&1 || true

# Wall-clock seconds of one `decrypt --recursive` with identity $1 of tree $2.
seconds() {
  rm -rf "$work/out"
  local t0 t1
  t0=$(date +%s.%N)
  "$P" decrypt --recursive -i "$1" -o "$work/out" "$2"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

# The median of a column of numbers.
median() {
  sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

rm -f "$work/starts.log"
rm -rf "$work/out"
PCTEST_LOG="$work/starts.log" "$P" decrypt --recursive -i "$work/plugin.id" -o "$work/out" \
  "$work/sealed-plugin"
starts=$(wc -l <"$work/starts.log")
cmp -s <(cd "$work/plain" && cat f*) <(cd "$work/out" && cat f*) || {
  echo "the plugin tree did not decrypt to its plaintext" >&2
  exit 1
}
# The two alternate, run by run, so that a load that comes and goes weighs on both alike.
: >"$work/x.times"
: >"$work/p.times"
for _ in $(seq 1 "$RUNS"); do
  seconds "$work/x25519.key" "$work/sealed-x25519" >>"$work/x.times"
  seconds "$work/plugin.id" "$work/sealed-plugin" >>"$work/p.times"
done
x=$(median <"$work/x.times")
p=$(median <"$work/p.times")
echo "files: $FILES of 1 KiB; runs: $RUNS (medians); $(nproc) cores"
echo "plugin starts for one decrypt --recursive: $starts (target: 1)"
printf 'x25519: %.1f us per file\n' "$(echo "$x * 1000000 / $FILES" | bc -l)"
printf 'plugin: %.1f us per file\n' "$(echo "$p * 1000000 / $FILES" | bc -l)"
printf 'plugin / x25519: %.2fx (target: within 1.5x)\n' "$(echo "$p / $x" | bc -l)"
