// typage (npm age-encryption), driven by paracrypt's interop tests. Run it beside the
// node_modules that scripts/test.sh installs into target/typage:
//
//   node typage.mjs keygen-pq                  identity line, then recipient line, on stdout
//   node typage.mjs recipient IDENTITY_FILE    the recipient of the file's first identity
//   node typage.mjs encrypt RECIPIENT...       stdin → an age file on stdout
//   node typage.mjs decrypt IDENTITY_FILE      an age file (binary or armored) on stdin → stdout
//   node typage.mjs decrypt-passphrase PASS    the same, with a passphrase
//
// Identity files are age's: `#` comments and blank lines skipped. Errors go to stderr, exit 1.
import { readFileSync } from "node:fs";
import * as age from "age-encryption";

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
    case "decrypt-passphrase": {
      const d = new age.Decrypter();
      if (command === "decrypt-passphrase") d.addPassphrase(args[0]);
      else for (const identity of identities(args[0])) d.addIdentity(identity);
      let file = await stdin();
      const text = new TextDecoder().decode(file.subarray(0, 64));
      if (text.trimStart().startsWith("-----BEGIN AGE ENCRYPTED FILE-----")) {
        file = age.armor.decode(new TextDecoder().decode(file));
      }
      await write(await d.decrypt(file));
      break;
    }
    default:
      throw new Error(`unknown command ${command}`);
  }
} catch (e) {
  process.stderr.write(`typage: ${e.message ?? e}\n`);
  process.exit(1);
}
