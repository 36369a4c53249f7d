//! SSHSIG (OpenSSH's `PROTOCOL.sshsig`): the signatures `ssh-keygen -Y sign` makes and
//! `ssh-keygen -Y verify` checks, with Ed25519 keys.
//!
//! An SSHSIG signs `"SSHSIG" ‖ string(namespace) ‖ string("") ‖ string("sha512") ‖
//! string(SHA-512(message))` (SSH wire strings: a 4-byte length, then the bytes). SHA-512 of the
//! whole message is a chain, so it runs on one core: this is the format for people who verify
//! with `ssh-keygen`, not the fast one (see `docs/SIGNATURES.md`). The blob's encoding and
//! armor are the `ssh-key` crate's; the signature is the provider's Ed25519.

use std::io::Read;

use super::keys::{Scheme, SigningKey, VerifyingKey};
use crate::error::{Error, Result};

/// The namespace `paracrypt` signs files in unless told otherwise (`ssh-keygen -Y sign -n
/// file`, the convention for files).
pub const DEFAULT_NAMESPACE: &str = "file";

/// The most bytes of an armored SSHSIG a reader takes (an Ed25519 one is about 300).
pub const MAX_ARMORED: usize = 64 * 1024;

fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// What is signed: the preamble, the namespace, the empty reserved field, the hash's name
/// and the hash.
fn signed_data(namespace: &str, hash_name: &str, hash: &[u8]) -> Vec<u8> {
    let mut data = b"SSHSIG".to_vec();
    put_string(&mut data, namespace.as_bytes());
    put_string(&mut data, b"");
    put_string(&mut data, hash_name.as_bytes());
    put_string(&mut data, hash);
    data
}

/// SHA-512 (or SHA-256) of everything `reader` yields, in 1 MiB reads.
fn digest<D: sha2::Digest>(reader: &mut dyn Read) -> Result<Vec<u8>> {
    let mut hasher = D::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(hasher.finalize().to_vec()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading the input", e)),
        }
    }
}

fn ed25519_only(scheme: Scheme) -> Error {
    Error::SignKey(format!(
        "SSHSIG signatures are made with Ed25519 keys here, not {scheme}"
    ))
}

/// Signs everything `reader` yields: the armored SSHSIG (`-----BEGIN SSH SIGNATURE-----`).
///
/// # Errors
///
/// [`Error::SignKey`] for a key that is not Ed25519 or an empty namespace; reading fails.
pub fn sign(key: &SigningKey, namespace: &str, reader: &mut dyn Read) -> Result<String> {
    let public = key.verifying_key();
    let Some(point) = public.ed25519_bytes() else {
        return Err(ed25519_only(key.scheme()));
    };
    if namespace.is_empty() {
        return Err(Error::SignKey("an SSHSIG namespace cannot be empty".into()));
    }
    let hash = digest::<sha2::Sha512>(reader)?;
    let signature = key.sign(&signed_data(namespace, "sha512", &hash))?;
    let encode = |e: ssh_key::Error| Error::SignKey(format!("cannot encode the SSHSIG: {e}"));
    let key_data = ssh_key::public::KeyData::Ed25519(ssh_key::public::Ed25519PublicKey(point));
    let signature =
        ssh_key::Signature::new(ssh_key::Algorithm::Ed25519, signature).map_err(encode)?;
    ssh_key::SshSig::new(key_data, namespace, ssh_key::HashAlg::Sha512, signature)
        .and_then(|sig| sig.to_pem(ssh_key::LineEnding::LF))
        .map_err(encode)
}

/// Verifies the armored SSHSIG `armored` of everything `reader` yields, made by `expected` in
/// `namespace`.
///
/// # Errors
///
/// [`Error::SignatureFile`] for a malformed signature or another namespace;
/// [`Error::WrongSigner`]; [`Error::BadSignature`]; reading fails.
pub fn verify(
    armored: &[u8],
    expected: &VerifyingKey,
    namespace: &str,
    reader: &mut dyn Read,
) -> Result<()> {
    if armored.len() > MAX_ARMORED {
        return Err(Error::SignatureFile("an SSHSIG larger than 64 KiB".into()));
    }
    let sig = ssh_key::SshSig::from_pem(armored)
        .map_err(|e| Error::SignatureFile(format!("not an SSH signature: {e}")))?;
    if sig.namespace() != namespace {
        return Err(Error::SignatureFile(format!(
            "signed in namespace `{}`, not `{namespace}`",
            sig.namespace().escape_debug()
        )));
    }
    let signer = match sig.public_key() {
        ssh_key::public::KeyData::Ed25519(point) => {
            VerifyingKey::from_field(Scheme::Ed25519, &point.0)?
        }
        other => {
            return Err(Error::SignatureFile(format!(
                "an SSHSIG by an {} key (paracrypt verifies Ed25519 ones)",
                other.algorithm()
            )));
        }
    };
    if expected.ed25519_bytes() != signer.ed25519_bytes() {
        return Err(Error::WrongSigner {
            signer: signer.fingerprint(),
            expected: expected.fingerprint(),
        });
    }
    let (name, hash) = match sig.hash_alg() {
        ssh_key::HashAlg::Sha512 => ("sha512", digest::<sha2::Sha512>(reader)?),
        ssh_key::HashAlg::Sha256 => ("sha256", digest::<sha2::Sha256>(reader)?),
        _ => return Err(Error::SignatureFile("an unknown SSHSIG hash".into())),
    };
    if expected.verify(&signed_data(namespace, name, &hash), sig.signature_bytes()) {
        Ok(())
    } else {
        Err(Error::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sshsig_round_trips_and_refuses_what_it_must() {
        let key = SigningKey::generate_ed25519();
        let public = key.verifying_key();
        let armored = sign(&key, "file", &mut &b"hello"[..]).unwrap();
        assert!(armored.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
        verify(armored.as_bytes(), &public, "file", &mut &b"hello"[..]).unwrap();
        assert!(matches!(
            verify(armored.as_bytes(), &public, "file", &mut &b"hellO"[..]),
            Err(Error::BadSignature)
        ));
        assert!(matches!(
            verify(armored.as_bytes(), &public, "git", &mut &b"hello"[..]),
            Err(Error::SignatureFile(_))
        ));
        let other = SigningKey::generate_ed25519().verifying_key();
        assert!(matches!(
            verify(armored.as_bytes(), &other, "file", &mut &b"hello"[..]),
            Err(Error::WrongSigner { .. })
        ));
        assert!(verify(b"garbage", &public, "file", &mut &b""[..]).is_err());
    }
}
