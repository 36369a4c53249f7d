//! age's tagged recipient types, `p256tag` and `mlkem768p256tag` (age 1.3; C2SP `age.md`,
//! "The tagged recipient types"): the public side of hardware keys (a YubiKey through
//! `age-plugin-yubikey`, say), whose stanza carries a tag that lets the key's plugin tell its
//! own stanzas before asking for the user's touch or PIN.
//!
//! | recipient | key | stanza | enc |
//! |---|---|---|---|
//! | `age1tag1…` | a compressed P-256 point (33 bytes) | `-> p256tag TAG ENC` | an uncompressed P-256 point (65) |
//! | `age1tagpq1…` (post-quantum) | ML-KEM-768 encapsulation key ‖ uncompressed P-256 point (1249) | `-> mlkem768p256tag TAG ENC` | ML-KEM-768 ciphertext ‖ P-256 point (1153) |
//!
//! Wrapping is the `age` crate's own ([`age::tag::Recipient`], [`age::tagpq::Recipient`]:
//! HPKE `SealBase` with DHKEM(P-256) or `filippo.io/hpke-pq`'s MLKEM768-P256, HKDF-SHA256 and
//! ChaCha20-Poly1305). This module parses the strings into them, with one check the `age`
//! crate leaves to its caller: an ML-KEM encapsulation key whose coefficients are not reduced
//! modulo q (FIPS 203's modulus check) is refused, as [`super::pq`] refuses it.
//!
//! The specification defines no identity for these recipients: they are opened by the
//! hardware key's plugin (`AGE-PLUGIN-NAME-1…` identities, [`super::plugin`]), to which every
//! stanza of a file is offered. An `age1tagpq1…` recipient carries age's `postquantum` label,
//! so it shares a file only with other post-quantum recipients, as `age1pq1…` does.

use age_core::primitives::bech32_decode;
use hpke::generic_array::typenum::Unsigned;
use ml_kem::{EncodedSizeUser, KemCore, MlKem768};

type EncapsulationKey = <MlKem768 as KemCore>::EncapsulationKey;

/// The `p256tag` stanza's tag.
pub const P256_STANZA_TAG: &str = "p256tag";
/// The `mlkem768p256tag` stanza's tag (post-quantum).
pub const PQ_STANZA_TAG: &str = "mlkem768p256tag";
/// The classical recipient's Bech32 prefix (`age1tag1…`).
pub const P256_PREFIX: &str = "age1tag";
/// The post-quantum recipient's Bech32 prefix (`age1tagpq1…`).
pub const PQ_PREFIX: &str = "age1tagpq";

/// ML-KEM-768's encapsulation key length (1184), where the P-256 point of an `age1tagpq1…`
/// recipient begins.
const EK_LEN: usize = <EncapsulationKey as EncodedSizeUser>::EncodedSize::USIZE;

/// An `age1tag1…` recipient (P-256), or why `text` is not one.
pub fn p256(text: &str) -> Result<age::tag::Recipient, String> {
    let bytes = decode(text, P256_PREFIX)?;
    if bytes.len() != 33 || !matches!(bytes[0], 2 | 3) {
        return Err(format!(
            "not a valid {P256_PREFIX}1… recipient (a compressed P-256 point is 33 bytes, this \
             is {})",
            bytes.len()
        ));
    }
    text.parse()
        .map_err(|e| format!("not a valid {P256_PREFIX}1… recipient ({e})"))
}

/// An `age1tagpq1…` recipient (ML-KEM-768 and P-256), or why `text` is not one.
pub fn hybrid(text: &str) -> Result<age::tagpq::Recipient, String> {
    let bytes = decode(text, PQ_PREFIX)?;
    let invalid = |why: &str| format!("not a valid {PQ_PREFIX}1… recipient ({why})");
    if bytes.len() != EK_LEN + 65 {
        return Err(invalid(&format!(
            "an ML-KEM-768 key and a P-256 point are 1249 bytes, this is {}",
            bytes.len()
        )));
    }
    let ek = &bytes[..EK_LEN];
    let parsed = EncapsulationKey::from_bytes(ek.try_into().expect("checked length"));
    // FIPS 203's modulus check (section 7.2), which `ml-kem` 0.2 does not make: a key whose
    // coefficients are not reduced does not encode back to the same bytes.
    if parsed.as_bytes().as_slice() != ek {
        return Err(invalid("the ML-KEM-768 key fails FIPS 203's modulus check"));
    }
    text.parse().map_err(|e: &str| invalid(e))
}

/// The bytes of the Bech32 string `text` whose prefix must be `prefix` (any case, no
/// 90-character limit).
fn decode(text: &str, prefix: &str) -> Result<Vec<u8>, String> {
    bech32_decode(
        text,
        |e| format!("not a valid {prefix}1… recipient (invalid Bech32: {e})"),
        |hrp| {
            hrp.as_str()
                .eq_ignore_ascii_case(prefix)
                .then_some(())
                .ok_or_else(|| format!("not an {prefix}1… recipient"))
        },
        |_, bytes| Ok(bytes.collect()),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use age_core::format::FileKey;
    use base64::Engine;
    use base64::prelude::BASE64_STANDARD_NO_PAD;

    use super::*;

    /// The specification's example recipients (C2SP `age.md`).
    const SPEC_P256: &str = "age1tag1qt8lw0ual6avlwmwatk888yqnmdamm7xfd0wak53ut6elz5c4swx2yqdj4e";

    fn spec_hybrid() -> String {
        let spec = include_str!("testdata/age1tagpq.txt");
        spec.trim().to_owned()
    }

    fn stanza_of(recipient: &dyn age::Recipient) -> (age_core::format::Stanza, HashSet<String>) {
        let (mut stanzas, labels) = recipient
            .wrap_file_key(&FileKey::new(Box::new([3; 16])))
            .unwrap();
        (stanzas.pop().unwrap(), labels)
    }

    #[test]
    fn the_spec_recipients_wrap_to_stanzas_of_the_spec_form() {
        let (stanza, labels) = stanza_of(&p256(SPEC_P256).unwrap());
        assert_eq!(stanza.tag, P256_STANZA_TAG);
        let [tag, enc] = &stanza.args[..] else {
            panic!("two arguments")
        };
        assert_eq!(BASE64_STANDARD_NO_PAD.decode(tag).unwrap().len(), 4);
        assert_eq!(BASE64_STANDARD_NO_PAD.decode(enc).unwrap().len(), 65);
        assert_eq!(stanza.body.len(), 32);
        assert!(labels.is_empty());

        let (stanza, labels) = stanza_of(&hybrid(&spec_hybrid()).unwrap());
        assert_eq!(stanza.tag, PQ_STANZA_TAG);
        assert_eq!(
            BASE64_STANDARD_NO_PAD
                .decode(&stanza.args[1])
                .unwrap()
                .len(),
            1153
        );
        assert_eq!(stanza.body.len(), 32);
        assert_eq!(labels, HashSet::from(["postquantum".to_owned()]));
    }

    #[test]
    fn invalid_keys_are_refused() {
        use age_core::primitives::bech32_encode;
        let hrp = |p: &str| bech32::Hrp::parse(p).unwrap();
        // An uncompressed point where a compressed one belongs, and an x with no point on
        // the curve.
        let uncompressed = bech32_encode(hrp(P256_PREFIX), &[4; 65]);
        assert!(p256(&uncompressed).unwrap_err().contains("33 bytes"));
        let off_curve = (0u8..=255)
            .map(|x| {
                let mut point = [x; 33];
                point[0] = 2;
                bech32_encode(hrp(P256_PREFIX), &point)
            })
            .find(|s| p256(s).is_err())
            .expect("some x is not on the curve");
        assert!(
            p256(&off_curve)
                .unwrap_err()
                .starts_with("not a valid age1tag1…")
        );

        let mut bytes = decode(&spec_hybrid(), PQ_PREFIX).unwrap();
        // The first 12-bit coefficient set to 0xfff, above q = 3329.
        bytes[0] = 0xff;
        bytes[1] |= 0x0f;
        let unreduced = bech32_encode(hrp(PQ_PREFIX), &bytes);
        assert!(hybrid(&unreduced).unwrap_err().contains("modulus check"));
        let mut bytes = decode(&spec_hybrid(), PQ_PREFIX).unwrap();
        bytes[EK_LEN] = 2;
        let compressed = bech32_encode(hrp(PQ_PREFIX), &bytes);
        assert!(hybrid(&compressed).is_err());
        assert!(
            hybrid(SPEC_P256)
                .unwrap_err()
                .contains("not an age1tagpq1…")
        );
    }
}
