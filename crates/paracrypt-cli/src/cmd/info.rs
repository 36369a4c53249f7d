//! `paracrypt info`: what an encrypted file says about itself, without a key: a paracrypt
//! container, an age file (binary or armored) or an `openssl enc` password file. The core's
//! format modules read the headers ([`paracrypt_core::info`]); this module prints them, as
//! text or as one JSON object (`--json`, whose fields docs/guide/files.md lists).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::agefile::{AgeFormat, AgeInfo, StanzaKind, plugin_tags};
use paracrypt_core::container::{HeaderInfo, Kdf, Suite};
use paracrypt_core::info::{self, FileInfo};
use paracrypt_core::plan::Sizes;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::salted::SaltedInfo;
use paracrypt_core::recipient::SCRYPT_MAX_LOG_N;

use crate::exit::usage;
use crate::flags::RecursiveFlag;
use crate::io::Input;
use crate::people::IdentityFlags;
use crate::secret::SecretArgs;
use crate::spec::Operation;

/// `info --recursive`: an encrypted tree's manifest, decrypted and checked (its signature, and
/// the signer `--verify-with` requires), as text or JSON; its files are not read.
fn tree(args: InfoArgs, provider: Provider) -> Result<ExitCode> {
    let operation = Operation::decrypt(
        "open a tree",
        args.secret,
        args.identities,
        None,
        args.verify_with,
    )?;
    crate::run::tree::info(&args.input, operation, args.json, provider)
}

/// Arguments of `paracrypt info`.
#[derive(Debug, Args)]
#[command(after_help = "\
Reads only the header (and, for an armored age file, decodes the armor to count its chunks); \
no key, identity or password is asked for and nothing is decrypted. A file whose length no \
writer makes is reported as damaged after its fields (exit 1); a file that is none of the \
formats is one line (exit 1). With --recursive, FILE is an encrypted tree: its manifest is \
decrypted (with -k, a password or -i, as `decrypt --recursive` takes them) and summarised, one \
line per directory, file and link; its files are not read (`verify --recursive` checks them). \
Exit status: 0 success, 1 failure, 2 usage error.")]
pub struct InfoArgs {
    /// A paracrypt container, an age file (binary or armored) or an `openssl enc` password
    /// file (`-` for stdin); with --recursive, an encrypted tree.
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Print one JSON object, for scripts (its fields are listed in docs/guide/files.md, and
    /// a tree's in docs/guide/trees.md).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    recursive: RecursiveFlag,
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    identities: IdentityFlags,
    /// With --recursive: require the manifest to be signed by this public key (exit 5 if not).
    #[arg(long, value_name = "PUBKEY", requires = "recursive")]
    verify_with: Option<PathBuf>,
}

/// Runs `paracrypt info`. The header's fields and, for a container, what computes its suite on
/// `provider` (the global `--provider`: who would decrypt it), then the sizes when they are
/// known; a file whose length no writer produces is reported as damaged (exit 1) after the
/// fields.
pub fn run(args: InfoArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive.recursive {
        return tree(args, provider);
    }
    if args.secret.key_file.is_some()
        || args.secret.password_file.is_some()
        || !args.identities.is_empty()
    {
        return usage("info reads a file's header without a key: -k, -p and -i need --recursive");
    }
    let mut input = Input::open(&args.input)?;
    let len = input.len();
    let path = input.path().to_path_buf();
    let file = match input.remote() {
        // An object: its header alone, not the whole object read ahead (so armor is not
        // decoded to count its chunks).
        Some(remote) => info::read(&mut remote.header(), len, false)?,
        None => info::read(&mut input.reader(), len, true)?,
    };
    let shown = path.display().to_string();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = file.json(&shown, len, provider);
        serde_json::to_writer_pretty(&mut out, &value).context("writing to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        text(&mut out, &shown, &file, len, provider).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    match damage_of(file) {
        Some(damage) => Err(damage.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The same, owned.
fn damage_of(file: FileInfo) -> Option<paracrypt_core::Error> {
    match file {
        FileInfo::Container { sizes, .. } => sizes.and_then(|s| s.damage),
        FileInfo::Age(age) => age.sizes.and_then(|s| s.damage),
        _ => None,
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
) -> std::io::Result<()> {
    writeln!(out, "file:        {path}")?;
    match file {
        FileInfo::Container { header, sizes } => {
            container_text(out, header, provider)?;
            if let (Some(len), Some(sizes)) = (len, sizes) {
                writeln!(out, "size:        {len} bytes ({} chunks)", sizes.chunks)?;
                if sizes.damage.is_none() {
                    writeln!(out, "plaintext:   {}", plaintext(sizes))?;
                }
            }
        }
        FileInfo::Age(age) => age_text(out, age, len, provider)?,
        FileInfo::Salted(salted) => salted_text(out, salted, len)?,
        _ => {}
    }
    Ok(())
}

fn container_text(
    out: &mut dyn Write,
    info: &HeaderInfo,
    provider: Provider,
) -> std::io::Result<()> {
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
fn kms_line(out: &mut dyn Write, keys: &[String]) -> std::io::Result<()> {
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
fn plugin_line(out: &mut dyn Write, tags: &[String]) -> std::io::Result<()> {
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
) -> std::io::Result<()> {
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
                writeln!(out, "size:        {len} bytes ({} chunks)", sizes.chunks)?
            }
            (Some(len), _) => writeln!(
                out,
                "size:        {len} bytes of armor, {} of payload ({} chunks)",
                sizes.payload, sizes.chunks
            )?,
            (None, _) => writeln!(
                out,
                "payload:     {} bytes ({} chunks)",
                sizes.payload, sizes.chunks
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

fn salted_text(out: &mut dyn Write, salted: &SaltedInfo, len: Option<u64>) -> std::io::Result<()> {
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
