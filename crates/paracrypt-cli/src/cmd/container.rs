//! `paracrypt encrypt` / `paracrypt decrypt`: the authenticated container on every core.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::container::{SALT_LEN, Suite};

use crate::exit::usage;
use crate::flags::{ChunkSizeFlag, DistributedFlags, FilesFlags, ProgressFlags, ThreadsFlag};
use crate::io::decode_hex;
use crate::secret::SecretArgs;
use crate::size::parse_size;
use crate::spec::{JobSpec, Operation};

/// Options shared by `encrypt` and `decrypt`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    files: FilesFlags,
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    progress: ProgressFlags,
    #[command(flatten)]
    distributed: DistributedFlags,
}

impl CommonArgs {
    /// A spec for `operation` with these options; `binary`: the output is ciphertext.
    fn spec(&self, operation: Operation, binary: bool) -> JobSpec {
        let mut spec = JobSpec::new(operation, self.threads, &self.files, binary);
        spec.progress = self.progress.show();
        spec.quiet = self.progress.quiet;
        spec
    }
}

/// Arguments of `paracrypt encrypt`.
#[derive(Debug, Args)]
#[command(after_help = "\
Suites: aes-256-gcm (default), aes-128-gcm, chacha20-poly1305; legacy (warned):
  aes-256-ctr-hmac-sha256, des-ede3-cbc-hmac-sha256, bf-cbc-hmac-sha256, rc4-hmac-sha256
  (segmented RC4: a key per chunk, not RC4-compatible).
Without --key-file the password comes from --password-file, PARACRYPT_PASSWORD, or a prompt.
The format is specified in docs/FORMAT.md. Exit status: 0 success, 1 failure, 2 usage error.")]
pub struct EncryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Cipher suite.
    #[arg(short, long, value_name = "SUITE", default_value = "aes-256-gcm")]
    cipher: String,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    /// Testing only: a fixed salt (hex, 32 bytes) for reproducible output. Never reuse a salt.
    #[arg(long, value_name = "HEX", hide = true)]
    fixed_salt: Option<String>,
}

/// Arguments of `paracrypt decrypt`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every chunk is verified; a failure names it (wrong key or password, header damaged, chunk N
failed authentication, file truncated after chunk N, trailing data) and exits 1. A file OUTPUT
appears only once everything verified; to stdout only verified chunks are written, in order.")]
pub struct DecryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Decrypt and verify only the chunks covering plaintext bytes OFFSET..OFFSET+LENGTH
    /// (sizes like 4096 or 1MiB; INPUT must be a file).
    #[arg(long, value_name = "OFFSET:LENGTH")]
    range: Option<String>,
}

/// Runs `paracrypt encrypt`.
pub fn run_encrypt(args: EncryptArgs) -> Result<ExitCode> {
    crate::run::job(args.common.distributed, encrypt_spec(&args))
}

/// Runs `paracrypt decrypt`.
pub fn run_decrypt(args: DecryptArgs) -> Result<ExitCode> {
    crate::run::job(args.common.distributed, decrypt_spec(&args))
}

fn encrypt_spec(args: &EncryptArgs) -> Result<JobSpec> {
    let suite: Suite = args.cipher.parse()?;
    let salt = fixed_salt(args)?;
    let operation = Operation::Encrypt {
        suite,
        chunk_size: args.chunk_size.chunk_size,
        salt,
        secret: args.common.secret.clone(),
    };
    let mut spec = args.common.spec(operation, true);
    if salt.is_some() {
        spec.warnings.push(
            "--fixed-salt makes the output reproducible and reuses nonces: for tests only".into(),
        );
    }
    if suite.is_legacy() {
        spec.warnings.push(format!(
            "{suite} is a legacy suite, kept for compatibility studies; prefer aes-256-gcm"
        ));
    }
    Ok(spec)
}

fn decrypt_spec(args: &DecryptArgs) -> Result<JobSpec> {
    let range = args.range.as_deref().map(parse_range).transpose()?;
    let operation = Operation::Decrypt {
        secret: args.common.secret.clone(),
        range,
    };
    Ok(args.common.spec(operation, false))
}

/// The `--fixed-salt` the arguments give, checked.
fn fixed_salt(args: &EncryptArgs) -> Result<Option<[u8; SALT_LEN]>> {
    let Some(hex) = &args.fixed_salt else {
        return Ok(None);
    };
    let bytes = decode_hex("--fixed-salt", hex)?;
    match <[u8; SALT_LEN]>::try_from(bytes) {
        Ok(salt) => Ok(Some(salt)),
        Err(_) => usage(format!("--fixed-salt needs {SALT_LEN} bytes")),
    }
}

/// Parses `OFFSET:LENGTH`.
fn parse_range(text: &str) -> Result<(u64, u64)> {
    let Some((offset, len)) = text.split_once(':') else {
        return usage(format!("--range `{text}` is not OFFSET:LENGTH"));
    };
    let parse = |part: &str| parse_size(part).map_err(crate::exit::Usage);
    Ok((
        parse(offset).context("--range offset")?,
        parse(len).context("--range length")?,
    ))
}
