//! The container's cipher suites: three AEADs and four legacy encrypt-then-MAC constructions.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::provider::Provider;

/// A container cipher suite.
///
/// The AEAD suites are the ones to use. The legacy suites reproduce the algorithms of the
/// papers paracrypt builds on (AES-CTR, 3DES, Blowfish, RC4) with integrity added: each chunk
/// is encrypted and then authenticated with HMAC-SHA256, and the MAC is checked before anything
/// is decrypted.
///
/// ```
/// use paracrypt_core::container::Suite;
///
/// let suite: Suite = "chacha20-poly1305".parse().unwrap();
/// assert_eq!(suite, Suite::ChaCha20Poly1305);
/// assert!(!suite.is_legacy());
/// assert_eq!(Suite::default(), Suite::Aes256Gcm);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Suite {
    /// AES-256-GCM (the default).
    #[default]
    Aes256Gcm,
    /// AES-128-GCM.
    Aes128Gcm,
    /// ChaCha20-Poly1305 (fast without AES hardware).
    ChaCha20Poly1305,
    /// Legacy: AES-256-CTR, then HMAC-SHA256 per chunk.
    Aes256CtrHmacSha256,
    /// Legacy: 3DES-EDE3-CBC with a per-chunk IV, then HMAC-SHA256 per chunk.
    DesEde3CbcHmacSha256,
    /// Legacy: Blowfish-CBC (128-bit key) with a per-chunk IV, then HMAC-SHA256 per chunk.
    BfCbcHmacSha256,
    /// Legacy: **segmented RC4** — each chunk has its own RC4 key derived from the payload key
    /// and the chunk index, drops the first 3072 keystream bytes, and is then MACed with
    /// HMAC-SHA256. Not compatible with plain RC4.
    Rc4HmacSha256,
}

impl Suite {
    /// Every suite, AEADs first.
    pub const ALL: &'static [Suite] = &[
        Suite::Aes256Gcm,
        Suite::Aes128Gcm,
        Suite::ChaCha20Poly1305,
        Suite::Aes256CtrHmacSha256,
        Suite::DesEde3CbcHmacSha256,
        Suite::BfCbcHmacSha256,
        Suite::Rc4HmacSha256,
    ];

    /// The suite's name, as `--cipher` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Suite::Aes256Gcm => "aes-256-gcm",
            Suite::Aes128Gcm => "aes-128-gcm",
            Suite::ChaCha20Poly1305 => "chacha20-poly1305",
            Suite::Aes256CtrHmacSha256 => "aes-256-ctr-hmac-sha256",
            Suite::DesEde3CbcHmacSha256 => "des-ede3-cbc-hmac-sha256",
            Suite::BfCbcHmacSha256 => "bf-cbc-hmac-sha256",
            Suite::Rc4HmacSha256 => "rc4-hmac-sha256",
        }
    }

    /// The suite's identifier in the header.
    pub fn id(self) -> u8 {
        match self {
            Suite::Aes256Gcm => 1,
            Suite::Aes128Gcm => 2,
            Suite::ChaCha20Poly1305 => 3,
            Suite::Aes256CtrHmacSha256 => 16,
            Suite::DesEde3CbcHmacSha256 => 17,
            Suite::BfCbcHmacSha256 => 18,
            Suite::Rc4HmacSha256 => 19,
        }
    }

    /// The suite with header identifier `id`.
    pub fn from_id(id: u8) -> Option<Suite> {
        Suite::ALL.iter().copied().find(|s| s.id() == id)
    }

    /// Whether this is a legacy (encrypt-then-MAC over an old cipher) suite.
    pub fn is_legacy(self) -> bool {
        !matches!(
            self,
            Suite::Aes256Gcm | Suite::Aes128Gcm | Suite::ChaCha20Poly1305
        )
    }

    /// Length of the authentication tag at the end of every chunk.
    pub fn tag_len(self) -> usize {
        if self.is_legacy() { 32 } else { 16 }
    }

    /// Block size of the suite's CBC padding, for the CBC suites (every chunk is PKCS#7
    /// padded, so a full chunk grows by one block).
    pub fn cbc_block(self) -> Option<usize> {
        match self {
            Suite::DesEde3CbcHmacSha256 | Suite::BfCbcHmacSha256 => Some(8),
            _ => None,
        }
    }

    /// Bytes a full chunk grows by when sealed: its tag, and for the CBC suites the block of
    /// padding a whole number of blocks gets.
    pub fn chunk_overhead(self) -> usize {
        self.cbc_block().unwrap_or(0) + self.tag_len()
    }

    /// Ciphertext bytes of a full chunk of `chunk_size` plaintext bytes.
    pub fn sealed_chunk_len(self, chunk_size: usize) -> usize {
        chunk_size + self.chunk_overhead()
    }

    /// What computes the suite's chunks on `provider`, primitive by primitive: a backend that
    /// lacks a primitive names another one's (aws-lc's Blowfish is RustCrypto's). The bytes are
    /// the same on every provider.
    ///
    /// ```
    /// use paracrypt_core::container::Suite;
    /// use paracrypt_core::provider::Provider;
    ///
    /// assert_eq!(
    ///     Suite::BfCbcHmacSha256.primitives(Provider::RustCrypto),
    ///     "Blowfish-CBC (rustcrypto), HMAC-SHA256 (rustcrypto)"
    /// );
    /// ```
    pub fn primitives(self, provider: Provider) -> String {
        let t = provider.table();
        let hmac = t.hmac_sha256.by;
        match self {
            Suite::Aes256Gcm => format!("AES-256-GCM ({})", t.aes_gcm.by),
            Suite::Aes128Gcm => format!("AES-128-GCM ({})", t.aes_gcm.by),
            Suite::ChaCha20Poly1305 => {
                format!("ChaCha20-Poly1305 ({})", t.chacha20_poly1305.by)
            }
            Suite::Aes256CtrHmacSha256 => {
                format!("AES-256-CTR ({}), HMAC-SHA256 ({hmac})", t.aes_ctr.by)
            }
            Suite::DesEde3CbcHmacSha256 => {
                format!("3DES-EDE3-CBC ({}), HMAC-SHA256 ({hmac})", t.des_ede3.by)
            }
            Suite::BfCbcHmacSha256 => {
                format!("Blowfish-CBC ({}), HMAC-SHA256 ({hmac})", t.blowfish.by)
            }
            Suite::Rc4HmacSha256 => format!(
                "HKDF-SHA256 ({}) and RC4 ({}), HMAC-SHA256 ({hmac})",
                t.hkdf_sha256.by, t.rc4.by
            ),
        }
    }

    /// Every name, comma separated, for messages.
    pub fn valid_names() -> String {
        Suite::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Suite {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let wanted = s.trim().to_ascii_lowercase();
        Suite::ALL
            .iter()
            .copied()
            .find(|suite| suite.as_str() == wanted)
            .ok_or_else(|| Error::UnknownCipher {
                name: s.to_string(),
                valid: Suite::valid_names(),
            })
    }
}
