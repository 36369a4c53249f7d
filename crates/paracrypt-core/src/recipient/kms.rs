//! A key management service as a recipient: `awskms:KEY` wraps the file key with AWS KMS
//! (envelope encryption, as the AWS Encryption SDK, Tink and SOPS do).
//!
//! The core speaks no HTTP: a [`Kms`] client is given to [`Recipients`](super::Recipients) and
//! [`Identities`](super::Identities) by whoever builds them (`paracrypt_store::Kms`, on
//! object_store's signing and HTTP client, is the one the CLI and the Python package register;
//! a build without it refuses `awskms:` recipients with one line).
//!
//! The stanza is `-> awskms KEY` with KMS's ciphertext blob as its body: `KEY` is the key as
//! given (a key ARN, a key id, an alias `alias/NAME` or an alias ARN), which `decrypt` names
//! to KMS again, so a file says which key opens it. The file key is sent to KMS's `Encrypt`
//! with an encryption context that binds it to its header ([`CONTEXT_KEY`]: the digest of
//! [`header_digest`]); KMS's `Decrypt` gives it back only with the same context, so a stanza
//! moved into another header is refused by KMS itself (and, where the digest cannot tell two
//! headers apart, by the header's MAC, which only the right file key opens).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::{FILE_KEY_BYTES, FileKey, Stanza};
use crate::error::{Error, Result};

/// The stanza tag of a key wrapped by AWS KMS.
pub const STANZA_TAG: &str = "awskms";
/// How an AWS KMS recipient is written: `awskms:` and the key.
pub const PREFIX: &str = "awskms:";
/// The encryption context's one key; its value is the base64 of [`header_digest`].
pub const CONTEXT_KEY: &str = "paracrypt-header";
/// The longest key identifier KMS takes (an alias ARN included).
const MAX_KEY_ID: usize = 2048;

/// A key management service that wraps and unwraps file keys.
///
/// `key` is the key as the user named it; `context` the encryption context (pairs of UTF-8
/// strings) that KMS binds to the ciphertext. Errors are one line that says why (access
/// denied, key disabled, key not found in a region, server unreachable); the caller names
/// the key.
pub trait Kms: fmt::Debug + Send + Sync {
    /// Encrypts `plaintext` under `key` with `context`: KMS's ciphertext blob.
    fn encrypt(
        &self,
        key: &str,
        plaintext: &[u8],
        context: &[(&str, &str)],
    ) -> std::result::Result<Vec<u8>, String>;

    /// Decrypts a ciphertext blob made by [`Kms::encrypt`] under `key` with the same `context`.
    fn decrypt(
        &self,
        key: &str,
        ciphertext: &[u8],
        context: &[(&str, &str)],
    ) -> std::result::Result<Zeroizing<Vec<u8>>, String>;
}

/// One `awskms:KEY` recipient: the key, checked to be one KMS could name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) key: String,
}

impl Target {
    /// Parses `awskms:KEY`: the key, non-empty, printable ASCII without spaces (it becomes a
    /// stanza argument), at most 2048 bytes, and a key ARN to AWS's grammar ([`KeyArn`]).
    pub(crate) fn parse(text: &str) -> std::result::Result<Self, String> {
        let key = text.strip_prefix(PREFIX).unwrap_or(text);
        valid_key(key)?;
        Ok(Target {
            key: key.to_owned(),
        })
    }
}

/// Why `key` cannot name a KMS key, if it cannot: a key ARN must be one ([`KeyArn::parse`]),
/// since its region picks the server.
fn valid_key(key: &str) -> std::result::Result<(), String> {
    if key.is_empty() {
        return Err(
            "awskms: names no key (expected awskms:ARN, awskms:KEY-ID or \
                    awskms:alias/NAME)"
                .into(),
        );
    }
    if key.len() > MAX_KEY_ID || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(
            "not a KMS key (a key ARN, key id or alias: printable ASCII without \
                    spaces, at most 2048 bytes)"
                .into(),
        );
    }
    KeyArn::parse(key).map(drop)
}

/// AWS's partitions, as the SDKs' `partitions.json` lists them: the name an ARN gives, the DNS
/// suffix of its endpoints, and the prefixes of its region names (`PREFIX-WORD-NUMBER`).
const PARTITIONS: &[(&str, &str, &[&str])] = &[
    (
        "aws",
        "amazonaws.com",
        &["us", "eu", "ap", "sa", "ca", "me", "af", "il", "mx"],
    ),
    ("aws-cn", "amazonaws.com.cn", &["cn"]),
    ("aws-us-gov", "amazonaws.com", &["us-gov"]),
    ("aws-iso", "c2s.ic.gov", &["us-iso"]),
    ("aws-iso-b", "sc2s.sgov.gov", &["us-isob"]),
    ("aws-iso-e", "cloud.adc-e.uk", &["eu-isoe"]),
    ("aws-iso-f", "csp.hci.ic.gov", &["us-isof"]),
    ("aws-eusc", "amazonaws.eu", &["eusc-de"]),
];

/// A KMS key ARN, `arn:PARTITION:kms:REGION:ACCOUNT:key/ID` or `…:alias/NAME`, to AWS's
/// grammar. A file names its key, and a key ARN's region picks the server KMS requests (and the
/// credentials that sign them) go to, so nothing but a region name of the ARN's partition gets
/// that far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyArn<'a> {
    /// `aws`, `aws-cn`, `aws-us-gov`, …
    pub partition: &'a str,
    /// The region, of the partition's: `us-east-1`, `cn-north-1`, …
    pub region: &'a str,
    /// The account, 12 digits.
    pub account: &'a str,
    /// `key/ID` or `alias/NAME`.
    pub resource: &'a str,
}

impl<'a> KeyArn<'a> {
    /// The ARN `key` is, `None` if it is not one (a key id or `alias/NAME`, which KMS finds in
    /// the client's region), or why a key that starts with `arn:` is not a KMS key ARN.
    pub fn parse(key: &'a str) -> std::result::Result<Option<Self>, String> {
        let Some(rest) = key.strip_prefix("arn:") else {
            return Ok(None);
        };
        let not = |why: &str| format!("not an AWS KMS key ARN: {why}");
        let parts: Vec<&str> = rest.splitn(5, ':').collect();
        let [partition, service, region, account, resource] = parts[..] else {
            return Err(not(
                "expected arn:PARTITION:kms:REGION:ACCOUNT:key/ID or …:alias/NAME",
            ));
        };
        if !PARTITIONS.iter().any(|(name, ..)| *name == partition) {
            let known: Vec<&str> = PARTITIONS.iter().map(|(name, ..)| *name).collect();
            return Err(not(&format!(
                "unknown partition `{partition}` (AWS's are {})",
                known.join(", ")
            )));
        }
        if service != "kms" {
            return Err(not(&format!("the service is `{service}`, not kms")));
        }
        match partition_of(region) {
            None => {
                return Err(not(
                    "the region must be lowercase letters, digits and dashes, as us-east-1",
                ));
            }
            Some((name, _)) if name != partition => {
                return Err(not(&format!(
                    "region {region} is in partition {name}, not {partition}"
                )));
            }
            Some(_) => {}
        }
        if account.len() != 12 || !account.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not("the account must be 12 digits"));
        }
        let named = |prefix: &str, more: &[u8]| {
            resource.strip_prefix(prefix).is_some_and(|name| {
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || more.contains(&b))
            })
        };
        if !named("key/", b"") && !named("alias/", b"/_") {
            return Err(not(
                "the key must be key/ID (letters, digits, dashes) or alias/NAME (letters, \
                 digits, /, _, -)",
            ));
        }
        Ok(Some(KeyArn {
            partition,
            region,
            account,
            resource,
        }))
    }

    /// The KMS endpoint of the key's region, `https://kms.REGION.SUFFIX`.
    pub fn endpoint(&self) -> String {
        endpoint(self.region).expect("a parsed ARN's region has a partition")
    }
}

/// The KMS endpoint of `region` as AWS's SDKs resolve it, `https://kms.REGION.SUFFIX` with the
/// DNS suffix of the region's partition; `None` if `region` is not a region name.
pub fn endpoint(region: &str) -> Option<String> {
    let (_, suffix) = partition_of(region)?;
    Some(format!("https://kms.{region}.{suffix}"))
}

/// The partition of a region name and its DNS suffix, as the SDKs find it: the first whose
/// region names have this shape, else `aws`; `None` if `region` is not a region name, words of
/// lowercase letters and digits joined by dashes (one DNS label).
fn partition_of(region: &str) -> Option<(&'static str, &'static str)> {
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    if region.len() > 63 || !region.split('-').all(word) {
        return None;
    }
    // `PREFIX-WORD-NUMBER`, where PREFIX may have dashes of its own (`us-gov`).
    let shaped = |prefix: &str| {
        let Some(rest) = region
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('-'))
        else {
            return false;
        };
        rest.split_once('-')
            .is_some_and(|(_, number)| number.bytes().all(|b| b.is_ascii_digit()))
    };
    let (name, suffix, _) = PARTITIONS
        .iter()
        .find(|(_, _, prefixes)| prefixes.iter().any(|p| shaped(p)))
        .unwrap_or(&PARTITIONS[0]);
    Some((name, suffix))
}

/// What a header binds its KMS stanzas to: SHA-256 over a label, `bound` (what the format
/// gives of its header before the stanzas: a container's salt; nothing for an age file, whose
/// header has only its version line there) and every stanza that is not a KMS stanza, in
/// order and in age's encoding. KMS stanzas are left out so that each is computed before it
/// exists, and several KMS keys bind the same digest.
pub fn header_digest(bound: &[u8], stanzas: &[Stanza]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"paracrypt awskms v1\n");
    hash.update((bound.len() as u64).to_be_bytes());
    hash.update(bound);
    let others: Vec<Stanza> = stanzas
        .iter()
        .filter(|s| s.tag != STANZA_TAG)
        .map(|s| Stanza {
            tag: s.tag.clone(),
            args: s.args.clone(),
            body: s.body.clone(),
        })
        .collect();
    let mut encoded = Vec::new();
    super::write_stanzas(&others, &mut encoded);
    hash.update(&encoded);
    hash.finalize().into()
}

/// The encryption context of a header's digest.
fn context(digest: &[u8; 32]) -> String {
    BASE64_STANDARD_NO_PAD.encode(digest)
}

/// The encryption context's key for a run key (the value is [`RUN_CONTEXT_VALUE`]): a run key's
/// blob and a file key's blob are never taken for each other.
pub const RUN_CONTEXT_KEY: &str = "paracrypt-run-key";
/// The value that goes with [`RUN_CONTEXT_KEY`].
pub const RUN_CONTEXT_VALUE: &str = "v1";
/// How long a run key is.
const RUN_KEY_BYTES: usize = 32;
/// How long a stanza's salt is.
const SALT_BYTES: usize = 16;
/// The longest ciphertext blob KMS makes (6144 bytes, as its API reference says).
const MAX_BLOB: usize = 6144;
/// The HKDF label of a file key's wrapping key; the header's digest follows it.
const RUN_LABEL: &[u8] = b"paracrypt awskms run v1\n";
/// How many run keys an [`Identities`](super::Identities) keeps before it forgets them all (a
/// hostile tree naming many still costs one request each, as before, and no more memory).
const MAX_RUNS: usize = 1024;

/// A run key: 32 random bytes that KMS wrapped once, and its blob.
#[derive(Clone)]
pub(crate) struct RunKey {
    key: Arc<Zeroizing<[u8; RUN_KEY_BYTES]>>,
    blob: Arc<[u8]>,
}

/// The run keys made (by [`Recipients`](super::Recipients), one per KMS key) or opened (by
/// [`Identities`](super::Identities), one per blob): each asks KMS once, however many files and
/// threads want it at the same time; a refusal is not kept, so the next file asks again.
#[derive(Default)]
pub(crate) struct RunKeys {
    map: Mutex<HashMap<Vec<u8>, Arc<Slot>>>,
}

/// One run key, once KMS gave it; locked while KMS is asked.
type Slot = Mutex<Option<RunKey>>;

impl RunKeys {
    /// The run key kept as `id`, else the one `make` gives (kept if it is one).
    fn get(
        &self,
        id: Vec<u8>,
        make: impl FnOnce() -> std::result::Result<RunKey, String>,
    ) -> std::result::Result<RunKey, String> {
        let entry = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() >= MAX_RUNS && !map.contains_key(&id) {
                map.clear();
            }
            Arc::clone(map.entry(id).or_default())
        };
        // Held while KMS is asked: the other files of the run wait for this answer.
        let mut run = entry.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(run) = run.as_ref() {
            return Ok(run.clone());
        }
        let made = make()?;
        *run = Some(made.clone());
        Ok(made)
    }
}

/// The key a file key is sealed with under `run`: HKDF-SHA256 of the run key, salted with the
/// stanza's own salt, bound to the header's `digest`.
fn wrapping_key(run: &RunKey, salt: &[u8], digest: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut label = Vec::with_capacity(RUN_LABEL.len() + digest.len());
    label.extend_from_slice(RUN_LABEL);
    label.extend_from_slice(digest);
    Zeroizing::new(age_core::primitives::hkdf(salt, &label, &run.key[..]))
}

/// Wraps `file_key` for `target`, bound to `digest`: its stanza, `-> awskms KEY SALT` with the
/// sealed file key and the run key's blob as its body. The run key of `target` is made and
/// wrapped by `kms` the first time (one request for every file these recipients seal).
pub(crate) fn wrap(
    kms: &dyn Kms,
    runs: &RunKeys,
    target: &Target,
    file_key: &FileKey,
    digest: &[u8; 32],
) -> Result<Stanza> {
    use age::secrecy::ExposeSecret;
    let run = runs
        .get(target.key.as_bytes().to_vec(), || {
            let mut key = Zeroizing::new([0; RUN_KEY_BYTES]);
            rand::Rng::fill_bytes(&mut rand::rng(), &mut key[..]);
            let blob = kms.encrypt(
                &target.key,
                &key[..],
                &[(RUN_CONTEXT_KEY, RUN_CONTEXT_VALUE)],
            )?;
            Ok(RunKey {
                key: Arc::new(key),
                blob: blob.into(),
            })
        })
        .map_err(|reason| kms_error(&target.key, reason))?;
    let mut salt = [0; SALT_BYTES];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut salt);
    let wrapping = wrapping_key(&run, &salt, digest);
    let mut body = age_core::primitives::aead_encrypt(&wrapping, file_key.expose_secret());
    body.extend_from_slice(&run.blob);
    Ok(Stanza {
        tag: STANZA_TAG.to_owned(),
        args: vec![target.key.clone(), BASE64_STANDARD_NO_PAD.encode(salt)],
        body,
    })
}

/// Unwraps the file key of a KMS stanza with `kms`: `None` if `stanza` is not one. A stanza of
/// a run (`-> awskms KEY SALT`) asks KMS for its run key once per `runs`; one of a file key
/// alone (`-> awskms KEY`, as paracrypt 0.x before run keys wrote them) asks for every file.
pub(crate) fn unwrap(
    kms: &dyn Kms,
    runs: &RunKeys,
    stanza: &Stanza,
    digest: &[u8; 32],
) -> Option<Result<FileKey>> {
    if stanza.tag != STANZA_TAG {
        return None;
    }
    let (key, salt) = match stanza.args.as_slice() {
        [key] => (key, None),
        [key, salt] => (key, Some(salt)),
        _ => {
            return Some(Err(Error::AgeHeader(
                "an awskms stanza must have one or two arguments, the key and a salt".into(),
            )));
        }
    };
    if let Err(reason) = valid_key(key) {
        return Some(Err(kms_error(key, reason)));
    }
    Some(match salt {
        None => unwrap_alone(kms, key, &stanza.body, digest),
        Some(salt) => unwrap_in_run(kms, runs, key, salt, &stanza.body, digest),
    })
}

/// A file key KMS wrapped on its own, bound to its header by the encryption context.
fn unwrap_alone(kms: &dyn Kms, key: &str, blob: &[u8], digest: &[u8; 32]) -> Result<FileKey> {
    let value = context(digest);
    let plain = kms
        .decrypt(key, blob, &[(CONTEXT_KEY, &value)])
        .map_err(|reason| kms_error(key, reason))?;
    let bytes: [u8; FILE_KEY_BYTES] = plain.as_slice().try_into().map_err(|_| {
        kms_error(
            key,
            format!(
                "KMS gave {} bytes where a {FILE_KEY_BYTES}-byte file key was wrapped",
                plain.len()
            ),
        )
    })?;
    Ok(FileKey::new(Box::new(bytes)))
}

/// A file key sealed under a run key, bound to its header by the wrapping key's label.
fn unwrap_in_run(
    kms: &dyn Kms,
    runs: &RunKeys,
    key: &str,
    salt: &str,
    body: &[u8],
    digest: &[u8; 32],
) -> Result<FileKey> {
    let malformed = |why: &str| Error::AgeHeader(format!("an awskms stanza is malformed: {why}"));
    let salt: [u8; SALT_BYTES] = BASE64_STANDARD_NO_PAD
        .decode(salt)
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| malformed("its salt is not 16 bytes in base64"))?;
    let sealed_len = FILE_KEY_BYTES + 16;
    if body.len() <= sealed_len || body.len() - sealed_len > MAX_BLOB {
        return Err(malformed("its body is not a sealed key and a KMS blob"));
    }
    let (sealed, blob) = body.split_at(sealed_len);
    let mut id = Vec::with_capacity(key.len() + 1 + blob.len());
    id.extend_from_slice(key.as_bytes());
    id.push(0);
    id.extend_from_slice(blob);
    let run = runs
        .get(id, || {
            let plain = kms.decrypt(key, blob, &[(RUN_CONTEXT_KEY, RUN_CONTEXT_VALUE)])?;
            let key: [u8; RUN_KEY_BYTES] = plain.as_slice().try_into().map_err(|_| {
                format!(
                    "KMS gave {} bytes where a {RUN_KEY_BYTES}-byte run key was wrapped",
                    plain.len()
                )
            })?;
            Ok(RunKey {
                key: Arc::new(Zeroizing::new(key)),
                blob: blob.into(),
            })
        })
        .map_err(|reason| kms_error(key, reason))?;
    let wrapping = wrapping_key(&run, &salt, digest);
    let plain =
        age_core::primitives::aead_decrypt(&wrapping, FILE_KEY_BYTES, sealed).map_err(|_| {
            kms_error(
                key,
                "the wrapped key belongs to another file (its header differs) or is damaged",
            )
        })?;
    let bytes: [u8; FILE_KEY_BYTES] = plain.try_into().expect("aead_decrypt checked the length");
    Ok(FileKey::new(Box::new(bytes)))
}

/// The keys a header's KMS stanzas name, in order (what `info` shows).
pub fn keys_of(stanzas: &[Stanza]) -> Vec<String> {
    stanzas
        .iter()
        .filter(|s| s.tag == STANZA_TAG)
        .filter_map(|s| s.args.first().cloned())
        .collect()
}

/// A KMS failure naming the key.
pub(crate) fn kms_error(key: &str, reason: impl Into<String>) -> Error {
    Error::Kms {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipient::Recipients;
    use std::sync::Arc;

    #[test]
    fn a_kms_recipient_needs_a_client_and_a_key() {
        let mut recipients = Recipients::new();
        let e = recipients
            .add("awskms:alias/backups", "recipient 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a KMS client"), "{e}");
        assert_eq!(
            Target::parse("awskms:alias/backups").unwrap().key,
            "alias/backups"
        );
        for bad in ["awskms:", "awskms:alias/a b", "awskms:é"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    /// A key ARN of each partition: its region's endpoint, on the partition's DNS suffix.
    #[test]
    fn a_key_arn_of_each_partition_names_its_endpoint() {
        for (arn, host) in [
            (
                "arn:aws:kms:eu-west-3:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                "kms.eu-west-3.amazonaws.com",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:alias/team/backups_2",
                "kms.us-east-1.amazonaws.com",
            ),
            (
                "arn:aws:kms:il-central-1:123456789012:key/mrk-1234abcd12ab34cd56ef1234567890ab",
                "kms.il-central-1.amazonaws.com",
            ),
            (
                "arn:aws-cn:kms:cn-north-1:123456789012:key/1",
                "kms.cn-north-1.amazonaws.com.cn",
            ),
            (
                "arn:aws-us-gov:kms:us-gov-west-1:123456789012:key/1",
                "kms.us-gov-west-1.amazonaws.com",
            ),
            (
                "arn:aws-iso:kms:us-iso-east-1:123456789012:key/1",
                "kms.us-iso-east-1.c2s.ic.gov",
            ),
            (
                "arn:aws-iso-b:kms:us-isob-east-1:123456789012:key/1",
                "kms.us-isob-east-1.sc2s.sgov.gov",
            ),
            (
                "arn:aws-iso-e:kms:eu-isoe-west-1:123456789012:key/1",
                "kms.eu-isoe-west-1.cloud.adc-e.uk",
            ),
            (
                "arn:aws-iso-f:kms:us-isof-south-1:123456789012:key/1",
                "kms.us-isof-south-1.csp.hci.ic.gov",
            ),
            (
                "arn:aws-eusc:kms:eusc-de-east-1:123456789012:key/1",
                "kms.eusc-de-east-1.amazonaws.eu",
            ),
        ] {
            let parsed = KeyArn::parse(arn).unwrap().unwrap();
            assert_eq!(parsed.endpoint(), format!("https://{host}"), "{arn}");
            assert_eq!(parsed.account, "123456789012");
            assert!(Target::parse(&format!("awskms:{arn}")).is_ok(), "{arn}");
        }
        // Not ARNs: KMS finds them in the client's region.
        for key in ["alias/backups", "1234abcd-12ab-34cd-56ef-1234567890ab"] {
            assert_eq!(KeyArn::parse(key), Ok(None));
        }
        assert_eq!(
            endpoint("us-west-2").as_deref(),
            Some("https://kms.us-west-2.amazonaws.com")
        );
        assert_eq!(endpoint("x@attacker.example/"), None);
    }

    /// A key that starts with `arn:` and is not a KMS key ARN is refused, saying why, whatever
    /// door it comes in by (a recipient, or a file's stanza): nothing of it picks a host.
    #[test]
    fn a_malformed_or_hostile_key_arn_is_refused() {
        let account = "not an AWS KMS key ARN: the account must be 12 digits";
        let region = "not an AWS KMS key ARN: the region must be lowercase letters, digits and \
                      dashes, as us-east-1";
        for (arn, why) in [
            ("arn:aws:kms:x@attacker.example/:123456789012:key/1", region),
            ("arn:aws:kms:us-east-1.evil.com:123456789012:key/1", region),
            ("arn:aws:kms:us-east-1.:123456789012:key/1", region),
            ("arn:aws:kms:US-EAST-1:123456789012:key/1", region),
            ("arn:aws:kms::123456789012:key/1", region),
            ("arn:aws:kms:us--east-1:123456789012:key/1", region),
            ("arn:aws:kms:-us-east-1:123456789012:key/1", region),
            ("arn:aws:kms:us-east-1:12345678901:key/1", account),
            ("arn:aws:kms:us-east-1:1234567890123:key/1", account),
            ("arn:aws:kms:us-east-1:12345678901a:key/1", account),
            ("arn:aws:kms:us-east-1::key/1", account),
            (
                "arn:evil:kms:us-east-1:123456789012:key/1",
                "not an AWS KMS key ARN: unknown partition `evil` (AWS's are aws, aws-cn, ",
            ),
            (
                "arn::kms:us-east-1:123456789012:key/1",
                "not an AWS KMS key ARN: unknown partition ``",
            ),
            (
                "arn:aws:s3:us-east-1:123456789012:key/1",
                "not an AWS KMS key ARN: the service is `s3`, not kms",
            ),
            (
                "arn:aws:kms:cn-north-1:123456789012:key/1",
                "not an AWS KMS key ARN: region cn-north-1 is in partition aws-cn, not aws",
            ),
            (
                "arn:aws-cn:kms:us-east-1:123456789012:key/1",
                "not an AWS KMS key ARN: region us-east-1 is in partition aws, not aws-cn",
            ),
            (
                "arn:aws:kms:us-gov-west-1:123456789012:key/1",
                "not an AWS KMS key ARN: region us-gov-west-1 is in partition aws-us-gov",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012",
                "not an AWS KMS key ARN: expected arn:",
            ),
            ("arn:", "not an AWS KMS key ARN: expected arn:"),
            (
                "arn:aws:kms:us-east-1:123456789012:",
                "not an AWS KMS key ARN: the key must be",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:key/",
                "not an AWS KMS key ARN: the key must be",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:key/1:2",
                "not an AWS KMS key ARN: the key must be",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:key/a_b",
                "not an AWS KMS key ARN: the key must be",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:alias/a@b",
                "not an AWS KMS key ARN: the key must be",
            ),
            (
                "arn:aws:kms:us-east-1:123456789012:user/1",
                "not an AWS KMS key ARN: the key must be",
            ),
        ] {
            let e = KeyArn::parse(arn).unwrap_err();
            assert!(e.starts_with(why), "{arn}: {e}");
            let e = Target::parse(&format!("awskms:{arn}")).unwrap_err();
            assert!(e.starts_with(why), "{arn}: {e}");
        }
    }

    /// A file's stanza naming a hostile ARN is refused before the client is asked.
    #[test]
    fn a_stanza_naming_a_hostile_arn_never_reaches_the_client() {
        #[derive(Debug)]
        struct Never;
        impl Kms for Never {
            fn encrypt(
                &self,
                _: &str,
                _: &[u8],
                _: &[(&str, &str)],
            ) -> std::result::Result<Vec<u8>, String> {
                panic!("asked to encrypt")
            }
            fn decrypt(
                &self,
                _: &str,
                _: &[u8],
                _: &[(&str, &str)],
            ) -> std::result::Result<Zeroizing<Vec<u8>>, String> {
                panic!("asked to decrypt")
            }
        }
        let key = "arn:aws:kms:x@attacker.example/:123456789012:key/1";
        let stanza = Stanza {
            tag: STANZA_TAG.into(),
            args: vec![key.into()],
            body: vec![0; 32],
        };
        // A run's stanza (the key, then a salt) is held to the same grammar, before its blob is
        // sent anywhere.
        let in_run = Stanza {
            tag: STANZA_TAG.into(),
            args: vec![key.into(), BASE64_STANDARD_NO_PAD.encode([0; SALT_BYTES])],
            body: vec![0; 64],
        };
        let Some(Err(e)) = unwrap(&Never, &RunKeys::default(), &in_run, &[0; 32]) else {
            panic!("the run's stanza was not refused");
        };
        assert!(e.to_string().contains("not an AWS KMS key ARN"), "{e}");
        let Some(Err(e)) = unwrap(&Never, &RunKeys::default(), &stanza, &[0; 32]) else {
            panic!("the stanza was not refused");
        };
        assert_eq!(
            e.to_string(),
            format!(
                "KMS key {key}: not an AWS KMS key ARN: the region must be lowercase letters, \
                 digits and dashes, as us-east-1"
            )
        );
    }

    /// A KMS in this process, for the stanza's own logic (the CLI's and Python's tests run the
    /// real client against a KMS server): a blob is a random handle to what was wrapped, opened
    /// only with the same key and context; it counts requests.
    type Wrapped = (String, String, Vec<u8>);

    #[derive(Debug, Default)]
    struct Local {
        /// By blob: the key, the context and what was wrapped.
        wrapped: Mutex<HashMap<Vec<u8>, Wrapped>>,
        encrypts: std::sync::atomic::AtomicUsize,
        decrypts: std::sync::atomic::AtomicUsize,
    }

    impl Kms for Local {
        fn encrypt(
            &self,
            key: &str,
            plaintext: &[u8],
            context: &[(&str, &str)],
        ) -> std::result::Result<Vec<u8>, String> {
            self.encrypts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut blob = vec![0; 40];
            rand::Rng::fill_bytes(&mut rand::rng(), &mut blob);
            let wrapped = (key.to_owned(), format!("{context:?}"), plaintext.to_vec());
            self.wrapped.lock().unwrap().insert(blob.clone(), wrapped);
            Ok(blob)
        }
        fn decrypt(
            &self,
            key: &str,
            blob: &[u8],
            context: &[(&str, &str)],
        ) -> std::result::Result<Zeroizing<Vec<u8>>, String> {
            self.decrypts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            match self.wrapped.lock().unwrap().get(blob) {
                Some((k, c, plain)) if k == key && *c == format!("{context:?}") => {
                    Ok(Zeroizing::new(plain.clone()))
                }
                _ => Err("KMS refused the wrapped key: it belongs to another file".into()),
            }
        }
    }

    fn with_local(kms: &Arc<Local>) -> (Recipients, crate::recipient::Identities) {
        let mut recipients = Recipients::new();
        recipients.set_kms(kms.clone());
        recipients.add("awskms:alias/k", "recipient 1").unwrap();
        let mut identities = crate::recipient::Identities::new();
        identities.set_kms(kms.clone());
        (recipients, identities)
    }

    fn count(n: &std::sync::atomic::AtomicUsize) -> usize {
        n.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Recipients seal any number of files with one KMS request (the run key's), and identities
    /// open them with one, however many threads ask at once; each stanza opens only in its own
    /// header.
    #[test]
    fn one_run_key_one_request_each_way_whatever_the_files_and_threads() {
        use age::secrecy::ExposeSecret;
        let kms = Arc::new(Local::default());
        let (recipients, identities) = with_local(&kms);
        let keys: Vec<FileKey> = (0..64u8)
            .map(|i| FileKey::new(Box::new([i; FILE_KEY_BYTES])))
            .collect();
        let salts: Vec<[u8; 32]> = (0..64u8).map(|i| [i; 32]).collect();
        let headers: Vec<Vec<Stanza>> = keys
            .iter()
            .zip(&salts)
            .map(|(key, salt)| recipients.wrap_bound(key, salt).unwrap())
            .collect();
        assert_eq!(count(&kms.encrypts), 1, "one Encrypt for 64 files");
        assert!(headers.iter().all(|h| h.len() == 1 && h[0].args.len() == 2));
        std::thread::scope(|scope| {
            for start in (0..64).step_by(8) {
                let (identities, headers, keys, salts) = (&identities, &headers, &keys, &salts);
                scope.spawn(move || {
                    for i in start..start + 8 {
                        let key = identities.unwrap_bound(&headers[i], &salts[i]).unwrap();
                        assert_eq!(key.expose_secret(), keys[i].expose_secret());
                    }
                });
            }
        });
        assert_eq!(
            count(&kms.decrypts),
            1,
            "one Decrypt for 64 files on 8 threads"
        );
        // A stanza in another header (another salt) is refused without asking KMS again.
        let e = identities
            .unwrap_bound(&headers[0], &salts[1])
            .err()
            .expect("refused")
            .to_string();
        assert_eq!(
            e,
            "KMS key alias/k: the wrapped key belongs to another file (its header differs) or is damaged"
        );
        assert_eq!(count(&kms.decrypts), 1);
        // Other identities (another process) ask once more.
        let (_, others) = with_local(&kms);
        others.unwrap_bound(&headers[5], &salts[5]).unwrap();
        assert_eq!(count(&kms.decrypts), 2);
    }

    /// A stanza of a file key wrapped on its own (one argument, as before run keys) still opens,
    /// asking KMS with the header's context; a run key's blob put in its place is refused by KMS
    /// (another context), and a malformed stanza of either kind in one line.
    #[test]
    fn a_file_key_wrapped_alone_still_opens_and_the_two_blobs_never_mix() {
        use age::secrecy::ExposeSecret;
        let kms = Arc::new(Local::default());
        let (recipients, identities) = with_local(&kms);
        let digest = header_digest(b"salt", &[]);
        let blob = kms
            .encrypt(
                "alias/k",
                &[7; FILE_KEY_BYTES],
                &[(CONTEXT_KEY, &context(&digest))],
            )
            .unwrap();
        let alone = Stanza {
            tag: STANZA_TAG.into(),
            args: vec!["alias/k".into()],
            body: blob,
        };
        let key = identities.unwrap_bound(&[alone], b"salt").unwrap();
        assert_eq!(key.expose_secret(), &[7; FILE_KEY_BYTES]);
        let run = recipients
            .wrap_bound(&FileKey::new(Box::new([1; FILE_KEY_BYTES])), b"salt")
            .unwrap()
            .remove(0);
        let blob = run.body[FILE_KEY_BYTES + 16..].to_vec();
        let e = identities
            .unwrap_bound(
                &[Stanza {
                    tag: STANZA_TAG.into(),
                    args: vec!["alias/k".into()],
                    body: blob,
                }],
                b"salt",
            )
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("belongs to another file"), "{e}");
        for (args, body, why) in [
            (
                vec!["alias/k", "AAAA"],
                run.body.clone(),
                "its salt is not 16 bytes",
            ),
            (
                vec!["alias/k", &run.args[1]],
                vec![0; 32],
                "its body is not",
            ),
            (
                vec!["alias/k", &run.args[1]],
                vec![0; 32 + 6145],
                "its body is not",
            ),
            (
                vec!["alias/k", "a", "b"],
                run.body.clone(),
                "one or two arguments",
            ),
        ] {
            let stanza = Stanza {
                tag: STANZA_TAG.into(),
                args: args.into_iter().map(String::from).collect(),
                body,
            };
            let e = identities
                .unwrap_bound(&[stanza], b"salt")
                .err()
                .expect("refused")
                .to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn the_digest_binds_the_other_stanzas_and_the_salt_not_kms_stanzas() {
        let stanza = |tag: &str, arg: &str| Stanza {
            tag: tag.into(),
            args: vec![arg.into()],
            body: vec![1, 2, 3],
        };
        let x = || stanza("X25519", "AAAA");
        let kms = stanza(STANZA_TAG, "alias/k");
        let base = header_digest(b"salt", &[x()]);
        assert_eq!(header_digest(b"salt", &[x(), kms]), base);
        assert_ne!(header_digest(b"other", &[x()]), base);
        assert_ne!(header_digest(b"salt", &[stanza("X25519", "BBBB")]), base);
        assert_ne!(header_digest(b"salt", &[]), base);
    }
}
