#!/usr/bin/env bash
# Makes the inputs of the refusal table (table.json) with real peers: paracrypt itself, age and
# openssl. Run from the repository root with a built binary:
#   bash tests/refusals/make.sh target/debug/paracrypt
# The files are committed (tests/refusals/files/); run this again only to change them.
set -euo pipefail
bin=$(realpath "$1")
cd "$(dirname "$0")"
rm -rf files
mkdir files
cd files

# The plaintext: 5000 bytes of text (five 1 KiB chunks in the containers below).
python3 -c 'import sys; sys.stdout.write("".join(f"line {i:04d} of the refusal table input\n" for i in range(200))[:5000])' >plain.txt
: >empty

# Secrets: a key file and another one, a password, an age identity, two signers.
"$bin" keygen -o key
"$bin" keygen -o wrong.key
printf 'correct horse battery staple\n' >password
age-keygen -o id.txt 2>/dev/null
recipient=$(age-keygen -y id.txt)
"$bin" keygen --kind ed25519 -o alice.pem --public-out alice.pub >/dev/null 2>&1
"$bin" keygen --kind ed25519 -o bob.pem --public-out bob.pub >/dev/null 2>&1
rm bob.pem

# Containers.
"$bin" encrypt -q --chunk-size 1KiB -k key plain.txt -o container.pcr
"$bin" encrypt -q --chunk-size 1KiB -k key --sign alice.pem plain.txt -o signed-alice.pcr
"$bin" encrypt -q --chunk-size 1KiB -p password plain.txt -o password.pcr
"$bin" encrypt -q --chunk-size 1KiB -r "$recipient" plain.txt -o recipients.pcr
# Cut after its third chunk: chunks of 1024 plaintext + 16 tag bytes after the header, the last
# one 904 + 16.
header=$(( $(stat -c %s container.pcr) - 4 * 1040 - 920 ))
head -c $(( header + 3 * 1040 )) container.pcr >truncated.pcr
# One byte of chunk 1 flipped.
cp container.pcr damaged.pcr
at=$(( header + 1040 + 100 ))
printf '\x5a' | dd of=damaged.pcr bs=1 seek=$at conv=notrunc status=none

# age files, by age: binary and armored; a passphrase file by paracrypt (age -p needs a terminal).
age -r "$recipient" -o x25519.age plain.txt
age -a -r "$recipient" -o x25519-armored.age plain.txt
PARACRYPT_PASSWORD='correct horse battery staple' "$bin" encrypt -q --format age --passphrase plain.txt -o passphrase.age

# To the test plugin's recipient (age-plugin-pctest, built beside the binary): by age and by
# paracrypt.
PATH="$(dirname "$bin"):$PATH" age-plugin-pctest table >pctest.id
plugin=$(sed -n 's/^# recipient: //p' pctest.id)
PATH="$(dirname "$bin"):$PATH" age -r "$plugin" -o pctest.age plain.txt
PATH="$(dirname "$bin"):$PATH" "$bin" encrypt -q --chunk-size 1KiB -r "$plugin" plain.txt -o pctest.pcr

# An openssl enc password file.
openssl enc -aes-256-cbc -pbkdf2 -pass file:password -in plain.txt -out salted.enc
