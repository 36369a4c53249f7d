//! Checking one encrypted file without writing anything: every chunk (or the chunks a range
//! needs) is decrypted and authenticated into nothing, the file's end included, so that a
//! damaged, cut or foreign file fails as its decryption would — with the same words — and a
//! good one leaves no plaintext anywhere. The CLI's `verify -k/-i/--password-file FILE` and
//! Python's `verify_file` both come here.

use std::path::Path;

use super::{Driver, Kind, Request, Signer, head_of, open_input, refuse};
use crate::error::Result;
use crate::{Runner, agefile, container};

/// What [`Request::verify_file`] checked.
#[derive(Clone, Debug)]
pub struct Verified {
    /// The plaintext bytes authenticated (those of the range, with a range).
    pub bytes: u64,
    /// Who signed the file, when it is a signed container.
    pub signer: Option<Signer>,
}

/// Whether an input that starts with `head` (its first [`HEAD_LEN`](super::HEAD_LEN) bytes,
/// or all of it) is an encrypted file that a decryption opens: a paracrypt container or an
/// age file (binary or armored).
pub fn is_encrypted(head: &[u8]) -> bool {
    head.starts_with(container::MAGIC) || agefile::detect(head).is_some()
}

impl Request {
    /// Decrypts the file at `path` into nothing: all of it, or only the chunks that cover the
    /// plaintext bytes `range` (offset, length), checking every chunk's tag (and its
    /// signature, in a signed container) and that the file ends where its last chunk says.
    /// Nothing is written anywhere.
    ///
    /// # Errors
    /// A request that is not a decryption ([`Error::Request`](crate::Error::Request)); any
    /// error the decryption of the file would give: not an encrypted file, a secret that
    /// does not open it, a damaged chunk (named), a cut file, a signature that is not the one
    /// required.
    pub fn verify_file(
        &self,
        runner: &Runner,
        path: &Path,
        range: Option<(u64, u64)>,
    ) -> Result<Verified> {
        if !matches!(self.0, Kind::Decrypt { .. }) {
            return refuse("an encrypted file is verified with the secret that decrypts it");
        }
        let file = open_input(path)?;
        let head = head_of(&file)?;
        let driver = match range {
            Some(_) => Driver::Range,
            None => Driver::Whole,
        };
        let resolved = self.resolve(&head, driver)?;
        let mut nothing = std::io::sink();
        let bytes = match range {
            Some((offset, len)) => {
                runner.range(resolved.recipe(), &file, offset, len, &mut nothing)?
            }
            None if resolved.in_order() => {
                let mut reader = std::io::BufReader::new(&file);
                resolved.stream(runner, &mut reader, &mut nothing)?
            }
            None => runner.file_to_writer(resolved.recipe(), &file, &mut nothing)?,
        };
        Ok(Verified {
            bytes,
            signer: resolved.signer(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Key, Sealing, Secret};
    use crate::{Error, ErrorKind};

    fn sealed(dir: &Path, key: &Key, plain: &[u8]) -> std::path::PathBuf {
        let seal = Request::encrypt(
            Secret::Key(key.clone()),
            Sealing {
                chunk_size: Some(crate::plan::ChunkSize::new(64 * 1024).unwrap()),
                ..Sealing::default()
            },
        )
        .unwrap();
        let bytes = Runner::new()
            .vec(seal.resolve(&[], Driver::Whole).unwrap().recipe(), plain)
            .unwrap();
        let path = dir.join("file.pcr");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_good_file_verifies_and_a_damaged_or_cut_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::generate();
        let plain = vec![7u8; 200_000];
        let path = sealed(dir.path(), &key, &plain);
        let open = Request::decrypt(Secret::Key(key), None).unwrap();
        let runner = Runner::new();
        let verified = open.verify_file(&runner, &path, None).unwrap();
        assert_eq!(verified.bytes, 200_000);
        assert!(verified.signer.is_none());
        let part = open
            .verify_file(&runner, &path, Some((70_000, 10)))
            .unwrap();
        assert_eq!(part.bytes, 10);

        let good = std::fs::read(&path).unwrap();
        let mut damaged = good.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        let e = open.verify_file(&runner, &path, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Data, "{e}");
        assert!(e.to_string().contains("chunk"), "{e}");

        std::fs::write(&path, &good[..good.len() - 100]).unwrap();
        let e = open.verify_file(&runner, &path, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Data, "{e}");
        // Nothing but the file itself.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn only_a_decryption_verifies_and_only_an_encrypted_file() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::generate();
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"not encrypted").unwrap();
        let seal = Request::encrypt(Secret::Key(key.clone()), Sealing::default()).unwrap();
        let e = seal.verify_file(&Runner::new(), &plain, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage, "{e}");
        let open = Request::decrypt(Secret::Key(key), None).unwrap();
        let e = open.verify_file(&Runner::new(), &plain, None).unwrap_err();
        assert!(matches!(e, Error::NotEncrypted), "{e}");
        assert!(!is_encrypted(b"not encrypted"));
        assert!(is_encrypted(container::MAGIC));
        assert!(is_encrypted(b"age-encryption.org/v1\n"));
    }
}
