//! Rekeying: changing who can open a file without touching its payload.
//!
//! Both formats that encrypt to recipients wrap one random file key per file: a container of
//! version 2 and an age file. [`rekey_header`] opens the header with the old identities (or
//! passphrase), checks it, and writes a new header that wraps the **same** file key for the
//! new recipients (or passphrase) only; every byte after the header is then copied as it is.
//!
//! Rekeying is not revocation: whoever had the file key, or a copy of the old file and an old
//! credential, can still read the payload (the file key and the payload are unchanged).
//!
//! A version 1 container (key file or password) has no file key: its secret goes straight into
//! the key schedule, so it cannot be rekeyed ([`Error::CannotRekey`]); decrypt it and encrypt it
//! again, to recipients for a file that can be rekeyed later. An armored age file is refused
//! too: its payload's bytes are base64 lines that a new header would shift.
//!
//! ```
//! use std::sync::Arc;
//! use age::secrecy::ExposeSecret;
//! use paracrypt_core::agefile::{Decryptor, Encryptor};
//! use paracrypt_core::recipient::{Identities, Recipients};
//! use paracrypt_core::rekey::rekey_header;
//! use paracrypt_core::Runner;
//!
//! let (alice, bob) = (age::x25519::Identity::generate(), age::x25519::Identity::generate());
//! let to = |who: &age::x25519::Identity| {
//!     let mut recipients = Recipients::new();
//!     recipients.add(&who.to_public().to_string(), "recipient")?;
//!     Ok::<_, paracrypt_core::Error>(Arc::new(recipients))
//! };
//! let with = |who: &age::x25519::Identity| {
//!     let mut identities = Identities::new();
//!     identities.add_file("key", who.to_string().expose_secret().as_bytes())?;
//!     Ok::<_, paracrypt_core::Error>(Arc::new(identities))
//! };
//! let runner = Runner::new();
//! let sealed = runner.vec(&Encryptor::new(to(&alice)?), &[7; 100_000])?;
//!
//! let mut input = &sealed[..];
//! let mut rekeyed = rekey_header(&mut input, with(&alice)?, to(&bob)?)?;
//! rekeyed.extend_from_slice(input); // the nonce and the payload, as they are
//! assert_eq!(runner.vec(&Decryptor::new(with(&bob)?), &rekeyed)?, vec![7; 100_000]);
//! assert!(runner.vec(&Decryptor::new(with(&alice)?), &rekeyed).is_err());
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::io::{BufRead, Read};
use std::sync::Arc;

use crate::agefile::{self, AgeFormat};
use crate::container::{self, MAGIC};
use crate::error::{Error, Result};
use crate::recipient::{Identities, Recipients};

/// Reads the header of a container (version 2) or a binary age file from `input`, consuming
/// exactly the header, opens it with `old` and returns a new header for the same file key,
/// wrapped for `new` only. What follows the header in `input` belongs after the new header
/// unchanged. A wrong identity or passphrase, a damaged header, a version 1 container and an
/// armored age file fail here, before anything is written.
pub fn rekey_header(
    input: &mut dyn BufRead,
    old: Arc<Identities>,
    new: Arc<Recipients>,
) -> Result<Vec<u8>> {
    // Enough to tell the formats apart: the longer of the two magics.
    let mut prefix = Vec::with_capacity(agefile::MAGIC.len());
    (&mut *input)
        .take(agefile::MAGIC.len() as u64)
        .read_to_end(&mut prefix)
        .map_err(|e| Error::io("reading the header", e))?;
    let mut input = (&prefix[..]).chain(input);
    if prefix.starts_with(MAGIC) {
        let header = container::read_header_bytes(&mut input)?;
        return container::rekey(&header, old, new);
    }
    match agefile::detect(&prefix) {
        Some(AgeFormat::Binary) => agefile::rekey_header(&mut input, &old, &new),
        Some(AgeFormat::Armored) => Err(Error::CannotRekey(
            "it is an armored age file; rekeying copies the payload byte for byte, which needs \
             the binary form (encrypt it unarmored)",
        )),
        None => Err(Error::NotAContainer),
    }
}

#[cfg(test)]
mod tests {
    use age::secrecy::ExposeSecret;

    use super::*;
    use crate::container::{Decryptor, Encryptor, HEADER_LEN, Key, Secret};
    use crate::plan::ChunkSize;
    use crate::{ErrorKind, HeaderFault, Runner};

    fn people<const N: usize>() -> [age::x25519::Identity; N] {
        std::array::from_fn(|_| age::x25519::Identity::generate())
    }

    fn to(who: &[&age::x25519::Identity]) -> Arc<Recipients> {
        let mut recipients = Recipients::new();
        for one in who {
            recipients.add(&one.to_public().to_string(), "r").unwrap();
        }
        Arc::new(recipients)
    }

    fn with(who: &age::x25519::Identity) -> Arc<Identities> {
        let mut identities = Identities::new();
        let text = who.to_string();
        identities
            .add_file("k", text.expose_secret().as_bytes())
            .unwrap();
        Arc::new(identities)
    }

    /// The whole rekeyed file: the new header, then the rest of `sealed` as it is.
    fn rekey(sealed: &[u8], old: Arc<Identities>, new: Arc<Recipients>) -> Result<Vec<u8>> {
        let mut input = sealed;
        let mut out = rekey_header(&mut input, old, new)?;
        out.extend_from_slice(input);
        Ok(out)
    }

    fn open(sealed: &[u8], who: &age::x25519::Identity) -> Result<Vec<u8>> {
        Runner::new().vec(&Decryptor::new(Secret::Identities(with(who))), sealed)
    }

    fn container(to: Arc<Recipients>, plain: &[u8]) -> Vec<u8> {
        let encryptor =
            Encryptor::new(Secret::Recipients(to)).chunk_size(ChunkSize::new(4096).unwrap());
        Runner::new().vec(&encryptor, plain).unwrap()
    }

    #[test]
    fn a_rekeyed_container_opens_with_the_new_recipients_only() {
        let [a, b, c] = &people();
        let plain: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        let sealed = container(to(&[a, b]), &plain);
        let old_len = crate::container::read_header(&mut &sealed[..]).unwrap().len;
        // Remove b, add c.
        let rekeyed = rekey(&sealed, with(a), to(&[a, c])).unwrap();
        let info = crate::container::read_header(&mut &rekeyed[..]).unwrap();
        assert_eq!(info.recipients, 2);
        assert!(info.binding.is_some());
        // The chunks are the old ones, byte for byte.
        assert_eq!(&rekeyed[info.len..], &sealed[old_len..]);
        assert_eq!(open(&rekeyed, a).unwrap(), plain);
        assert_eq!(open(&rekeyed, c).unwrap(), plain);
        assert!(matches!(
            open(&rekeyed, b),
            Err(Error::NoIdentityMatches { recipients: 2 })
        ));
        // Rekeyed again (by c, to b alone): the binding is still the first header's MAC.
        let again = rekey(&rekeyed, with(c), to(&[b])).unwrap();
        let info2 = crate::container::read_header(&mut &again[..]).unwrap();
        assert_eq!(info2.binding, info.binding);
        assert_eq!(open(&again, b).unwrap(), plain);
        assert!(open(&again, a).is_err() && open(&again, c).is_err());
        // The range driver reads the rekeyed file too.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &again).unwrap();
        let mut out = Vec::new();
        let decryptor = Decryptor::new(Secret::Identities(with(b)));
        let file = std::fs::File::open(&path).unwrap();
        (Runner::new().range(&decryptor, &file, 5000, 100, &mut out)).unwrap();
        assert_eq!(out, plain[5000..5100]);
    }

    #[test]
    fn a_rekeyed_header_is_checked_like_any_other() {
        let [a, b] = &people();
        let sealed = container(to(&[a]), &[1; 10_000]);
        let rekeyed = rekey(&sealed, with(a), to(&[b])).unwrap();
        let len = crate::container::read_header(&mut &rekeyed[..])
            .unwrap()
            .len;
        // The binding stanza's argument changed (the checksum fixed too): the MAC fails.
        let at = 76 + "-> paracrypt-bound ".len() + 5;
        let mut bad = rekeyed.clone();
        bad[at] = if bad[at] == b'A' { b'B' } else { b'A' };
        let sum = <sha2::Sha256 as sha2::Digest>::digest(&bad[..len - 40]);
        bad[len - 40..len - 32].copy_from_slice(&sum[..8]);
        assert!(matches!(
            open(&bad, b),
            Err(Error::Header(HeaderFault::Mac))
        ));
        // A header whose chunks were not sealed under the binding fails at chunk 0.
        let mut grafted = rekeyed[..len].to_vec();
        grafted.extend_from_slice(&container(to(&[a]), &[1; 10_000])[HEADER_LEN + 100..]);
        assert!(open(&grafted, b).is_err());
        // The wrong identity, or a damaged header, fails before anything is written.
        assert!(matches!(
            rekey(&sealed, with(b), to(&[b])),
            Err(Error::NoIdentityMatches { .. })
        ));
        let mut damaged = sealed.clone();
        damaged[30] ^= 1;
        assert!(matches!(
            rekey(&damaged, with(a), to(&[b])),
            Err(Error::Header(HeaderFault::Checksum))
        ));
    }

    #[test]
    fn version_1_containers_and_armored_age_files_are_refused() {
        let key = Key::generate();
        let v1 = Runner::new().vec(&Encryptor::new(key), b"x").unwrap();
        let a = age::x25519::Identity::generate();
        let v2 = container(to(&[&a]), b"x");
        let pass = age::secrecy::SecretString::from("pass".to_owned());
        let err = rekey(
            &v2,
            with(&a),
            Arc::new(Recipients::passphrase(pass, Some(2))),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not to a passphrase"), "{err}");
        let err = rekey(&v1, with(&a), to(&[&a])).unwrap_err();
        assert!(matches!(err, Error::CannotRekey(_)), "{err}");
        assert_eq!(err.kind(), ErrorKind::Data);
        assert!(err.to_string().contains("encrypt it again"), "{err}");
        let mut armored = Vec::new();
        agefile::Encryptor::new(to(&[&a]))
            .encrypt_armored(&Runner::new(), &mut &b"x"[..], &mut armored)
            .unwrap();
        let err = rekey(&armored, with(&a), to(&[&a])).unwrap_err();
        assert!(err.to_string().contains("armored"), "{err}");
        assert!(matches!(
            rekey(b"hello, world", with(&a), to(&[&a])),
            Err(Error::NotAContainer)
        ));
    }

    #[test]
    fn a_rekeyed_age_file_keeps_its_payload_and_moves_to_a_passphrase_and_back() {
        let [a, b] = &people();
        let plain = vec![9u8; 150_000];
        let runner = Runner::new();
        let sealed = runner
            .vec(&agefile::Encryptor::new(to(&[a])), &plain)
            .unwrap();
        let pass = |p: &str| age::secrecy::SecretString::from(p.to_owned());
        let to_pass = Arc::new(Recipients::passphrase(pass("correct horse"), Some(10)));
        let by_pass = |p: &str| Arc::new(Identities::passphrase(pass(p), None));
        let rekeyed = rekey(&sealed, with(a), to_pass).unwrap();
        let header_len = |f: &[u8]| agefile::Header::read(&mut &f[..]).unwrap().as_bytes().len();
        assert_eq!(
            &rekeyed[header_len(&rekeyed)..],
            &sealed[header_len(&sealed)..]
        );
        let opened = runner.vec(&agefile::Decryptor::new(by_pass("correct horse")), &rekeyed);
        assert_eq!(opened.unwrap(), plain);
        assert!(
            runner
                .vec(&agefile::Decryptor::new(with(a)), &rekeyed)
                .is_err()
        );
        assert!(rekey(&rekeyed, by_pass("wrong"), to(&[b])).is_err());
        let back = rekey(&rekeyed, by_pass("correct horse"), to(&[b])).unwrap();
        assert_eq!(
            runner
                .vec(&agefile::Decryptor::new(with(b)), &back)
                .unwrap(),
            plain
        );
        // A damaged header (a stanza's body changed) fails its MAC: nothing is returned.
        let mut damaged = sealed.clone();
        let at = damaged.iter().position(|&c| c == b'\n').unwrap() + 60;
        damaged[at] = if damaged[at] == b'A' { b'B' } else { b'A' };
        assert!(rekey(&damaged, with(a), to(&[b])).is_err());
        // So does a changed MAC, whose stanzas still open.
        let mut damaged = sealed.clone();
        let at = header_len(&sealed) - 10;
        damaged[at] = if damaged[at] == b'A' { b'B' } else { b'A' };
        assert!(matches!(
            rekey(&damaged, with(a), to(&[b])),
            Err(Error::Header(HeaderFault::Mac))
        ));
    }
}
