//! Public-key work on every core: RSA key generation with a parallel prime search, RSA
//! signing with the private operation split over its two CRT halves, ECDSA P-256 with split
//! verification, and batches of signatures across the pool.
//!
//! The primitives are the [provider](crate::provider)'s: aws-lc's (aws-lc-rs, and its big
//! numbers for the split RSA operation and the prime race) by default, RustCrypto's (`rsa`,
//! `p256`, `crypto-primes`, `crypto-bigint`) otherwise or for keys aws-lc does not take; key
//! files are read and written by the RustCrypto crates for both. paracrypt only decides what
//! runs on which thread. Like the rest of this crate, nothing here
//! builds a thread pool: every function runs in the caller's current Rayon pool.
//!
//! - [`keygen`]: RSA 2048/3072/4096, all threads racing for each prime.
//! - [`crt`]: ⚠️ the raw RSA private operation, mod p ‖ mod q, blinded and re-checked.
//! - [`rsa`]: RSA keys, PKCS#1 v1.5 / PSS signatures (SHA-256), RSA-OAEP-SHA256.
//! - [`ecdsa`]: P-256 keys, RFC 6979 signatures (DER), verification unsplit or `u1·G ‖ u2·Q`.
//! - [`batch`]: many signatures or verifications at once.
//! - [`pem`]: key files in every form `openssl` writes.
//!
//! # When a split pays, and when it does not
//!
//! A split spreads *one* operation over two threads; it helps the latency of that operation
//! and is worth it only when the pool would otherwise sit idle. Whenever there are at least as
//! many independent operations as threads (a batch of files), running each one unsplit on its
//! own thread is faster, because a split always leaves some serial work (drawing the blinding
//! value and recombining for RSA; adding the two points for ECDSA) and some waiting. ECDSA
//! verification splits badly in any case: `u2·Q` alone is most of the work. Key generation is
//! the exception: it is a search, and more threads simply search faster.
//!
//! # The Marvin attack (RUSTSEC-2023-0071)
//!
//! RUSTSEC-2023-0071 reports that the `rsa` crate's private-key operation leaked timing
//! ("Marvin attack": a network attacker who can time many decryptions can decrypt or sign);
//! it lists no patched release, so `cargo audit` flags every `rsa` version, including the
//! 0.10 release candidate paracrypt uses. The 0.10 series moved all private-key arithmetic to
//! crypto-bigint's constant-time integers, and its README now calls the crate "previously
//! vulnerable", with hardening still tracked upstream. What paracrypt does:
//!
//! - every private operation is blinded (`c·r^e`, fresh `r` each time) and uses crypto-bigint's
//!   constant-time `pow`, `invert` and `rem`, in paracrypt's split path as in the crate's;
//! - OAEP decryption stays on the crate's path (its constant-time OAEP decoding) and fails with
//!   one fixed message whatever went wrong ([`Error::Decryption`]); paracrypt never offers
//!   PKCS#1 v1.5 *encryption*, the padding the Marvin attack targets;
//! - paracrypt is a local tool: do not put `paracrypt rsa decrypt` (or this library's
//!   decryption) behind a network service where an attacker can submit ciphertexts and time
//!   the answers. For such a service, prefer ECDSA/ECDH or a hardened, audited TLS stack.

pub mod batch;
pub mod crt;
pub mod ecdsa;
pub mod keygen;
pub mod pem;
pub mod rsa;

use std::io::Read;

use sha2::Digest as _;

pub use crate::error::pubkey::{Error, Result};
pub use crate::provider::public_key::Digest;

/// Something that signs SHA-256 digests (an ECDSA key, or an RSA key with a scheme).
pub trait Signer: Sync {
    /// The signature of `digest`.
    ///
    /// # Errors
    ///
    /// Whatever the key's signing can fail with (see [`rsa::RsaPrivateKey::sign_digest`]).
    fn sign_digest(&self, digest: &Digest) -> Result<Vec<u8>>;
}

/// Something that verifies signatures of SHA-256 digests.
pub trait Verifier: Sync {
    /// Whether `signature` is valid for `digest`.
    fn verify_digest(&self, digest: &Digest, signature: &[u8]) -> bool;
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Digest {
    sha2::Sha256::digest(data).into()
}

/// SHA-256 of everything `reader` yields, read in 64 KiB pieces (never whole in memory).
///
/// # Errors
///
/// The reader's I/O error.
pub fn sha256_reader(mut reader: impl Read) -> std::io::Result<Digest> {
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(hasher.finalize().into()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
