#!/usr/bin/env bash
# Makes the inputs of the refusal table (table.json) with real peers: paracrypt itself, age and
# openssl. Run from the repository root with a built binary:
#   bash tests/refusals/make.sh target/debug/paracrypt          # files/, trees/, signed-trees/
#   bash tests/refusals/make.sh target/debug/paracrypt trees    # trees/ and signed-trees/ only,
#                                                               # from files/'s secrets
# The files are committed (tests/refusals/files/, trees/, signed-trees/); run this again only
# to change them.
set -euo pipefail
bin=$(realpath "$1")
cd "$(dirname "$0")"
here=$PWD

# The encrypted trees of the table's `trees` rows (each made from trees/plain), from the secrets
# in files/. Each damaged tree is a whole tree with one thing changed, as an attacker with write
# access to the storage would change it.
make_trees() {
  cd "$here"
  rm -rf trees
  mkdir -p trees/plain/sub
  cd trees
  python3 -c 'import sys; sys.stdout.write("".join(f"line {i:04d} of a tree of the refusal table\n" for i in range(100)))' >plain/a.txt
  printf 'the second file\n' >plain/sub/b.txt
  printf 'the third file, a little longer than the second\n' >plain/sub/c.txt
  local f=../files recipient
  recipient=$(age-keygen -y $f/id.txt)
  tree() { "$bin" encrypt --recursive -q --chunk-size 1KiB "$@"; }
  tree -k $f/key plain -o key.tree
  tree -k $f/key --sign $f/alice.pem plain -o signed-alice.tree
  PARACRYPT_PASSWORD='correct horse battery staple' tree plain -o password.tree
  tree -r "$recipient" plain -o recipients.tree
  "$bin" encrypt --recursive -q --format age -r "$recipient" plain -o age.tree
  # The damaged trees are made from the tree to recipients, which every door opens and rekeys
  # (a tree of a key file cannot be rekeyed).
  # The manifest with one byte of its last chunk flipped.
  cp -a recipients.tree tampered.tree
  local m=tampered.tree/paracrypt-manifest
  printf '\x5a' | dd of=$m bs=1 seek=$(( $(stat -c %s $m) - 20 )) conv=notrunc status=none
  # Two files of the tree swapped: each is a complete file of the tree, in the other's place.
  cp -a recipients.tree swapped.tree
  mv swapped.tree/sub/b.txt.pcr swapped.tree/b.tmp
  mv swapped.tree/sub/c.txt.pcr swapped.tree/sub/b.txt.pcr
  mv swapped.tree/b.tmp swapped.tree/sub/c.txt.pcr
  # One file dropped.
  cp -a recipients.tree dropped.tree
  rm dropped.tree/sub/c.txt.pcr
  # An old manifest replayed: the tree updated after a.txt changed, then its first manifest put
  # back, so that the manifest lists a.txt's old header.
  cp -a recipients.tree replayed.tree
  cp -a plain plain2
  printf 'a.txt, changed\n' >plain2/a.txt
  touch -d '2001-01-01' plain2/a.txt
  tree -r "$recipient" -i $f/id.txt --update plain2 -o replayed.tree
  cp recipients.tree/paracrypt-manifest replayed.tree/paracrypt-manifest
  rm -rf plain2
  make_signed_trees
  cd "$here"
}

# The plaintext trees of the table's `signed-trees` rows and their signatures (`sign
# --recursive`): trees/plain signed by alice, then copies of it with one thing changed, as
# anyone who can write the tree would change it, and the signature with a byte flipped.
make_signed_trees() {
  cd "$here"
  rm -rf signed-trees
  mkdir signed-trees
  cd signed-trees
  local f=../files
  cp -a ../trees/plain plain
  "$bin" sign --recursive -k $f/alice.pem plain -o plain.psig
  # One byte of the signature block (at the end) flipped, then one of the manifest's body.
  cp plain.psig signature-flipped.psig
  printf '\x5a' | dd of=signature-flipped.psig bs=1 seek=$(( $(stat -c %s plain.psig) - 10 )) conv=notrunc status=none
  cp plain.psig manifest-flipped.psig
  local at
  at=$(grep -abo 'sub/b.txt' plain.psig | head -n1 | cut -d: -f1)
  printf 'X' | dd of=manifest-flipped.psig bs=1 seek=$(( at + 4 )) conv=notrunc status=none
  # A file changed (same size), one added, one removed, one renamed, two swapped.
  cp -a plain changed
  printf 'the 2nd file,..\n' >changed/sub/b.txt
  cp -a plain added
  printf 'a file nobody signed\n' >added/sub/d.txt
  cp -a plain removed
  rm removed/sub/c.txt
  cp -a plain renamed
  mv renamed/sub/c.txt renamed/sub/d.txt
  cp -a plain swapped
  mv swapped/sub/b.txt swapped/b.tmp
  mv swapped/sub/c.txt swapped/sub/b.txt
  mv swapped/b.tmp swapped/sub/c.txt
  cd "$here"
}

if [ "${2:-}" = trees ]; then
  make_trees
  exit 0
fi

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
printf '%s\n' "$recipient" >recipient.txt
"$bin" keygen --kind ed25519 -o alice.pem --public-out alice.pub >/dev/null 2>&1
"$bin" keygen --kind ed25519 -o bob.pem --public-out bob.pub >/dev/null 2>&1
rm bob.pem

# Containers.
"$bin" encrypt -q --chunk-size 1KiB -k key plain.txt -o container.pcr
"$bin" encrypt -q --chunk-size 1KiB -k key --sign alice.pem plain.txt -o signed-alice.pcr
"$bin" encrypt -q --chunk-size 1KiB --password-file password plain.txt -o password.pcr
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

make_trees
