//! Software tag identities: what a hardware key's plugin (`age-plugin-yubikey`) does for age
//! 1.3's tagged recipients (C2SP `age.md`, "The tagged recipient types"), with the private key
//! held in the identity string instead of on a device. For paracrypt's tests only.
//!
//! An identity's data is `p256tag:` and a P-256 scalar (32 bytes), or `mlkem768p256tag:` and
//! a 32-byte MLKEM768-P256 seed (`filippo.io/hpke-pq`: SHAKE256 expands it to ML-KEM-768's
//! `d ‖ z` and 128 bytes from which the P-256 scalar is drawn by rejection sampling). Its
//! recipient is `age1tag1…` (the compressed point) or `age1tagpq1…` (the encapsulation key and
//! the uncompressed point).
//!
//! A stanza of the identity's type is checked as the specification requires before anything
//! else: two arguments after the type, the canonical base64 of 4 and of 65 (or 1153) bytes,
//! a 32-byte body; otherwise it is refused. Then its tag: a stanza with another recipient's
//! tag is not this identity's. Then HPKE `OpenBase` (HKDF-SHA256, ChaCha20-Poly1305).

use age_core::format::{FILE_KEY_BYTES, FileKey, Stanza};
use age_core::primitives::bech32_encode;
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use hkdf::Hkdf;
use hpke::generic_array::typenum::{self, U32, U65, Unsigned};
use hpke::kem::{DhP256HkdfSha256, SharedSecret};
use hpke::rand_core::{CryptoRng, RngCore};
use hpke::{Deserializable, HpkeError, Kem as _, Serializable};
use ml_kem::kem::{Decapsulate, Encapsulate};
use ml_kem::{Ciphertext, EncodedSizeUser, KemCore, MlKem768};
use p256::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use sha2::{Digest, Sha256};
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Sha3_256, Shake256};

const P256_TAG: &str = "p256tag";
const PQ_TAG: &str = "mlkem768p256tag";

/// A tag identity's key.
pub enum TagKey {
    /// A P-256 scalar and its compressed point.
    P256 {
        sk: <DhP256HkdfSha256 as hpke::Kem>::PrivateKey,
        compressed: Vec<u8>,
    },
    /// An MLKEM768-P256 key (from its seed).
    Hybrid(Box<PrivateKey>),
}

impl TagKey {
    /// The key an identity's data holds, if it is a tag identity's.
    pub fn from_identity(data: &[u8]) -> Option<Result<Self, String>> {
        if let Some(scalar) = data.strip_prefix(format!("{P256_TAG}:").as_bytes()) {
            let scalar: &[u8; 32] = match scalar.try_into() {
                Ok(scalar) => scalar,
                Err(_) => return Some(Err("not a 32-byte P-256 scalar".to_owned())),
            };
            let key = p256::SecretKey::from_bytes(scalar.into())
                .map_err(|_| "not a P-256 scalar".to_owned())
                .map(|sk| TagKey::P256 {
                    sk: Deserializable::from_bytes(scalar).expect("a valid scalar"),
                    compressed: sk.public_key().to_encoded_point(true).as_bytes().to_vec(),
                });
            return Some(key);
        }
        let seed = data.strip_prefix(format!("{PQ_TAG}:").as_bytes())?;
        Some(
            PrivateKey::from_bytes(seed)
                .map(|sk| TagKey::Hybrid(Box::new(sk)))
                .map_err(|_| "not a 32-byte MLKEM768-P256 seed".to_owned()),
        )
    }

    /// A new random identity of `kind` (`p256tag` or `mlkem768p256tag`): its data and its
    /// recipient string.
    pub fn generate(kind: &str) -> Option<(Vec<u8>, String)> {
        let mut secret = [0u8; 32];
        match kind {
            P256_TAG => {
                let sk = p256::SecretKey::random(&mut rand_core::OsRng);
                secret.copy_from_slice(&sk.to_bytes());
                let point = sk.public_key().to_encoded_point(true);
                let recipient = bech32_encode(hrp("age1tag"), point.as_bytes());
                Some(([b"p256tag:".as_slice(), &secret].concat(), recipient))
            }
            PQ_TAG => {
                rand_core::OsRng.fill_bytes(&mut secret);
                let pk = MlKem768P256::sk_to_pk(&PrivateKey::from_seed(secret));
                let recipient = bech32_encode(hrp("age1tagpq"), &pk.to_bytes());
                Some((
                    [b"mlkem768p256tag:".as_slice(), &secret].concat(),
                    recipient,
                ))
            }
            _ => None,
        }
    }

    /// The stanza type this key opens.
    fn stanza_type(&self) -> &'static str {
        match self {
            TagKey::P256 { .. } => P256_TAG,
            TagKey::Hybrid(_) => PQ_TAG,
        }
    }

    /// What this key makes of `stanza`: `None` when it is not its type or not its tag, the
    /// file key, or why the stanza is refused.
    pub fn unwrap(&self, stanza: &Stanza) -> Option<Result<FileKey, String>> {
        let kind = self.stanza_type();
        if stanza.tag != kind {
            return None;
        }
        let enc_len = match self {
            TagKey::P256 { .. } => 65,
            TagKey::Hybrid(_) => <EncappedKey as Serializable>::OutputSize::USIZE,
        };
        let [tag, enc] = &stanza.args[..] else {
            return Some(Err(format!("a {kind} stanza has 3 arguments")));
        };
        let tag = match BASE64_STANDARD_NO_PAD.decode(tag) {
            Ok(tag) if tag.len() == 4 => tag,
            _ => return Some(Err(format!("a {kind} stanza's tag is 4 bytes in base64"))),
        };
        let enc = match BASE64_STANDARD_NO_PAD.decode(enc) {
            Ok(enc) if enc.len() == enc_len => enc,
            _ => {
                return Some(Err(format!(
                    "a {kind} stanza's enc is {enc_len} bytes in base64"
                )));
            }
        };
        if stanza.body.len() != FILE_KEY_BYTES + 16 {
            return Some(Err(format!("a {kind} stanza's body is 32 bytes")));
        }
        let static_tag = match self {
            TagKey::P256 { compressed, .. } => Sha256::digest(compressed),
            TagKey::Hybrid(sk) => Sha256::digest(sk.pk.ek_t.to_encoded_point(false).as_bytes()),
        };
        let salt = format!("age-encryption.org/{kind}");
        let ikm = [&enc[..], &static_tag[..4]].concat();
        let (expected, _) = Hkdf::<Sha256>::extract(Some(salt.as_bytes()), &ikm);
        if expected[..4] != tag[..] {
            return None;
        }
        let opened = match self {
            TagKey::P256 { sk, .. } => Deserializable::from_bytes(&enc)
                .and_then(|enc| open::<DhP256HkdfSha256>(sk, &enc, &salt, &stanza.body)),
            TagKey::Hybrid(sk) => EncappedKey::from_bytes(&enc)
                .and_then(|enc| open::<MlKem768P256>(sk, &enc, &salt, &stanza.body)),
        };
        Some(match opened {
            Ok(plain) => Ok(FileKey::init_with_mut(|key| key.copy_from_slice(&plain))),
            Err(_) => Err(format!(
                "the {kind} stanza with this key's tag does not open"
            )),
        })
    }
}

fn open<K: hpke::Kem>(
    sk: &K::PrivateKey,
    enc: &K::EncappedKey,
    info: &str,
    body: &[u8],
) -> Result<Vec<u8>, HpkeError> {
    hpke::single_shot_open::<hpke::aead::ChaCha20Poly1305, hpke::kdf::HkdfSha256, K>(
        &hpke::OpModeR::Base,
        sk,
        enc,
        info.as_bytes(),
        body,
        &[],
    )
}

fn hrp(prefix: &str) -> bech32::Hrp {
    bech32::Hrp::parse(prefix).expect("a valid Bech32 prefix")
}

/// The MLKEM768-P256 KEM of `filippo.io/hpke-pq` (id `0x0050`), as `hpke` 0.12 plugs a KEM in.
struct MlKem768P256;

type EncapsulationKey = <MlKem768 as KemCore>::EncapsulationKey;
type DecapsulationKey = <MlKem768 as KemCore>::DecapsulationKey;
type KemNek = <EncapsulationKey as EncodedSizeUser>::EncodedSize;
type KemNct = <MlKem768 as KemCore>::CiphertextSize;

/// The KEM's combiner label.
const LABEL: &[u8] = b"MLKEM768-P256";

/// A private key: its seed, and what the seed expands to.
#[derive(Clone)]
pub struct PrivateKey {
    seed: [u8; 32],
    dk_pq: DecapsulationKey,
    dk_t: p256::SecretKey,
    pk: PublicKey,
}

impl PrivateKey {
    fn from_seed(seed: [u8; 32]) -> Self {
        let mut expanded = [0u8; 64 + 128];
        let mut xof = Shake256::default().chain(seed).finalize_xof();
        xof.read(&mut expanded);
        let d: [u8; 32] = expanded[..32].try_into().expect("32 bytes");
        let z: [u8; 32] = expanded[32..64].try_into().expect("32 bytes");
        let (dk_pq, ek_pq) = MlKem768::generate_deterministic(&d.into(), &z.into());
        // Rejection sampling: the first 32-byte big-endian candidate in [1, n).
        let dk_t = expanded[64..]
            .chunks_exact(32)
            .find_map(|candidate| {
                let candidate: &[u8; 32] = candidate.try_into().expect("32 bytes");
                p256::SecretKey::from_bytes(candidate.into()).ok()
            })
            .expect("a rejection has probability below 2^-32, four below 2^-128");
        let ek_t = dk_t.public_key();
        PrivateKey {
            seed,
            dk_pq,
            dk_t,
            pk: PublicKey { ek_pq, ek_t },
        }
    }
}

impl PartialEq for PrivateKey {
    fn eq(&self, other: &Self) -> bool {
        self.seed == other.seed
    }
}

impl Eq for PrivateKey {}

impl Serializable for PrivateKey {
    type OutputSize = U32;

    fn write_exact(&self, buf: &mut [u8]) {
        buf.copy_from_slice(&self.seed);
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

/// A public key: the ML-KEM-768 encapsulation key and the P-256 point.
#[derive(Clone, Debug, PartialEq)]
struct PublicKey {
    ek_pq: EncapsulationKey,
    ek_t: p256::PublicKey,
}

impl Eq for PublicKey {}

impl Serializable for PublicKey {
    type OutputSize = typenum::Sum<KemNek, U65>;

    fn write_exact(&self, buf: &mut [u8]) {
        let (pq, t) = buf.split_at_mut(KemNek::USIZE);
        pq.copy_from_slice(&self.ek_pq.as_bytes());
        t.copy_from_slice(self.ek_t.to_encoded_point(false).as_bytes());
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
        Ok(PublicKey {
            ek_pq,
            ek_t: point(t)?,
        })
    }
}

/// An uncompressed P-256 point on the curve.
fn point(bytes: &[u8]) -> Result<p256::PublicKey, HpkeError> {
    let encoded = p256::EncodedPoint::from_bytes(bytes).map_err(|_| HpkeError::ValidationError)?;
    if encoded.is_compressed() {
        return Err(HpkeError::ValidationError);
    }
    p256::PublicKey::from_encoded_point(&encoded)
        .into_option()
        .ok_or(HpkeError::ValidationError)
}

/// The encapsulated key: the ML-KEM-768 ciphertext and the ephemeral P-256 point.
#[derive(Clone)]
struct EncappedKey {
    ct_pq: Ciphertext<MlKem768>,
    ct_t: [u8; 65],
}

impl Serializable for EncappedKey {
    type OutputSize = typenum::Sum<KemNct, U65>;

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

impl hpke::Kem for MlKem768P256 {
    type PublicKey = PublicKey;
    type PrivateKey = PrivateKey;
    type EncappedKey = EncappedKey;
    type NSecret = U32;
    const KEM_ID: u16 = 0x0050;

    fn sk_to_pk(sk: &PrivateKey) -> PublicKey {
        sk.pk.clone()
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
        let pk = sk.pk.clone();
        (sk, pk)
    }

    fn decap(
        sk: &PrivateKey,
        pk_sender_id: Option<&PublicKey>,
        enc: &EncappedKey,
    ) -> Result<SharedSecret<Self>, HpkeError> {
        if pk_sender_id.is_some() {
            return Err(HpkeError::DecapError);
        }
        let ct_t = point(&enc.ct_t).map_err(|_| HpkeError::DecapError)?;
        let ss_pq = sk
            .dk_pq
            .decapsulate(&enc.ct_pq)
            .map_err(|()| HpkeError::DecapError)?;
        let ss_t = p256::ecdh::diffie_hellman(sk.dk_t.to_nonzero_scalar(), ct_t.as_affine());
        Ok(combine(
            &ss_pq,
            ss_t.raw_secret_bytes(),
            &enc.ct_t,
            &sk.pk.ek_t,
        ))
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
        let sk_e = p256::ecdh::EphemeralSecret::random(csprng);
        let ct_t: [u8; 65] = sk_e
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .try_into()
            .expect("an uncompressed point");
        let ss_t = sk_e.diffie_hellman(&pk.ek_t);
        let ss = combine(&ss_pq, ss_t.raw_secret_bytes(), &ct_t, &pk.ek_t);
        Ok((ss, EncappedKey { ct_pq, ct_t }))
    }
}

/// `SHA3-256(ss_PQ ‖ ss_T ‖ ct_T ‖ ek_T ‖ "MLKEM768-P256")`, `ek_T` uncompressed.
fn combine(
    ss_pq: &[u8],
    ss_t: &[u8],
    ct_t: &[u8; 65],
    ek_t: &p256::PublicKey,
) -> SharedSecret<MlKem768P256> {
    let digest = Sha3_256::new()
        .chain_update(ss_pq)
        .chain_update(ss_t)
        .chain_update(ct_t)
        .chain_update(ek_t.to_encoded_point(false).as_bytes())
        .chain_update(LABEL)
        .finalize();
    let mut ss = SharedSecret::<MlKem768P256>::default();
    ss.0.copy_from_slice(&digest);
    ss
}
