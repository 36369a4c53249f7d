//! Byte sizes on the command line: `4096`, `64KiB`, `1MiB`, `2G`.

/// Parses a byte size: a whole number with an optional binary suffix (`K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, case-insensitive; a trailing `B` alone means bytes).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "`{text}` is not a size (examples: 4096, 64KiB, 1MiB)"
        ));
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        other => {
            return Err(format!(
                "unknown size suffix `{other}` in `{text}` (use KiB, MiB or GiB)"
            ));
        }
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is too large"))?;
    value
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// As [`parse_size`], for sizes that must fit in memory (`usize`).
pub fn parse_usize(text: &str) -> Result<usize, String> {
    let value = parse_size(text)?;
    usize::try_from(value).map_err(|_| format!("`{text}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("10B"), Ok(10));
        assert!(parse_size("1MB").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
