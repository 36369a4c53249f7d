//! Signing and verifying many digests at once, one operation per task across the current
//! Rayon pool.
//!
//! Independent operations are the parallelism that always pays: with as many items as threads
//! or more, every thread works on its own item from start to end, nothing is shared and
//! nothing waits, so a batch on two threads runs in about half the time (docs/guide/performance.md has
//! the figures). Results come back in the order of the input.
//!
//! ```
//! use paracrypt_core::pubkey::{batch, ecdsa::EcdsaPrivateKey, sha256};
//!
//! let key = EcdsaPrivateKey::generate();
//! let digests: Vec<_> = (0..8u8).map(|i| sha256(&[i])).collect();
//! let signatures = batch::sign_all(&key, &digests)?;
//! let items: Vec<_> = digests.iter().zip(&signatures).map(|(d, s)| (*d, s.as_slice())).collect();
//! assert!(batch::verify_all(&key.public_key(), &items).iter().all(|&ok| ok));
//! # Ok::<(), paracrypt_core::pubkey::Error>(())
//! ```

use rayon::prelude::*;

use super::{Digest, Result, Signer, Verifier};

/// Signs every digest; the signatures come back in order.
///
/// # Errors
///
/// The first error any signature hit (a batch that cannot be signed whole is not signed).
pub fn sign_all<S: Signer + ?Sized>(signer: &S, digests: &[Digest]) -> Result<Vec<Vec<u8>>> {
    digests
        .par_iter()
        .with_max_len(1)
        .map(|digest| signer.sign_digest(digest))
        .collect()
}

/// Verifies every `(digest, signature)`; `true` for each valid one, in order.
pub fn verify_all<V: Verifier + ?Sized>(verifier: &V, items: &[(Digest, &[u8])]) -> Vec<bool> {
    items
        .par_iter()
        .with_max_len(1)
        .map(|(digest, signature)| verifier.verify_digest(digest, signature))
        .collect()
}
