#!/usr/bin/env bash
# What an AWS KMS recipient costs (issue #36 item 4), against moto's KMS on 127.0.0.1
# (tests/s3/server.py, the server of the S3 tests):
#
#   1. KMS requests per file, counted in the server's request log: encrypting to a KMS key,
#      decrypting with --kms, and decrypting with another recipient's key (target: 1, 1, 0);
#   2. KMS requests for a tree of FILES files (4,000) to a KMS key: encrypting it, decrypting it
#      with --kms, a write-only --update after one file changed, and decrypting it again
#      (target: 1, 1, 1, 2: one per run that sealed part of it);
#   3. a SIZE_MIB file (1 GiB) encrypted to a KMS key vs to an X25519 key, and decrypted with
#      --kms vs with the X25519 identity (target: within 1.02x), interleaved and shuffled by
#      scripts/compare.py, medians and ratios from one run.
#
#   bash scripts/kms-bench.sh                     # 1 GiB, 7 rounds, target/release/paracrypt
#   SIZE_MIB=256 ROUNDS=5 PARACRYPT=target/debug/paracrypt bash scripts/kms-bench.sh
#   TMPDIR=/dev/shm bash scripts/kms-bench.sh     # files on tmpfs: no disk writeback in the timings
#
# Needs target/s3-venv (scripts/test.sh makes it) and a paracrypt with the `s3` feature (the
# default build; the script builds the release binary unless PARACRYPT names one). A request to
# a local moto takes about a millisecond: on AWS add one round trip to the KMS region per file.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-7}
FILES=${FILES:-4000}
if [ -z "${PARACRYPT:-}" ]; then
  cargo build --release -q -p paracrypt-cli
  PARACRYPT=target/release/paracrypt
fi
P=$(realpath "$PARACRYPT")
DIR=$(mktemp -d "${TMPDIR:-/tmp}/paracrypt-kms.XXXXXX")
trap 'rm -rf "$DIR"' EXIT

# The server: commands on its stdin, answers on its stdout, its request log on stderr; it stops
# when its stdin closes (this script's end).
coproc SERVER { exec target/s3-venv/bin/python tests/s3/server.py 2>"$DIR/requests.log"; }
read -r _ port key secret <&"${SERVER[0]}"
echo '{"op": "kms_key", "alias": "alias/bench"}' >&"${SERVER[1]}"
read -r _ <&"${SERVER[0]}"
export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 \
  AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL_KMS

requests() { grep -c '"POST / HTTP' "$DIR/requests.log" || true; }
"$P" keygen --kind x25519 -o "$DIR/x.key" 2>"$DIR/x.pub"
X=$(sed -n 's/^Public key: //p' "$DIR/x.pub")
head -c 1000 /dev/urandom > "$DIR/small"

echo "== KMS requests per file (moto's request log)"
for format in paracrypt age; do
  before=$(requests)
  "$P" encrypt -q --format "$format" -r awskms:alias/bench -r "$X" -o "$DIR/small.$format" "$DIR/small"
  enc=$(( $(requests) - before )); before=$(requests)
  "$P" decrypt -q --kms -o /dev/null "$DIR/small.$format"
  dec=$(( $(requests) - before )); before=$(requests)
  "$P" decrypt -q -i "$DIR/x.key" -o /dev/null "$DIR/small.$format"
  other=$(( $(requests) - before ))
  echo "$format: encrypt $enc, decrypt --kms $dec, decrypt -i (X25519) $other"
done

echo "== KMS requests for a tree of $FILES files"
mkdir -p "$DIR/tree"
for i in $(seq 1 "$FILES"); do
  d="$DIR/tree/d$((i % 40))"; mkdir -p "$d"; printf 'file %s\n' "$i" > "$d/f$i"
done
export PARACRYPT_STATE_DIR="$DIR/state"
before=$(requests)
"$P" encrypt -q --recursive -r awskms:alias/bench -o "$DIR/tree.enc" "$DIR/tree"
enc=$(( $(requests) - before )); before=$(requests)
"$P" decrypt -q --recursive --kms -o "$DIR/tree.out" "$DIR/tree.enc"
dec=$(( $(requests) - before )); before=$(requests)
echo changed >> "$DIR/tree/d1/f1"
"$P" encrypt -q --recursive --update -r awskms:alias/bench -o "$DIR/tree.enc" "$DIR/tree"
upd=$(( $(requests) - before )); before=$(requests)
"$P" decrypt -q --recursive --kms -o "$DIR/tree.out2" "$DIR/tree.enc"
dec2=$(( $(requests) - before ))
echo "tree: encrypt $enc, decrypt --kms $dec, --update without identity $upd, decrypt again $dec2"
rm -rf "$DIR/tree" "$DIR/tree.enc" "$DIR/tree.out" "$DIR/tree.out2"

echo "== ${SIZE_MIB} MiB: KMS recipient vs X25519 recipient ($(nproc) cores, $ROUNDS rounds)"
head -c "$((SIZE_MIB << 20))" /dev/urandom > "$DIR/big"
"$P" encrypt -q -r awskms:alias/bench -o "$DIR/kms.pcr" "$DIR/big"
"$P" encrypt -q -r "$X" -o "$DIR/x.pcr" "$DIR/big"
prep="rm -f $DIR/out; sync; cat $DIR/big $DIR/kms.pcr $DIR/x.pcr > /dev/null"
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "encrypt-kms=$P encrypt -q -r awskms:alias/bench -o $DIR/out $DIR/big" \
  "encrypt-x25519=$P encrypt -q -r $X -o $DIR/out $DIR/big"
python3 scripts/compare.py --rounds "$ROUNDS" --prepare "$prep" \
  "decrypt-kms=$P decrypt -q --kms -o $DIR/out $DIR/kms.pcr" \
  "decrypt-x25519=$P decrypt -q -i $DIR/x.key -o $DIR/out $DIR/x.pcr"
