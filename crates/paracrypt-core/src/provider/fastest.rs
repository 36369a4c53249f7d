//! The default table: per primitive, the compiled backend that is fastest on this CPU, by a
//! static rule on CPU features (never a timing at start-up, so every run of a build on one
//! machine computes each primitive with the same library).
//!
//! The rule (docs/guide/providers.md has the table behind it):
//!
//! | primitive | rule |
//! |---|---|
//! | ChaCha20-Poly1305 | OpenSSL when compiled and the CPU has AVX-512 F and VL (OpenSSL 3's AVX-512 ChaCha20 and Poly1305: 4114 MB/s against aws-lc's AVX2-class 2060 on a Xeon with AVX-512); otherwise the first compiled of aws-lc, OpenSSL, RustCrypto |
//! | every other primitive | the first compiled of aws-lc, OpenSSL, RustCrypto (rows still to be measured on a quiet machine: AES-CTR, DES, 3DES, RSA, ECDSA) |
//!
//! The bytes are the same whichever backend computes a primitive, so the rule only moves time.

use std::sync::OnceLock;

use super::{Provider, Table};

/// What the rule looks at.
///
/// ```
/// use paracrypt_core::provider::fastest::{Cpu, backends};
/// use paracrypt_core::provider::Provider;
///
/// // Without AVX-512, the table is the first compiled backend's own.
/// let first = Provider::ALL[0];
/// assert_eq!(backends(Cpu { avx512: false }), first.primitives());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    /// AVX-512 Foundation and Vector Length extensions (x86-64).
    pub avx512: bool,
}

impl Cpu {
    /// This CPU.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Cpu {
                avx512: std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Cpu::default()
        }
    }
}

/// The default table on this CPU, assembled once.
pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| assemble(Cpu::detect()))
}

/// Which backend the rule picks for each primitive on `cpu` (the names as
/// [`Provider::primitives`] gives them).
pub fn backends(cpu: Cpu) -> Vec<(&'static str, Provider)> {
    assemble(cpu).by().to_vec()
}

/// The rule: the first compiled backend's table, with the rows where another one wins on `cpu`.
pub(crate) fn assemble(cpu: Cpu) -> Table {
    #[cfg_attr(not(feature = "openssl"), allow(unused_mut))]
    let mut table = *Provider::ALL[0].table();
    #[cfg(feature = "openssl")]
    if cpu.avx512 {
        table.chacha20_poly1305 = super::openssl::TABLE.chacha20_poly1305;
    }
    let _ = cpu;
    table
}
