//! `age-plugin-pctest`: the age plugin of paracrypt's tests, built with rage's `age-plugin`
//! crate (the plugin side of C2SP's age-plugin protocol), as rage's own
//! `age-plugin-unencrypted` example is. It wraps file keys **in clear**: it exists so that
//! paracrypt's plugin client, age and rage can be tested against a real plugin process, and
//! protects nothing.
//!
//! Keys are names: `age-plugin-pctest [NAME]` prints a new identity for NAME (default `test`)
//! as age plugins do (`# recipient: age1pctest1…`, then `AGE-PLUGIN-PCTEST-1…`). A stanza is
//! `-> pctest HEX(NAME)` with the file key as its body; an identity opens the stanzas of its
//! own name, and an identity given as a recipient wraps to its name too.
//!
//! `age-plugin-pctest --p256tag` and `--mlkem768p256tag` print a new *tag identity* instead: a
//! software key for age 1.3's tagged recipients (`# recipient: age1tag1…` or `age1tagpq1…`),
//! whose `p256tag` and `mlkem768p256tag` stanzas it unwraps as `age-plugin-yubikey` does
//! ([`tag`]). A malformed stanza of its type is refused with an `error` for that stanza.
//!
//! Switches, read from the environment (the client starts the plugin with its own):
//! - `PCTEST_LOG=FILE`: appends one line per start (the state machine's name), so that a test
//!   counts the plugin's sessions.
//! - `PCTEST_FAIL=start`: exits with status 1 and a line on stderr before reading anything;
//!   `crash`: panics while wrapping or unwrapping (status 101); `hang`: never answers;
//!   `garbage`: writes a line that is not the protocol, then exits; `refuse`: answers with an
//!   `error` for its first identity or recipient (what a plugin says when its key refuses).
//! - `PCTEST_HALF=recipient|identity`: knows only that state machine, and refuses the other.
//! - `PCTEST_ASK=msg,confirm,public,secret` (any of them, in this order): before using a key,
//!   shows a message, asks to confirm (`yes` is needed), asks for a public value (it must be
//!   `PCTEST_PUBLIC`, default `slot-1`) and for a secret (it must be `PCTEST_PIN`, default
//!   `1234`); a wrong or missing answer is an `error` for the identity or recipient.
//! - `PCTEST_SCRIPT=FILE`: does not speak the protocol itself: reads the client's first phase,
//!   then writes FILE's bytes as they are and reads whatever comes back. For the tests of what
//!   a client must tolerate (grease) or refuse (answers out of protocol).

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Write};

use age_core::format::{FileKey, Stanza};
use age_core::secrecy::ExposeSecret;
use age_plugin::identity::{self, IdentityPluginV1};
use age_plugin::recipient::{self, RecipientPluginV1};
use age_plugin::{Callbacks, PluginHandler, print_new_identity, run_state_machine};

mod tag;

const NAME: &str = "pctest";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn failing(how: &str) -> bool {
    env("PCTEST_FAIL").as_deref() == Some(how)
}

fn asks(what: &str) -> bool {
    env("PCTEST_ASK").is_some_and(|all| all.split(',').any(|one| one == what))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What `crash`, `hang` and `garbage` do where the plugin would wrap or unwrap.
fn misbehave() {
    if failing("crash") {
        panic!("age-plugin-pctest crashed on purpose (PCTEST_FAIL=crash)");
    }
    if failing("hang") {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    if failing("garbage") {
        let mut out = io::stdout();
        let _ = out.write_all(b"this is not the age plugin protocol\n");
        let _ = out.flush();
        std::process::exit(0);
    }
}

/// The interactions `PCTEST_ASK` asks for, for the key `name`: `Err(message)` when an answer
/// is missing or wrong.
fn interact<E>(callbacks: &mut impl Callbacks<E>, name: &str) -> io::Result<Result<(), String>> {
    if asks("msg") {
        let _ = callbacks.message(&format!("touch the test key {name}"))?;
    }
    if asks("confirm") {
        match callbacks.confirm(&format!("use the test key {name}?"), "yes", Some("no"))? {
            Ok(true) => {}
            Ok(false) => return Ok(Err("not confirmed".into())),
            Err(_) => return Ok(Err("no confirmation given".into())),
        }
    }
    if asks("public") {
        let want = env("PCTEST_PUBLIC").unwrap_or_else(|| "slot-1".into());
        match callbacks.request_public(&format!("which slot holds the test key {name}?"))? {
            Ok(got) if got == want => {}
            Ok(_) => return Ok(Err("wrong slot".into())),
            Err(_) => return Ok(Err("no slot given".into())),
        }
    }
    if asks("secret") {
        let want = env("PCTEST_PIN").unwrap_or_else(|| "1234".into());
        match callbacks.request_secret(&format!("enter the PIN of the test key {name}"))? {
            Ok(got) if got.expose_secret() == want => {}
            Ok(_) => return Ok(Err("wrong PIN".into())),
            Err(_) => return Ok(Err("no PIN given".into())),
        }
    }
    Ok(Ok(()))
}

struct Handler;

impl PluginHandler for Handler {
    type RecipientV1 = Wrap;
    type IdentityV1 = Unwrap;

    fn recipient_v1(self) -> io::Result<Wrap> {
        if env("PCTEST_HALF").as_deref() == Some("identity") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "age-plugin-pctest was told to know only identity-v1 (PCTEST_HALF)",
            ));
        }
        Ok(Wrap::default())
    }

    fn identity_v1(self) -> io::Result<Unwrap> {
        if env("PCTEST_HALF").as_deref() == Some("recipient") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "age-plugin-pctest was told to know only recipient-v1 (PCTEST_HALF)",
            ));
        }
        Ok(Unwrap::default())
    }
}

/// `recipient-v1`: the names to wrap to, recipients and identities in one list (an identity
/// wraps to its own name).
#[derive(Default)]
struct Wrap {
    names: Vec<(Vec<u8>, Who)>,
}

#[derive(Clone, Copy)]
enum Who {
    Recipient(usize),
    Identity(usize),
}

impl RecipientPluginV1 for Wrap {
    fn add_recipient(
        &mut self,
        index: usize,
        plugin_name: &str,
        bytes: &[u8],
    ) -> Result<(), recipient::Error> {
        if plugin_name != NAME {
            return Err(recipient::Error::Recipient {
                index,
                message: format!("not a {NAME} recipient"),
            });
        }
        self.names.push((bytes.to_vec(), Who::Recipient(index)));
        Ok(())
    }

    fn add_identity(
        &mut self,
        index: usize,
        plugin_name: &str,
        bytes: &[u8],
    ) -> Result<(), recipient::Error> {
        if plugin_name != NAME {
            return Err(recipient::Error::Identity {
                index,
                message: format!("not a {NAME} identity"),
            });
        }
        if tag::TagKey::from_identity(bytes).is_some() {
            return Err(recipient::Error::Identity {
                index,
                message: "a tag identity: encrypt to its age1tag1… recipient".into(),
            });
        }
        self.names.push((bytes.to_vec(), Who::Identity(index)));
        Ok(())
    }

    fn labels(&mut self) -> HashSet<String> {
        HashSet::new()
    }

    fn wrap_file_keys(
        &mut self,
        file_keys: Vec<FileKey>,
        mut callbacks: impl Callbacks<recipient::Error>,
    ) -> io::Result<Result<Vec<Vec<Stanza>>, Vec<recipient::Error>>> {
        misbehave();
        let mut errors = Vec::new();
        for (name, who) in &self.names {
            let refused = if failing("refuse") && errors.is_empty() {
                Err("the test key refused (PCTEST_FAIL=refuse)".to_owned())
            } else {
                interact(&mut callbacks, &String::from_utf8_lossy(name))?
            };
            if let Err(message) = refused {
                errors.push(match *who {
                    Who::Recipient(index) => recipient::Error::Recipient { index, message },
                    Who::Identity(index) => recipient::Error::Identity { index, message },
                });
            }
        }
        if !errors.is_empty() {
            return Ok(Err(errors));
        }
        Ok(Ok(file_keys
            .iter()
            .map(|file_key| {
                self.names
                    .iter()
                    .map(|(name, _)| Stanza {
                        tag: NAME.to_owned(),
                        args: vec![hex(name)],
                        body: file_key.expose_secret().to_vec(),
                    })
                    .collect()
            })
            .collect()))
    }
}

/// `identity-v1`: the names of the identities given, and the tag identities' keys.
#[derive(Default)]
struct Unwrap {
    names: Vec<String>,
    tags: Vec<tag::TagKey>,
}

impl IdentityPluginV1 for Unwrap {
    fn add_identity(
        &mut self,
        index: usize,
        plugin_name: &str,
        bytes: &[u8],
    ) -> Result<(), identity::Error> {
        if plugin_name != NAME {
            return Err(identity::Error::Identity {
                index,
                message: format!("not a {NAME} identity"),
            });
        }
        match tag::TagKey::from_identity(bytes) {
            Some(Ok(key)) => self.tags.push(key),
            Some(Err(message)) => return Err(identity::Error::Identity { index, message }),
            None => self.names.push(hex(bytes)),
        }
        Ok(())
    }

    fn unwrap_file_keys(
        &mut self,
        files: Vec<Vec<Stanza>>,
        mut callbacks: impl Callbacks<identity::Error>,
    ) -> io::Result<HashMap<usize, Result<FileKey, Vec<identity::Error>>>> {
        misbehave();
        let mut keys = HashMap::new();
        for (file, stanzas) in files.into_iter().enumerate() {
            'stanzas: for (at, stanza) in stanzas.iter().enumerate() {
                for key in &self.tags {
                    match key.unwrap(stanza) {
                        None => {}
                        Some(Ok(file_key)) => {
                            keys.insert(file, Ok(file_key));
                            break 'stanzas;
                        }
                        Some(Err(message)) => {
                            keys.insert(
                                file,
                                Err(vec![identity::Error::Stanza {
                                    file_index: file,
                                    stanza_index: at,
                                    message,
                                }]),
                            );
                            break 'stanzas;
                        }
                    }
                }
                if stanza.tag != NAME {
                    continue;
                }
                let Some(index) = self
                    .names
                    .iter()
                    .position(|n| stanza.args.first() == Some(n))
                else {
                    continue;
                };
                if failing("refuse") {
                    keys.insert(
                        file,
                        Err(vec![identity::Error::Identity {
                            index,
                            message: "the test key refused (PCTEST_FAIL=refuse)".into(),
                        }]),
                    );
                    break;
                }
                let name = stanza.args[0].clone();
                if let Err(message) = interact(&mut callbacks, &name)? {
                    keys.insert(
                        file,
                        Err(vec![identity::Error::Identity { index, message }]),
                    );
                    break;
                }
                let key: Result<[u8; 16], _> = stanza.body[..].try_into();
                keys.insert(
                    file,
                    match key {
                        Ok(key) => Ok(FileKey::new(Box::new(key))),
                        Err(_) => Err(vec![identity::Error::Stanza {
                            file_index: file,
                            stanza_index: at,
                            message: "a pctest stanza's body is a 16-byte file key".into(),
                        }]),
                    },
                );
                break;
            }
        }
        Ok(keys)
    }
}

/// `PCTEST_SCRIPT`: reads the client's first phase (to its `done`), writes the script, then
/// reads whatever the client answers until it closes the pipe.
fn play(script: &str) -> io::Result<()> {
    let bytes = std::fs::read(script)?;
    let stdin = io::stdin();
    let mut lines = stdin.lock().lines();
    for line in lines.by_ref() {
        if line? == "-> done" {
            break;
        }
    }
    let mut out = io::stdout();
    out.write_all(&bytes)?;
    out.flush()?;
    for line in lines {
        line?;
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let state_machine = args.iter().find_map(|a| a.strip_prefix("--age-plugin="));
    let Some(state_machine) = state_machine else {
        if let Some((data, recipient)) = args
            .first()
            .and_then(|a| a.strip_prefix("--"))
            .and_then(tag::TagKey::generate)
        {
            let identity = age_core::primitives::bech32_encode(
                bech32::Hrp::parse(&format!("age-plugin-{NAME}-")).expect("a valid prefix"),
                &data,
            );
            println!("# recipient: {recipient}");
            println!("{}", identity.to_uppercase());
            return Ok(());
        }
        let name = args.first().map_or("test", String::as_str);
        print_new_identity(NAME, name.as_bytes(), name.as_bytes());
        return Ok(());
    };
    if let Some(log) = env("PCTEST_LOG") {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(file, "{state_machine}")?;
    }
    if failing("start") {
        eprintln!("age-plugin-pctest: failing at start (PCTEST_FAIL=start)");
        std::process::exit(1);
    }
    if let Some(script) = env("PCTEST_SCRIPT") {
        return play(&script);
    }
    run_state_machine(state_machine, Handler)
}
