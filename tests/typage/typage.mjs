// typage (npm age-encryption), driven by paracrypt's interop tests. Run it beside the
// node_modules that scripts/test.sh installs into target/typage:
//
//   node typage.mjs keygen-pq                  identity line, then recipient line, on stdout
//   node typage.mjs recipient IDENTITY_FILE    the recipient of the file's first identity
//   node typage.mjs encrypt RECIPIENT...       stdin → an age file on stdout
//   node typage.mjs decrypt IDENTITY_FILE      an age file (binary or armored) on stdin → stdout
//   node typage.mjs decrypt-passphrase PASS    the same, with a passphrase
//   node typage.mjs decrypt-tag IDENTITY_FILE  the same, with the test plugin's tag identities
//   node typage.mjs unwrap-tag IDENTITY_FILE   any bytes holding p256tag or mlkem768p256tag
//                                              stanzas (a container's header) on stdin → the
//                                              file key they unwrap to, in hex
//
// Identity files are age's: `#` comments and blank lines skipped. Errors go to stderr, exit 1.
//
// Tag identities: typage encrypts to age 1.3's tagged recipients (age1tag1…, age1tagpq1…) but,
// as the specification defines no identity for them, has none; TagIdentity is one, written here
// on the @noble packages typage itself builds on, from the specification alone: it reads the
// software keys of paracrypt's test plugin (`AGE-PLUGIN-PCTEST-1…` whose data is `p256tag:` or
// `mlkem768p256tag:` and 32 bytes) and is given to typage's Decrypter as an identity object.
import { readFileSync } from "node:fs";
import * as age from "age-encryption";
import { bech32, base64nopad } from "@scure/base";
import { p256 } from "@noble/curves/nist.js";
import { MLKEM768P256 } from "@noble/post-quantum/hybrid.js";
import { extract, expand } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { chacha20poly1305 } from "@noble/ciphers/chacha.js";

const [command, ...args] = process.argv.slice(2);

function identities(path) {
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

async function stdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return new Uint8Array(Buffer.concat(chunks));
}

const utf8 = (s) => new TextEncoder().encode(s);
const u16 = (n) => new Uint8Array([n >> 8, n & 0xff]);

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// RFC 9180's LabeledExtract and LabeledExpand (HKDF-SHA256).
function labeledExtract(suite, salt, label, ikm) {
  return extract(sha256, concat(utf8("HPKE-v1"), suite, utf8(label), ikm), salt);
}

function labeledExpand(suite, prk, label, info, length) {
  return expand(sha256, prk, concat(u16(length), utf8("HPKE-v1"), suite, utf8(label), info), length);
}

// RFC 9180 OpenBase with HKDF-SHA256 and ChaCha20-Poly1305, from the KEM's shared secret.
function openBase(kemId, sharedSecret, info, ciphertext) {
  const suite = concat(utf8("HPKE"), u16(kemId), u16(0x0001), u16(0x0003));
  const empty = new Uint8Array(0);
  const context = concat(
    new Uint8Array([0]),
    labeledExtract(suite, undefined, "psk_id_hash", empty),
    labeledExtract(suite, undefined, "info_hash", info),
  );
  const secret = labeledExtract(suite, sharedSecret, "secret", empty);
  const key = labeledExpand(suite, secret, "key", context, 32);
  const nonce = labeledExpand(suite, secret, "base_nonce", context, 12);
  return chacha20poly1305(key, nonce).decrypt(ciphertext);
}

// DHKEM(P-256, HKDF-SHA256) Decap (RFC 9180, section 4.1).
function dhkemP256Decap(enc, secretKey) {
  const suite = concat(utf8("KEM"), u16(0x0010));
  const dh = p256.getSharedSecret(secretKey, enc, true).subarray(1);
  const eaePrk = labeledExtract(suite, undefined, "eae_prk", dh);
  const kemContext = concat(enc, p256.getPublicKey(secretKey, false));
  return labeledExpand(suite, eaePrk, "shared_secret", kemContext, 32);
}

const TAG_KINDS = {
  p256tag: {
    kemId: 0x0010,
    encLen: 65,
    decap: dhkemP256Decap,
    // SHA-256 of the recipient (the compressed point), truncated.
    staticTag: (sk) => sha256(p256.getPublicKey(sk, true)).subarray(0, 4),
  },
  mlkem768p256tag: {
    kemId: 0x0050,
    encLen: 1153,
    decap: (enc, seed) => MLKEM768P256.decapsulate(enc, seed),
    // SHA-256 of the recipient's uncompressed P-256 point only, truncated.
    staticTag: (seed) => sha256(MLKEM768P256.getPublicKey(seed).subarray(1184)).subarray(0, 4),
  },
};

class TagIdentity {
  constructor(line) {
    const { prefix, words } = bech32.decode(line, false);
    const data = bech32.fromWords(words);
    const text = new TextDecoder("latin1").decode(data);
    const kind = Object.keys(TAG_KINDS).find((k) => text.startsWith(`${k}:`));
    if (prefix.toUpperCase() !== "AGE-PLUGIN-PCTEST-" || !kind || data.length !== kind.length + 33) {
      throw Error("not a tag identity of the test plugin");
    }
    this.kind = kind;
    this.secret = data.subarray(kind.length + 1);
    this.staticTag = TAG_KINDS[kind].staticTag(this.secret);
  }

  unwrapFileKey(stanzas) {
    const { kemId, encLen, decap } = TAG_KINDS[this.kind];
    const info = utf8(`age-encryption.org/${this.kind}`);
    for (const s of stanzas) {
      if (s.args[0] !== this.kind) continue;
      if (s.args.length !== 3) throw Error(`invalid ${this.kind} stanza`);
      const tag = base64nopad.decode(s.args[1]);
      const enc = base64nopad.decode(s.args[2]);
      if (tag.length !== 4 || enc.length !== encLen || s.body.length !== 32) {
        throw Error(`invalid ${this.kind} stanza`);
      }
      const expected = extract(sha256, concat(enc, this.staticTag), info).subarray(0, 4);
      if (!expected.every((b, i) => b === tag[i])) continue;
      return openBase(kemId, decap(enc, this.secret), info, s.body);
    }
    return null;
  }
}

// The p256tag and mlkem768p256tag stanzas among `bytes`, in age's encoding: the argument
// line, then the body in base64 lines of 64 columns, the last one shorter.
function tagStanzas(bytes) {
  const text = new TextDecoder("latin1").decode(bytes);
  const stanzas = [];
  for (const m of text.matchAll(/-> (p256tag|mlkem768p256tag) ([^\n]*)\n/g)) {
    let at = m.index + m[0].length;
    let body = "";
    for (;;) {
      const end = text.indexOf("\n", at);
      const line = text.slice(at, end);
      body += line;
      at = end + 1;
      if (line.length < 64) break;
    }
    stanzas.push({ args: [m[1], ...m[2].split(" ")], body: base64nopad.decode(body) });
  }
  return stanzas;
}

function hex(bytes) {
  return Buffer.from(bytes).toString("hex");
}

function write(bytes) {
  return new Promise((resolve, reject) =>
    process.stdout.write(bytes, (err) => (err ? reject(err) : resolve())),
  );
}

try {
  switch (command) {
    case "keygen-pq": {
      const identity = await age.generateHybridIdentity();
      await write(`${identity}\n${await age.identityToRecipient(identity)}\n`);
      break;
    }
    case "recipient": {
      await write(`${await age.identityToRecipient(identities(args[0])[0])}\n`);
      break;
    }
    case "encrypt": {
      const e = new age.Encrypter();
      for (const recipient of args) e.addRecipient(recipient);
      await write(await e.encrypt(await stdin()));
      break;
    }
    case "decrypt":
    case "decrypt-tag":
    case "decrypt-passphrase": {
      const d = new age.Decrypter();
      if (command === "decrypt-passphrase") d.addPassphrase(args[0]);
      else if (command === "decrypt-tag") {
        for (const line of identities(args[0])) d.addIdentity(new TagIdentity(line));
      } else for (const identity of identities(args[0])) d.addIdentity(identity);
      let file = await stdin();
      const text = new TextDecoder().decode(file.subarray(0, 64));
      if (text.trimStart().startsWith("-----BEGIN AGE ENCRYPTED FILE-----")) {
        file = age.armor.decode(new TextDecoder().decode(file));
      }
      await write(await d.decrypt(file));
      break;
    }
    case "unwrap-tag": {
      const stanzas = tagStanzas(await stdin());
      if (stanzas.length === 0) throw Error("no p256tag or mlkem768p256tag stanza");
      for (const line of identities(args[0])) {
        const key = new TagIdentity(line).unwrapFileKey(stanzas);
        if (key !== null) {
          await write(`${hex(key)}\n`);
          process.exit(0);
        }
      }
      throw Error("no identity matches");
    }
    default:
      throw new Error(`unknown command ${command}`);
  }
} catch (e) {
  process.stderr.write(`typage: ${e.message ?? e}\n`);
  process.exit(1);
}
