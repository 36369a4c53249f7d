//! What an age file's header says without a key (`paracrypt info`): its form (binary or
//! armored), its recipient stanzas (what kind each is, a passphrase's scrypt work factor) and
//! what its length says about the payload's chunks.
//!
//! The header is read by [`Header::read`], with its caps (1 MiB, at most
//! [`MAX_STANZAS`](crate::recipient::MAX_STANZAS) stanzas), and nothing is unwrapped: no
//! identity, no scrypt work. The MAC cannot be checked without the file key.
//!
//! ```
//! use paracrypt_core::agefile::{AgeFormat, AgeInfo, Encryptor, StanzaKind};
//! use paracrypt_core::recipient::Recipients;
//! use paracrypt_core::Runner;
//!
//! let me = age::x25519::Identity::generate();
//! let mut recipients = Recipients::new();
//! recipients.add(&me.to_public().to_string(), "recipient 1")?;
//! let sealed = Runner::new().vec(&Encryptor::new(recipients), &[7; 100_000])?;
//!
//! let info = AgeInfo::read(&mut &sealed[..], Some(sealed.len() as u64), true)?;
//! assert_eq!(info.format, AgeFormat::Binary);
//! assert_eq!(info.stanzas[0].kind, StanzaKind::X25519);
//! assert!(!info.post_quantum() && info.passphrase().is_none());
//! let sizes = info.sizes.unwrap();
//! assert_eq!((sizes.chunks, sizes.plaintext), (2, 100_000..=100_000));
//! # Ok::<(), paracrypt_core::Error>(())
//! ```

use std::io::{BufRead, BufReader, Read};

use age::armor::ArmoredReader;

use super::payload::{CHUNK_SIZE, SEALED_CHUNK_LEN, TAG_LEN};
use super::{AgeFormat, DETECT_LEN, Header, NONCE_LEN, armor_error, armor_from, detect};
use crate::error::{Error, Result};
use crate::plan::Sizes;
use crate::recipient::{SCRYPT_MAX_LOG_N, SCRYPT_TAG, Stanza, kms, pq, tag};

/// What kind of recipient a stanza is for, by its tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StanzaKind {
    /// `X25519`: an `age1…` recipient.
    X25519,
    /// `mlkem768x25519`: an `age1pq1…` recipient (ML-KEM-768 and X25519, post-quantum).
    PostQuantum,
    /// `scrypt`: a passphrase, with its work factor (`log2 N`) when the stanza states one that
    /// reads as a number.
    Passphrase {
        /// The scrypt work factor, `log2 N`.
        log_n: Option<u8>,
    },
    /// `ssh-ed25519`: an OpenSSH Ed25519 key.
    SshEd25519,
    /// `ssh-rsa`: an OpenSSH RSA key, or an RSA key in PEM or DER (the same stanza).
    SshRsa,
    /// A tag ending in `-grease`: age writers add such stanzas so that readers keep ignoring
    /// what they do not know; no identity opens them.
    Grease,
    /// `awskms`: a key wrapped by AWS KMS (`awskms:KEY`), opened with `--kms`.
    AwsKms,
    /// `p256tag`: an `age1tag1…` recipient (P-256, a hardware key's), opened by its plugin.
    P256Tag,
    /// `mlkem768p256tag`: an `age1tagpq1…` recipient (ML-KEM-768 and P-256, post-quantum, a
    /// hardware key's), opened by its plugin.
    MlKem768P256Tag,
    /// Any other tag (a plugin's recipient, say): paracrypt has no identity for it.
    Other,
}

impl StanzaKind {
    /// The kind of a stanza tagged `tag`, its arguments `args`.
    pub(crate) fn of(tag: &str, args: &[String]) -> Self {
        match tag {
            "X25519" => StanzaKind::X25519,
            pq::STANZA_TAG => StanzaKind::PostQuantum,
            SCRYPT_TAG => StanzaKind::Passphrase {
                // `-> scrypt SALT LOG_N`.
                log_n: args.get(1).and_then(|n| n.parse().ok()),
            },
            "ssh-ed25519" => StanzaKind::SshEd25519,
            "ssh-rsa" => StanzaKind::SshRsa,
            kms::STANZA_TAG => StanzaKind::AwsKms,
            tag::P256_STANZA_TAG => StanzaKind::P256Tag,
            tag::PQ_STANZA_TAG => StanzaKind::MlKem768P256Tag,
            tag if tag.ends_with("-grease") => StanzaKind::Grease,
            _ => StanzaKind::Other,
        }
    }
}

/// The tags among `tags` (a header's stanzas', in order) that no identity built into
/// paracrypt opens, each once: an age plugin's (a plugin's stanza tag is its own choice, often
/// but not always its name: `age-plugin-yubikey` writes `piv-p256`, and `p256tag` or
/// `mlkem768p256tag` for its `age1tag1…` recipients). Grease is left out.
pub fn plugin_tags<'a>(tags: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let plugins = matches!(
            StanzaKind::of(tag, &[]),
            StanzaKind::Other | StanzaKind::P256Tag | StanzaKind::MlKem768P256Tag
        );
        if plugins && !out.iter().any(|t| t == tag) {
            out.push(tag.to_owned());
        }
    }
    out
}

/// One recipient stanza of an age header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StanzaInfo {
    /// The stanza's tag, as the file has it (age allows printable ASCII only).
    pub tag: String,
    /// What it is.
    pub kind: StanzaKind,
    /// The KMS key that opens it (an `awskms` stanza's argument).
    pub kms_key: Option<String>,
}

/// What an age file says about itself without a key.
#[derive(Debug)]
#[non_exhaustive]
pub struct AgeInfo {
    /// Binary, or ASCII armor.
    pub format: AgeFormat,
    /// The header's length in bytes (of the binary form, inside the armor for an armored file).
    pub header_len: usize,
    /// The recipient stanzas, in the header's order.
    pub stanzas: Vec<StanzaInfo>,
    /// The payload after the 16-byte nonce: its 64 KiB chunks and their plaintext. `None` when
    /// it was not measured: a binary file of unknown length (a stream), or armor the caller
    /// did not want decoded.
    pub sizes: Option<Sizes>,
}

impl AgeInfo {
    /// Reads an age file's header from the start of `input` (binary or armored, told apart as
    /// `decrypt` does). `len` is the input's length when known: a binary file's payload is
    /// measured from it, with nothing more read. An armored file's payload is measured by
    /// decoding the armor to its end when `decode_armor` (bounded memory; the armor is checked
    /// on the way).
    ///
    /// Fails as `decrypt` would on a header it cannot read: [`Error::AgeHeader`],
    /// [`Error::UnsupportedAgeVersion`], [`Error::Armor`]. A payload that no writer makes (cut
    /// short, an empty last chunk after full ones) is [`Sizes::damage`], not an error.
    pub fn read(input: &mut dyn Read, len: Option<u64>, decode_armor: bool) -> Result<Self> {
        let mut start = Vec::with_capacity(DETECT_LEN);
        (&mut *input)
            .take(DETECT_LEN as u64)
            .read_to_end(&mut start)
            .map_err(|e| Error::io("reading the age header", e))?;
        match detect(&start) {
            Some(AgeFormat::Binary) => {
                let mut whole = BufReader::new(start.as_slice().chain(input));
                let (header, nonce) = header_and_nonce(&mut whole)?;
                let header_len = header.as_bytes().len();
                let sizes = len.map(|len| {
                    payload_sizes(len.saturating_sub((header_len + NONCE_LEN) as u64), nonce)
                });
                Ok(Self::new(AgeFormat::Binary, &header, sizes))
            }
            Some(AgeFormat::Armored) => {
                let begin = armor_from(&start)?;
                let whole = BufReader::with_capacity(SEALED_CHUNK_LEN, begin.chain(input));
                let mut armored = ArmoredReader::new(whole);
                let (header, nonce) =
                    header_and_nonce(&mut BufReader::new(&mut armored)).map_err(armor_error)?;
                let sizes = if decode_armor {
                    let mut counted = Counted::default();
                    std::io::copy(&mut armored, &mut counted)
                        .map_err(|e| armor_error(Error::io("reading the armor", e)))?;
                    // What the header read buffered beyond the nonce was counted there.
                    Some(payload_sizes(nonce.rest + counted.0, nonce))
                } else {
                    None
                };
                Ok(Self::new(AgeFormat::Armored, &header, sizes))
            }
            None => Err(Error::AgeHeader("not an age file".into())),
        }
    }

    fn new(format: AgeFormat, header: &Header, sizes: Option<Sizes>) -> Self {
        AgeInfo {
            format,
            header_len: header.as_bytes().len(),
            stanzas: header.stanzas().iter().map(stanza_info).collect(),
            sizes,
        }
    }

    /// How many stanzas are for recipients (grease left out).
    pub fn recipients(&self) -> usize {
        self.stanzas
            .iter()
            .filter(|s| s.kind != StanzaKind::Grease)
            .count()
    }

    /// The AWS KMS keys that open the file (its `awskms` stanzas'), in order.
    pub fn kms_keys(&self) -> Vec<String> {
        self.stanzas
            .iter()
            .filter_map(|s| s.kms_key.clone())
            .collect()
    }

    /// The tags of the stanzas only an age plugin opens ([`plugin_tags`]).
    pub fn plugin_tags(&self) -> Vec<String> {
        plugin_tags(self.stanzas.iter().map(|s| s.tag.as_str()))
    }

    /// Whether the file key is wrapped for post-quantum recipients only: a file that any
    /// other recipient (X25519, SSH, a passphrase) can open is no better than that one.
    pub fn post_quantum(&self) -> bool {
        self.recipients() > 0
            && self
                .stanzas
                .iter()
                .filter(|s| s.kind != StanzaKind::Grease)
                .all(|s| {
                    matches!(
                        s.kind,
                        StanzaKind::PostQuantum | StanzaKind::MlKem768P256Tag
                    )
                })
    }

    /// The passphrase's scrypt work factor when the file is encrypted with a passphrase
    /// (`Some(None)`: the stanza states none that reads as a number).
    pub fn passphrase(&self) -> Option<Option<u8>> {
        self.stanzas.iter().find_map(|s| match s.kind {
            StanzaKind::Passphrase { log_n } => Some(log_n),
            _ => None,
        })
    }

    /// Whether `decrypt` would refuse the passphrase's work factor before any scrypt work:
    /// above [`SCRYPT_MAX_LOG_N`] (age's cap), or not stated.
    pub fn work_factor_refused(&self) -> bool {
        matches!(self.passphrase(), Some(log_n) if log_n.is_none_or(|n| n > SCRYPT_MAX_LOG_N))
    }
}

fn stanza_info(stanza: &Stanza) -> StanzaInfo {
    StanzaInfo {
        tag: stanza.tag.clone(),
        kind: StanzaKind::of(&stanza.tag, &stanza.args),
        kms_key: kms::keys_of(std::slice::from_ref(stanza)).pop(),
    }
}

/// Whether the nonce was there, and how many payload bytes were read past it.
#[derive(Clone, Copy, Debug)]
struct Nonce {
    whole: bool,
    rest: u64,
}

/// The header, then the 16-byte nonce (or as much of it as there is), from a buffered reader;
/// what the buffer already holds beyond the nonce is counted, not lost.
fn header_and_nonce(input: &mut BufReader<impl Read>) -> Result<(Header, Nonce)> {
    let header = Header::read(input)?;
    let mut nonce = Vec::with_capacity(NONCE_LEN);
    (&mut *input)
        .take(NONCE_LEN as u64)
        .read_to_end(&mut nonce)
        .map_err(|e| Error::io("reading the age header", e))?;
    let rest = input.buffer().len() as u64;
    input.consume(input.buffer().len());
    Ok((
        header,
        Nonce {
            whole: nonce.len() == NONCE_LEN,
            rest,
        },
    ))
}

/// The payload's chunks: 64 KiB of plaintext each and a 16-byte tag, the last one shorter and
/// empty only when it is the only one.
fn payload_sizes(payload: u64, nonce: Nonce) -> Sizes {
    let mut sizes = Sizes::sealed(payload, CHUNK_SIZE as u64, TAG_LEN as u64, TAG_LEN as u64);
    if !nonce.whole {
        sizes.damage = Some(Error::AgeHeader(
            "the file ends inside the payload nonce".into(),
        ));
    } else if sizes.damage.is_none()
        && sizes.chunks > 1
        && sizes.payload == (sizes.chunks - 1) * SEALED_CHUNK_LEN as u64 + TAG_LEN as u64
    {
        sizes.damage = Some(Error::EmptyLastChunk {
            index: sizes.chunks - 1,
        });
    }
    sizes
}

/// A sink that counts what is written to it.
#[derive(Default)]
struct Counted(u64);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use age_core::format::FileKey;

    use super::super::{Encryptor, Header};
    use super::*;
    use crate::Runner;
    use crate::recipient::{MAX_STANZAS, Recipients, pq::HybridIdentity};

    fn x25519() -> String {
        age::x25519::Identity::generate().to_public().to_string()
    }

    fn pq() -> String {
        HybridIdentity::generate().to_public().to_string()
    }

    /// A file to `recipients`, of `len` bytes of plaintext: binary and armored.
    fn sealed(recipients: &[String], len: usize) -> (Vec<u8>, Vec<u8>) {
        let mut list = Recipients::new();
        for (i, r) in recipients.iter().enumerate() {
            list.add(r, format!("recipient {i}")).unwrap();
        }
        let (runner, encryptor) = (Runner::new(), Encryptor::new(list));
        let plain = vec![5u8; len];
        let binary = runner.vec(&encryptor, &plain).unwrap();
        let mut armored = Vec::new();
        encryptor
            .encrypt_armored(&runner, &mut &plain[..], &mut armored)
            .unwrap();
        (binary, armored)
    }

    fn info(file: &[u8]) -> Result<AgeInfo> {
        AgeInfo::read(&mut &file[..], Some(file.len() as u64), true)
    }

    /// A header of `stanzas` (its MAC under a made-up key: `info` cannot check it), the
    /// nonce and `payload` bytes.
    fn forged(stanzas: Vec<Stanza>, payload: usize) -> Vec<u8> {
        let header = Header::seal(stanzas, &FileKey::new(Box::new([3; 16])));
        [header.as_bytes(), &[9; NONCE_LEN], &vec![0; payload]].concat()
    }

    fn scrypt(log_n: &str) -> Stanza {
        Stanza {
            tag: "scrypt".into(),
            args: vec!["c2FsdHNhbHRzYWx0c2FsdA".into(), log_n.into()],
            body: vec![1; 32],
        }
    }

    #[test]
    fn binary_and_armored_files_say_the_same_at_chunk_boundaries() {
        let k = CHUNK_SIZE;
        for (len, chunks) in [
            (0, 1),
            (1, 1),
            (k, 1),
            (k + 1, 2),
            (3 * k, 3),
            (3 * k + 5, 4),
        ] {
            let (binary, armored) = sealed(&[x25519()], len);
            for (file, format) in [(&binary, AgeFormat::Binary), (&armored, AgeFormat::Armored)] {
                let info = info(file).unwrap();
                assert_eq!(info.format, format);
                assert_eq!(info.stanzas.len(), 1);
                assert_eq!(info.stanzas[0].kind, StanzaKind::X25519);
                assert_eq!(info.recipients(), 1);
                let sizes = info.sizes.unwrap();
                assert!(sizes.damage.is_none(), "{len}: {:?}", sizes.damage);
                assert_eq!(sizes.chunks, chunks, "{len} bytes");
                assert_eq!(sizes.plaintext, len as u64..=len as u64);
                assert_eq!(
                    sizes.payload as usize + info.header_len + NONCE_LEN,
                    binary.len()
                );
            }
        }
    }

    #[test]
    fn post_quantum_means_every_recipient() {
        let (file, _) = sealed(&[pq(), pq()], 10);
        let info = info(&file).unwrap();
        assert_eq!(info.stanzas.len(), 2);
        assert!(info.post_quantum());
        assert!(info.stanzas.iter().all(|s| s.tag == "mlkem768x25519"));
        // paracrypt and age refuse to write this mix; a file may still hold it.
        let stanza = |tag: &str| Stanza {
            tag: tag.into(),
            args: vec![],
            body: vec![],
        };
        let file = forged(vec![stanza("mlkem768x25519"), stanza("X25519")], 16);
        assert!(!info_of(&file).post_quantum());
        let file = forged(vec![stanza("mlkem768x25519"), stanza("x-grease")], 16);
        assert!(info_of(&file).post_quantum());
        let (file, _) = sealed(&[x25519()], 10);
        assert!(!info_of(&file).post_quantum());
    }

    fn info_of(file: &[u8]) -> AgeInfo {
        info(file).unwrap()
    }

    #[test]
    fn a_passphrase_shows_its_work_factor_and_whether_it_is_refused() {
        let file = forged(vec![scrypt("18")], 16);
        let info = info(&file).unwrap();
        assert_eq!(info.passphrase(), Some(Some(18)));
        assert_eq!(
            info.stanzas[0].kind,
            StanzaKind::Passphrase { log_n: Some(18) }
        );
        assert!(!info.work_factor_refused() && !info.post_quantum());
        // Above age's cap, or no number at all: said, and nothing is computed.
        for (log_n, read) in [
            ("23", Some(23)),
            ("255", Some(255)),
            ("x", None),
            ("999", None),
        ] {
            let info = info_of(&forged(vec![scrypt(log_n)], 16));
            assert_eq!(info.passphrase(), Some(read), "{log_n}");
            assert!(info.work_factor_refused(), "{log_n}");
        }
    }

    #[test]
    fn grease_and_unknown_stanzas_are_named_not_counted() {
        let stanza = |tag: &str| Stanza {
            tag: tag.into(),
            args: vec![],
            body: vec![],
        };
        let file = forged(
            vec![stanza("X25519"), stanza("a-grease"), stanza("plugin-x")],
            16,
        );
        let info = info_of(&file);
        let kinds: Vec<_> = info.stanzas.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [StanzaKind::X25519, StanzaKind::Grease, StanzaKind::Other]
        );
        assert_eq!(info.recipients(), 2);
    }

    #[test]
    fn damaged_payloads_are_named_after_the_header_is_read() {
        let full = SEALED_CHUNK_LEN;
        let cases: [(usize, &str); 5] = [
            (0, "file truncated after the header (no chunks)"),
            (5, "input truncated inside chunk 0"),
            (full + 15, "input truncated inside chunk 1"),
            (
                full + TAG_LEN,
                "chunk 1 is an empty last chunk after data (not allowed)",
            ),
            (2 * full + 3, "input truncated inside chunk 2"),
        ];
        for (payload, message) in cases {
            let file = forged(vec![scrypt("18")], payload);
            let sizes = info_of(&file).sizes.unwrap();
            assert_eq!(sizes.damage.unwrap().to_string(), message, "{payload}");
        }
        // Cut inside the nonce.
        let file = forged(vec![scrypt("18")], 0);
        let cut = &file[..file.len() - 3];
        let sizes = info_of(cut).sizes.unwrap();
        assert_eq!(
            sizes.damage.unwrap().to_string(),
            "invalid age header: the file ends inside the payload nonce"
        );
        // A stream (no length): the header alone, no sizes.
        let info = AgeInfo::read(&mut &file[..], None, true).unwrap();
        assert!(info.sizes.is_none());
    }

    #[test]
    fn damaged_headers_and_armor_fail_as_decrypt_would() {
        let (binary, armored) = sealed(&[x25519()], 100);
        let header_len = info_of(&binary).header_len;
        let errors = [
            (
                binary[..header_len - 5].to_vec(),
                "the file ends inside the header",
            ),
            (armored[..armored.len() - 40].to_vec(), "armor"),
            (
                [&b"-----BEGIN AGE FILE-----\n"[..], &armored[35..]].concat(),
                "armor",
            ),
            (
                b"age-encryption.org/v2\n".to_vec(),
                "unsupported age format version",
            ),
        ];
        for (file, needle) in errors {
            let error = info(&file).unwrap_err().to_string();
            assert!(error.contains(needle), "{error}");
        }
        // Armor not decoded: the header alone.
        let info = AgeInfo::read(&mut &armored[..], Some(armored.len() as u64), false).unwrap();
        assert_eq!(info.format, AgeFormat::Armored);
        assert!(info.sizes.is_none());
    }

    #[test]
    fn what_a_hostile_header_claims_is_capped() {
        let stanza = |i: usize| Stanza {
            tag: format!("t{i}"),
            args: vec![],
            body: vec![],
        };
        let file = forged((0..=MAX_STANZAS).map(stanza).collect(), 16);
        let error = info(&file).unwrap_err().to_string();
        assert!(
            error.contains("more than 1024 recipient stanzas"),
            "{error}"
        );
        // A header that never ends: read up to 1 MiB, then refused.
        let endless = [&b"age-encryption.org/v1\n-> a\n"[..], &vec![b'A'; 2 << 20]].concat();
        let error = info(&endless).unwrap_err().to_string();
        assert!(error.contains("longer than 1048576 bytes"), "{error}");
    }
}
