//! ⚠️ Hazmat: the raw RSA private operation `c^d mod n`, split into its CRT halves
//! (mod p ‖ mod q) on two threads.
//!
//! Raw RSA without padding is only a building block: use it through
//! [`RsaPrivateKey::sign_digest`](super::rsa::RsaPrivateKey::sign_digest), which wraps it in
//! PKCS#1 v1.5 and lets the `rsa` crate verify the result before it leaves.
//!
//! # How the split works
//!
//! With `c` the input and `r` a fresh random blinding value in `[1, n)`, each half computes,
//! for its prime `x ∈ {p, q}` and exponent `d_x = d mod (x − 1)`:
//!
//! ```text
//! c_x = c mod x,  r_x = r mod x
//! y_x = (c_x · r_x^e)^d_x  mod x      = m · r  mod x     (blinded: the exponent never sees c)
//! m_x = y_x · r_x⁻¹        mod x      = m      mod x     (unblinded in the same half)
//! ```
//!
//! and the two halves run under `rayon::join`. The caller's thread then recombines them with
//! Garner's formula, `m = m_q + q · (q⁻¹ · (m_p − m_q) mod p)`. This is the same blinding as
//! the `rsa` crate's (`c·r^e mod n`, reduced mod p and mod q, is exactly `c_x · r_x^e`), but
//! the blinding, its inverse and the reductions all happen inside the halves, so the only
//! serial work left is drawing `r` and the recombination: a few percent of the operation.
//!
//! All arithmetic is crypto-bigint's constant-time Montgomery arithmetic (`pow` over the full
//! precision of `d_x`, `invert`, and the constant-time `rem`), as the `rsa` crate uses; the
//! storage precisions come from the key's public size, never from secret values. Intermediate
//! values are not zeroized, as in the `rsa` crate.
//!
//! [`CrtKey::private_op`] re-checks `m^e ≡ c (mod n)` before returning, which catches a fault
//! in either half (the Bellcore attack would otherwise factor `n` from one faulty signature).
//!
//! The operation is the RustCrypto provider's (its numbers are crypto-bigint's); this module
//! names it for callers. The aws-lc provider runs the same split on aws-lc's numbers when it
//! signs.

pub use crate::provider::public_key::{CrtKey, Parallelism};
