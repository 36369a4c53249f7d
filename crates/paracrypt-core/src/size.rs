//! Byte sizes and ranges as people write them: `4096`, `64KiB`, `1MB`, `2G`, `OFFSET:LENGTH`,
//! `OFFSET:` (to the end).
//!
//! The command line's `--chunk-size` and `--range` take these; they are parsed here, beside
//! the [`ChunkSize`](crate::plan::ChunkSize) and ranges they become, so that every parser of
//! untrusted text is in the library, where it is tested and fuzzed.

use crate::error::{Error, Result};

/// Why a text is not a size, naming the forms [`parse_size`] accepts.
const NOT_A_SIZE: &str = "is not a size: give whole bytes (4096) or a unit, KiB/MiB/GiB/TiB or \
                          K/M/G/T (1024-based) or KB/MB/GB/TB (1000-based)";

/// Parses a byte size: a whole number with an optional unit, case-insensitive, as `dd` reads
/// them: `KiB`/`MiB`/`GiB`/`TiB` and the bare `K`/`M`/`G`/`T` are binary (1024-based),
/// `KB`/`MB`/`GB`/`TB` decimal (1000-based); a trailing `B` alone means bytes. Fails with
/// [`Error::Size`], whose message names the accepted forms.
///
/// ```
/// use paracrypt_core::size::parse_size;
///
/// assert_eq!(parse_size("64KiB")?, 64 << 10);
/// assert_eq!(parse_size("2g")?, 2 << 30);
/// assert_eq!(parse_size("1MB")?, 1_000_000);
/// assert!(parse_size("1.5MB").is_err());
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
pub fn parse_size(text: &str) -> Result<u64> {
    let fail = |reason| Error::Size {
        text: text.to_owned(),
        reason,
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(split);
    if digits.is_empty() {
        return Err(fail(NOT_A_SIZE));
    }
    let unit: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(fail(NOT_A_SIZE)),
    };
    let value: u64 = digits.parse().map_err(|_| fail("is too large"))?;
    value.checked_mul(unit).ok_or_else(|| fail("is too large"))
}

/// Parses a range `OFFSET:LENGTH`, each a size as [`parse_size`] takes it; `OFFSET:` (no
/// length) reaches to the end, as a length of [`u64::MAX`] (every range is cut at the end of
/// the data). Fails with [`Error::Size`].
///
/// ```
/// use paracrypt_core::size::parse_range;
///
/// assert_eq!(parse_range("1MiB:4096")?, (1 << 20, 4096));
/// assert_eq!(parse_range("1MB:4KB")?, (1_000_000, 4_000));
/// assert_eq!(parse_range("1MiB:")?, (1 << 20, u64::MAX));
/// assert!(parse_range("10").is_err());
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
pub fn parse_range(text: &str) -> Result<(u64, u64)> {
    let Some((offset, len)) = text.split_once(':') else {
        return Err(Error::Size {
            text: text.to_owned(),
            reason: "is not OFFSET:LENGTH or OFFSET: (to the end)",
        });
    };
    let len = if len.trim().is_empty() {
        u64::MAX
    } else {
        parse_size(len)?
    };
    Ok((parse_size(offset)?, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size(" 1MiB ").unwrap(), 1 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("10B").unwrap(), 10);
        assert_eq!(parse_size("18446744073709551615").unwrap(), u64::MAX);
        // Decimal units as users type them (and as dd reads them); the binary ones stay.
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("1mb").unwrap(), 1_000_000);
        assert_eq!(parse_size("4KB").unwrap(), 4_000);
        assert_eq!(parse_size("3GB").unwrap(), 3_000_000_000);
        assert_eq!(parse_size("2TB").unwrap(), 2_000_000_000_000);
        assert_eq!(parse_size("2TiB").unwrap(), 2 << 40);
        assert_eq!(parse_size("2t").unwrap(), 2 << 40);
        assert_eq!(parse_size("1 MiB").unwrap(), 1 << 20);
        for bad in [
            "",
            "1MiBs",
            "1PB",
            "1.5MB",
            "MiB",
            "-1",
            "+1",
            "1.5K",
            "99999999999999999999",
            "99999999999G",
        ] {
            let e = parse_size(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Usage, "{bad}");
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
        // The refusal names what is accepted.
        assert_eq!(
            parse_size("1.5MB").unwrap_err().to_string(),
            "`1.5MB` is not a size: give whole bytes (4096) or a unit, KiB/MiB/GiB/TiB or \
             K/M/G/T (1024-based) or KB/MB/GB/TB (1000-based)"
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0:0").unwrap(), (0, 0));
        assert_eq!(parse_range("1KiB:2KiB").unwrap(), (1024, 2048));
        assert_eq!(parse_range("1MB:4KB").unwrap(), (1_000_000, 4_000));
        // Open-ended: to the end of the data, whatever its length.
        assert_eq!(parse_range("1MiB:").unwrap(), (1 << 20, u64::MAX));
        assert_eq!(parse_range("0:").unwrap(), (0, u64::MAX));
        for bad in ["10", ":", ":1", "x:", "1:2:3", "x:1", "1:99999999999G"] {
            assert_eq!(
                parse_range(bad).unwrap_err().kind(),
                ErrorKind::Usage,
                "{bad}"
            );
        }
        assert_eq!(
            parse_range("10").unwrap_err().to_string(),
            "`10` is not OFFSET:LENGTH or OFFSET: (to the end)"
        );
    }
}
