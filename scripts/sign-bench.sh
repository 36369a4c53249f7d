#!/usr/bin/env bash
# Signing a large file (issue #28's targets): `paracrypt sign` at 1 and 2 threads (Ed25519, the
# BLAKE3 tree hash) against the peers that sign one file on one core, on the same page-cached
# file, in one hyperfine run: `openssl dgst -sha256 -sign` (a P-256 key), `minisign -S`
# (prehashed BLAKE2b-512, an unencrypted key) and `ssh-keygen -Y sign` (SHA-512, Ed25519); then
# `paracrypt verify` at 1 and 2 threads. Prints medians and the ratios the issue asks for.
#
#   bash scripts/sign-bench.sh                 # 1 GiB, 7 runs each
#   SIZE_MIB=256 RUNS=5 bash scripts/sign-bench.sh
#
# Needs a release build (it makes one), hyperfine, openssl, minisign and ssh-keygen
# (`apt-get install -y hyperfine openssl minisign openssh-client`) and python3. Figures taken on
# a shared machine are preliminary: rerun on an idle one.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-7}
DIR=${DIR:-$(mktemp -d /tmp/paracrypt-sign-bench.XXXXXX)}
for tool in hyperfine openssl minisign ssh-keygen python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
# PARACRYPT=path/to/paracrypt skips the release build (a debug build optimises its
# dependencies and paracrypt-core, where the hashing is, as the release build does).
if [ -z "${PARACRYPT:-}" ]; then
  cargo build --release -q -p paracrypt-cli
fi
P=${PARACRYPT:-$PWD/target/release/paracrypt}
mkdir -p "$DIR"
head -c "${SIZE_MIB}M" /dev/urandom > "$DIR/in"
rm -f "$DIR"/key* "$DIR"/id* "$DIR"/mini* "$DIR"/p256*
"$P" keygen --kind ed25519 -o "$DIR/key.pem" --public-out "$DIR/key.pub" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out "$DIR/p256.pem" 2>/dev/null
ssh-keygen -q -t ed25519 -N '' -C '' -f "$DIR/id"
minisign -G -W -p "$DIR/mini.pub" -s "$DIR/mini.key" >/dev/null
"$P" sign -f -k "$DIR/key.pem" "$DIR/in"
cat "$DIR/in" > /dev/null
hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$DIR/sign.json" \
  --prepare "rm -f $DIR/in.sig $DIR/in.minisig; cat $DIR/in > /dev/null" \
  -n "paracrypt sign -j1" "$P sign -f -j1 -k $DIR/key.pem -o $DIR/out.psig $DIR/in" \
  -n "paracrypt sign -j2" "$P sign -f -j2 -k $DIR/key.pem -o $DIR/out.psig $DIR/in" \
  -n "openssl dgst -sha256 -sign" "openssl dgst -sha256 -sign $DIR/p256.pem -out $DIR/out.der $DIR/in" \
  -n "minisign -S" "minisign -S -s $DIR/mini.key -m $DIR/in -x $DIR/in.minisig" \
  -n "ssh-keygen -Y sign" "ssh-keygen -q -Y sign -f $DIR/id -n file $DIR/in" \
  -n "paracrypt verify -j1" "$P verify -j1 --public $DIR/key.pub $DIR/in" \
  -n "paracrypt verify -j2" "$P verify -j2 --public $DIR/key.pub $DIR/in" >/dev/null
python3 - "$DIR/sign.json" "$SIZE_MIB" <<'EOF'
import json, statistics, sys
results = {r["command"]: r["times"] for r in json.load(open(sys.argv[1]))["results"]}
mib = int(sys.argv[2])
median = {name: statistics.median(times) for name, times in results.items()}
for name, t in median.items():
    print(f"{name:30} median {t:7.3f} s  {mib / 1024 / t:6.2f} GiB/s  (min {min(results[name]):.3f} s)")
two = median["paracrypt sign -j2"]
print(f"sign -j2 against -j1: {median['paracrypt sign -j1'] / two:.2f}x (target 1.8x)")
for peer in ["openssl dgst -sha256 -sign", "minisign -S", "ssh-keygen -Y sign"]:
    print(f"sign -j2 against {peer}: {median[peer] / two:.2f}x (target 3x)")
print(f"verify -j2 against -j1: {median['paracrypt verify -j1'] / median['paracrypt verify -j2']:.2f}x")
EOF
echo "(files in $DIR; remove it when done)"
