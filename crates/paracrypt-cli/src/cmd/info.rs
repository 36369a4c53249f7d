//! `paracrypt info`: what a container's header says, without a key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::Error as CoreError;
use paracrypt_core::container::{HeaderInfo, Kdf, read_header};
use paracrypt_core::provider::Provider;

use crate::io::Input;

/// Arguments of `paracrypt info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A paracrypt file (`-` for stdin).
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

/// Runs `paracrypt info`. The header's fields and what computes the suite on `provider` (the
/// global `--provider`: who would decrypt it), then the sizes when INPUT is a file; a file
/// whose length no writer produces (nothing after the header, a last chunk shorter than its
/// tag) is reported as damaged (exit 1) after the fields.
pub fn run(args: InfoArgs, provider: Provider) -> Result<ExitCode> {
    let mut input = Input::open(&args.input)?;
    let len = input.len();
    let info = match input.remote() {
        // An object: its header alone, not the whole object read ahead.
        Some(remote) => read_header(&mut remote.header())?,
        None => read_header(&mut input.reader())?,
    };
    let mut out = std::io::stdout().lock();
    print(&mut out, input.path(), &info).context("writing to stdout")?;
    writeln!(out, "provider:    {}", info.suite.primitives(provider))
        .context("writing to stdout")?;
    if let Some(len) = len {
        let sizes = Sizes::new(&info, len);
        writeln!(out, "size:        {len} bytes ({} chunks)", sizes.chunks)
            .context("writing to stdout")?;
        if let Some(damage) = sizes.damage {
            out.flush().context("writing to stdout")?;
            return Err(damage.into());
        }
        writeln!(out, "plaintext:   {}", sizes.plaintext).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

fn print(out: &mut dyn Write, path: &Path, info: &HeaderInfo) -> std::io::Result<()> {
    writeln!(out, "file:        {}", path.display())?;
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
    writeln!(out, "salt:        {}", hex::encode(info.salt))
}

/// What a container's length says about its chunks.
struct Sizes {
    chunks: u64,
    plaintext: String,
    /// Why no writer makes a file of this length.
    damage: Option<CoreError>,
}

impl Sizes {
    fn new(info: &HeaderInfo, len: u64) -> Self {
        let stride = info.suite.sealed_chunk_len(info.chunk_size.get()) as u64;
        let payload = len.saturating_sub(info.len as u64);
        let chunks = payload.div_ceil(stride).max(1);
        let last = payload - (chunks - 1) * stride;
        let tag = info.suite.tag_len() as u64;
        let damage = if payload == 0 {
            Some(CoreError::TruncatedAfterHeader)
        } else if last < tag {
            Some(CoreError::Truncated { index: chunks - 1 })
        } else {
            None
        };
        let full = (chunks - 1) * info.chunk_size.get() as u64;
        let plaintext = match info.suite.cbc_block() {
            // The padding of the last CBC chunk is only known once it is decrypted.
            Some(block) => format!(
                "{} to {} bytes",
                full + last.saturating_sub(tag + block as u64),
                full + last.saturating_sub(tag + 1)
            ),
            None => format!("{} bytes", full + last.saturating_sub(tag)),
        };
        Sizes {
            chunks,
            plaintext,
            damage,
        }
    }
}
