//! The container header and the key schedule it anchors. The byte layout is specified in
//! `docs/FORMAT.md`; this file is its implementation.

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::secret::{Argon2Params, Secret, argon2id};
use super::suite::Suite;
use crate::error::{Error, HeaderFault, Result};
use crate::plan::ChunkSize;

/// The magic bytes every container starts with.
pub const MAGIC: &[u8; 9] = b"PARACRYPT";
/// The format version this code writes and reads.
pub const VERSION: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 116;
/// Salt length in bytes.
pub const SALT_LEN: usize = 32;

const KEY_CHECK_AT: usize = 60;
const CHECKSUM_AT: usize = 76;
const MAC_AT: usize = 84;

/// How the key was derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kdf {
    /// A 256-bit key file, used directly as HKDF input.
    Key,
    /// A password through Argon2id with these parameters.
    Argon2id(Argon2Params),
}

impl Kdf {
    fn id(self) -> u8 {
        match self {
            Kdf::Key => 0,
            Kdf::Argon2id(_) => 1,
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
}

impl HeaderInfo {
    /// Parses and checks a header's fields (magic, version, length, checksum, suite, chunk
    /// size, KDF) without any key, in `docs/FORMAT.md`'s order. The MAC is checked later, by
    /// `Keys::open`.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::NotAContainer);
        }
        // The version comes before the length: another version may have another header.
        if let Some(&version) = bytes.get(MAGIC.len())
            && version != VERSION
        {
            return Err(Error::UnsupportedVersion(version));
        }
        if bytes.len() < HEADER_LEN {
            return Err(Error::Header(HeaderFault::Truncated));
        }
        let version = bytes[9];
        let checksum = &Sha256::digest(&bytes[..CHECKSUM_AT])[..8];
        if checksum != &bytes[CHECKSUM_AT..MAC_AT] {
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
        let kdf = match bytes[11] {
            0 if params
                == (Argon2Params {
                    m_cost: 0,
                    t_cost: 0,
                    p_cost: 0,
                }) =>
            {
                Kdf::Key
            }
            1 => {
                params
                    .check()
                    .map_err(|_| Error::Header(HeaderFault::Field("Argon2 parameters")))?;
                Kdf::Argon2id(params)
            }
            _ => return Err(Error::Header(HeaderFault::Field("key derivation"))),
        };
        let salt = bytes[28..28 + SALT_LEN].try_into().expect("32 bytes");
        Ok(HeaderInfo {
            version,
            suite,
            chunk_size,
            kdf,
            salt,
        })
    }
}

/// The keys of one file, derived from the secret and the header's salt.
pub struct Keys {
    /// The header as written, MAC included.
    pub header: [u8; HEADER_LEN],
    /// The header's fields.
    pub info: HeaderInfo,
    /// Key material for the suite (see `docs/FORMAT.md`).
    pub payload: Zeroizing<Vec<u8>>,
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

fn derive(secret: &Secret, info: &HeaderInfo) -> Result<Derived> {
    let ikm: Zeroizing<[u8; 32]> = match (secret, info.kdf) {
        (Secret::Key(key), _) => Zeroizing::new(*key.as_bytes()),
        (Secret::Password(password, _), Kdf::Argon2id(params)) => {
            argon2id(password, &info.salt, params)?
        }
        (Secret::Password(..), Kdf::Key) => {
            return Err(Error::WrongSecretKind {
                needs: "a key file",
            });
        }
    };
    if matches!((secret, info.kdf), (Secret::Key(_), Kdf::Argon2id(_))) {
        return Err(Error::WrongSecretKind {
            needs: "a password",
        });
    }
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
    /// reproducible test output) and derives the file's keys.
    pub fn seal(
        secret: &Secret,
        suite: Suite,
        chunk_size: ChunkSize,
        salt: Option<[u8; SALT_LEN]>,
    ) -> Result<Self> {
        let salt = salt.unwrap_or_else(|| {
            let mut salt = [0u8; SALT_LEN];
            rand::rng().fill_bytes(&mut salt);
            salt
        });
        let kdf = match secret {
            Secret::Key(_) => Kdf::Key,
            Secret::Password(_, params) => {
                params.check()?;
                Kdf::Argon2id(*params)
            }
        };
        let info = HeaderInfo {
            version: VERSION,
            suite,
            chunk_size,
            kdf,
            salt,
        };
        let derived = derive(secret, &info)?;
        let mut header = [0u8; HEADER_LEN];
        header[..9].copy_from_slice(MAGIC);
        header[9] = VERSION;
        header[10] = suite.id();
        header[11] = kdf.id();
        // At most 1 GiB: fits the field.
        header[12..16].copy_from_slice(&(chunk_size.get() as u32).to_be_bytes());
        if let Kdf::Argon2id(p) = kdf {
            header[16..20].copy_from_slice(&p.m_cost.to_be_bytes());
            header[20..24].copy_from_slice(&p.t_cost.to_be_bytes());
            header[24..28].copy_from_slice(&p.p_cost.to_be_bytes());
        }
        header[28..60].copy_from_slice(&salt);
        header[KEY_CHECK_AT..CHECKSUM_AT].copy_from_slice(&derived.key_check);
        let checksum = Sha256::digest(&header[..CHECKSUM_AT]);
        header[CHECKSUM_AT..MAC_AT].copy_from_slice(&checksum[..8]);
        let mac = header_mac(&derived.header_key, &header[..MAC_AT]);
        header[MAC_AT..].copy_from_slice(&mac);
        Ok(Keys {
            header,
            info,
            payload: derived.payload,
        })
    }

    /// Checks a header against `secret`: its fields, then the key check (a wrong key or
    /// password fails here, before any output), then its MAC.
    pub fn open(secret: &Secret, bytes: &[u8]) -> Result<Self> {
        let info = HeaderInfo::parse(bytes)?;
        let derived = derive(secret, &info)?;
        if !bool::from(derived.key_check.ct_eq(&bytes[KEY_CHECK_AT..CHECKSUM_AT])) {
            return Err(Error::WrongKey);
        }
        let mac = header_mac(&derived.header_key, &bytes[..MAC_AT]);
        if !bool::from(mac.ct_eq(&bytes[MAC_AT..HEADER_LEN])) {
            return Err(Error::Header(HeaderFault::Mac));
        }
        Ok(Keys {
            header: bytes[..HEADER_LEN].try_into().expect("checked length"),
            info,
            payload: derived.payload,
        })
    }

    /// The header's MAC, which every chunk's authentication also covers.
    pub fn header_mac(&self) -> &[u8] {
        &self.header[MAC_AT..]
    }
}
