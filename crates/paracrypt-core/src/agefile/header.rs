//! The age v1 header (C2SP age, "Header"): the version line, the recipient stanzas and the
//! MAC line, then the 16-byte payload nonce. Stanzas are read and written by `age-core`.
//!
//! ```text
//! age-encryption.org/v1
//! -> X25519 <base64 share>
//! <base64 wrapped file key, 64 columns, last line short>
//! --- <base64 HMAC-SHA256(HKDF(file key, "", "header"), everything up to and with "---")>
//! ```

use std::io::{BufRead, Read};

use age_core::format::{FileKey, Stanza};
use age_core::primitives::hkdf;
use age_core::secrecy::ExposeSecret;
use base64::Engine;
use base64::prelude::BASE64_STANDARD_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::error::{Error, HeaderFault, Result};
use crate::recipient::{read_stanzas, write_stanzas};

/// What every age file starts with (then the version).
pub const MAGIC: &[u8] = b"age-encryption.org/";
/// The first line of a v1 header.
const V1_LINE: &[u8] = b"age-encryption.org/v1\n";
/// The MAC line's start; the MAC covers the header up to and with it.
const MAC_PREFIX: &[u8] = b"---";
/// `" " + 43 base64 characters + "\n"`: what follows [`MAC_PREFIX`].
const MAC_SUFFIX_LEN: usize = 1 + 43 + 1;
/// The longest header read (1 MiB, thousands of recipients): a damaged or hostile file cannot
/// make a reader buffer without bound.
pub const MAX_HEADER_LEN: usize = 1 << 20;
/// The payload nonce that follows the header.
pub const NONCE_LEN: usize = 16;

const HEADER_KEY_LABEL: &[u8] = b"header";
const PAYLOAD_KEY_LABEL: &[u8] = b"payload";

/// A parsed (or freshly sealed) v1 header.
#[derive(Debug, PartialEq, Eq)]
pub struct Header {
    /// The recipient stanzas, in order.
    stanzas: Vec<Stanza>,
    /// The encoded header, from the version line through the MAC line's newline.
    bytes: Vec<u8>,
}

impl Header {
    /// A new header for `stanzas`, MACed with `file_key`.
    pub(crate) fn seal(stanzas: Vec<Stanza>, file_key: &FileKey) -> Self {
        let mut bytes = V1_LINE.to_vec();
        write_stanzas(&stanzas, &mut bytes);
        bytes.extend_from_slice(MAC_PREFIX);
        let mac = mac(file_key, &bytes);
        bytes.push(b' ');
        bytes.extend_from_slice(BASE64_STANDARD_NO_PAD.encode(mac).as_bytes());
        bytes.push(b'\n');
        Header { stanzas, bytes }
    }

    /// Reads a header from the start of an age file, line by line, consuming exactly the
    /// header (the payload nonce follows).
    pub fn read(input: &mut dyn BufRead) -> Result<Self> {
        let mut bytes = Vec::new();
        let mut line_start = 0;
        loop {
            let budget = (MAX_HEADER_LEN - bytes.len()) as u64;
            let n = Read::take(&mut *input, budget)
                .read_until(b'\n', &mut bytes)
                .map_err(|e| Error::io("reading the age header", e))?;
            let line = &bytes[line_start..];
            if line_start == 0 {
                check_first_line(line)?;
            }
            if n == 0 || !line.ends_with(b"\n") {
                return Err(if bytes.len() >= MAX_HEADER_LEN {
                    Error::AgeHeader(format!("longer than {MAX_HEADER_LEN} bytes"))
                } else {
                    Error::AgeHeader("the file ends inside the header".into())
                });
            }
            if line_start > 0 && line.starts_with(MAC_PREFIX) {
                break;
            }
            line_start = bytes.len();
        }
        Self::parse(bytes)
    }

    /// Parses a whole encoded header (through the MAC line).
    fn parse(bytes: Vec<u8>) -> Result<Self> {
        let mac_line = 1 + bytes[..bytes.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .expect("the version line ends in a newline");
        let stanzas = read_stanzas(&bytes[V1_LINE.len()..mac_line])?;
        let mac = &bytes[mac_line..];
        if mac.len() != MAC_PREFIX.len() + MAC_SUFFIX_LEN
            || mac[MAC_PREFIX.len()] != b' '
            || decode_mac(&mac[MAC_PREFIX.len() + 1..mac.len() - 1]).is_none()
        {
            return Err(Error::AgeHeader("malformed MAC line".into()));
        }
        Ok(Header { stanzas, bytes })
    }

    /// The recipient stanzas.
    pub fn stanzas(&self) -> &[Stanza] {
        &self.stanzas
    }

    /// The encoded header.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Checks the MAC with the unwrapped `file_key`: a header altered after it was written (a
    /// stanza added, removed or changed) fails here.
    pub(crate) fn verify(&self, file_key: &FileKey) -> Result<()> {
        let covered = self.bytes.len() - MAC_SUFFIX_LEN;
        let expected = mac(file_key, &self.bytes[..covered]);
        let found = decode_mac(&self.bytes[covered + 1..self.bytes.len() - 1])
            .expect("checked when parsed");
        if bool::from(expected.ct_eq(&found)) {
            Ok(())
        } else {
            Err(Error::Header(HeaderFault::Mac))
        }
    }
}

/// Checks the version line (also when it is the only line read so far).
fn check_first_line(line: &[u8]) -> Result<()> {
    let known = line.len().min(MAGIC.len());
    if line[..known] != MAGIC[..known] || line.len() < MAGIC.len() {
        return Err(Error::AgeHeader("not an age file".into()));
    }
    let version = line[MAGIC.len()..]
        .strip_suffix(b"\n")
        .unwrap_or(&line[MAGIC.len()..]);
    if version == b"v1\r" {
        return Err(Error::AgeHeader(
            "the version line ends in CRLF (`\\r\\n`); an age header's lines end in LF only".into(),
        ));
    }
    if version != b"v1" && line.ends_with(b"\n") {
        return Err(Error::UnsupportedAgeVersion(
            version.escape_ascii().to_string(),
        ));
    }
    Ok(())
}

fn decode_mac(text: &[u8]) -> Option<[u8; 32]> {
    let bytes = BASE64_STANDARD_NO_PAD.decode(text).ok()?;
    bytes.try_into().ok()
}

fn mac(file_key: &FileKey, covered: &[u8]) -> [u8; 32] {
    let key = hkdf(&[], HEADER_KEY_LABEL, file_key.expose_secret());
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("HMAC takes any key");
    mac.update(covered);
    mac.finalize().into_bytes().into()
}

/// The payload key: HKDF-SHA256 with the nonce as salt, over the file key.
pub(crate) fn payload_key(file_key: &FileKey, nonce: &[u8; NONCE_LEN]) -> [u8; 32] {
    hkdf(nonce, PAYLOAD_KEY_LABEL, file_key.expose_secret())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stanza(tag: &str, body_len: usize) -> Stanza {
        Stanza {
            tag: tag.to_owned(),
            args: vec!["arg".to_owned()],
            body: vec![7; body_len],
        }
    }

    #[test]
    fn a_sealed_header_reads_back_and_verifies() {
        let key = FileKey::new(Box::new([1; 16]));
        // Body lengths around the 48-byte line boundary: the last line is always short.
        let stanzas = || vec![stanza("X25519", 32), stanza("other", 48), stanza("t", 0)];
        let header = Header::seal(stanzas(), &key);
        let mut input = &[header.as_bytes(), b"NONCE"].concat()[..];
        let read = Header::read(&mut input).unwrap();
        assert_eq!(input, b"NONCE");
        assert_eq!(read, header);
        assert_eq!(read.stanzas(), &stanzas()[..]);
        read.verify(&key).unwrap();
        let other = FileKey::new(Box::new([2; 16]));
        assert!(matches!(
            read.verify(&other),
            Err(Error::Header(HeaderFault::Mac))
        ));
    }

    #[test]
    fn bad_headers_say_what_is_wrong() {
        let cases: [(&[u8], &str); 8] = [
            (b"hello world\n", "invalid age header: not an age file"),
            (
                b"age-encryption.org/v2\n",
                "unsupported age format version `v2` (this build reads v1)",
            ),
            (
                b"age-encryption.org/v1\r\n-> X25519 abc\r\n",
                "invalid age header: the version line ends in CRLF (`\\r\\n`); an age header's \
                 lines end in LF only",
            ),
            (
                b"age-encryption.org/v2\r\n",
                "unsupported age format version `v2\\r` (this build reads v1)",
            ),
            (
                b"age-encryption.org/v1\n-> X25519 abc\n",
                "invalid age header: the file ends inside the header",
            ),
            (
                b"age-encryption.org/v1\n--- AAAA\n",
                "invalid age header: no recipient stanza",
            ),
            (
                b"age-encryption.org/v1\n-> a\n\n--- AAAA\n",
                "invalid age header: malformed MAC line",
            ),
            (
                b"age-encryption.org/v1\n-> a\n\n!!\n--- AAAA\n",
                "invalid age header: recipient stanza 2 is malformed",
            ),
        ];
        for (bytes, message) in cases {
            let err = Header::read(&mut &bytes[..]).unwrap_err();
            assert_eq!(
                err.to_string(),
                message,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}
