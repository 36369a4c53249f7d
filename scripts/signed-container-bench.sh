#!/usr/bin/env bash
# Signed containers against unsigned ones (issue #28 item 4: a signed container's encrypt and
# decrypt at least 0.9x the unsigned one's speed): `paracrypt encrypt` with and without
# `--sign` (Ed25519, and ML-DSA-65), and `paracrypt decrypt` with and without `--verify-with`,
# on the same page-cached file, all in one hyperfine run, outputs to /dev/null. Prints medians
# and the ratios (signed speed / unsigned speed).
#
#   bash scripts/signed-container-bench.sh                    # 1 GiB, 7 runs each, every core
#   SIZE_MIB=256 RUNS=5 THREADS=2 bash scripts/signed-container-bench.sh
#
# Needs a release build (it makes one; PARACRYPT=path/to/paracrypt skips it), hyperfine and
# python3. Figures taken on a shared machine are preliminary: rerun on an idle one.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-7}
THREADS=${THREADS:-$(nproc)}
DIR=${DIR:-$(mktemp -d /tmp/paracrypt-signed-bench.XXXXXX)}
for tool in hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
if [ -z "${PARACRYPT:-}" ]; then
  cargo build --release -q -p paracrypt-cli
fi
P=${PARACRYPT:-$PWD/target/release/paracrypt}
mkdir -p "$DIR"
head -c "${SIZE_MIB}M" /dev/urandom > "$DIR/in"
rm -f "$DIR"/key* "$DIR"/me.* "$DIR"/pq.*
"$P" keygen -o "$DIR/key"
"$P" keygen --kind ed25519 -o "$DIR/me.pem" --public-out "$DIR/me.pub" 2>/dev/null
"$P" keygen --kind ml-dsa-65 -o "$DIR/pq.pem" --public-out "$DIR/pq.pub" 2>/dev/null
E="$P encrypt -q -f -j$THREADS -k $DIR/key"
D="$P decrypt -q -j$THREADS -k $DIR/key"
$E "$DIR/in" -o "$DIR/plain.pcr"
$E --sign "$DIR/me.pem" "$DIR/in" -o "$DIR/ed.pcr"
$E --sign "$DIR/pq.pem" "$DIR/in" -o "$DIR/pq.pcr"
cat "$DIR"/in "$DIR"/*.pcr > /dev/null
hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$DIR/signed.json" \
  -n "encrypt" "$E $DIR/in -o /dev/null" \
  -n "encrypt --sign ed25519" "$E --sign $DIR/me.pem $DIR/in -o /dev/null" \
  -n "encrypt --sign ml-dsa-65" "$E --sign $DIR/pq.pem $DIR/in -o /dev/null" \
  -n "decrypt" "$D $DIR/plain.pcr -o /dev/null" \
  -n "decrypt --verify-with ed25519" "$D --verify-with $DIR/me.pub $DIR/ed.pcr -o /dev/null" \
  -n "decrypt --verify-with ml-dsa-65" "$D --verify-with $DIR/pq.pub $DIR/pq.pcr -o /dev/null" \
  >/dev/null
python3 - "$DIR/signed.json" "$SIZE_MIB" "$THREADS" <<'EOF'
import json, statistics, sys
results = {r["command"]: r["times"] for r in json.load(open(sys.argv[1]))["results"]}
mib, threads = int(sys.argv[2]), sys.argv[3]
median = {name: statistics.median(times) for name, times in results.items()}
print(f"{mib} MiB, -j{threads}")
for name, t in median.items():
    print(f"{name:34} median {t:7.3f} s  {mib / 1024 / t:6.2f} GiB/s  (min {min(results[name]):.3f} s)")
for op, flag in [("encrypt", "--sign"), ("decrypt", "--verify-with")]:
    for scheme in ["ed25519", "ml-dsa-65"]:
        ratio = median[op] / median[f"{op} {flag} {scheme}"]
        print(f"{op} {flag} {scheme}: {ratio:.2f}x the unsigned speed (target 0.9x)")
EOF
echo "(files in $DIR; remove it when done)"
