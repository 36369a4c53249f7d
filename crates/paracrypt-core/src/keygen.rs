//! A new key or identity file (`paracrypt keygen`, Python's `paracrypt.keygen`): a 256-bit key
//! file, an age identity (X25519 or post-quantum) or a signing key (Ed25519, ML-DSA-65),
//! written with mode 0600 and never over an existing file. The rules (which kinds there are,
//! which take a public key file, neither file left when one cannot be written) are here once,
//! for every front end.
//!
//! ```
//! use paracrypt_core::keygen::{Kind, generate};
//!
//! let dir = tempfile::tempdir()?;
//! let recipient = generate(&dir.path().join("me.key"), Kind::X25519, None)?;
//! assert!(recipient.unwrap().starts_with("age1"));
//! let again = generate(&dir.path().join("me.key"), Kind::X25519, None).unwrap_err();
//! assert!(again.to_string().contains("already exists"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::str::FromStr;

use zeroize::Zeroizing;

use crate::container::Key;
use crate::error::{Error, Result};
use crate::recipient::{IdentityKind, generate_identity};
use crate::sign::SigningKey;

/// What to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A 256-bit key file for paracrypt's container (`--key-file`, `key=`).
    Key,
    /// An age X25519 identity, whose recipient (`age1…`) others encrypt to.
    X25519,
    /// A post-quantum age identity (ML-KEM-768 + X25519), recipient `age1pq1…`.
    PostQuantum,
    /// An Ed25519 signing key (PKCS#8 PEM); its public key is an `ssh-ed25519` line.
    Ed25519,
    /// An ML-DSA-65 signing key (FIPS 204; PKCS#8 PEM holding its seed); its public key is
    /// named by its fingerprint.
    MlDsa65,
}

impl Kind {
    /// Every kind, by the name the front ends take.
    pub const NAMES: [(&'static str, Kind); 5] = [
        ("key", Kind::Key),
        ("x25519", Kind::X25519),
        ("pq", Kind::PostQuantum),
        ("ed25519", Kind::Ed25519),
        ("ml-dsa-65", Kind::MlDsa65),
    ];

    /// Whether it is a signing key, which alone has a public key file.
    pub fn signs(self) -> bool {
        matches!(self, Kind::Ed25519 | Kind::MlDsa65)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, _) = Self::NAMES
            .iter()
            .find(|(_, kind)| kind == self)
            .expect("every kind is named");
        f.write_str(name)
    }
}

impl FromStr for Kind {
    type Err = Error;

    /// A kind's name, or an alias: `mlkem768x25519` for `pq`, `mldsa65` for `ml-dsa-65`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "mlkem768x25519" => return Ok(Kind::PostQuantum),
            "mldsa65" => return Ok(Kind::MlDsa65),
            _ => {}
        }
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
                Error::Request(format!(
                    "unknown kind `{}` (valid: {})",
                    name.escape_debug(),
                    names.join(", ")
                ))
            })
    }
}

/// Writes a new `kind` at `path` (mode 0600) and, for a signing key, its public key as SPKI PEM
/// at `public_out` when given (0666 less the umask: it is no secret). Returns what names the public key: the recipient of an identity
/// (`age1…`, `age1pq1…`), an Ed25519 key's `ssh-ed25519 …` line, an ML-DSA-65 key's
/// fingerprint; `None` for a key file.
///
/// # Errors
/// [`Error::Request`] (a usage error) when `path` or `public_out` exists (nothing is ever
/// overwritten), when they are the same, or when `public_out` is given for a kind that is no
/// signing key; [`Error::Io`] when a file cannot be written, and then neither file is left.
pub fn generate(path: &Path, kind: Kind, public_out: Option<&Path>) -> Result<Option<String>> {
    if path.symlink_metadata().is_ok() {
        return Err(exists(path));
    }
    if let Some(public_out) = public_out {
        if !kind.signs() {
            return Err(Error::Request(format!(
                "a public key file is for signing keys (ed25519 or ml-dsa-65), not {kind}"
            )));
        }
        if public_out == path {
            return Err(Error::Request(format!(
                "the public key file {} is the key's own path; keygen never overwrites",
                public_out.display()
            )));
        }
        if public_out.symlink_metadata().is_ok() {
            return Err(exists(public_out));
        }
    }
    let (private, public, pem) = match kind {
        Kind::Key => (Zeroizing::new(Key::generate().to_file_text()), None, None),
        Kind::X25519 | Kind::PostQuantum => {
            let kind = match kind {
                Kind::X25519 => IdentityKind::X25519,
                _ => IdentityKind::PostQuantum,
            };
            let (text, recipient) = generate_identity(kind);
            (text, Some(recipient), None)
        }
        Kind::Ed25519 | Kind::MlDsa65 => {
            let key = match kind {
                Kind::Ed25519 => SigningKey::generate_ed25519(),
                _ => SigningKey::generate_ml_dsa_65(),
            };
            let public = key.verifying_key();
            let named = public.to_openssh().unwrap_or_else(|| public.fingerprint());
            let pem = public_out.map(|_| public.to_spki_pem()).transpose()?;
            (key.to_pkcs8_pem()?, Some(named), pem)
        }
    };
    write_new(path, private.as_bytes())?;
    if let (Some(public_out), Some(pem)) = (public_out, pem)
        && let Err(e) = create(public_out, pem.as_bytes(), 0o666)
    {
        // Neither file or both: the private key alone would look like a finished keygen.
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(public)
}

/// Creates `path` with mode 0600 (never over anything there, a link included) and writes
/// `bytes`, a secret; removes it again when writing fails. What every key file is written
/// with (Python's `Key.save` too).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    create(path, bytes, 0o600)
}

/// The refusal of a key file's path that exists (a usage error, as any existing output).
fn exists(path: &Path) -> Error {
    Error::Request(format!(
        "{} already exists; keygen never overwrites a key",
        path.display()
    ))
}

/// Creates `path` with `mode` (less the umask; never over anything there) and writes `bytes`;
/// removes it again when writing fails. A public key is no secret: 0666 less the umask, as
/// any other output.
fn create(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => exists(path),
            _ => Error::io(format!("cannot create {}", path.display()), e),
        })?;
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        let _ = std::fs::remove_file(path);
        return Err(Error::io(format!("writing {}", path.display()), e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sign::VerifyingKey;

    /// Each kind writes a file its reader takes, mode 0600; a signing key's public key file
    /// holds the key it names.
    #[test]
    fn each_kind_writes_what_its_reader_takes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for (name, kind) in Kind::NAMES {
            assert_eq!(name.parse::<Kind>().unwrap(), kind);
            assert_eq!(kind.to_string(), name);
            let path = dir.path().join(name);
            let public_out = kind.signs().then(|| dir.path().join(format!("{name}.pub")));
            let named = generate(&path, kind, public_out.as_deref()).unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
            let bytes = std::fs::read(&path).unwrap();
            match kind {
                Kind::Key => {
                    assert!(Key::from_file_text(std::str::from_utf8(&bytes).unwrap()).is_ok());
                    assert_eq!(named, None);
                }
                Kind::X25519 | Kind::PostQuantum => {
                    let recipients = crate::recipient::recipients_of(name, &bytes).unwrap();
                    assert_eq!(recipients, [named.unwrap()]);
                }
                Kind::Ed25519 | Kind::MlDsa65 => {
                    let key = SigningKey::from_key_file(&bytes, Default::default()).unwrap();
                    let public_out = public_out.unwrap();
                    let mode = std::fs::metadata(&public_out).unwrap().permissions().mode();
                    assert_eq!(mode & 0o044, 0o044, "{name}: a public key others may read");
                    let pem = std::fs::read(public_out).unwrap();
                    let public = VerifyingKey::from_key_file(&pem, Default::default()).unwrap();
                    assert_eq!(public.fingerprint(), key.verifying_key().fingerprint());
                }
            }
        }
        assert_eq!("mldsa65".parse::<Kind>().unwrap(), Kind::MlDsa65);
        assert_eq!("mlkem768x25519".parse::<Kind>().unwrap(), Kind::PostQuantum);
        let e = "rsa".parse::<Kind>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown kind `rsa` (valid: key, x25519, pq, ed25519, ml-dsa-65)"
        );
    }

    /// Nothing is overwritten, a public key file is for signing keys only, and when the
    /// public key cannot be written the private key is not left either.
    #[test]
    fn nothing_is_overwritten_and_neither_file_or_both() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let key = d.join("k");
        std::fs::write(&key, b"mine").unwrap();
        let e = generate(&key, Kind::Key, None).unwrap_err();
        assert!(matches!(e, Error::Request(_)), "{e}");
        assert_eq!(std::fs::read(&key).unwrap(), b"mine");
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("link")).unwrap();
        assert!(generate(&d.join("link"), Kind::Key, None).is_err());
        assert!(
            !d.join("nowhere").exists(),
            "nothing written through a link"
        );
        let e = generate(&d.join("x"), Kind::X25519, Some(&d.join("x.pub"))).unwrap_err();
        assert!(e.to_string().contains("for signing keys"), "{e}");
        let same = d.join("s");
        let e = generate(&same, Kind::Ed25519, Some(&same)).unwrap_err();
        assert!(e.to_string().contains("the key's own path"), "{e}");
        let e = generate(&d.join("e"), Kind::Ed25519, Some(&key)).unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        let e = generate(&d.join("e"), Kind::Ed25519, Some(&d.join("no/such/dir"))).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
        assert!(!d.join("e").exists(), "the private key is not left alone");
    }
}
