//! rage's plugin client as a second peer for age plugins (issue #36 item 5): the `age` crate's
//! `age::plugin` (`RecipientPluginV1`, `IdentityPluginV1`), the library the `rage` binary is a
//! thin CLI over, against paracrypt's own client (paracrypt-core's `recipient::plugin`, written
//! independently of it), both ways, binary and armored, with the test plugin
//! `age-plugin-pctest` (tests/age-plugin). Then age 1.3's tagged recipients: the age crate
//! encrypts to `age1tag1…` and `age1tagpq1…` (`age::tag`, `age::tagpq`) and its plugin client
//! opens what paracrypt writes to them through the test plugin's tag identities.
//!
//! The `rage` binary itself takes about 10 minutes to build (docs/guide/plugins-and-kms.md,
//! "Which plugins were tried"); its library is already compiled here. The age crate finds a
//! plugin on its own process's PATH, so it runs in a child of this test binary (the ignored
//! test [`age_crate_client`]) started with the test plugin on PATH.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;
use crate::plugin::{pc, plugin_dir, with_plugin};

/// The child's orders: `encrypt` or `decrypt`; the recipients (or the identity file); armor;
/// the input and output files.
const OP: &str = "PC_AGE_CRATE_OP";
const KEYS: &str = "PC_AGE_CRATE_KEYS";
const ARMOR: &str = "PC_AGE_CRATE_ARMOR";
const INPUT: &str = "PC_AGE_CRATE_IN";
const OUTPUT: &str = "PC_AGE_CRATE_OUT";

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `setsid` is there (paracrypt runs under it, detached from any terminal), or the test says so
/// and passes, except in CI.
fn have_tools() -> bool {
    have("setsid", "--version")
}

/// The age crate's user interface for plugins: there is none. A message is dropped and every
/// request is answered `fail` (`None`), as rage does without a terminal.
#[derive(Clone)]
struct NoUi;

impl age::Callbacks for NoUi {
    fn display_message(&self, _message: &str) {}

    fn confirm(&self, _message: &str, _yes: &str, _no: Option<&str>) -> Option<bool> {
        None
    }

    fn request_public_string(&self, _description: &str) -> Option<String> {
        None
    }

    fn request_passphrase(&self, _description: &str) -> Option<age::secrecy::SecretString> {
        None
    }
}

/// The child: does what [`OP`] says with the age crate alone, or, when not started by
/// [`age_crate`], says so and does nothing.
#[test]
#[ignore = "the age crate's side of rage:: tests, run by them in a child with the plugin on PATH"]
fn age_crate_client() {
    use std::io::{Read, Write};
    let Ok(op) = std::env::var(OP) else {
        eprintln!("rage::age_crate_client runs only as the child of the rage:: tests");
        return;
    };
    let keys = std::env::var(KEYS).unwrap();
    let armor = std::env::var(ARMOR).unwrap() == "1";
    let input = std::fs::read(std::env::var(INPUT).unwrap()).unwrap();
    let mut output = Vec::new();
    match op.as_str() {
        "encrypt" => {
            // A plugin's recipients go to one RecipientPluginV1; tagged recipients are native
            // to age 1.3 (and to the age crate 0.12).
            let mut plugin = Vec::new();
            let mut recipients: Vec<Box<dyn age::Recipient>> = Vec::new();
            for key in keys.lines() {
                if key.starts_with("age1tagpq1") {
                    recipients.push(Box::new(key.parse::<age::tagpq::Recipient>().unwrap()));
                } else if key.starts_with("age1tag1") {
                    recipients.push(Box::new(key.parse::<age::tag::Recipient>().unwrap()));
                } else {
                    plugin.push(key.parse::<age::plugin::Recipient>().unwrap());
                }
            }
            if !plugin.is_empty() {
                let name = plugin[0].plugin().to_owned();
                recipients.push(Box::new(
                    age::plugin::RecipientPluginV1::new(&name, &plugin, &[], NoUi).unwrap(),
                ));
            }
            let encryptor =
                age::Encryptor::with_recipients(recipients.iter().map(|r| r.as_ref() as _))
                    .unwrap();
            let format = if armor {
                age::armor::Format::AsciiArmor
            } else {
                age::armor::Format::Binary
            };
            let armored = age::armor::ArmoredWriter::wrap_output(&mut output, format).unwrap();
            let mut writer = encryptor.wrap_output(armored).unwrap();
            writer.write_all(&input).unwrap();
            writer.finish().unwrap().finish().unwrap();
        }
        "decrypt" => {
            // `KEYS` is an identity file: its `AGE-PLUGIN-…` lines, to IdentityPluginV1.
            let identities: Vec<age::plugin::Identity> = std::fs::read_to_string(&keys)
                .unwrap()
                .lines()
                .filter(|l| l.starts_with("AGE-PLUGIN-"))
                .map(|l| l.parse().unwrap())
                .collect();
            let name = identities[0].plugin().to_owned();
            let identity = age::plugin::IdentityPluginV1::new(&name, &identities, NoUi).unwrap();
            let reader = age::armor::ArmoredReader::new(input.as_slice());
            age::Decryptor::new_buffered(reader)
                .unwrap()
                .decrypt(std::iter::once(&identity as &dyn age::Identity))
                .unwrap()
                .read_to_end(&mut output)
                .unwrap();
        }
        other => panic!("{OP}={other}"),
    }
    std::fs::write(std::env::var(OUTPUT).unwrap(), output).unwrap();
}

/// The age crate does `op` (`encrypt` to `keys`, the recipients; `decrypt` with `keys`, an
/// identity file) from `input` to `output`, in a child of this test binary with the test plugin
/// on PATH.
fn age_crate(op: &str, keys: &[&str], armor: bool, input: &Path, output: &Path) -> Output {
    let mut cmd = with_plugin(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "rage::age_crate_client",
        "--ignored",
        "--nocapture",
    ])
    .env(OP, op)
    .env(KEYS, keys.join("\n"))
    .env(ARMOR, if armor { "1" } else { "0" })
    .env(INPUT, input)
    .env(OUTPUT, output);
    run(cmd)
}

/// Asserts that the age crate's child succeeded (its one test ran and passed).
#[track_caller]
fn age_crate_ok(out: Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the age crate failed ({:?}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new identity of the test plugin, written to DIR/NAME.id: (path, recipient). `kind` is
/// `None` for a plain one (`age1pctest1…`), else `p256tag` or `mlkem768p256tag`.
fn identity(dir: &Path, name: &str, kind: Option<&str>) -> (PathBuf, String) {
    let mut cmd = with_plugin(plugin_dir().join("age-plugin-pctest"));
    match kind {
        Some(kind) => cmd.arg(format!("--{kind}")),
        None => cmd.arg(name),
    };
    let text = String::from_utf8(ok(run(cmd))).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# recipient: "))
        .expect("a recipient line")
        .to_owned();
    (
        write(dir, &format!("{name}.id"), text.as_bytes()),
        recipient,
    )
}

/// The age crate encrypts `plain` to `recipient` (binary and armored) and paracrypt's client
/// opens it with `id`.
fn age_crate_to_paracrypt(d: &Path, recipient: &str, id: &Path, plain: &[u8]) {
    let d = &tempfile::tempdir_in(d).unwrap();
    let d = d.path();
    let input = write(d, "plain", plain);
    for armor in [false, true] {
        let sealed = d.join(format!("sealed-{armor}.age"));
        age_crate_ok(age_crate("encrypt", &[recipient], armor, &input, &sealed));
        let file = std::fs::read(&sealed).unwrap();
        assert_eq!(
            file.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----"),
            armor
        );
        let out = d.join(format!("out-{armor}"));
        ok(pc(
            &["decrypt", "-i", s(id), "-o", s(&out), s(&sealed)],
            &[],
        ));
        assert_eq!(std::fs::read(&out).unwrap(), plain, "armor {armor}");
    }
}

/// paracrypt's client encrypts `plain` to `recipient` (binary and armored) and the age crate's
/// plugin client opens it with `id`.
fn paracrypt_to_age_crate(d: &Path, recipient: &str, id: &Path, plain: &[u8]) {
    let d = &tempfile::tempdir_in(d).unwrap();
    let d = d.path();
    let input = write(d, "plain", plain);
    for armor in [false, true] {
        let sealed = d.join(format!("sealed-{armor}.age"));
        let mut args = vec![
            "encrypt",
            "--format",
            "age",
            "-r",
            recipient,
            "-o",
            s(&sealed),
            s(&input),
        ];
        if armor {
            args.insert(3, "--armor");
        }
        ok(pc(&args, &[]));
        let file = std::fs::read(&sealed).unwrap();
        assert_eq!(
            file.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----"),
            armor
        );
        let out = d.join(format!("out-{armor}"));
        age_crate_ok(age_crate("decrypt", &[s(id)], armor, &sealed, &out));
        assert_eq!(std::fs::read(&out).unwrap(), plain, "armor {armor}");
    }
}

#[test]
fn the_age_crate_encrypts_to_the_plugin_and_paracrypt_decrypts_binary_and_armored() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "alice", None);
    assert!(recipient.starts_with("age1pctest1"), "{recipient}");
    age_crate_to_paracrypt(d, &recipient, &id, &data(200 * 1024 + 7, 51));
}

#[test]
fn paracrypt_encrypts_to_the_plugin_and_the_age_crate_decrypts_binary_and_armored() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "bob", None);
    paracrypt_to_age_crate(d, &recipient, &id, &data(130 * 1024, 52));
}

/// Tagged recipients both ways: the age crate's native `p256tag` and `mlkem768p256tag`
/// recipients and its plugin client (`identity-v1` hands the plugin every stanza, and the test
/// plugin's tag identity unwraps those of its type).
#[test]
fn tagged_recipients_between_the_age_crate_and_paracrypt_both_ways() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    for (i, kind) in ["p256tag", "mlkem768p256tag"].into_iter().enumerate() {
        let (id, recipient) = identity(d, kind, Some(kind));
        let plain = data(70_000 + i, 53 + i as u8);
        age_crate_to_paracrypt(d, &recipient, &id, &plain);
        paracrypt_to_age_crate(d, &recipient, &id, &plain);
    }
}
