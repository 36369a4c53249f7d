//! age's hybrid post-quantum recipient type, `mlkem768x25519` (age 1.3; C2SP `age.md`, "The
//! MLKEM768-X25519 (i.e. X-Wing) hybrid post-quantum recipient type").
//!
//! The file key is sealed with HPKE (RFC 9180) `SealBase`: the MLKEM768-X25519 KEM of
//! `filippo.io/hpke-pq` (KEM id `0x647a`), HKDF-SHA256, ChaCha20-Poly1305 and the info
//! `age-encryption.org/mlkem768x25519`. The stanza is `-> mlkem768x25519 <base64 enc>` with
//! the 32-byte sealed file key as its body.
//!
//! | | encoding | bytes |
//! |---|---|---|
//! | identity | Bech32, HRP `AGE-SECRET-KEY-PQ-` | a 32-byte seed |
//! | recipient | Bech32, HRP `age1pq` | ML-KEM-768 encapsulation key (1184) ‖ X25519 point (32) |
//! | enc | base64 argument | ML-KEM-768 ciphertext (1088) ‖ X25519 share (32) |
//!
//! The primitives are the ones the `age` crate already builds on: `hpke` (RFC 9180 key
//! schedule and AEAD), `ml-kem` (FIPS 203), `x25519-dalek` and `sha3`; this module only joins
//! them as the KEM specifies. Two checks that the libraries leave to their caller are made
//! here: an encapsulation key whose coefficients are not reduced modulo q (FIPS 203's
//! modulus check) is refused, and an all-zero X25519 shared secret (a low-order share) is
//! refused, as age does. Bech32 strings are age-core's, without BIP-173's 90-character limit
//! (a recipient is 1959 characters).
//!
//! Encrypting to a post-quantum recipient together with a classical one is refused (the
//! recipient carries age's `postquantum` label, see [`super::Recipients::wrap`]); a file that
//! has both kinds of stanza still decrypts with either identity, as the specification says.
//!
//! ```
//! use age::secrecy::ExposeSecret;
//! use paracrypt_core::recipient::pq::HybridIdentity;
//! use paracrypt_core::recipient::{FileKey, Identities, Recipients};
//!
//! let me = HybridIdentity::generate();
//! let mut recipients = Recipients::new();
//! recipients.add(&me.to_public().to_string(), "recipient 1")?;
//! let stanzas = recipients.wrap(&FileKey::new(Box::new([7; 16])))?;
//! assert_eq!(stanzas[0].tag, "mlkem768x25519");
//!
//! let mut identities = Identities::new();
//! identities.add_file("me.key", me.to_secret_string().expose_secret().as_bytes())?;
//! assert_eq!(identities.unwrap(&stanzas)?.expose_secret(), &[7; 16]);
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::collections::HashSet;
use std::fmt;

use age::secrecy::{ExposeSecret, SecretString};
use age_core::format::{FILE_KEY_BYTES, FileKey, Stanza};
use age_core::primitives::{bech32_decode, bech32_encode, bech32_encode_to_fmt};
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use hpke::generic_array::typenum::{self, U32, Unsigned};
use hpke::kem::SharedSecret;
use hpke::rand_core::{CryptoRng, RngCore};
use hpke::{Deserializable, HpkeError, Serializable};
use ml_kem::kem::{Decapsulate, Encapsulate};
use ml_kem::{Ciphertext, EncodedSizeUser, KemCore, MlKem768};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Digest, Sha3_256, Shake256};
use zeroize::{Zeroize, Zeroizing};

/// The stanza tag (and first argument) of a post-quantum recipient.
pub const STANZA_TAG: &str = "mlkem768x25519";
/// The label age gives this recipient type: files to it may hold only recipients that carry
/// it too.
pub const LABEL_POSTQUANTUM: &str = "postquantum";
/// The recipient string's Bech32 prefix (`age1pq1…`).
pub const RECIPIENT_PREFIX: &str = "age1pq";
/// The identity string's Bech32 prefix (`AGE-SECRET-KEY-PQ-1…`).
pub const IDENTITY_PREFIX: &str = "AGE-SECRET-KEY-PQ-";

/// HPKE's `info` for the stanza.
const INFO: &[u8] = b"age-encryption.org/mlkem768x25519";
/// The KEM's combiner label, `\.//^\`.
const KEM_LABEL: &[u8] = b"\\.//^\\";
/// The X25519 element and shared secret length.
const X25519_LEN: usize = 32;
/// The sealed file key: the file key and a Poly1305 tag.
const BODY_LEN: usize = FILE_KEY_BYTES + 16;

type EncapsulationKey = <MlKem768 as KemCore>::EncapsulationKey;
type DecapsulationKey = <MlKem768 as KemCore>::DecapsulationKey;
/// ML-KEM-768's encapsulation key length (1184).
type KemNek = <EncapsulationKey as EncodedSizeUser>::EncodedSize;
/// ML-KEM-768's ciphertext length (1088).
type KemNct = <MlKem768 as KemCore>::CiphertextSize;

/// The MLKEM768-X25519 KEM, as `hpke` 0.12 plugs a KEM in.
struct MlKem768X25519;

/// A private key: its 32-byte seed and what the seed expands to.
#[derive(Clone)]
struct PrivateKey {
    seed: Zeroizing<[u8; 32]>,
    dk_pq: DecapsulationKey,
    dk_t: x25519_dalek::StaticSecret,
    ek: PublicKey,
}

impl PartialEq for PrivateKey {
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq;
        bool::from(self.seed.ct_eq(&*other.seed))
    }
}

impl Eq for PrivateKey {}

impl PrivateKey {
    fn from_seed(seed: [u8; 32]) -> Self {
        let seed = Zeroizing::new(seed);
        let mut expanded = Zeroizing::new([0u8; 64 + X25519_LEN]);
        let mut xof = Shake256::default().chain(*seed).finalize_xof();
        xof.read(&mut *expanded);
        let d: &[u8; 32] = expanded[..32].try_into().expect("32 bytes");
        let z: &[u8; 32] = expanded[32..64].try_into().expect("32 bytes");
        let (dk_pq, ek_pq) = MlKem768::generate_deterministic(&(*d).into(), &(*z).into());
        let mut seed_t: [u8; X25519_LEN] = expanded[64..].try_into().expect("32 bytes");
        let dk_t = x25519_dalek::StaticSecret::from(seed_t);
        seed_t.zeroize();
        let ek_t = x25519_dalek::PublicKey::from(&dk_t);
        PrivateKey {
            seed,
            dk_pq,
            dk_t,
            ek: PublicKey { ek_pq, ek_t },
        }
    }
}

impl Serializable for PrivateKey {
    type OutputSize = U32;

    fn write_exact(&self, buf: &mut [u8]) {
        buf.copy_from_slice(&*self.seed);
    }
}

impl Deserializable for PrivateKey {
    fn from_bytes(encoded: &[u8]) -> Result<Self, HpkeError> {
        let seed: [u8; 32] = encoded
            .try_into()
            .map_err(|_| HpkeError::IncorrectInputLength(32, encoded.len()))?;
        Ok(Self::from_seed(seed))
    }
}

/// A public key: the ML-KEM-768 encapsulation key and the X25519 point.
#[derive(Clone, Debug, PartialEq)]
struct PublicKey {
    ek_pq: EncapsulationKey,
    ek_t: x25519_dalek::PublicKey,
}

impl Eq for PublicKey {}

impl Serializable for PublicKey {
    type OutputSize = typenum::Sum<KemNek, U32>;

    fn write_exact(&self, buf: &mut [u8]) {
        let (pq, t) = buf.split_at_mut(KemNek::USIZE);
        pq.copy_from_slice(&self.ek_pq.as_bytes());
        t.copy_from_slice(self.ek_t.as_bytes());
    }
}

impl Deserializable for PublicKey {
    fn from_bytes(encoded: &[u8]) -> Result<Self, HpkeError> {
        let len = <Self as Serializable>::OutputSize::USIZE;
        if encoded.len() != len {
            return Err(HpkeError::IncorrectInputLength(len, encoded.len()));
        }
        let (pq, t) = encoded.split_at(KemNek::USIZE);
        let ek_pq = EncapsulationKey::from_bytes(pq.try_into().expect("checked length"));
        // FIPS 203's modulus check (section 7.2), which `ml-kem` 0.2 does not make: a key
        // whose coefficients are not reduced does not encode back to the same bytes.
        if ek_pq.as_bytes().as_slice() != pq {
            return Err(HpkeError::ValidationError);
        }
        let ek_t: [u8; X25519_LEN] = t.try_into().expect("checked length");
        Ok(PublicKey {
            ek_pq,
            ek_t: ek_t.into(),
        })
    }
}

/// The encapsulated key `enc`: ML-KEM-768 ciphertext and the ephemeral X25519 share.
#[derive(Clone)]
struct EncappedKey {
    ct_pq: Ciphertext<MlKem768>,
    ct_t: [u8; X25519_LEN],
}

impl Serializable for EncappedKey {
    type OutputSize = typenum::Sum<KemNct, U32>;

    fn write_exact(&self, buf: &mut [u8]) {
        let (pq, t) = buf.split_at_mut(KemNct::USIZE);
        pq.copy_from_slice(&self.ct_pq);
        t.copy_from_slice(&self.ct_t);
    }
}

impl Deserializable for EncappedKey {
    fn from_bytes(encoded: &[u8]) -> Result<Self, HpkeError> {
        let len = <Self as Serializable>::OutputSize::USIZE;
        if encoded.len() != len {
            return Err(HpkeError::IncorrectInputLength(len, encoded.len()));
        }
        let (pq, t) = encoded.split_at(KemNct::USIZE);
        let ct_pq: [u8; KemNct::USIZE] = pq.try_into().expect("checked length");
        Ok(EncappedKey {
            ct_pq: ct_pq.into(),
            ct_t: t.try_into().expect("checked length"),
        })
    }
}

impl hpke::Kem for MlKem768X25519 {
    type PublicKey = PublicKey;
    type PrivateKey = PrivateKey;
    type EncappedKey = EncappedKey;
    type NSecret = U32;
    const KEM_ID: u16 = 0x647a;

    fn sk_to_pk(sk: &PrivateKey) -> PublicKey {
        sk.ek.clone()
    }

    fn derive_keypair(ikm: &[u8]) -> (PrivateKey, PublicKey) {
        // SHAKE256.LabeledDerive(ikm, "DeriveKeyPair", "", 32).
        let label = b"DeriveKeyPair";
        let mut seed = [0u8; 32];
        Shake256::default()
            .chain(ikm)
            .chain(b"HPKE-v1")
            .chain(b"KEM")
            .chain(Self::KEM_ID.to_be_bytes())
            .chain((label.len() as u16).to_be_bytes())
            .chain(label)
            .chain(32u16.to_be_bytes())
            .finalize_xof_into(&mut seed);
        let sk = PrivateKey::from_seed(seed);
        let pk = sk.ek.clone();
        (sk, pk)
    }

    fn decap(
        sk: &PrivateKey,
        pk_sender_id: Option<&PublicKey>,
        enc: &EncappedKey,
    ) -> Result<SharedSecret<Self>, HpkeError> {
        if pk_sender_id.is_some() {
            // Only HPKE's base mode is used.
            return Err(HpkeError::DecapError);
        }
        let ss_pq = sk
            .dk_pq
            .decapsulate(&enc.ct_pq)
            .map_err(|()| HpkeError::DecapError)?;
        let ss_t = sk
            .dk_t
            .diffie_hellman(&x25519_dalek::PublicKey::from(enc.ct_t));
        if !ss_t.was_contributory() {
            return Err(HpkeError::DecapError);
        }
        Ok(combine(&ss_pq, ss_t.as_bytes(), &enc.ct_t, &sk.ek.ek_t))
    }

    fn encap<R: CryptoRng + RngCore>(
        pk: &PublicKey,
        sender_id_keypair: Option<(&PrivateKey, &PublicKey)>,
        csprng: &mut R,
    ) -> Result<(SharedSecret<Self>, EncappedKey), HpkeError> {
        if sender_id_keypair.is_some() {
            return Err(HpkeError::EncapError);
        }
        let (ct_pq, ss_pq) = pk
            .ek_pq
            .encapsulate(csprng)
            .map_err(|()| HpkeError::EncapError)?;
        let mut seed_e = Zeroizing::new([0u8; X25519_LEN]);
        csprng.fill_bytes(&mut *seed_e);
        let sk_e = x25519_dalek::StaticSecret::from(*seed_e);
        let ct_t = x25519_dalek::PublicKey::from(&sk_e).to_bytes();
        let ss_t = sk_e.diffie_hellman(&pk.ek_t);
        if !ss_t.was_contributory() {
            return Err(HpkeError::EncapError);
        }
        let ss = combine(&ss_pq, ss_t.as_bytes(), &ct_t, &pk.ek_t);
        Ok((ss, EncappedKey { ct_pq, ct_t }))
    }
}

/// `SHA3-256(ss_PQ ‖ ss_T ‖ ct_T ‖ ek_T ‖ Label)`.
fn combine(
    ss_pq: &[u8],
    ss_t: &[u8],
    ct_t: &[u8; X25519_LEN],
    ek_t: &x25519_dalek::PublicKey,
) -> SharedSecret<MlKem768X25519> {
    let digest = Sha3_256::new()
        .chain_update(ss_pq)
        .chain_update(ss_t)
        .chain_update(ct_t)
        .chain_update(ek_t.as_bytes())
        .chain_update(KEM_LABEL)
        .finalize();
    let mut ss = SharedSecret::<MlKem768X25519>::default();
    ss.0.copy_from_slice(&digest);
    ss
}

/// A post-quantum recipient, `age1pq1…`.
#[derive(Clone, PartialEq, Eq)]
pub struct HybridRecipient(PublicKey);

impl std::str::FromStr for HybridRecipient {
    type Err = String;

    /// Parses an `age1pq1…` string: valid Bech32, the right prefix, a 1216-byte key whose
    /// ML-KEM part passes FIPS 203's modulus check.
    fn from_str(s: &str) -> Result<Self, String> {
        bech32_decode(
            s,
            |e| format!("invalid Bech32 ({e})"),
            |hrp| {
                (hrp.as_str().eq_ignore_ascii_case(RECIPIENT_PREFIX))
                    .then_some(())
                    .ok_or_else(|| format!("not an {RECIPIENT_PREFIX}1… recipient"))
            },
            |_, bytes| {
                PublicKey::from_bytes(&bytes.collect::<Vec<_>>())
                    .map(Self)
                    .map_err(|_| "not a valid MLKEM768-X25519 public key".to_owned())
            },
        )
    }
}

impl fmt::Display for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        bech32_encode_to_fmt(f, hrp(RECIPIENT_PREFIX), &self.0.to_bytes())
    }
}

impl fmt::Debug for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl age::Recipient for HybridRecipient {
    fn wrap_file_key(
        &self,
        file_key: &FileKey,
    ) -> Result<(Vec<Stanza>, HashSet<String>), age::EncryptError> {
        let (enc, body) = hpke::single_shot_seal::<
            hpke::aead::ChaCha20Poly1305,
            hpke::kdf::HkdfSha256,
            MlKem768X25519,
            _,
        >(
            &hpke::OpModeS::Base,
            &self.0,
            INFO,
            file_key.expose_secret(),
            &[],
            &mut rand_core_06::OsRng,
        )
        .map_err(|e| {
            age::EncryptError::Io(std::io::Error::other(format!(
                "sealing the file key to an {RECIPIENT_PREFIX}1… recipient: {e}"
            )))
        })?;
        let stanza = Stanza {
            tag: STANZA_TAG.to_owned(),
            args: vec![BASE64_STANDARD_NO_PAD.encode(enc.to_bytes())],
            body,
        };
        Ok((vec![stanza], HashSet::from([LABEL_POSTQUANTUM.to_owned()])))
    }
}

/// A post-quantum identity, `AGE-SECRET-KEY-PQ-1…`.
#[derive(Clone)]
pub struct HybridIdentity(PrivateKey);

impl HybridIdentity {
    /// A new identity from the operating system's random numbers.
    pub fn generate() -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rand_core_06::OsRng.fill_bytes(&mut *seed);
        HybridIdentity(PrivateKey::from_seed(*seed))
    }

    /// The recipient that encrypts to this identity.
    pub fn to_public(&self) -> HybridRecipient {
        HybridRecipient(self.0.ek.clone())
    }

    /// The identity string, `AGE-SECRET-KEY-PQ-1…` (upper case, as age writes it).
    pub fn to_secret_string(&self) -> SecretString {
        let lower = Zeroizing::new(bech32_encode(hrp(IDENTITY_PREFIX), &*self.0.seed));
        SecretString::from(lower.to_ascii_uppercase())
    }
}

impl fmt::Debug for HybridIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HybridIdentity(…)")
    }
}

impl std::str::FromStr for HybridIdentity {
    type Err = String;

    /// Parses an `AGE-SECRET-KEY-PQ-1…` string (a 32-byte seed).
    fn from_str(s: &str) -> Result<Self, String> {
        bech32_decode(
            s,
            |e| format!("invalid Bech32 ({e})"),
            |hrp| {
                (hrp.as_str().eq_ignore_ascii_case(IDENTITY_PREFIX))
                    .then_some(())
                    .ok_or_else(|| format!("not an {IDENTITY_PREFIX}1… identity"))
            },
            |_, bytes| {
                let seed = Zeroizing::new(bytes.collect::<Vec<_>>());
                PrivateKey::from_bytes(&seed)
                    .map(Self)
                    .map_err(|_| "not a 32-byte MLKEM768-X25519 seed".to_owned())
            },
        )
    }
}

impl age::Identity for HybridIdentity {
    fn unwrap_stanza(&self, stanza: &Stanza) -> Option<Result<FileKey, age::DecryptError>> {
        if stanza.tag != STANZA_TAG {
            return None;
        }
        // The stanza's form is checked before any work (C2SP age: exactly one argument, the
        // canonical base64 of 1120 bytes; a 32-byte body, against partitioning oracles).
        let [arg] = &stanza.args[..] else {
            return Some(Err(age::DecryptError::InvalidHeader));
        };
        let enc_len = <EncappedKey as Serializable>::OutputSize::USIZE;
        let enc = match BASE64_STANDARD_NO_PAD.decode(arg) {
            Ok(enc) if enc.len() == enc_len => enc,
            _ => return Some(Err(age::DecryptError::InvalidHeader)),
        };
        if stanza.body.len() != BODY_LEN {
            return Some(Err(age::DecryptError::InvalidHeader));
        }
        let enc = EncappedKey::from_bytes(&enc).expect("checked length");
        match hpke::single_shot_open::<
            hpke::aead::ChaCha20Poly1305,
            hpke::kdf::HkdfSha256,
            MlKem768X25519,
        >(&hpke::OpModeR::Base, &self.0, &enc, INFO, &stanza.body, &[])
        {
            Ok(mut plain) => {
                let key = FileKey::init_with_mut(|key| key.copy_from_slice(&plain));
                plain.zeroize();
                Some(Ok(key))
            }
            // A low-order X25519 share: an all-zero shared secret, refused as age does.
            Err(HpkeError::DecapError) => Some(Err(age::DecryptError::InvalidHeader)),
            // Not ours (or damaged): another identity may still match.
            Err(_) => None,
        }
    }
}

fn hrp(prefix: &str) -> bech32::Hrp {
    bech32::Hrp::parse(prefix).expect("a valid Bech32 prefix")
}

#[cfg(test)]
mod tests {
    use hpke::Kem;

    use super::*;

    /// The spec's example identity and its recipient (C2SP `age.md`).
    const SPEC_IDENTITY: &str =
        "AGE-SECRET-KEY-PQ-1XX76JRALNLXDMEW0CRK45QMCCH4X06SE84UN3VPM33W6HWDX0H3SK3ZQFR";

    #[test]
    fn identities_and_recipients_round_trip() {
        let id: HybridIdentity = SPEC_IDENTITY.parse().unwrap();
        assert_eq!(id.to_secret_string().expose_secret(), SPEC_IDENTITY);
        let recipient = id.to_public().to_string();
        assert!(recipient.starts_with("age1pq1"));
        assert_eq!(recipient.len(), 1959);
        let parsed: HybridRecipient = recipient.parse().unwrap();
        assert_eq!(parsed.to_string(), recipient);
        assert!(recipient.to_uppercase().parse::<HybridRecipient>().is_ok());
    }

    /// One field of the hpke-pq vector, decoded.
    fn field(name: &str) -> Vec<u8> {
        let text = include_str!("testdata/hpke-pq-mlkem768x25519.txt");
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|l| l.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {name}"));
        hex::decode(line).unwrap()
    }

    #[test]
    fn the_hpke_pq_vector_holds() {
        // The key derived from ikmR, its serializations, the shared secret of enc, and the
        // first sealed message opened with HPKE's key schedule.
        let (sk, pk) = MlKem768X25519::derive_keypair(&field("ikmR"));
        assert_eq!(sk.to_bytes().as_slice(), &field("skRm")[..]);
        assert_eq!(pk.to_bytes().as_slice(), &field("pkRm")[..]);
        assert_eq!(PublicKey::from_bytes(&field("pkRm")).unwrap(), pk);
        let enc = EncappedKey::from_bytes(&field("enc")).unwrap();
        let ss = MlKem768X25519::decap(&sk, None, &enc).unwrap();
        assert_eq!(ss.0.as_slice(), &field("shared_secret")[..]);
        let pt = hpke::single_shot_open::<
            hpke::aead::ChaCha20Poly1305,
            hpke::kdf::HkdfSha256,
            MlKem768X25519,
        >(
            &hpke::OpModeR::Base,
            &sk,
            &enc,
            &field("info"),
            &field("ct"),
            &field("aad"),
        )
        .unwrap();
        assert_eq!(pt, field("pt"));
    }

    #[test]
    fn an_unreduced_encapsulation_key_is_refused() {
        let id = HybridIdentity::generate();
        let mut bytes = id.to_public().0.to_bytes().to_vec();
        // The first 12-bit coefficient set to 0xfff, above q = 3329.
        bytes[0] = 0xff;
        bytes[1] |= 0x0f;
        assert!(PublicKey::from_bytes(&bytes).is_err());
    }

    #[test]
    fn a_low_order_share_is_a_header_failure() {
        let id = HybridIdentity::generate();
        let stanzas = HybridRecipient::wrap_file_key(
            &id.to_public(),
            &FileKey::new(Box::new([1; FILE_KEY_BYTES])),
        )
        .unwrap()
        .0;
        let mut enc = BASE64_STANDARD_NO_PAD.decode(&stanzas[0].args[0]).unwrap();
        let t = enc.len() - X25519_LEN;
        enc[t..].fill(0);
        let forged = Stanza {
            tag: stanzas[0].tag.clone(),
            args: vec![BASE64_STANDARD_NO_PAD.encode(&enc)],
            body: stanzas[0].body.clone(),
        };
        assert!(matches!(
            age::Identity::unwrap_stanza(&id, &forged),
            Some(Err(age::DecryptError::InvalidHeader))
        ));
        // Unchanged, it opens.
        assert!(matches!(
            age::Identity::unwrap_stanza(&id, &stanzas[0]),
            Some(Ok(_))
        ));
    }

    use age::Recipient as _;
}
