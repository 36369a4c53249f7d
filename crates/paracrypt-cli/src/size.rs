//! Byte sizes on the command line: `4096`, `64KiB`, `1MB`, `2G` (parsed by the library's
//! [`paracrypt_core::size`]), as clap's value parsers take them.

/// Parses a byte size (see [`paracrypt_core::size::parse_size`]); the error is its message.
pub fn parse_size(text: &str) -> Result<u64, String> {
    paracrypt_core::size::parse_size(text).map_err(|e| e.to_string())
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
        assert_eq!(parse_usize("1KiB"), Ok(1024));
        assert_eq!(parse_size("1MB"), Ok(1_000_000));
        assert_eq!(parse_size("4kb"), Ok(4_000));
        assert!(parse_size("1.5MB").unwrap_err().contains("KB/MB/GB/TB"));
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
