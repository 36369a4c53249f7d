//! RSA key generation with a parallel prime search in the caller's Rayon pool.
//!
//! Finding a random 1536-bit prime means testing about 60 sieved candidates with Miller–Rabin,
//! and which candidate turns out prime is pure luck, so the search parallelises without any
//! coordination but a flag: every thread of the current pool draws its own random sieve start
//! (its own OS-seeded RNG) and tests candidates *for the same prime*. The first thread whose
//! candidate passes claims it as `p`; every thread then goes on, without stopping, testing
//! candidates for `q` (the thread that found `p` draws a fresh random start, so `q` is never
//! the next prime after `p`); the first hit for `q` sets the flag that cancels the rest, which
//! stop at their next candidate. No candidate is thrown away half-tested between `p` and `q`,
//! and nothing waits for a barrier, so two threads do the work of one in about half the time.
//!
//! The primes are exactly what the `rsa` crate's own generator produces: crypto-primes'
//! `SmallFactorsSieveFactory` with the two top bits set (so `n` has exactly the requested
//! size), tested with crypto-primes' `is_prime` (Miller–Rabin base 2 + strong Lucas, BPSW'21).
//! On top of the crate's checks, paracrypt rejects a prime `p ≡ 1 (mod e)` (the crate would
//! reject the pair later), requires `|p − q| > 2^(nlen/2 − 100)` and `d > 2^(nlen/2)`
//! (FIPS 186-5, A.1.3 and 5.1), and builds the key with `RsaPrivateKey::from_p_q`
//! (`e = 65537`, `d = e⁻¹ mod λ(n)`), which validates it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crypto_bigint::{BoxedUint, Limb, NonZero};
use rsa::traits::{PrivateKeyParts, PublicKeyParts};

use super::{Error, Result};
use crate::provider::Provider;

/// The public exponent of every generated key.
pub const PUBLIC_EXPONENT: u32 = 65_537;

/// The RSA sizes key generation offers, in bits.
pub const RSA_SIZES: [usize; 3] = [2048, 3072, 4096];

/// Generates an RSA key of `bits` (2048, 3072 or 4096) with `e = 65537`, searching for each
/// prime on every thread of the current Rayon pool.
///
/// The key has the quality of the `rsa` crate's `RsaPrivateKey::new` (see the module docs) and
/// is built and validated by `RsaPrivateKey::from_p_q`. Randomness comes from each thread's
/// OS-seeded `rand::rng()`.
///
/// ```
/// use paracrypt_core::pubkey::keygen::generate_rsa;
/// use rsa::traits::PublicKeyParts;
///
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let key = pool.install(|| generate_rsa(2048))?;
/// assert_eq!(key.n().bits(), 2048);
/// # Ok::<(), paracrypt_core::pubkey::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::KeySize`] for any other size; [`Error::Rsa`] if the crate rejects the key (not seen
/// in practice: every condition it checks is checked here first).
pub fn generate_rsa(bits: usize) -> Result<rsa::RsaPrivateKey> {
    generate_rsa_with(bits, Provider::default())
}

/// [`generate_rsa`] with the candidates drawn and tested by `provider`: crypto-primes (sieve,
/// then Miller–Rabin base 2 and a strong Lucas test) for RustCrypto; aws-lc's
/// `BN_generate_prime_ex` (random start with the two top bits set, small-prime sieve, then
/// Miller–Rabin with aws-lc's round count for the size) for aws-lc, each thread's search
/// abandoned through its `BN_GENCB` callback as soon as the race is over. The race, the
/// checks on top and the key's construction are the same for both.
///
/// # Errors
///
/// As [`generate_rsa`]; [`Error::Provider`] if aws-lc fails.
pub fn generate_rsa_with(bits: usize, provider: Provider) -> Result<rsa::RsaPrivateKey> {
    if !RSA_SIZES.contains(&bits) {
        return Err(Error::KeySize { bits });
    }
    let prime_bits = u32::try_from(bits / 2).expect("RSA sizes fit in u32");
    loop {
        let (p, q) = two_primes(prime_bits, provider)?;
        let key = rsa::RsaPrivateKey::from_p_q(p, q, BoxedUint::from(PUBLIC_EXPONENT))
            .map_err(Error::rsa("key construction"))?;
        // Both checks hold for all but a negligible fraction of keys; retry rather than assume.
        if key.n().bits() as usize == bits && key.d().bits() as usize > bits / 2 {
            return Ok(key);
        }
        log::debug!("generated RSA key failed a size check; generating another");
    }
}

/// The shared state of one search: the primes found so far and the flag that ends it.
struct Race {
    bits: u32,
    provider: Provider,
    found: Mutex<Vec<BoxedUint>>,
    /// The first provider failure (it ends the race too).
    failed: Mutex<Option<Error>>,
    done: AtomicBool,
}

/// Finds two primes of `bits` bits on every thread of the current pool (see the module docs).
fn two_primes(bits: u32, provider: Provider) -> Result<(BoxedUint, BoxedUint)> {
    let race = Race {
        bits,
        provider,
        found: Mutex::new(Vec::with_capacity(2)),
        failed: Mutex::new(None),
        done: AtomicBool::new(false),
    };
    let threads = rayon::current_num_threads();
    rayon::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(|_| race.run());
        }
        race.run();
    });
    if let Some(error) = race.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(error);
    }
    let mut found = race.found.into_inner().unwrap_or_else(|e| e.into_inner());
    let q = found.pop().expect("the race ends with two primes");
    let p = found.pop().expect("the race ends with two primes");
    Ok((p, q))
}

impl Race {
    /// One thread's part: search until two primes are found, each from a fresh random start
    /// (the provider's prime search: crypto-primes' sieve and tests on RustCrypto, aws-lc's or
    /// OpenSSL's `BN_generate_prime_ex`).
    fn run(&self) {
        let prime = self.provider.rsa_prime();
        let e = u64::from(PUBLIC_EXPONENT);
        while !self.done.load(Ordering::Acquire) {
            match prime(self.bits, &self.done) {
                // p ≡ 1 (mod e) would make e share a factor with p − 1: no inverse d.
                Ok(Some(prime))
                    if prime.rem_limb(NonZero::new(Limb(e)).expect("e")) != Limb::ONE =>
                {
                    self.offer(prime)
                }
                Ok(Some(_)) => {}
                Ok(None) => return,
                Err(error) => {
                    let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
                    failed.get_or_insert(error);
                    self.done.store(true, Ordering::Release);
                    return;
                }
            }
        }
    }

    /// Claims `prime` as `p` or `q`; the second claim ends the race.
    fn offer(&self, prime: BoxedUint) {
        let mut found = self.found.lock().unwrap_or_else(|e| e.into_inner());
        if found.len() == 2 {
            return;
        }
        if let Some(p) = found.first()
            && !far_apart(p, &prime, self.bits)
        {
            log::debug!("RSA prime candidate too close to p; searching on");
            return;
        }
        found.push(prime);
        if found.len() == 2 {
            self.done.store(true, Ordering::Release);
        }
    }
}

/// Whether `|p − q| > 2^(bits − 100)` (FIPS 186-5 A.1.3, with `bits = nlen / 2`).
fn far_apart(p: &BoxedUint, q: &BoxedUint, bits: u32) -> bool {
    let diff = if p > q {
        p.wrapping_sub(q)
    } else {
        q.wrapping_sub(p)
    };
    diff.bits() > bits - 100
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primes_close_together_are_refused() {
        let one = BoxedUint::one_with_precision(1024);
        let p = one.shl_vartime(1023).expect("in range") | &one;
        let near = p.wrapping_add(one.shl_vartime(1).expect("in range"));
        let far = p.wrapping_add(one.shl_vartime(1000).expect("in range"));
        assert!(!far_apart(&p, &near, 1024));
        assert!(far_apart(&p, &far, 1024));
        assert!(far_apart(&far, &p, 1024));
    }

    #[test]
    fn other_sizes_are_refused() {
        assert!(matches!(
            generate_rsa(1024),
            Err(Error::KeySize { bits: 1024 })
        ));
    }
}
