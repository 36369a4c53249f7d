//! Encrypting to people: recipients (public keys a file key is wrapped for) and identities
//! (the private keys that unwrap it), as age defines them.
//!
//! Parsing, wrapping and the stanzas are the `age` crate's (its [`Recipient`](age::Recipient)
//! and [`Identity`](age::Identity) traits, the one joint every recipient kind plugs into);
//! paracrypt adds RSA keys in PEM or DER, through the same traits, on its own RSA code
//! ([`rsa`]).
//!
//! | recipient | identity | stanza |
//! |---|---|---|
//! | `age1pq1…` (ML-KEM-768 + X25519, post-quantum: [`pq`]) | `AGE-SECRET-KEY-PQ-1…` lines | `mlkem768x25519` |
//! | `age1…` (X25519) | `AGE-SECRET-KEY-1…` lines | `X25519` |
//! | `age1tag1…` (P-256, a hardware key's: [`tag`]) | its plugin's `AGE-PLUGIN-NAME-1…` lines | `p256tag` |
//! | `age1tagpq1…` (ML-KEM-768 + P-256, post-quantum, a hardware key's: [`tag`]) | its plugin's `AGE-PLUGIN-NAME-1…` lines | `mlkem768p256tag` |
//! | `ssh-ed25519 AAAA…` | an OpenSSH ed25519 private key | `ssh-ed25519` |
//! | `ssh-rsa AAAA…` | an OpenSSH RSA private key | `ssh-rsa` |
//! | an RSA public key, PEM or DER (SPKI, PKCS#1) | the RSA private key, PEM or DER (PKCS#8, PKCS#1), as `paracrypt rsa keygen` writes it | `ssh-rsa` |
//! | a passphrase | the passphrase | `scrypt` (alone in a file) |
//! | `age1NAME1…` (an age plugin's: [`plugin`]) | `AGE-PLUGIN-NAME-1…` lines | the plugin's |
//! | `awskms:KEY` (an AWS KMS key: [`kms`]) | the caller's AWS credentials ([`Identities::set_kms`]) | `awskms` |
//!
//! A plugin identity may also be given where recipients are (the plugin then wraps to the key
//! it names, as `age -e -i` does); plugins run as `age-plugin-NAME` from `PATH`, one session
//! per plugin for all its recipients or identities ([`Identities::unwrap_many`] opens many
//! files in one).
//!
//! An RSA key in PEM gets age's own `ssh-rsa` stanza (RSA-OAEP-SHA256 with age's label, tagged
//! with the key's SSH encoding), so `age -d -i id_rsa` opens such a file with the same key in
//! OpenSSH form. EC (P-256) keys are signing keys (`paracrypt ecdsa`): they are not a recipient
//! kind, and using one says so.
//!
//! ```
//! use age::secrecy::ExposeSecret;
//! use paracrypt_core::recipient::{FileKey, Identities, Recipients};
//!
//! let me = age::x25519::Identity::generate();
//! let mut recipients = Recipients::new();
//! recipients.add(&me.to_public().to_string(), "recipient 1")?;
//! let key = FileKey::new(Box::new([7; 16]));
//! let stanzas = recipients.wrap(&key)?;
//!
//! let mut identities = Identities::new();
//! identities.add_file("me.key", me.to_string().expose_secret().as_bytes())?;
//! assert_eq!(identities.unwrap(&stanzas)?.expose_secret(), &[7; 16]);
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

pub mod kms;
pub mod plugin;
pub mod pq;
pub mod rsa;
pub mod tag;

use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use zeroize::Zeroizing;

use age::secrecy::{ExposeSecret, SecretString};
pub use age_core::format::{FILE_KEY_BYTES, FileKey, Stanza};

use crate::error::{Error, Result};
use crate::pubkey::pem::{self, KeyFile};

/// The stanza tag of a passphrase (age's scrypt recipient).
pub(crate) const SCRYPT_TAG: &str = "scrypt";

/// The highest scrypt work factor (`log2 N`) a file may ask for: age's own cap, about a second
/// and 1 GiB at 2^20, so 2^22 is about four seconds and 4 GiB. A file that claims more is
/// refused before any scrypt work, whatever limit a caller asks for.
pub const SCRYPT_MAX_LOG_N: u8 = 22;

/// The most recipient stanzas a header may hold (an age header or a container's recipient
/// block). Every identity is tried against every stanza, so the count bounds the work a
/// header can ask for: at most this many unwraps per identity (an X25519 or post-quantum
/// unwrap is well under a millisecond; RSA is tried only on the stanzas that carry its key's
/// tag). A file with more is refused before any is tried, and encrypting to more is refused.
pub const MAX_STANZAS: usize = 1024;

/// What a recipient string must be, for messages.
const EXPECTED_RECIPIENT: &str = "expected an age1pq1… (post-quantum), age1… (X25519) or \
                                  age1NAME1… (age plugin) recipient, an awskms:KEY (AWS KMS) \
                                  key, an ssh-ed25519 or ssh-rsa public key, or an RSA public \
                                  key file";
/// What an identity file must hold, for messages.
const EXPECTED_IDENTITY: &str = "expected AGE-SECRET-KEY-PQ-1…, AGE-SECRET-KEY-1… or \
                                 AGE-PLUGIN-NAME-1… lines, an OpenSSH private key or an RSA \
                                 private key (PEM or DER)";
/// Why an EC key is refused.
const EC_NOT_A_RECIPIENT: &str = "an EC (P-256) key is a signing key, not a recipient kind \
                                  (paracrypt encrypts to age1… X25519, ssh-ed25519, ssh-rsa \
                                  and RSA keys; make one with `paracrypt keygen --kind x25519`)";

type BoxedRecipient = Box<dyn age::Recipient + Send + Sync>;
type BoxedIdentity = Box<dyn age::Identity + Send + Sync>;

/// One recipient: wrapped here, or by its plugin (with the plugin's other recipients).
enum Entry {
    Native(BoxedRecipient),
    Plugin(plugin::Target),
    /// Wrapped by the KMS, after every other recipient (bound to their stanzas).
    Kms(kms::Target),
}

/// The people (or the passphrase) a file is encrypted to.
#[derive(Default)]
pub struct Recipients {
    list: Vec<Entry>,
    /// The client `awskms:` recipients are wrapped with.
    kms: Option<Arc<dyn kms::Kms>>,
    /// The run key of each `awskms:` recipient, made on the first file these recipients seal.
    runs: kms::RunKeys,
    /// Made by [`Recipients::passphrase`].
    passphrase: bool,
}

impl fmt::Debug for Recipients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recipients")
            .field("len", &self.list.len())
            .finish()
    }
}

impl Recipients {
    /// No recipients yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A passphrase, wrapped with age's scrypt recipient at work factor `2^log_n` (`None`:
    /// age's choice, about one second on this machine). A passphrase is always alone in a file.
    ///
    /// # Panics
    /// If `log_n` is 0 or 64 or more.
    pub fn passphrase(passphrase: SecretString, log_n: Option<u8>) -> Self {
        let mut recipient = age::scrypt::Recipient::new(passphrase);
        if let Some(log_n) = log_n {
            recipient.set_work_factor(log_n);
        }
        Recipients {
            list: vec![Entry::Native(Box::new(recipient))],
            passphrase: true,
            ..Recipients::default()
        }
    }

    /// Whether this is a passphrase ([`Recipients::passphrase`]) rather than people.
    pub fn is_passphrase(&self) -> bool {
        self.passphrase
    }

    /// Adds a recipient of any kind that implements age's [`Recipient`](age::Recipient) trait
    /// (one of your own).
    pub fn push(&mut self, recipient: Box<dyn age::Recipient + Send + Sync>) {
        self.list.push(Entry::Native(recipient));
    }

    /// Gives the KMS client `awskms:KEY` recipients are wrapped with (set it before adding
    /// them: without one they are refused).
    pub fn set_kms(&mut self, kms: Arc<dyn kms::Kms>) {
        self.kms = Some(kms);
    }

    /// Adds one recipient string (`age1…`, `ssh-ed25519 …`, `ssh-rsa …`, an age plugin's
    /// `age1NAME1…`, a plugin identity `AGE-PLUGIN-NAME-1…` to wrap to, or `awskms:KEY` with a
    /// KMS client set); `at` says where it was given, for the error.
    pub fn add(&mut self, text: &str, at: impl fmt::Display) -> Result<()> {
        let recipient = parse_recipient(text.trim())
            .and_then(|entry| self.usable(entry))
            .map_err(|reason| Error::Recipient {
                at: format!("{at} ({})", shorten(text.trim())),
                // A path given as a recipient: the file of recipients it likely is.
                reason: if Path::new(text.trim()).is_file() {
                    "it is a file: give a file of recipients with -R FILE (Python: \
                     Recipients(files=[...]))"
                        .into()
                } else {
                    reason
                },
            })?;
        self.list.push(recipient);
        Ok(())
    }

    /// `entry`, or why this build cannot wrap to it (a KMS key without a KMS client).
    fn usable(&self, entry: Entry) -> std::result::Result<Entry, String> {
        match entry {
            Entry::Kms(_) if self.kms.is_none() => Err(
                "an AWS KMS recipient needs a KMS client, which this build has not (the CLI's \
                 and the Python package's default builds have one; the Rust API takes one \
                 with Recipients::set_kms)"
                    .into(),
            ),
            entry => Ok(entry),
        }
    }

    /// Adds, as recipients, the identities of an identity file named `name` (what `age -e -i`
    /// encrypts to): each native identity's recipient, and each plugin identity as itself (its
    /// plugin wraps to the key it names).
    pub fn add_identity_file(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        for entry in identity_file(name, bytes)? {
            self.list.push(match entry {
                IdentityEntry::Plugin(target) => Entry::Plugin(target),
                native => {
                    let text = recipient_of(name, native)?;
                    parse_recipient(&text).map_err(|reason| recipient_error(name, reason))?
                }
            });
        }
        Ok(())
    }

    /// Adds the recipients of a file named `name`: an RSA public key (PEM or DER), or a
    /// recipients file (one recipient string a line; `#` comments and blank lines skipped).
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        if let Some(key) = key_file(bytes) {
            let public = match key {
                Ok(KeyFile::RsaPublic(key)) => key,
                Ok(KeyFile::RsaPrivate(key)) => key.to_public_key(),
                Ok(KeyFile::EcPublic(_) | KeyFile::EcPrivate(_)) => {
                    return Err(recipient_error(name, EC_NOT_A_RECIPIENT));
                }
                Err(e) => return Err(recipient_error(name, e.to_string())),
            };
            let recipient =
                rsa::RsaRecipient::new(crate::pubkey::rsa::RsaPublicKey::from_rsa(public))
                    .map_err(|reason| recipient_error(name, reason))?;
            self.list.push(Entry::Native(Box::new(recipient)));
            return Ok(());
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|_| recipient_error(name, "neither text nor a DER key"))?;
        let lines: Vec<(usize, &str)> = content_lines(text).collect();
        if lines.is_empty() {
            return Err(recipient_error(name, "holds no recipient"));
        }
        for &(n, line) in &lines {
            let recipient = parse_recipient(line)
                .and_then(|entry| self.usable(entry))
                .map_err(|mut reason| {
                    if lines.len() == 1 && !looks_like_a_key(line) {
                        reason.push_str(" (is this a passphrase file?)");
                    }
                    recipient_error(format!("{name} line {n}"), reason)
                })?;
            self.list.push(recipient);
        }
        Ok(())
    }

    /// Reads the file at `path` (at most [`MAX_PEOPLE_FILE`] bytes) and adds its recipients, as
    /// [`Recipients::add_file`] with the path as its name: what age's `-R FILE` takes.
    pub fn add_path(&mut self, path: &Path) -> Result<()> {
        let bytes = read_people_file(path, "recipients file", recipient_error)?;
        self.add_file(&path.display().to_string(), &bytes)
    }

    /// How many recipients there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Wraps `file_key` for every recipient: the stanzas of a header, in order.
    ///
    /// Fails on no recipients, and on recipients that may not share a file (a passphrase with
    /// anything else), as age does: every recipient's labels must be the same.
    pub fn wrap(&self, file_key: &FileKey) -> Result<Vec<Stanza>> {
        self.wrap_bound(file_key, &[])
    }

    /// [`Recipients::wrap`], binding KMS stanzas also to `bound` (what the format's header
    /// holds before its stanzas that differs between files: a container's salt), as
    /// [`kms::header_digest`] says; [`Identities::unwrap_bound`] opens them with the same.
    pub fn wrap_bound(&self, file_key: &FileKey, bound: &[u8]) -> Result<Vec<Stanza>> {
        Ok(self
            .wrap_all(&[file_key], &[bound])?
            .pop()
            .expect("one file key, one header"))
    }

    /// Wraps each of `file_keys` (one per file) for every recipient: each file's stanzas, in
    /// order, as [`Recipients::wrap`] makes them; each age plugin runs once for all of them.
    pub fn wrap_many(&self, file_keys: &[&FileKey]) -> Result<Vec<Vec<Stanza>>> {
        let bounds: Vec<&[u8]> = file_keys.iter().map(|_| &[][..]).collect();
        self.wrap_all(file_keys, &bounds)
    }

    /// [`Recipients::wrap_many`] with each file's `bound`. KMS stanzas come last, each bound
    /// to the stanzas before it.
    fn wrap_all(&self, file_keys: &[&FileKey], bounds: &[&[u8]]) -> Result<Vec<Vec<Stanza>>> {
        if self.list.is_empty() {
            return Err(Error::IncompatibleRecipients("there are none"));
        }
        if self.list.len() > MAX_STANZAS {
            return Err(Error::IncompatibleRecipients(
                "there are more than 1024 (a header holds at most 1024 stanzas)",
            ));
        }
        let mut files: Vec<Vec<Stanza>> = file_keys.iter().map(|_| Vec::new()).collect();
        let mut labels: Option<HashSet<String>> = None;
        let mut plugins_done: HashSet<&str> = HashSet::new();
        let kms_last = self
            .list
            .iter()
            .filter(|e| !matches!(e, Entry::Kms(_)))
            .chain(self.list.iter().filter(|e| matches!(e, Entry::Kms(_))));
        for entry in kms_last {
            let (wrapped, own) = match entry {
                Entry::Native(recipient) => {
                    let mut own = HashSet::new();
                    let mut wrapped = Vec::with_capacity(file_keys.len());
                    for key in file_keys {
                        let (stanzas, labels) = recipient
                            .wrap_file_key(key)
                            .map_err(|e| Error::AgeHeader(format!("wrapping the file key: {e}")))?;
                        wrapped.push(stanzas);
                        own = labels;
                    }
                    (wrapped, own)
                }
                Entry::Plugin(target) => {
                    if !plugins_done.insert(&target.plugin) {
                        continue;
                    }
                    let targets: Vec<&plugin::Target> = self
                        .list
                        .iter()
                        .filter_map(|e| match e {
                            Entry::Plugin(t) if t.plugin == target.plugin => Some(t),
                            _ => None,
                        })
                        .collect();
                    plugin::wrap(&target.plugin, &targets, file_keys)?
                }
                Entry::Kms(target) => {
                    let client = self.kms.as_deref().ok_or_else(|| {
                        kms::kms_error(&target.key, "this build has no KMS client")
                    })?;
                    let mut wrapped = Vec::with_capacity(file_keys.len());
                    for ((key, file), bound) in file_keys.iter().zip(&files).zip(bounds) {
                        let digest = kms::header_digest(bound, file);
                        wrapped.push(vec![kms::wrap(client, &self.runs, target, key, &digest)?]);
                    }
                    (wrapped, HashSet::new())
                }
            };
            for (file, mut stanzas) in files.iter_mut().zip(wrapped) {
                file.append(&mut stanzas);
            }
            match &labels {
                Some(first) if *first != own => {
                    let all = &files[0];
                    return Err(Error::IncompatibleRecipients(
                        if all.iter().any(|s| s.tag == SCRYPT_TAG) {
                            "a passphrase is always alone in a file"
                        } else if all
                            .iter()
                            .any(|s| s.tag == pq::STANZA_TAG || s.tag == tag::PQ_STANZA_TAG)
                        {
                            "a post-quantum (age1pq1…, age1tagpq1…) recipient cannot share a \
                             file with classical ones, which a quantum computer could open (as \
                             age refuses)"
                        } else {
                            "their kinds forbid sharing a file"
                        },
                    ));
                }
                Some(_) => {}
                None => labels = Some(own),
            }
        }
        if files.iter().any(|f| f.len() > MAX_STANZAS) {
            return Err(Error::IncompatibleRecipients(
                "they make more than 1024 stanzas (a header holds at most 1024)",
            ));
        }
        Ok(files)
    }
}

/// The keys (or the passphrase) a file is decrypted with.
#[derive(Default)]
pub struct Identities {
    list: Vec<BoxedIdentity>,
    /// Plugin identities, by plugin (tried after every other identity).
    plugins: Vec<plugin::PluginIdentities>,
    /// The KMS client that unwraps `awskms` stanzas (tried after the native identities).
    kms: Option<Arc<dyn kms::Kms>>,
    /// The run keys KMS gave back, by blob: a tree sealed in one run costs one request.
    runs: kms::RunKeys,
    /// For a passphrase: the highest scrypt work factor it accepts.
    passphrase: Option<u8>,
}

impl fmt::Debug for Identities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identities")
            .field("len", &self.len())
            .field("plugins", &self.plugins())
            .field("kms", &self.kms.is_some())
            .field("passphrase", &self.passphrase)
            .finish()
    }
}

impl Identities {
    /// No identities yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A passphrase, for files encrypted with age's scrypt recipient; work factors above
    /// `2^max_log_n` are refused before any scrypt work (`None`, and any value above it:
    /// [`SCRYPT_MAX_LOG_N`], age's cap).
    pub fn passphrase(passphrase: SecretString, max_log_n: Option<u8>) -> Self {
        let max_log_n = max_log_n.map_or(SCRYPT_MAX_LOG_N, |max| max.min(SCRYPT_MAX_LOG_N));
        let mut identity = age::scrypt::Identity::new(passphrase);
        identity.set_max_work_factor(max_log_n);
        Identities {
            list: vec![Box::new(identity)],
            passphrase: Some(max_log_n),
            ..Identities::default()
        }
    }

    /// Adds the identities of a file named `name`: `AGE-SECRET-KEY-PQ-1…`,
    /// `AGE-SECRET-KEY-1…` and `AGE-PLUGIN-NAME-1…` lines (as many as there are; `#` comments
    /// and blank lines skipped), an OpenSSH private key (ed25519 or RSA, unencrypted), or an
    /// RSA private key in PEM or DER. A plugin is not started here: only when a file needs it.
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        for entry in identity_file(name, bytes)? {
            self.list.push(match entry {
                IdentityEntry::X25519(identity) => Box::new(identity),
                IdentityEntry::Hybrid(identity) => identity,
                IdentityEntry::Ssh(identity) => Box::new(identity),
                IdentityEntry::Rsa(key) => Box::new(rsa::RsaIdentity::new(*key)),
                IdentityEntry::Plugin(target) => {
                    let at = match self.plugins.iter().position(|p| p.name == target.plugin) {
                        Some(at) => at,
                        None => {
                            self.plugins
                                .push(plugin::PluginIdentities::new(target.plugin.clone()));
                            self.plugins.len() - 1
                        }
                    };
                    self.plugins[at].targets.push(target);
                    continue;
                }
            });
        }
        Ok(())
    }

    /// Unwraps `awskms` stanzas with `kms` (the caller's credentials decide which keys it may
    /// use): counts as one identity.
    pub fn set_kms(&mut self, kms: Arc<dyn kms::Kms>) {
        self.kms = Some(kms);
    }

    /// The age plugins these identities use (`age-plugin-NAME` is each one's binary).
    pub fn plugins(&self) -> Vec<&str> {
        self.plugins.iter().map(|p| p.name.as_str()).collect()
    }

    /// Reads the file at `path` (at most [`MAX_PEOPLE_FILE`] bytes) and adds its identities, as
    /// [`Identities::add_file`] with the path as its name: what age's `-i FILE` takes.
    pub fn add_path(&mut self, path: &Path) -> Result<()> {
        let bytes = read_identity_file(path)?;
        self.add_file(&path.display().to_string(), &bytes)
    }

    /// How many identities there are.
    pub fn len(&self) -> usize {
        self.list.len()
            + self.plugins.iter().map(|p| p.targets.len()).sum::<usize>()
            + usize::from(self.kms.is_some())
    }

    /// Whether this is a passphrase ([`Identities::passphrase`]), whose scrypt unwrapping costs
    /// about a second and 64 MiB or more.
    pub fn is_passphrase(&self) -> bool {
        self.passphrase.is_some()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Unwraps the file key from a header's stanzas with the first identity that matches.
    ///
    /// Fails with [`Error::WrongSecretKind`] when the file needs a passphrase and was given
    /// keys (or the reverse), [`Error::WrongKey`] for a wrong passphrase, and
    /// [`Error::NoIdentityMatches`] when no identity matches any stanza.
    ///
    /// A header whose scrypt stanza is not its only stanza is refused with
    /// [`Error::AgeHeader`] whatever the identities, as the age specification requires: a
    /// passphrase file has no other recipient, so such a header can only be forged.
    pub fn unwrap(&self, stanzas: &[Stanza]) -> Result<FileKey> {
        self.unwrap_bound(stanzas, &[])
    }

    /// [`Identities::unwrap`] of a header whose KMS stanzas are bound to `bound` too
    /// ([`Recipients::wrap_bound`]).
    pub fn unwrap_bound(&self, stanzas: &[Stanza], bound: &[u8]) -> Result<FileKey> {
        self.unwrap_all(&[stanzas], &[bound], true)
            .pop()
            .expect("one header, one outcome")
    }

    /// Unwraps the file keys of many headers (each one's stanzas), as [`Identities::unwrap`]
    /// does one: every identity but the plugins' is tried first; then each plugin runs once,
    /// for all the headers still unopened (a hardware key is touched and its PIN typed once).
    /// What a plugin gave is kept, so that asking again about the same stanzas (the jobs that
    /// open these files, after a batch unwrapped their keys ahead) starts no new session.
    pub fn unwrap_many(&self, files: &[&[Stanza]]) -> Vec<Result<FileKey>> {
        let bounds: Vec<&[u8]> = files.iter().map(|_| &[][..]).collect();
        self.unwrap_all(files, &bounds, true)
    }

    /// [`Identities::unwrap_many`] with each header's `bound`; KMS is asked only `with_kms`
    /// (not when opening ahead for the plugins' sake: KMS answers are not kept, so asking
    /// ahead would only double the requests).
    fn unwrap_all(
        &self,
        files: &[&[Stanza]],
        bounds: &[&[u8]],
        with_kms: bool,
    ) -> Vec<Result<FileKey>> {
        let mut outcomes: Vec<Option<Result<FileKey>>> = Vec::with_capacity(files.len());
        let mut first_errors: Vec<Option<age::DecryptError>> = Vec::with_capacity(files.len());
        for stanzas in files {
            let (outcome, first_error) = self.unwrap_natively(stanzas);
            outcomes.push(outcome);
            first_errors.push(first_error);
        }
        let mut plugin_errors: Vec<Option<Error>> = files.iter().map(|_| None).collect();
        if let Some(client) = self.kms.as_deref().filter(|_| with_kms) {
            for (i, (stanzas, bound)) in files.iter().zip(bounds).enumerate() {
                if outcomes[i].is_some() || !stanzas.iter().any(|s| s.tag == kms::STANZA_TAG) {
                    continue;
                }
                let digest = kms::header_digest(bound, stanzas);
                for stanza in stanzas.iter() {
                    match kms::unwrap(client, &self.runs, stanza, &digest) {
                        Some(Ok(key)) => {
                            outcomes[i] = Some(Ok(key));
                            break;
                        }
                        Some(Err(e)) => {
                            plugin_errors[i].get_or_insert(e);
                        }
                        None => {}
                    }
                }
            }
        }
        for plugin in &self.plugins {
            let open: Vec<usize> = (0..files.len())
                .filter(|&i| outcomes[i].is_none())
                .collect();
            if open.is_empty() {
                break;
            }
            let asked: Vec<&[Stanza]> = open.iter().map(|&i| files[i]).collect();
            for (&i, opened) in open.iter().zip(plugin.open(&asked)) {
                match opened {
                    plugin::Opened::Key(key) => {
                        outcomes[i] = Some(Ok(FileKey::new(Box::new(*key.expose_secret()))));
                    }
                    plugin::Opened::NotMine => {}
                    plugin::Opened::Failed(reason) => {
                        plugin_errors[i].get_or_insert(Error::Plugin {
                            plugin: format!("age-plugin-{}", plugin.name),
                            reason,
                        });
                    }
                    plugin::Opened::Refused(reason) => {
                        plugin_errors[i].get_or_insert(Error::PluginRefused {
                            plugin: format!("age-plugin-{}", plugin.name),
                            reason,
                        });
                    }
                }
            }
        }
        outcomes
            .into_iter()
            .zip(first_errors)
            .zip(plugin_errors)
            .zip(files)
            .map(
                |(((outcome, first_error), plugin_error), stanzas)| match outcome {
                    Some(outcome) => outcome,
                    None => Err(self.no_key(stanzas, first_error, plugin_error)),
                },
            )
            .collect()
    }

    /// Asks each plugin ahead, in one session, about every header of `files` that no other
    /// identity opens, and keeps what it gives, so that [`Identities::unwrap`] on any of these
    /// headers later (on any thread) starts no plugin: see [`crate::request::open_ahead`], which
    /// reads the headers of many files for it. Nothing happens without plugin identities.
    pub fn open_ahead(&self, files: &[&[Stanza]]) {
        if !self.plugins.is_empty() {
            let bounds: Vec<&[u8]> = files.iter().map(|_| &[][..]).collect();
            let _ = self.unwrap_all(files, &bounds, false);
        }
    }

    /// The file key from every identity but the plugins': `Some` when one opened the file or
    /// the header is refused whatever the identities, else the first error an identity gave.
    fn unwrap_natively(
        &self,
        stanzas: &[Stanza],
    ) -> (Option<Result<FileKey>>, Option<age::DecryptError>) {
        let scrypt = stanzas.iter().any(|s| s.tag == SCRYPT_TAG);
        if scrypt && stanzas.len() != 1 {
            return (
                Some(Err(Error::AgeHeader(
                    "a passphrase (scrypt) stanza must be the only stanza in the header".into(),
                ))),
                None,
            );
        }
        if scrypt && self.passphrase.is_none() {
            return (
                Some(Err(Error::WrongSecretKind {
                    needs: crate::error::NEEDS_PASSPHRASE,
                })),
                None,
            );
        }
        if self.passphrase.is_some() && !scrypt {
            return (
                Some(Err(Error::WrongSecretKind {
                    needs: crate::error::NEEDS_IDENTITY_NOT_PASSPHRASE,
                })),
                None,
            );
        }
        let mut first_error = None;
        for identity in &self.list {
            match identity.unwrap_stanzas(stanzas) {
                Some(Ok(key)) => return (Some(Ok(key)), None),
                Some(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                None => {}
            }
        }
        (None, first_error)
    }

    /// Why no identity opened a header: what the identities said, a plugin's failure, or that
    /// none matches.
    fn no_key(
        &self,
        stanzas: &[Stanza],
        first_error: Option<age::DecryptError>,
        plugin_error: Option<Error>,
    ) -> Error {
        let scrypt = stanzas.iter().any(|s| s.tag == SCRYPT_TAG);
        match first_error {
            Some(age::DecryptError::ExcessiveWork { required, .. }) => Error::Kdf(format!(
                "the passphrase's scrypt work factor 2^{required} is above the limit of 2^{}",
                self.passphrase.unwrap_or(SCRYPT_MAX_LOG_N)
            )),
            Some(age::DecryptError::DecryptionFailed | age::DecryptError::KeyDecryptionFailed)
                if scrypt =>
            {
                Error::WrongKey
            }
            Some(age::DecryptError::InvalidHeader) => {
                Error::AgeHeader("a recipient stanza is malformed".into())
            }
            _ => plugin_error.unwrap_or(Error::NoIdentityMatches {
                recipients: stanzas
                    .iter()
                    .filter(|s| !s.tag.ends_with("-grease"))
                    .count(),
            }),
        }
    }
}

/// Appends `stanzas` in age's encoding (`-> TAG ARGS…`, then the body in base64, 64 columns,
/// the last line short), as they appear in a header.
///
/// Public with [`read_stanzas`] as the deliberate entry points of the stanza codec, for tools
/// and fuzzers that check its round trip; the formats call them through their headers.
pub fn write_stanzas(stanzas: &[Stanza], out: &mut Vec<u8>) {
    for stanza in stanzas {
        let args: Vec<&str> = stanza.args.iter().map(String::as_str).collect();
        let write = age_core::format::write::age_stanza(&stanza.tag, &args, &stanza.body);
        let (written, _) = cookie_factory::r#gen(write, std::mem::take(out))
            .expect("writing into a Vec cannot fail");
        *out = written;
    }
}

/// Reads a block of stanzas in age's encoding (at least one, at most [`MAX_STANZAS`]; bodies in
/// the legacy encoding that age and rage also read are accepted). Fails with
/// [`Error::AgeHeader`] naming the first malformed stanza.
pub fn read_stanzas(mut block: &[u8]) -> Result<Vec<Stanza>> {
    let mut stanzas = Vec::new();
    while !block.is_empty() {
        if stanzas.len() == MAX_STANZAS {
            return Err(Error::AgeHeader(format!(
                "more than {MAX_STANZAS} recipient stanzas"
            )));
        }
        match age_core::format::read::legacy_age_stanza(block) {
            Ok((rest, stanza)) => {
                stanzas.push(Stanza::from(stanza));
                block = rest;
            }
            Err(_) => {
                return Err(Error::AgeHeader(format!(
                    "recipient stanza {} is malformed",
                    stanzas.len() + 1
                )));
            }
        }
    }
    if stanzas.is_empty() {
        return Err(Error::AgeHeader("no recipient stanza".into()));
    }
    Ok(stanzas)
}

/// The kinds of identity [`generate_identity`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentityKind {
    /// An age X25519 identity (`AGE-SECRET-KEY-1…`), recipient `age1…`.
    X25519,
    /// A post-quantum identity (ML-KEM-768 + X25519, `AGE-SECRET-KEY-PQ-1…`), recipient
    /// `age1pq1…`.
    PostQuantum,
}

/// A new random identity of `kind`: the text of its identity file (two comment lines, the
/// second naming the recipient, then the identity, as `age-keygen` writes) and its recipient
/// string. What `paracrypt keygen --kind x25519|pq` writes; [`Identities::add_file`] and age
/// read it.
///
/// ```
/// use paracrypt_core::recipient::{generate_identity, recipients_of, IdentityKind};
///
/// let (text, recipient) = generate_identity(IdentityKind::PostQuantum);
/// assert!(recipient.starts_with("age1pq1"));
/// assert_eq!(recipients_of("me.key", text.as_bytes())?, vec![recipient]);
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
pub fn generate_identity(kind: IdentityKind) -> (Zeroizing<String>, String) {
    use age::secrecy::ExposeSecret;
    let (name, secret, public) = match kind {
        IdentityKind::X25519 => {
            let identity = age::x25519::Identity::generate();
            let public = identity.to_public().to_string();
            ("x25519", identity.to_string(), public)
        }
        IdentityKind::PostQuantum => {
            let identity = pq::HybridIdentity::generate();
            let public = identity.to_public().to_string();
            ("pq", identity.to_secret_string(), public)
        }
    };
    let text = format!(
        "# created by paracrypt keygen --kind {name}\n# public key: {public}\n{}\n",
        secret.expose_secret()
    );
    (Zeroizing::new(text), public)
}

/// The recipient of every identity in an identity file, as recipient strings: `age1pq1…` for
/// post-quantum identities, `age1…` for X25519 identities, `ssh-ed25519 …`/`ssh-rsa …` for SSH and RSA keys (an RSA key in PEM is
/// written in its OpenSSH form, which paracrypt and age both take). What `age-keygen -y`
/// prints.
///
/// A plugin identity's recipient is the plugin's to say (its generator prints it, as a
/// `# recipient:` comment in the identity file): it fails here, and encrypting to the identity
/// itself works (`Recipients::add_identity_file`).
pub fn recipients_of(name: &str, bytes: &[u8]) -> Result<Vec<String>> {
    identity_file(name, bytes)?
        .into_iter()
        .map(|entry| recipient_of(name, entry))
        .collect()
}

/// The recipient string of one identity of the file `name`.
fn recipient_of(name: &str, entry: IdentityEntry) -> Result<String> {
    match entry {
        IdentityEntry::X25519(identity) => Ok(identity.to_public().to_string()),
        IdentityEntry::Hybrid(identity) => Ok(identity.to_public().to_string()),
        IdentityEntry::Ssh(identity) => age::ssh::Recipient::try_from(identity)
            .map(|r| r.to_string())
            .map_err(|_| identity_error(name, "an SSH key without a usable public key")),
        IdentityEntry::Rsa(key) => Ok(format!(
            "ssh-rsa {}",
            base64::Engine::encode(
                &base64::prelude::BASE64_STANDARD,
                rsa::ssh_encoding(key.public_key().as_rsa())
            )
        )),
        IdentityEntry::Plugin(target) => Err(identity_error(
            name,
            format!(
                "the recipient of an age plugin identity is known to its plugin, not here (see \
                 the `# recipient:` line age-plugin-{} wrote beside it, or encrypt to the \
                 identity itself)",
                target.plugin
            ),
        )),
    }
}

/// One identity of an identity file.
enum IdentityEntry {
    X25519(age::x25519::Identity),
    Hybrid(Box<pq::HybridIdentity>),
    Ssh(age::ssh::Identity),
    Rsa(Box<crate::pubkey::rsa::RsaPrivateKey>),
    Plugin(plugin::Target),
}

/// The identities of a file named `name`, or what is wrong with it.
fn identity_file(name: &str, bytes: &[u8]) -> Result<Vec<IdentityEntry>> {
    if bytes
        .windows(OPENSSH.len())
        .any(|w| w == OPENSSH.as_bytes())
    {
        return openssh_identity(name, bytes).map(|identity| vec![IdentityEntry::Ssh(identity)]);
    }
    if let Some(key) = key_file(bytes) {
        return match key {
            Ok(KeyFile::RsaPrivate(key)) => crate::pubkey::rsa::RsaPrivateKey::from_rsa(key)
                .map(|key| vec![IdentityEntry::Rsa(Box::new(key))])
                .map_err(|e| identity_error(name, e.to_string())),
            Ok(KeyFile::EcPrivate(_) | KeyFile::EcPublic(_)) => {
                Err(identity_error(name, EC_NOT_A_RECIPIENT))
            }
            Ok(other) => Err(identity_error(
                name,
                format!(
                    "{} is not an identity (an identity is a private key)",
                    other.describe()
                ),
            )),
            Err(e) => Err(identity_error(name, e.to_string())),
        };
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| identity_error(name, format!("not text: {EXPECTED_IDENTITY}")))?;
    let lines: Vec<(usize, &str)> = content_lines(text).collect();
    if lines.is_empty() {
        return Err(identity_error(name, "holds no identity"));
    }
    lines
        .iter()
        .map(|&(n, line)| {
            let at = || format!("{name} line {n}");
            if line.starts_with("AGE-PLUGIN-") {
                return plugin::Target::identity(line)
                    .map(IdentityEntry::Plugin)
                    .map_err(|reason| identity_error(at(), reason));
            }
            let prefix = line.get(..pq::IDENTITY_PREFIX.len());
            if prefix.is_some_and(|p| p.eq_ignore_ascii_case(pq::IDENTITY_PREFIX)) {
                return line
                    .parse()
                    .map(|identity| IdentityEntry::Hybrid(Box::new(identity)))
                    .map_err(|e| identity_error(at(), format!("not a valid identity ({e})")));
            }
            line.parse().map(IdentityEntry::X25519).map_err(|_| {
                let mut reason = format!("not an identity: {EXPECTED_IDENTITY}");
                if line.starts_with("age1") || line.starts_with("ssh-") {
                    reason =
                        "a recipient (public key), not an identity (private key): encrypt to it \
                              with -R FILE (Python: recipients=), decrypt with the identity it \
                              came from"
                            .into();
                } else if lines.len() == 1 {
                    reason.push_str(" (is this a passphrase file?)");
                }
                identity_error(at(), reason)
            })
        })
        .collect()
}

/// An unencrypted OpenSSH private key (ed25519 or RSA).
fn openssh_identity(name: &str, bytes: &[u8]) -> Result<age::ssh::Identity> {
    let parsed = age::ssh::Identity::from_buffer(bytes, Some(name.to_owned()))
        .map_err(|e| identity_error(name, format!("bad OpenSSH private key: {e}")))?;
    match parsed {
        age::ssh::Identity::Unencrypted(_) => Ok(parsed),
        age::ssh::Identity::Encrypted(_) => Err(identity_error(
            name,
            "the SSH key is passphrase-protected; paracrypt reads unencrypted keys \
             (copy it and remove the passphrase with `ssh-keygen -p -N \"\" -f COPY`)",
        )),
        age::ssh::Identity::Unsupported(key) => {
            struct Shown<'a>(&'a age::ssh::UnsupportedKey, &'a str);
            impl fmt::Display for Shown<'_> {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    self.0.display(f, Some(self.1))
                }
            }
            let reason = Shown(&key, name).to_string();
            let reason = reason.lines().next().unwrap_or("unsupported SSH key");
            Err(identity_error(name, reason.to_owned()))
        }
    }
}

const OPENSSH: &str = "-----BEGIN OPENSSH PRIVATE KEY-----";

/// One recipient string, or why it is not one.
fn parse_recipient(text: &str) -> std::result::Result<Entry, String> {
    let native = |r: BoxedRecipient| Entry::Native(r);
    if text.starts_with("age1pq1") {
        return text
            .parse::<pq::HybridRecipient>()
            .map(|r| native(Box::new(r)))
            .map_err(|e| format!("not a valid age1pq1… recipient ({e})"));
    }
    if text.starts_with("age1") {
        // Bech32: the human-readable part ends at the last `1`. `age` is X25519's; any other
        // (`age1NAME`) is an age plugin's.
        let hrp = text.rfind('1').map(|at| &text[..at]);
        if let Some(hrp) = hrp.filter(|hrp| hrp.len() > 4 && hrp.starts_with("age1")) {
            match hrp.to_ascii_lowercase().as_str() {
                tag::P256_PREFIX => return tag::p256(text).map(|r| native(Box::new(r))),
                tag::PQ_PREFIX => return tag::hybrid(text).map(|r| native(Box::new(r))),
                _ => {}
            }
            return plugin::Target::recipient(text).map(Entry::Plugin);
        }
        return text
            .parse::<age::x25519::Recipient>()
            .map(|r| native(Box::new(r)))
            .map_err(|e| format!("not a valid age1… recipient ({e})"));
    }
    if text.starts_with(kms::PREFIX) {
        return kms::Target::parse(text).map(Entry::Kms);
    }
    if text.starts_with("AGE-PLUGIN-") {
        return plugin::Target::identity(text).map(Entry::Plugin);
    }
    if text.starts_with("ssh-") || text.starts_with("ecdsa-") || text.starts_with("sk-") {
        use age::ssh::ParseRecipientKeyError as E;
        return text
            .parse::<age::ssh::Recipient>()
            .map(|r| native(Box::new(r)))
            .map_err(|e| match e {
                E::RsaModulusTooSmall => "an ssh-rsa key shorter than 2048 bits".to_owned(),
                E::RsaModulusTooLarge => "an ssh-rsa key longer than 4096 bits".to_owned(),
                E::Unsupported(kind) => {
                    format!("SSH key type {kind} is not supported (ssh-ed25519 and ssh-rsa are)")
                }
                _ => "not a valid SSH public key (expected `ssh-ed25519 AAAA…` or \
                      `ssh-rsa AAAA…`)"
                    .to_owned(),
            });
    }
    if text.starts_with("AGE-SECRET-KEY-1") || text.starts_with(pq::IDENTITY_PREFIX) {
        return Err(
            "an identity (private key), not a recipient: give its age1… public key \
                    (`paracrypt keygen -y FILE` prints it)"
                .into(),
        );
    }
    Err(EXPECTED_RECIPIENT.into())
}

/// A PEM or DER key file, when the bytes look like one (`None` for text that is not PEM).
fn key_file(bytes: &[u8]) -> Option<crate::pubkey::Result<KeyFile>> {
    let text = std::str::from_utf8(bytes).ok();
    match text {
        Some(text) if text.contains("-----BEGIN ") => Some(pem::parse(bytes)),
        Some(_) => None,
        None => Some(pem::parse(bytes)),
    }
}

/// The numbered lines that hold something: blank lines and `#` comments skipped.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}

/// Whether a line that failed to parse still looks like it meant to be a key.
fn looks_like_a_key(line: &str) -> bool {
    ["age1", "ssh-", "ecdsa-", "sk-", "AGE-"]
        .iter()
        .any(|p| line.starts_with(p))
}

/// A recipient string as an error quotes it: its first 20 characters, control characters
/// escaped (the message stays one line).
fn shorten(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars
        .by_ref()
        .take(20)
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// The most bytes a recipients or identity file may hold (as age: 16 MiB).
pub const MAX_PEOPLE_FILE: u64 = 16 << 20;

/// Reads the identity file at `path` without parsing it (for [`Identities::add_file`] and
/// [`recipients_of`], or to hand its bytes to another process): at most [`MAX_PEOPLE_FILE`]
/// bytes, zeroized when dropped. A larger file fails with [`Error::Identity`], one that cannot
/// be read with [`Error::Io`].
pub fn read_identity_file(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    read_people_file(path, "identity file", identity_error)
}

/// Reads a recipients or identity file (`what`), refusing one larger than [`MAX_PEOPLE_FILE`]
/// before reading more than that. The bytes are zeroized when dropped, and so is every buffer
/// they were read through ([`crate::secret_file`]: an identity file holds private keys).
fn read_people_file(
    path: &Path,
    what: &str,
    error: fn(String, &'static str) -> Error,
) -> Result<Zeroizing<Vec<u8>>> {
    let cannot = |e| Error::io(format!("cannot read {what} {}", path.display()), e);
    let bytes = crate::secret_file::read(path, MAX_PEOPLE_FILE).map_err(cannot)?;
    if bytes.len() as u64 > MAX_PEOPLE_FILE {
        return Err(error(path.display().to_string(), "is larger than 16 MiB"));
    }
    Ok(bytes)
}

fn recipient_error(at: impl fmt::Display, reason: impl Into<String>) -> Error {
    Error::Recipient {
        at: at.to_string(),
        reason: reason.into(),
    }
}

fn identity_error(at: impl fmt::Display, reason: impl Into<String>) -> Error {
    Error::Identity {
        at: at.to_string(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use age::secrecy::ExposeSecret;

    use super::*;

    fn key() -> FileKey {
        FileKey::new(Box::new([0x5a; 16]))
    }

    fn x25519() -> (String, String) {
        let id = age::x25519::Identity::generate();
        (
            id.to_string().expose_secret().to_owned(),
            id.to_public().to_string(),
        )
    }

    #[test]
    fn identity_files_hold_several_identities() {
        let (a, _) = x25519();
        let (b, b_pub) = x25519();
        let mut recipients = Recipients::new();
        recipients.add(&b_pub, "recipient 1").unwrap();
        let stanzas = recipients.wrap(&key()).unwrap();
        let mut ids = Identities::new();
        let file = format!("# created: now\n{a}\n\n# public key: …\n{b}\n");
        ids.add_file("keys.txt", file.as_bytes()).unwrap();
        assert_eq!(ids.len(), 2);
        assert_eq!(ids.unwrap(&stanzas).unwrap().expose_secret(), &[0x5a; 16]);
    }

    /// Found by the `key_files` fuzz target: a recipient string with a newline in it (a
    /// whole file pasted into `-r`) made a two-line error message.
    #[test]
    fn a_recipient_error_is_one_line() {
        let mut recipients = Recipients::new();
        let e = recipients
            .add("# paracrypt key\nd7a5c8b0db489030fd6f", "-r")
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Usage);
        let message = e.to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("(# paracrypt key\\nd7a5…)"), "{message}");
    }

    #[test]
    fn a_wrong_identity_says_how_many_recipients() {
        let (_, a_pub) = x25519();
        let (_, b_pub) = x25519();
        let (c, _) = x25519();
        let mut recipients = Recipients::new();
        recipients.add(&a_pub, "recipient 1").unwrap();
        recipients.add(&b_pub, "recipient 2").unwrap();
        let stanzas = recipients.wrap(&key()).unwrap();
        let mut ids = Identities::new();
        ids.add_file("c.key", c.as_bytes()).unwrap();
        let Err(err) = ids.unwrap(&stanzas) else {
            panic!("a wrong identity unwrapped the key")
        };
        assert_eq!(
            err.to_string(),
            "no identity matches this file; it was encrypted to 2 recipients"
        );
    }

    #[test]
    fn malformed_recipients_say_where_and_what_was_expected() {
        let mut recipients = Recipients::new();
        let err = recipients.add("age1notakey", "recipient 2").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("recipient 2 (age1notakey): not a valid age1… recipient"),
            "{err}"
        );
        let err = recipients.add("hunter2", "recipient 1").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("recipient 1 (hunter2): {EXPECTED_RECIPIENT}")
        );
        let err = recipients
            .add_file("pass.txt", b"correct horse battery staple\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("pass.txt line 1: {EXPECTED_RECIPIENT} (is this a passphrase file?)")
        );
        let (_, good) = x25519();
        let err = recipients
            .add_file(
                "team.txt",
                format!("# team\n{good}\n\nssh-rsa AAAA\n").as_bytes(),
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("team.txt line 4: not a valid SSH public key")
        );
        assert_eq!(err.kind(), crate::ErrorKind::Usage);
    }

    #[test]
    fn ec_keys_are_not_a_recipient_kind() {
        let ec = crate::pubkey::ecdsa::EcdsaPrivateKey::generate();
        let pem = ec.to_pkcs8_pem().unwrap();
        let err = Identities::new()
            .add_file("ec.pem", pem.as_bytes())
            .unwrap_err();
        assert!(err.to_string().contains("not a recipient kind"), "{err}");
        let public = ec.public_key().to_spki_pem().unwrap();
        let err = Recipients::new()
            .add_file("ec.pub.pem", public.as_bytes())
            .unwrap_err();
        assert!(err.to_string().starts_with("ec.pub.pem: an EC (P-256) key"));
    }

    #[test]
    fn a_passphrase_stays_alone() {
        let (_, a_pub) = x25519();
        let mut recipients = Recipients::passphrase(SecretString::from("pw".to_owned()), Some(2));
        recipients.add(&a_pub, "recipient 1").unwrap();
        assert_eq!(
            recipients.wrap(&key()).unwrap_err().to_string(),
            "cannot encrypt to these recipients together: a passphrase is always alone in a file"
        );
    }

    #[test]
    fn passphrase_and_keys_are_not_mixed_up() {
        let stanzas = Recipients::passphrase(SecretString::from("pw".to_owned()), Some(2))
            .wrap(&key())
            .unwrap();
        let (a, _) = x25519();
        let mut ids = Identities::new();
        ids.add_file("a.key", a.as_bytes()).unwrap();
        assert!(matches!(
            ids.unwrap(&stanzas),
            Err(Error::WrongSecretKind { .. })
        ));
        let wrong = Identities::passphrase(SecretString::from("no".to_owned()), Some(4));
        assert!(matches!(wrong.unwrap(&stanzas), Err(Error::WrongKey)));
        let right = Identities::passphrase(SecretString::from("pw".to_owned()), Some(4));
        assert_eq!(right.unwrap(&stanzas).unwrap().expose_secret(), &[0x5a; 16]);
    }

    /// A scrypt stanza claiming work factor `log_n` (its salt and body are never reached).
    fn scrypt_stanza(log_n: u8) -> Stanza {
        Stanza {
            tag: SCRYPT_TAG.into(),
            args: vec!["AAAAAAAAAAAAAAAAAAAAAA".into(), log_n.to_string()],
            body: vec![0; 32],
        }
    }

    #[test]
    fn a_scrypt_stanza_beside_another_is_a_bad_header() {
        // age's testkit `scrypt_and_x25519` and `scrypt_double`: the header is refused whatever
        // the identity, before any scrypt work, even when the passphrase would open it.
        let mut stanzas = Recipients::passphrase(SecretString::from("pw".to_owned()), Some(2))
            .wrap(&key())
            .unwrap();
        let (a, a_pub) = x25519();
        let mut to_a = Recipients::new();
        to_a.add(&a_pub, "recipient 1").unwrap();
        let x25519_stanzas = to_a.wrap(&key()).unwrap();
        let copy = |s: &Stanza| Stanza {
            tag: s.tag.clone(),
            args: s.args.clone(),
            body: s.body.clone(),
        };
        let double = [copy(&stanzas[0]), copy(&stanzas[0])];
        stanzas.extend(x25519_stanzas);
        let mut keys = Identities::new();
        keys.add_file("a.key", a.as_bytes()).unwrap();
        let pw = Identities::passphrase(SecretString::from("pw".to_owned()), Some(4));
        for (ids, header) in [
            (&pw, &stanzas[..]),
            (&keys, &stanzas[..]),
            (&pw, &double[..]),
        ] {
            let Err(err) = ids.unwrap(header) else {
                panic!("opened")
            };
            assert_eq!(
                err.to_string(),
                "invalid age header: a passphrase (scrypt) stanza must be the only stanza in the header"
            );
            assert_eq!(err.kind(), crate::ErrorKind::Data);
        }
    }

    #[test]
    fn the_scrypt_work_factor_is_capped_at_22() {
        // age's testkit `scrypt_work_factor_23`: refused before any scrypt work (2^23 would
        // take 8 GiB; this error is age's check ahead of scrypt), with the cap named, even when
        // the caller asks for a higher limit.
        for asked in [None, Some(30), Some(22)] {
            let ids = Identities::passphrase(SecretString::from("pw".to_owned()), asked);
            let Err(err) = ids.unwrap(&[scrypt_stanza(23)]) else {
                panic!("opened")
            };
            assert_eq!(
                err.to_string(),
                "key derivation: the passphrase's scrypt work factor 2^23 is above the limit of \
                 2^22"
            );
            assert_eq!(err.kind(), crate::ErrorKind::Data);
        }
        let lower = Identities::passphrase(SecretString::from("pw".to_owned()), Some(10));
        let Err(err) = lower.unwrap(&[scrypt_stanza(11)]) else {
            panic!("opened")
        };
        assert!(
            err.to_string().ends_with("2^11 is above the limit of 2^10"),
            "{err}"
        );
    }

    #[test]
    fn recipients_of_an_identity_file_are_what_encrypts_to_it() {
        let (a, a_pub) = x25519();
        let (b, b_pub) = x25519();
        let file = format!("{a}\n# second\n{b}\n");
        assert_eq!(
            recipients_of("keys", file.as_bytes()).unwrap(),
            [a_pub, b_pub]
        );
        let rsa = crate::pubkey::rsa::RsaPrivateKey::generate(2048).unwrap();
        let pem = rsa.to_pkcs8_pem().unwrap();
        let [line] = &recipients_of("rsa.pem", pem.as_bytes()).unwrap()[..] else {
            panic!("one recipient")
        };
        assert!(line.starts_with("ssh-rsa AAAA"));
        // The ssh-rsa line encrypts to the PEM key.
        let mut recipients = Recipients::new();
        recipients.add(line, "recipient 1").unwrap();
        let stanzas = recipients.wrap(&key()).unwrap();
        let mut ids = Identities::new();
        ids.add_file("rsa.pem", pem.as_bytes()).unwrap();
        assert_eq!(ids.unwrap(&stanzas).unwrap().expose_secret(), &[0x5a; 16]);
    }

    #[test]
    fn post_quantum_recipients_open_with_their_identity_and_stay_among_their_kind() {
        let pq = pq::HybridIdentity::generate();
        let pq_pub = pq.to_public().to_string();
        let (x, x_pub) = x25519();
        let file = format!(
            "# pq\n{}\n{x}\n",
            pq.to_secret_string().expose_secret().to_lowercase()
        );
        // A recipients file line and -r; an identity file (any case) with both kinds.
        let mut recipients = Recipients::new();
        recipients
            .add_file("team.txt", format!("{pq_pub}\n").as_bytes())
            .unwrap();
        let stanzas = recipients.wrap(&key()).unwrap();
        assert_eq!(stanzas[0].tag, pq::STANZA_TAG);
        assert_eq!(stanzas[0].args[0].len(), 1494);
        let mut ids = Identities::new();
        ids.add_file("keys.txt", file.as_bytes()).unwrap();
        assert_eq!(ids.unwrap(&stanzas).unwrap().expose_secret(), &[0x5a; 16]);
        assert_eq!(
            recipients_of("keys.txt", file.as_bytes()).unwrap(),
            [pq_pub.clone(), x_pub.clone()]
        );
        // Written and read back as a header's block.
        let mut block = Vec::new();
        write_stanzas(&stanzas, &mut block);
        assert_eq!(read_stanzas(&block).unwrap(), stanzas);
        // Beside a classical recipient: refused, either order.
        for order in [[&pq_pub, &x_pub], [&x_pub, &pq_pub]] {
            let mut mixed = Recipients::new();
            for (i, r) in order.iter().enumerate() {
                mixed.add(r, format!("recipient {}", i + 1)).unwrap();
            }
            let err = mixed.wrap(&key()).unwrap_err();
            assert!(
                err.to_string()
                    .contains("post-quantum (age1pq1…, age1tagpq1…) recipient cannot share"),
                "{err}"
            );
            assert_eq!(err.kind(), crate::ErrorKind::Usage);
        }
        // A damaged recipient and an identity given as a recipient.
        let mut damaged = pq_pub.clone();
        damaged.replace_range(100..101, if &pq_pub[100..101] == "q" { "p" } else { "q" });
        let err = Recipients::new().add(&damaged, "recipient 1").unwrap_err();
        assert!(
            err.to_string().contains("not a valid age1pq1… recipient"),
            "{err}"
        );
        let err = Recipients::new()
            .add(pq.to_secret_string().expose_secret(), "recipient 1")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("an identity (private key), not a recipient")
        );
    }

    #[test]
    fn tagged_recipients_wrap_natively_and_the_post_quantum_one_stays_among_its_kind() {
        // The specification's example recipients (C2SP `age.md`).
        let p256 = "age1tag1qt8lw0ual6avlwmwatk888yqnmdamm7xfd0wak53ut6elz5c4swx2yqdj4e";
        let pq_tag = include_str!("testdata/age1tagpq.txt").trim();
        let (_, x_pub) = x25519();
        let pq_pub = pq::HybridIdentity::generate().to_public().to_string();
        let tags = |list: &[&str]| -> Result<Vec<String>> {
            let mut recipients = Recipients::new();
            for (i, r) in list.iter().enumerate() {
                recipients.add(r, format!("recipient {}", i + 1))?;
            }
            Ok(recipients
                .wrap(&key())?
                .into_iter()
                .map(|s| {
                    if s.tag.ends_with("p256tag") {
                        // `-> p256tag TAG ENC` and a sealed file key.
                        assert_eq!((s.args.len(), s.body.len()), (2, 32));
                    }
                    s.tag
                })
                .collect())
        };
        // A classical tagged recipient shares a file with X25519; the post-quantum one with
        // age1pq1… only.
        assert_eq!(
            tags(&[p256, &x_pub]).unwrap(),
            [tag::P256_STANZA_TAG, "X25519"]
        );
        assert_eq!(
            tags(&[pq_tag, &pq_pub]).unwrap(),
            [tag::PQ_STANZA_TAG, pq::STANZA_TAG]
        );
        for mixed in [[pq_tag, &x_pub], [pq_tag, p256]] {
            let err = tags(&mixed).unwrap_err();
            assert!(
                err.to_string()
                    .contains("post-quantum (age1pq1…, age1tagpq1…) recipient cannot share"),
                "{err}"
            );
            assert_eq!(err.kind(), crate::ErrorKind::Usage);
        }
        let err = tags(&["age1tag1qqqqqqqq"]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("recipient 1 (age1tag1qqqqqqqq): not a valid age1tag1… recipient"),
            "{err}"
        );
    }

    #[test]
    fn a_header_holds_at_most_max_stanzas() {
        let stanza = |i: usize| Stanza {
            tag: "t-grease".into(),
            args: vec![i.to_string()],
            body: vec![],
        };
        let mut block = Vec::new();
        write_stanzas(
            &(0..MAX_STANZAS).map(stanza).collect::<Vec<_>>(),
            &mut block,
        );
        assert_eq!(read_stanzas(&block).unwrap().len(), MAX_STANZAS);
        write_stanzas(&[stanza(0)], &mut block);
        assert_eq!(
            read_stanzas(&block).unwrap_err().to_string(),
            "invalid age header: more than 1024 recipient stanzas"
        );
        let mut many = Recipients::new();
        let (_, x_pub) = x25519();
        for i in 0..=MAX_STANZAS {
            many.add(&x_pub, format!("recipient {i}")).unwrap();
        }
        assert!(
            many.wrap(&key())
                .unwrap_err()
                .to_string()
                .contains("more than 1024")
        );
    }

    #[test]
    fn identity_files_refuse_what_is_not_an_identity() {
        let (_, public) = x25519();
        let err = Identities::new()
            .add_file("pub.txt", public.as_bytes())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "pub.txt line 1: a recipient (public key), not an identity (private key): encrypt to \
             it with -R FILE (Python: recipients=), decrypt with the identity it came from"
        );
        let err = Identities::new()
            .add_file("pw.txt", b"hunter2\n")
            .unwrap_err();
        assert!(
            err.to_string().ends_with("(is this a passphrase file?)"),
            "{err}"
        );
    }
}
