//! The raw ciphers by their OpenSSL names, with what each needs and how it parallelises.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// A block cipher or stream cipher family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// AES with a 128-bit key.
    Aes128,
    /// AES with a 192-bit key.
    Aes192,
    /// AES with a 256-bit key.
    Aes256,
    /// Single DES (56-bit key): broken, for compatibility only.
    Des,
    /// Triple DES, EDE with three keys: deprecated, for compatibility only.
    TripleDes,
    /// Blowfish (64-bit blocks): legacy, for compatibility only.
    Blowfish,
    /// RC4: broken, for compatibility only.
    Rc4,
}

/// How the cipher is applied to the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CipherMode {
    /// Each block on its own: leaks equal blocks, for compatibility only.
    Ecb,
    /// Cipher block chaining: encryption is serial by nature, decryption is parallel.
    Cbc,
    /// Counter mode with a 128-bit big-endian counter, as OpenSSL: parallel both ways.
    Ctr,
    /// A stream cipher's single keystream (RC4): serial.
    Stream,
}

macro_rules! names {
    ($($variant:ident => $name:literal, $alg:ident, $mode:ident;)*) => {
        /// A raw cipher, named as `openssl enc` names it.
        ///
        /// ```
        /// use paracrypt_core::raw::RawCipherName;
        ///
        /// let name: RawCipherName = "aes-256-ctr".parse().unwrap();
        /// assert_eq!(name.to_string(), "aes-256-ctr");
        /// assert!("aes-256-xts".parse::<RawCipherName>().is_err());
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum RawCipherName { $($variant,)* }

        impl RawCipherName {
            /// Every raw cipher, in the order of docs/guide/raw.md's table.
            pub const ALL: &'static [RawCipherName] = &[$(RawCipherName::$variant,)*];

            /// The OpenSSL name.
            pub fn as_str(self) -> &'static str {
                match self { $(RawCipherName::$variant => $name,)* }
            }

            /// The cipher family.
            pub fn algorithm(self) -> Algorithm {
                match self { $(RawCipherName::$variant => Algorithm::$alg,)* }
            }

            /// The mode.
            pub fn mode(self) -> CipherMode {
                match self { $(RawCipherName::$variant => CipherMode::$mode,)* }
            }
        }
    };
}

names! {
    Aes128Ecb => "aes-128-ecb", Aes128, Ecb;
    Aes128Cbc => "aes-128-cbc", Aes128, Cbc;
    Aes128Ctr => "aes-128-ctr", Aes128, Ctr;
    Aes192Ecb => "aes-192-ecb", Aes192, Ecb;
    Aes192Cbc => "aes-192-cbc", Aes192, Cbc;
    Aes192Ctr => "aes-192-ctr", Aes192, Ctr;
    Aes256Ecb => "aes-256-ecb", Aes256, Ecb;
    Aes256Cbc => "aes-256-cbc", Aes256, Cbc;
    Aes256Ctr => "aes-256-ctr", Aes256, Ctr;
    DesEcb => "des-ecb", Des, Ecb;
    DesCbc => "des-cbc", Des, Cbc;
    DesEde3 => "des-ede3", TripleDes, Ecb;
    DesEde3Cbc => "des-ede3-cbc", TripleDes, Cbc;
    BfEcb => "bf-ecb", Blowfish, Ecb;
    BfCbc => "bf-cbc", Blowfish, Cbc;
    Rc4 => "rc4", Rc4, Stream;
}

impl Algorithm {
    /// Block size in bytes (1 for RC4).
    pub fn block_size(self) -> usize {
        match self {
            Algorithm::Aes128 | Algorithm::Aes192 | Algorithm::Aes256 => 16,
            Algorithm::Des | Algorithm::TripleDes | Algorithm::Blowfish => 8,
            Algorithm::Rc4 => 1,
        }
    }

    /// Accepted key lengths in bytes, inclusive.
    pub fn key_lengths(self) -> (usize, usize) {
        match self {
            Algorithm::Aes128 => (16, 16),
            Algorithm::Aes192 => (24, 24),
            Algorithm::Aes256 => (32, 32),
            Algorithm::Des => (8, 8),
            Algorithm::TripleDes => (24, 24),
            Algorithm::Blowfish => (4, 56),
            Algorithm::Rc4 => (1, 256),
        }
    }

    /// The key lengths as a phrase for messages.
    pub(crate) fn key_lengths_text(self) -> &'static str {
        match self {
            Algorithm::Aes128 => "16 bytes",
            Algorithm::Aes192 | Algorithm::TripleDes => "24 bytes",
            Algorithm::Aes256 => "32 bytes",
            Algorithm::Des => "8 bytes",
            Algorithm::Blowfish => "4 to 56 bytes",
            Algorithm::Rc4 => "1 to 256 bytes",
        }
    }
}

/// Why a raw cipher is legacy, when it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hazard {
    /// A broken or deprecated algorithm (DES, 3DES, Blowfish, RC4).
    LegacyAlgorithm,
    /// ECB mode: equal plaintext blocks give equal ciphertext blocks.
    EcbMode,
}

impl RawCipherName {
    /// IV length in bytes (0 for ECB and RC4).
    pub fn iv_len(self) -> usize {
        match self.mode() {
            CipherMode::Cbc | CipherMode::Ctr => self.algorithm().block_size(),
            CipherMode::Ecb | CipherMode::Stream => 0,
        }
    }

    /// Whether PKCS#7 padding applies (ECB and CBC).
    pub fn is_padded_mode(self) -> bool {
        matches!(self.mode(), CipherMode::Ecb | CipherMode::Cbc)
    }

    /// Whether encryption runs on many threads (CBC encryption and RC4 cannot).
    pub fn encrypts_in_parallel(self) -> bool {
        matches!(self.mode(), CipherMode::Ecb | CipherMode::Ctr)
    }

    /// Whether decryption runs on many threads (RC4 cannot).
    pub fn decrypts_in_parallel(self) -> bool {
        self.mode() != CipherMode::Stream
    }

    /// Whether `direction` runs on many threads.
    pub fn runs_in_parallel(self, direction: super::Direction) -> bool {
        match direction {
            super::Direction::Encrypt => self.encrypts_in_parallel(),
            super::Direction::Decrypt => self.decrypts_in_parallel(),
        }
    }

    /// What makes this cipher a legacy choice (empty for AES in CBC or CTR mode).
    pub fn hazards(self) -> Vec<Hazard> {
        let mut hazards = Vec::new();
        if !matches!(
            self.algorithm(),
            Algorithm::Aes128 | Algorithm::Aes192 | Algorithm::Aes256
        ) {
            hazards.push(Hazard::LegacyAlgorithm);
        }
        if self.mode() == CipherMode::Ecb {
            hazards.push(Hazard::EcbMode);
        }
        hazards
    }

    /// Every accepted name, comma separated, for messages.
    pub fn valid_names() -> String {
        Self::ALL
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for RawCipherName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RawCipherName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let wanted = s.trim().trim_start_matches('-').to_ascii_lowercase();
        let wanted = match wanted.as_str() {
            "des-ede3-ecb" => "des-ede3",
            other => other,
        };
        Self::ALL
            .iter()
            .copied()
            .find(|n| n.as_str() == wanted)
            .ok_or_else(|| Error::UnknownCipher {
                name: s.to_string(),
                valid: Self::valid_names(),
            })
    }
}
