//! `paracrypt info`'s text form: one `label: value` line per field, for every format (the JSON
//! form is [`FileInfo::json`]; both say the same things).

use std::io::{self, Write};

use super::FileInfo;
use crate::agefile::{AgeFormat, AgeInfo, StanzaKind, plugin_tags};
use crate::container::{HeaderInfo, Kdf, Suite};
use crate::plan::Sizes;
use crate::provider::Provider;
use crate::raw::salted::SaltedInfo;
use crate::recipient::SCRYPT_MAX_LOG_N;

impl FileInfo {
    /// The description as text, one `label: value` line per field, as `paracrypt info` prints
    /// it: `file` names the file as the caller gave it, `len` is its length when known, and
    /// `provider` is who would compute a container's suite. A damaged file's fields are
    /// written all the same; [`FileInfo::damage`] says what is wrong.
    pub fn text(
        &self,
        out: &mut dyn Write,
        file: &str,
        len: Option<u64>,
        provider: Provider,
    ) -> io::Result<()> {
        text(out, file, self, len, provider)
    }
}

/// A number of chunks, in words: `1 chunk`, `3 chunks`.
fn chunks(n: u64) -> String {
    if n == 1 {
        "1 chunk".to_owned()
    } else {
        format!("{n} chunks")
    }
}

/// A plaintext length: one number, or the bounds padding leaves.
fn plaintext(sizes: &Sizes) -> String {
    let (min, max) = (sizes.plaintext.start(), sizes.plaintext.end());
    if min == max {
        format!("{min} bytes")
    } else {
        format!("{min} to {max} bytes")
    }
}

/// The text form: one `label: value` line per field.
fn text(
    out: &mut dyn Write,
    path: &str,
    file: &FileInfo,
    len: Option<u64>,
    provider: Provider,
) -> io::Result<()> {
    writeln!(out, "file:        {path}")?;
    match file {
        FileInfo::Container { header, sizes } => {
            container_text(out, header, provider)?;
            if let (Some(len), Some(sizes)) = (len, sizes) {
                writeln!(out, "size:        {len} bytes ({})", chunks(sizes.chunks))?;
                if sizes.damage.is_none() {
                    writeln!(out, "plaintext:   {}", plaintext(sizes))?;
                }
            }
        }
        FileInfo::Age(age) => age_text(out, age, len, provider)?,
        FileInfo::Salted(salted) => salted_text(out, salted, len)?,
    }
    Ok(())
}

fn container_text(out: &mut dyn Write, info: &HeaderInfo, provider: Provider) -> io::Result<()> {
    writeln!(out, "format:      paracrypt version {}", info.version)?;
    let legacy = if info.suite.is_legacy() {
        " (legacy)"
    } else {
        ""
    };
    writeln!(out, "suite:       {}{legacy}", info.suite)?;
    writeln!(out, "chunk size:  {} bytes", info.chunk_size)?;
    match info.kdf {
        Kdf::Key => writeln!(out, "secret:      key file")?,
        Kdf::Argon2id(p) => writeln!(
            out,
            "secret:      password (Argon2id, m={} KiB, t={}, p={})",
            p.m_cost, p.t_cost, p.p_cost
        )?,
        Kdf::Recipients => writeln!(
            out,
            "secret:      {} recipient{} (decrypt with an identity){}",
            info.recipients,
            if info.recipients == 1 { "" } else { "s" },
            if info.binding.is_some() {
                ", rekeyed"
            } else {
                ""
            }
        )?,
    }
    plugin_line(
        out,
        &plugin_tags(info.stanza_tags.iter().map(String::as_str)),
    )?;
    kms_line(out, &info.kms_keys)?;
    if let Some(signer) = &info.signer {
        writeln!(
            out,
            "signed by:   {} (as the header says: a {}-byte signature on every chunk, which \
             decrypt verifies)",
            signer.fingerprint(),
            signer.signature_len()
        )?;
    }
    writeln!(out, "salt:        {}", hex::encode(info.salt))?;
    writeln!(out, "provider:    {}", info.suite.primitives(provider))
}

/// The AWS KMS keys that open the file, when there are any: decrypting needs `--kms` and AWS
/// credentials allowed to use one of them.
fn kms_line(out: &mut dyn Write, keys: &[String]) -> io::Result<()> {
    if keys.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "kms:         {} (AWS KMS key{}: decrypt with --kms and AWS credentials allowed to use \
         one)",
        keys.join(", "),
        if keys.len() == 1 { "" } else { "s" }
    )
}

/// The stanzas only an age plugin opens, when there are any: decrypting needs the plugin
/// (`age-plugin-NAME` on PATH) and its identity.
fn plugin_line(out: &mut dyn Write, tags: &[String]) -> io::Result<()> {
    if tags.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "plugin:      {} (stanza{} only an age plugin opens: decrypt with its identity, \
         AGE-PLUGIN-NAME-1…, and age-plugin-NAME on PATH)",
        tags.join(", "),
        if tags.len() == 1 { "" } else { "s" }
    )
}

/// Stanza tags with their counts, in the order they first appear: `X25519 ×2, y-grease`.
fn stanza_summary(age: &AgeInfo) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for stanza in &age.stanzas {
        match counts.iter_mut().find(|(tag, _)| *tag == stanza.tag) {
            Some((_, n)) => *n += 1,
            None => counts.push((&stanza.tag, 1)),
        }
    }
    counts
        .iter()
        .map(|(tag, n)| {
            let tag = tag.escape_debug();
            if *n == 1 {
                tag.to_string()
            } else {
                format!("{tag} ×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn age_text(
    out: &mut dyn Write,
    age: &AgeInfo,
    len: Option<u64>,
    provider: Provider,
) -> io::Result<()> {
    let form = match age.format {
        AgeFormat::Armored => "ASCII armor",
        _ => "binary",
    };
    writeln!(out, "format:      age v1 ({form})")?;
    let stanzas = age.stanzas.len();
    writeln!(
        out,
        "stanzas:     {stanzas} ({}){}",
        stanza_summary(age),
        match age.stanzas.len() - age.recipients() {
            0 => String::new(),
            grease => format!("; {grease} grease, which no identity opens"),
        }
    )?;
    plugin_line(out, &age.plugin_tags())?;
    kms_line(out, &age.kms_keys())?;
    let post_quantum = if age.post_quantum() {
        "yes (every recipient is mlkem768x25519 or mlkem768p256tag)"
    } else if age.stanzas.iter().any(|s| {
        matches!(
            s.kind,
            StanzaKind::PostQuantum | StanzaKind::MlKem768P256Tag
        )
    }) {
        "no (a recipient that is not post-quantum can open it too)"
    } else {
        "no"
    };
    writeln!(out, "post-quantum: {post_quantum}")?;
    match age.passphrase() {
        None => writeln!(out, "passphrase:  no")?,
        Some(Some(log_n)) if log_n <= SCRYPT_MAX_LOG_N => {
            writeln!(out, "passphrase:  yes (scrypt, work factor 2^{log_n})")?
        }
        Some(Some(log_n)) => writeln!(
            out,
            "passphrase:  yes (scrypt, work factor 2^{log_n}: above 2^{SCRYPT_MAX_LOG_N}, age's \
             cap, so decrypt refuses it)"
        )?,
        Some(None) => writeln!(
            out,
            "passphrase:  yes (scrypt, no work factor that reads as a number: decrypt refuses it)"
        )?,
    }
    writeln!(out, "header:      {} bytes", age.header_len)?;
    writeln!(
        out,
        "provider:    {}",
        Suite::ChaCha20Poly1305.primitives(provider)
    )?;
    if let Some(sizes) = &age.sizes {
        match (len, age.format) {
            (Some(len), AgeFormat::Binary) => {
                writeln!(out, "size:        {len} bytes ({})", chunks(sizes.chunks))?
            }
            (Some(len), _) => writeln!(
                out,
                "size:        {len} bytes of armor, {} of payload ({})",
                sizes.payload,
                chunks(sizes.chunks)
            )?,
            (None, _) => writeln!(
                out,
                "payload:     {} bytes ({})",
                sizes.payload,
                chunks(sizes.chunks)
            )?,
        }
        if sizes.damage.is_none() {
            writeln!(out, "plaintext:   {}", plaintext(sizes))?;
        }
    }
    Ok(())
}

/// What a ciphertext's length says about the cipher, which the file does not record.
fn blocks(ciphertext: u64) -> &'static str {
    if ciphertext == 0 {
        "empty: a stream mode (CTR, RC4) of nothing, or cut short"
    } else if ciphertext.is_multiple_of(16) {
        "whole 16-byte blocks"
    } else if ciphertext.is_multiple_of(8) {
        "whole 8-byte blocks (DES, 3DES or Blowfish, not AES in ECB or CBC)"
    } else {
        "not whole blocks: a stream mode (CTR, RC4), or cut short"
    }
}

fn salted_text(out: &mut dyn Write, salted: &SaltedInfo, len: Option<u64>) -> io::Result<()> {
    writeln!(out, "format:      openssl enc password file (Salted__)")?;
    writeln!(out, "salt:        {}", hex::encode(salted.salt))?;
    writeln!(
        out,
        "cipher:      not recorded in the file (give it to decrypt: raw -d -c NAME)"
    )?;
    writeln!(
        out,
        "kdf:         not recorded in the file: PBKDF2 (openssl enc -pbkdf2, with its -iter \
         and -md) or openssl's legacy EVP_BytesToKey; give the same to decrypt"
    )?;
    if let (Some(len), Some(ciphertext)) = (len, salted.ciphertext_len) {
        writeln!(
            out,
            "size:        {len} bytes (ciphertext {ciphertext} bytes: {})",
            blocks(ciphertext)
        )?;
    }
    Ok(())
}
