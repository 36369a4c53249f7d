//! Byte sizes and ranges as people write them: `4096`, `64KiB`, `1MiB`, `2G`, `OFFSET:LENGTH`.
//!
//! The command line's `--chunk-size` and `--range` take these; they are parsed here, beside
//! the [`ChunkSize`](crate::plan::ChunkSize) and ranges they become, so that every parser of
//! untrusted text is in the library, where it is tested and fuzzed.

use crate::error::{Error, Result};

/// Parses a byte size: a whole number with an optional binary suffix (`K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, case-insensitive; a trailing `B` alone means bytes). Fails with
/// [`Error::Size`].
///
/// ```
/// use paracrypt_core::size::parse_size;
///
/// assert_eq!(parse_size("64KiB")?, 64 << 10);
/// assert_eq!(parse_size("2g")?, 2 << 30);
/// assert!(parse_size("1MB").is_err());
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
        return Err(fail("is not a size (examples: 4096, 64KiB, 1MiB)"));
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(fail("has an unknown size suffix (use KiB, MiB or GiB)")),
    };
    let value: u64 = digits.parse().map_err(|_| fail("is too large"))?;
    value
        .checked_mul(1 << shift)
        .ok_or_else(|| fail("is too large"))
}

/// Parses a range `OFFSET:LENGTH`, each a size as [`parse_size`] takes it. Fails with
/// [`Error::Size`].
///
/// ```
/// use paracrypt_core::size::parse_range;
///
/// assert_eq!(parse_range("1MiB:4096")?, (1 << 20, 4096));
/// assert!(parse_range("10").is_err());
/// # Ok::<(), paracrypt_core::Error>(())
/// ```
pub fn parse_range(text: &str) -> Result<(u64, u64)> {
    let Some((offset, len)) = text.split_once(':') else {
        return Err(Error::Size {
            text: text.to_owned(),
            reason: "is not OFFSET:LENGTH",
        });
    };
    Ok((parse_size(offset)?, parse_size(len)?))
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
        for bad in [
            "",
            "1MB",
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
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0:0").unwrap(), (0, 0));
        assert_eq!(parse_range("1KiB:2KiB").unwrap(), (1024, 2048));
        for bad in ["10", ":", "1:", ":1", "1:2:3", "x:1", "1:99999999999G"] {
            assert_eq!(
                parse_range(bad).unwrap_err().kind(),
                ErrorKind::Usage,
                "{bad}"
            );
        }
        assert_eq!(
            parse_range("10").unwrap_err().to_string(),
            "`10` is not OFFSET:LENGTH"
        );
    }
}
