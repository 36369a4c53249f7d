//! The container header and the key schedule it anchors. The byte layout is specified in
//! `docs/FORMAT.md`; this file is its implementation.

use std::sync::Arc;

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::secret::{Argon2Params, Secret, argon2id};
use super::suite::Suite;
use crate::error::{Error, HeaderFault, NEEDS_IDENTITY, NEEDS_KEY_FILE, NEEDS_PASSWORD, Result};
use crate::plan::{ChunkSize, Sizes};
use crate::recipient::{
    FileKey, Identities, MAX_STANZAS, Recipients, SCRYPT_TAG, read_stanzas, write_stanzas,
};
use crate::sign::keys::MAX_PUBLIC_KEY;
use crate::sign::{Scheme, VerifyingKey};
use age_core::format::Stanza;
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;

/// The magic bytes every container starts with.
pub const MAGIC: &[u8; 9] = b"PARACRYPT";
/// The format version of files encrypted with a key file or a password.
pub const VERSION: u8 = 1;
/// The format version of files encrypted to recipients: the header carries a recipient block.
pub const VERSION_RECIPIENTS: u8 = 2;
/// The format version of signed files (any key derivation): the header names the signer, and
/// every chunk carries a signature.
pub const VERSION_SIGNED: u8 = 3;
/// Length of a version 1 header; a version 2 header is this plus its recipient block, a
/// version 3 header this plus its recipient block (if any) and its signer block.
pub const HEADER_LEN: usize = 116;
/// The largest recipient block (1 MiB: thousands of recipients), so that a damaged or hostile
/// header cannot make a reader buffer without bound.
pub const MAX_RECIPIENT_BLOCK: usize = 1 << 20;
/// Salt length in bytes.
pub const SALT_LEN: usize = 32;

const BLOCK_LEN_AT: usize = 16;
const KEY_CHECK_AT: usize = 60;
/// Where a version 2 header's recipient block starts (and a version 1 header's checksum).
const BLOCK_AT: usize = 76;
const CHECKSUM_LEN: usize = 8;
const MAC_LEN: usize = 32;
/// The `kdf` byte of a rekeyed version 2 header: recipients, and a binding stanza first.
const KDF_REKEYED: u8 = 3;
/// The tag of a rekeyed header's first stanza, whose argument is the chunk binding.
const BINDING_TAG: &str = "paracrypt-bound";

/// How the key was derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kdf {
    /// A 256-bit key file, used directly as HKDF input.
    Key,
    /// A password through Argon2id with these parameters.
    Argon2id(Argon2Params),
    /// A random file key, wrapped for each recipient in the header's recipient block
    /// (version 2).
    Recipients,
}

impl Kdf {
    fn id(self) -> u8 {
        match self {
            Kdf::Key => 0,
            Kdf::Argon2id(_) => 1,
            Kdf::Recipients => 2,
        }
    }
}

/// Everything the header says, readable without a key (`paracrypt info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderInfo {
    /// Format version.
    pub version: u8,
    /// Cipher suite.
    pub suite: Suite,
    /// Plaintext bytes per chunk.
    pub chunk_size: ChunkSize,
    /// Key derivation.
    pub kdf: Kdf,
    /// The per-file random salt.
    pub salt: [u8; SALT_LEN],
    /// The header's length: [`HEADER_LEN`], plus the recipient block in version 2, plus the
    /// recipient block (if any) and the signer block in version 3.
    pub len: usize,
    /// How many recipient stanzas the header holds (version 2; 0 otherwise).
    pub recipients: usize,
    /// The recipient stanzas' tags, in the header's order (version 2; empty otherwise): what
    /// `info` says a file needs, an age plugin's among them.
    pub stanza_tags: Vec<String>,
    /// The AWS KMS keys its `awskms` stanzas name, in order (version 2; empty otherwise).
    pub kms_keys: Vec<String>,
    /// What the chunks are bound to when it is not this header's own MAC: the MAC of the
    /// header the file was first written with, kept by a rekeyed header (`kdf` 3).
    pub binding: Option<[u8; MAC_LEN]>,
    /// The signer's public key (version 3): every chunk carries its signature.
    pub signer: Option<VerifyingKey>,
}

/// Where a version 3 header's signer block starts: after the recipient block, whose length is
/// at bytes 16..20 when the key derivation is recipients (`kdf` 2 or 3), and which is absent
/// otherwise. `None` until `bytes` holds enough to tell.
fn signer_at(bytes: &[u8]) -> Result<Option<usize>> {
    let Some(&kdf) = bytes.get(11) else {
        return Ok(None);
    };
    if kdf != 2 && kdf != KDF_REKEYED {
        return Ok(Some(BLOCK_AT));
    }
    let Some(field) = bytes.get(BLOCK_LEN_AT..BLOCK_LEN_AT + 4) else {
        return Ok(None);
    };
    let block = u32::from_be_bytes(field.try_into().expect("4 bytes")) as usize;
    if block == 0 || block > MAX_RECIPIENT_BLOCK {
        return Err(Error::Header(HeaderFault::Field("recipient block length")));
    }
    Ok(Some(BLOCK_AT + block))
}

/// The bytes a version 3 header's signer block adds beside its public key: the scheme and the
/// key's length.
const SIGNER_FIELDS: usize = 3;

/// The length of the header that `bytes` starts with, from its version (and, in version 2,
/// its recipient block's length; in version 3, that and its public key's), once `bytes` holds
/// enough to tell. A version 3 header whose signer block starts beyond `bytes` gives the
/// length up to that block's key length field, a lower bound: read that much, and ask again.
pub fn header_len(bytes: &[u8]) -> Result<Option<usize>> {
    match bytes.get(MAGIC.len()) {
        Some(&VERSION_SIGNED) => {
            let Some(at) = signer_at(bytes)? else {
                return Ok(None);
            };
            let Some(field) = bytes.get(at + 1..at + SIGNER_FIELDS) else {
                return Ok(Some(at + SIGNER_FIELDS));
            };
            let key = u16::from_be_bytes(field.try_into().expect("2 bytes")) as usize;
            if key == 0 || key > MAX_PUBLIC_KEY {
                return Err(Error::Header(HeaderFault::Field("signer")));
            }
            Ok(Some(at + SIGNER_FIELDS + key + CHECKSUM_LEN + MAC_LEN))
        }
        Some(&VERSION_RECIPIENTS) => {
            let Some(field) = bytes.get(BLOCK_LEN_AT..BLOCK_LEN_AT + 4) else {
                return Ok(None);
            };
            let block = u32::from_be_bytes(field.try_into().expect("4 bytes")) as usize;
            if block == 0 || block > MAX_RECIPIENT_BLOCK {
                return Err(Error::Header(HeaderFault::Field("recipient block length")));
            }
            Ok(Some(HEADER_LEN + block))
        }
        Some(_) => Ok(Some(HEADER_LEN)),
        None => Ok(None),
    }
}

impl HeaderInfo {
    /// What a file of `file_len` bytes that starts with this header holds: its chunks and
    /// their plaintext (within a block, for the CBC suites), or why no writer makes a file of
    /// that length (nothing after the header, a last chunk shorter than its tag).
    pub fn sizes(&self, file_len: u64) -> Sizes {
        let suite = self.suite;
        let signature = self.signature_len() as u64;
        let sizes = Sizes::sealed(
            file_len.saturating_sub(self.len as u64),
            self.chunk_size.get() as u64,
            suite.chunk_overhead() as u64 + signature,
            suite.tag_len() as u64 + signature,
        );
        match suite.cbc_block() {
            Some(block) => sizes.padded(block as u64),
            None => sizes,
        }
    }

    /// The bytes of the signature every chunk of a signed file (version 3) carries; 0 for an
    /// unsigned file.
    pub fn signature_len(&self) -> usize {
        self.signer.as_ref().map_or(0, VerifyingKey::signature_len)
    }

    /// Parses and checks a header's fields (magic, version, length, checksum, suite, chunk
    /// size, KDF) without any key, in `docs/FORMAT.md`'s order. The MAC is checked later, by
    /// `Keys::open`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::NotAContainer);
        }
        // The version comes before the length: another version has another header.
        if let Some(&version) = bytes.get(MAGIC.len())
            && version != VERSION
            && version != VERSION_RECIPIENTS
            && version != VERSION_SIGNED
        {
            return Err(Error::UnsupportedVersion(version));
        }
        let len = match header_len(bytes)? {
            Some(len) if bytes.len() >= len => len,
            _ => return Err(Error::Header(HeaderFault::Truncated)),
        };
        let bytes = &bytes[..len];
        let version = bytes[9];
        let (checksum_at, mac_at) = (len - MAC_LEN - CHECKSUM_LEN, len - MAC_LEN);
        let checksum = &Sha256::digest(&bytes[..checksum_at])[..CHECKSUM_LEN];
        if checksum != &bytes[checksum_at..mac_at] {
            return Err(Error::Header(HeaderFault::Checksum));
        }
        let suite = Suite::from_id(bytes[10]).ok_or(Error::Header(HeaderFault::Field("suite")))?;
        let u32_at = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let chunk_size = ChunkSize::new(u32_at(12) as usize)
            .map_err(|_| Error::Header(HeaderFault::Field("chunk size")))?;
        let params = Argon2Params {
            m_cost: u32_at(16),
            t_cost: u32_at(20),
            p_cost: u32_at(24),
        };
        let mut recipients = 0;
        let mut stanza_tags = Vec::new();
        let mut kms_keys = Vec::new();
        let mut binding = None;
        // Version 3 is version 1 or 2 (by the key derivation) with a signer block before the
        // checksum.
        let (version_kdf, block_end) = match version {
            VERSION_SIGNED => {
                let at = signer_at(bytes)?.expect("a whole header");
                let layout = if at == BLOCK_AT {
                    VERSION
                } else {
                    VERSION_RECIPIENTS
                };
                (layout, at)
            }
            _ => (version, checksum_at),
        };
        let kdf = match (version_kdf, bytes[11]) {
            (VERSION, 0)
                if params
                    == (Argon2Params {
                        m_cost: 0,
                        t_cost: 0,
                        p_cost: 0,
                    }) =>
            {
                Kdf::Key
            }
            (VERSION, 1) => {
                params
                    .check()
                    .map_err(|_| Error::Header(HeaderFault::Field("Argon2 parameters")))?;
                Kdf::Argon2id(params)
            }
            (VERSION_RECIPIENTS, kdf @ (2 | KDF_REKEYED)) if bytes[20..28] == [0; 8] => {
                let block = Block::parse(&bytes[BLOCK_AT..block_end], kdf == KDF_REKEYED)?;
                recipients = block.stanzas.len();
                stanza_tags = block.stanzas.iter().map(|s| s.tag.clone()).collect();
                kms_keys = crate::recipient::kms::keys_of(&block.stanzas);
                binding = block.binding;
                Kdf::Recipients
            }
            _ => return Err(Error::Header(HeaderFault::Field("key derivation"))),
        };
        let signer = match version {
            VERSION_SIGNED => Some(parse_signer(&bytes[block_end..checksum_at])?),
            _ => None,
        };
        let salt = bytes[28..28 + SALT_LEN].try_into().expect("32 bytes");
        Ok(HeaderInfo {
            version,
            suite,
            chunk_size,
            kdf,
            salt,
            len,
            recipients,
            stanza_tags,
            kms_keys,
            binding,
            signer,
        })
    }

    /// The recipient block's stanzas of the header `bytes`, or `None` when the header has none
    /// (a key file's or a password's).
    pub(crate) fn recipient_stanzas(bytes: &[u8]) -> Result<Option<Vec<Stanza>>> {
        let info = HeaderInfo::parse(bytes)?;
        if info.kdf != Kdf::Recipients {
            return Ok(None);
        }
        let block = info.recipient_block(&bytes[..info.len]);
        Ok(Some(Block::parse(block, info.binding.is_some())?.stanzas))
    }

    /// Where the recipient block lies in the header `bytes` (empty in a version 1 layout).
    fn recipient_block<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        let end = match self.version {
            VERSION_SIGNED => signer_at(bytes).ok().flatten().unwrap_or(BLOCK_AT),
            _ => self.len - MAC_LEN - CHECKSUM_LEN,
        };
        &bytes[BLOCK_AT..end]
    }
}

/// A version 3 header's signer block: the scheme, the public key field's length and the field.
fn parse_signer(block: &[u8]) -> Result<VerifyingKey> {
    let bad = || Error::Header(HeaderFault::Field("signer"));
    let scheme = Scheme::from_id(block[0]).ok_or_else(bad)?;
    let key = VerifyingKey::from_field(scheme, &block[SIGNER_FIELDS..]).map_err(|_| bad())?;
    // A key whose signatures the layout cannot frame (an RSA modulus beyond 32768 bits).
    if key.signature_len() > crate::plan::MAX_FRAMING - 64 {
        return Err(bad());
    }
    Ok(key)
}

/// The signer block of `key`: the scheme's id, the public key field's length and the field.
fn signer_block(key: &VerifyingKey) -> Result<Vec<u8>> {
    let field = key.to_field();
    if field.is_empty()
        || field.len() > MAX_PUBLIC_KEY
        || key.signature_len() > crate::plan::MAX_FRAMING - 64
    {
        return Err(Error::SignKey(format!(
            "a {} key too large to sign a container's chunks with",
            key.scheme()
        )));
    }
    let mut block = vec![key.scheme().id()];
    block.extend_from_slice(&(field.len() as u16).to_be_bytes());
    block.extend_from_slice(&field);
    Ok(block)
}

/// A version 2 header's recipient block, read: its recipient stanzas and, in a rekeyed
/// header, the chunk binding its first stanza carries.
struct Block {
    stanzas: Vec<Stanza>,
    binding: Option<[u8; MAC_LEN]>,
}

impl Block {
    fn parse(block: &[u8], rekeyed: bool) -> Result<Self> {
        let bad = || Error::Header(HeaderFault::Field("recipient block"));
        let mut stanzas = read_stanzas(block).map_err(|_| bad())?;
        let binding = if rekeyed {
            let first = stanzas.remove(0);
            let binding = match (&first.tag[..], &first.args[..], first.body.is_empty()) {
                (BINDING_TAG, [arg], true) => BASE64_STANDARD_NO_PAD
                    .decode(arg)
                    .ok()
                    .and_then(|bytes| <[u8; MAC_LEN]>::try_from(bytes).ok()),
                _ => None,
            };
            if stanzas.is_empty() {
                return Err(bad());
            }
            Some(binding.ok_or_else(bad)?)
        } else {
            None
        };
        if stanzas.iter().any(|s| s.tag == BINDING_TAG) {
            return Err(bad());
        }
        Ok(Block { stanzas, binding })
    }
}

/// The keys of one file, derived from the secret and the header's salt.
pub struct Keys {
    /// The header as written, MAC included.
    pub header: Vec<u8>,
    /// The header's fields.
    pub info: HeaderInfo,
    /// Key material for the suite (see `docs/FORMAT.md`).
    pub payload: Zeroizing<Vec<u8>>,
    /// The header's MAC key: with `payload`, what another process needs to run this file's
    /// chunks ([`Keys::shared`]).
    header_key: Zeroizing<[u8; 32]>,
    /// The file key of a file encrypted to recipients (version 2).
    pub file_key: Option<FileKey>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The HKDF labels, one per derived value.
const LABEL_KEY_CHECK: &[u8] = b"paracrypt v1 key check";
const LABEL_HEADER: &[u8] = b"paracrypt v1 header mac";
const LABEL_PAYLOAD: &[u8] = b"paracrypt v1 payload ";

struct Derived {
    key_check: [u8; 16],
    header_key: Zeroizing<[u8; 32]>,
    payload: Zeroizing<Vec<u8>>,
}

/// The key schedule's input: the key file's key, the password through Argon2id, or the
/// unwrapped `file_key` of a file encrypted to recipients.
fn derive(secret: &Secret, info: &HeaderInfo, file_key: Option<&FileKey>) -> Result<Derived> {
    use age_core::secrecy::ExposeSecret;
    let wrong = |needs| Err(Error::WrongSecretKind { needs });
    let ikm: Zeroizing<Vec<u8>> = match (secret, info.kdf, file_key) {
        (Secret::Key(key), Kdf::Key, _) => Zeroizing::new(key.as_bytes().to_vec()),
        (Secret::Password(password, _), Kdf::Argon2id(params), _) => {
            Zeroizing::new(argon2id(password, &info.salt, params)?.to_vec())
        }
        (Secret::Recipients(_) | Secret::Identities(_), Kdf::Recipients, Some(key)) => {
            Zeroizing::new(key.expose_secret().to_vec())
        }
        (_, Kdf::Key, _) => return wrong(NEEDS_KEY_FILE),
        (_, Kdf::Argon2id(_), _) => return wrong(NEEDS_PASSWORD),
        (_, Kdf::Recipients, _) => return wrong(NEEDS_IDENTITY),
    };
    let hk = Hkdf::<Sha256>::new(Some(&info.salt), &ikm[..]);
    let mut key_check = [0u8; 16];
    hk.expand(LABEL_KEY_CHECK, &mut key_check)
        .expect("16 bytes is a valid HKDF length");
    let mut header_key = Zeroizing::new([0u8; 32]);
    hk.expand(LABEL_HEADER, &mut header_key[..])
        .expect("32 bytes is a valid HKDF length");
    let mut payload = Zeroizing::new(vec![0u8; super::chunk::payload_key_len(info.suite)]);
    let label = [LABEL_PAYLOAD, info.suite.as_str().as_bytes()].concat();
    hk.expand(&label, &mut payload)
        .expect("payload keys are short");
    Ok(Derived {
        key_check,
        header_key,
        payload,
    })
}

fn header_mac(key: &[u8; 32], bytes: &[u8]) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(bytes);
    mac.finalize().into_bytes().into()
}

impl Keys {
    /// Builds a new header for `suite` and `chunk_size` with a fresh random salt (or `salt`, for
    /// reproducible test output) and, encrypting to recipients, a fresh file key (or
    /// `file_key`), and derives the file's keys.
    pub fn seal(
        secret: &Secret,
        suite: Suite,
        chunk_size: ChunkSize,
        salt: Option<[u8; SALT_LEN]>,
        file_key: Option<[u8; 16]>,
        signer: Option<&VerifyingKey>,
    ) -> Result<Self> {
        let salt = salt.unwrap_or_else(|| {
            let mut salt = [0u8; SALT_LEN];
            rand::rng().fill_bytes(&mut salt);
            salt
        });
        let file_key = match secret {
            Secret::Recipients(_) => Some(FileKey::init_with_mut(|key| match file_key {
                Some(fixed) => *key = fixed,
                None => rand::rng().fill_bytes(key),
            })),
            _ => None,
        };
        Self::build(secret, suite, chunk_size, salt, file_key, None, signer)
    }

    /// Writes the header of `secret` with these fields and, to recipients, wraps `file_key`
    /// for each (after the stanza of `binding`, a rekeyed header's), and derives the keys.
    fn build(
        secret: &Secret,
        suite: Suite,
        chunk_size: ChunkSize,
        salt: [u8; SALT_LEN],
        file_key: Option<FileKey>,
        binding: Option<[u8; MAC_LEN]>,
        signer: Option<&VerifyingKey>,
    ) -> Result<Self> {
        let (kdf, version) = match secret {
            Secret::Key(_) => (Kdf::Key, VERSION),
            Secret::Password(_, params) => {
                params.check()?;
                (Kdf::Argon2id(*params), VERSION)
            }
            Secret::Recipients(_) => (Kdf::Recipients, VERSION_RECIPIENTS),
            Secret::Identities(_) => {
                return Err(Error::WrongSecretKind {
                    needs: "recipients (public keys) to encrypt to",
                });
            }
        };
        // Encrypting to recipients: the file key, wrapped for each of them.
        let mut block = Vec::new();
        if let (Secret::Recipients(recipients), Some(key)) = (secret, &file_key) {
            // KMS stanzas are bound to the salt, which no two files share.
            let mut stanzas = recipients.wrap_bound(key, &salt)?;
            if let Some(binding) = binding {
                // `decrypt` opens a container's passphrase as version 1 (Argon2id).
                if stanzas.iter().any(|s| s.tag == SCRYPT_TAG) {
                    return Err(Error::CannotRekey(
                        "a container is rekeyed to recipients (-r/-R), not to a passphrase; \
                         for a password, decrypt it and encrypt it again",
                    ));
                }
                let arg = BASE64_STANDARD_NO_PAD.encode(binding);
                if stanzas.len() == MAX_STANZAS {
                    return Err(Error::IncompatibleRecipients(
                        "there are 1024 (a rekeyed header holds at most 1023 beside its binding)",
                    ));
                }
                stanzas.insert(
                    0,
                    Stanza {
                        tag: BINDING_TAG.to_owned(),
                        args: vec![arg],
                        body: Vec::new(),
                    },
                );
            }
            write_stanzas(&stanzas, &mut block);
            if block.len() > MAX_RECIPIENT_BLOCK {
                return Err(Error::IncompatibleRecipients(
                    "their stanzas exceed the header's 1 MiB recipient block",
                ));
            }
        }
        let signer_block = signer.map(signer_block).transpose()?.unwrap_or_default();
        let version = if signer.is_some() {
            VERSION_SIGNED
        } else {
            version
        };
        let len = HEADER_LEN + block.len() + signer_block.len();
        let info = HeaderInfo {
            version,
            suite,
            chunk_size,
            kdf,
            salt,
            len,
            recipients: 0,
            stanza_tags: Vec::new(),
            kms_keys: Vec::new(),
            binding,
            signer: signer.cloned(),
        };
        let derived = derive(secret, &info, file_key.as_ref())?;
        let mut header = vec![0u8; len];
        header[..9].copy_from_slice(MAGIC);
        header[9] = version;
        header[10] = suite.id();
        header[11] = if binding.is_some() {
            KDF_REKEYED
        } else {
            kdf.id()
        };
        // At most 1 GiB: fits the field.
        header[12..16].copy_from_slice(&(chunk_size.get() as u32).to_be_bytes());
        match kdf {
            Kdf::Argon2id(p) => {
                header[16..20].copy_from_slice(&p.m_cost.to_be_bytes());
                header[20..24].copy_from_slice(&p.t_cost.to_be_bytes());
                header[24..28].copy_from_slice(&p.p_cost.to_be_bytes());
            }
            Kdf::Recipients => {
                header[BLOCK_LEN_AT..BLOCK_LEN_AT + 4]
                    .copy_from_slice(&(block.len() as u32).to_be_bytes());
                header[BLOCK_AT..BLOCK_AT + block.len()].copy_from_slice(&block);
            }
            Kdf::Key => {}
        }
        let signer_at = BLOCK_AT + block.len();
        header[signer_at..signer_at + signer_block.len()].copy_from_slice(&signer_block);
        header[28..60].copy_from_slice(&salt);
        header[KEY_CHECK_AT..BLOCK_AT].copy_from_slice(&derived.key_check);
        let (checksum_at, mac_at) = (len - MAC_LEN - CHECKSUM_LEN, len - MAC_LEN);
        let checksum = Sha256::digest(&header[..checksum_at]);
        header[checksum_at..mac_at].copy_from_slice(&checksum[..CHECKSUM_LEN]);
        let mac = header_mac(&derived.header_key, &header[..mac_at]);
        header[mac_at..].copy_from_slice(&mac);
        let info = HeaderInfo::parse(&header).expect("a header just written parses");
        Ok(Keys {
            header,
            info,
            payload: derived.payload,
            header_key: derived.header_key,
            file_key,
        })
    }

    /// What another process needs, besides the header, to run this file's chunks: the keys
    /// derived for this one file (the header's MAC key, then the payload key material), never
    /// the secret they came from (a key file, a password) nor a file key that other headers
    /// could wrap.
    pub fn shared(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new([&self.header_key[..], &self.payload[..]].concat())
    }

    /// The keys of the file whose header is `bytes`, from what [`Keys::shared`] gave another
    /// process: the header's MAC is checked with them (keys of another file fail as
    /// [`Error::WrongKey`]).
    fn from_shared(bytes: &[u8], shared: &[u8]) -> Result<Self> {
        let info = HeaderInfo::parse(bytes)?;
        let bytes = &bytes[..info.len];
        let payload_len = super::chunk::payload_key_len(info.suite);
        if shared.len() != 32 + payload_len {
            return Err(Error::WrongKey);
        }
        let (mac_key, payload) = shared.split_at(32);
        let header_key = Zeroizing::new(<[u8; 32]>::try_from(mac_key).expect("32 bytes"));
        let mac_at = info.len - MAC_LEN;
        let mac = header_mac(&header_key, &bytes[..mac_at]);
        if !bool::from(mac.ct_eq(&bytes[mac_at..])) {
            return Err(Error::WrongKey);
        }
        Ok(Keys {
            header: bytes.to_vec(),
            info,
            payload: Zeroizing::new(payload.to_vec()),
            header_key,
            file_key: None,
        })
    }

    /// Checks a header against `secret`: its fields, then the key check (a wrong key or
    /// password fails here, before any output), then its MAC. With `shared` (what
    /// [`Keys::shared`] gave another process) the secret is not needed: the header is checked
    /// with those keys.
    pub fn open(secret: &Secret, bytes: &[u8], shared: Option<&[u8]>) -> Result<Self> {
        if let Some(shared) = shared {
            return Self::from_shared(bytes, shared);
        }
        let info = HeaderInfo::parse(bytes)?;
        let bytes = &bytes[..info.len];
        let mac_at = info.len - MAC_LEN;
        let file_key = match (secret, info.kdf) {
            (Secret::Identities(identities), Kdf::Recipients) => {
                let block = info.recipient_block(bytes);
                let block = Block::parse(block, info.binding.is_some()).expect("checked by parse");
                Some(identities.unwrap_bound(&block.stanzas, &info.salt)?)
            }
            (Secret::Recipients(_), Kdf::Recipients) => {
                return Err(Error::WrongSecretKind {
                    needs: NEEDS_IDENTITY,
                });
            }
            _ => None,
        };
        let derived = derive(secret, &info, file_key.as_ref())?;
        if !bool::from(derived.key_check.ct_eq(&bytes[KEY_CHECK_AT..BLOCK_AT])) {
            return Err(Error::WrongKey);
        }
        let mac = header_mac(&derived.header_key, &bytes[..mac_at]);
        if !bool::from(mac.ct_eq(&bytes[mac_at..])) {
            return Err(Error::Header(HeaderFault::Mac));
        }
        Ok(Keys {
            header: bytes.to_vec(),
            info,
            payload: derived.payload,
            header_key: derived.header_key,
            file_key,
        })
    }

    /// What every chunk's authentication covers: the header's MAC, or in a rekeyed header the
    /// MAC of the header the chunks were sealed under.
    pub fn header_mac(&self) -> &[u8] {
        match &self.info.binding {
            Some(binding) => binding,
            None => &self.header[self.header.len() - MAC_LEN..],
        }
    }

    /// A new header for the file `header` begins, opened with `old`: the same suite, chunk
    /// size, salt and file key, wrapped for `new` only, and bound to the chunks as they are
    /// (so they stay valid byte for byte). A version 1 header has no file key to re-wrap.
    pub fn rekey(header: &[u8], old: Arc<Identities>, new: Arc<Recipients>) -> Result<Vec<u8>> {
        let info = HeaderInfo::parse(header)?;
        if info.kdf != Kdf::Recipients {
            return Err(Error::CannotRekey(
                "a version 1 container (key file or password) feeds its secret straight into \
                 the key schedule and has no file key to re-wrap; decrypt it and encrypt it again",
            ));
        }
        let old = Secret::Identities(old);
        let keys = Keys::open(&old, header, None)?;
        let binding = keys.header_mac().try_into().expect("32 bytes");
        let new = Secret::Recipients(new);
        let rekeyed = Self::build(
            &new,
            info.suite,
            info.chunk_size,
            info.salt,
            keys.file_key,
            Some(binding),
            info.signer.as_ref(),
        )?;
        Ok(rekeyed.header)
    }
}
