//! `paracrypt encrypt` / `paracrypt decrypt`: the authenticated container on every core.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::container::{Decryptor, Encryptor, SALT_LEN, Suite, check_chunk_size};
use paracrypt_core::plan::DEFAULT_CHUNK_SIZE;

use crate::cmd::secret::SecretArgs;
use crate::cmd::warn;
use crate::exit::usage;
use crate::io::{Input, OutputPolicy, OutputTarget, decode_hex, thread_pool};
use crate::progress::{self, Mode};
use crate::size::{parse_size, parse_usize};

/// Options shared by `encrypt` and `decrypt`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Input file, `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub(crate) input: PathBuf,
    /// Output file, `-` for stdout.
    #[arg(short, long, value_name = "OUTPUT", default_value = "-")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) secret: SecretArgs,
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Overwrite OUTPUT if it exists.
    #[arg(short, long)]
    pub(crate) force: bool,
    /// fsync OUTPUT before renaming it into place (for jobs that delete the input afterwards).
    #[arg(long)]
    pub(crate) sync: bool,
    /// Show a progress bar even when stderr is not a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub(crate) progress: bool,
    /// No progress bar and no warnings.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) distributed: crate::cmd::distributed::DistributedArgs,
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
    pub(crate) common: CommonArgs,
    /// Cipher suite.
    #[arg(short, long, value_name = "SUITE", default_value = "aes-256-gcm")]
    pub(crate) cipher: String,
    /// Plaintext bytes per chunk, a multiple of 16 (4096, 64KiB, 1MiB, ...).
    #[arg(long, value_name = "SIZE", value_parser = parse_usize, default_value_t = DEFAULT_CHUNK_SIZE)]
    pub(crate) chunk_size: usize,
    /// Testing only: a fixed salt (hex, 32 bytes) for reproducible output. Never reuse a salt.
    #[arg(long, value_name = "HEX", hide = true)]
    pub(crate) fixed_salt: Option<String>,
}

/// Arguments of `paracrypt decrypt`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every chunk is verified; a failure names it (wrong key or password, header damaged, chunk N
failed authentication, file truncated after chunk N, trailing data) and exits 1. A file OUTPUT
appears only once everything verified; to stdout only verified chunks are written, in order.")]
pub struct DecryptArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Decrypt and verify only the chunks covering plaintext bytes OFFSET..OFFSET+LENGTH
    /// (sizes like 4096 or 1MiB; INPUT must be a file).
    #[arg(long, value_name = "OFFSET:LENGTH")]
    pub(crate) range: Option<String>,
}

/// Runs `paracrypt encrypt`.
pub fn run_encrypt(args: EncryptArgs) -> Result<ExitCode> {
    if args.common.distributed.distributed {
        return crate::cmd::distributed::encrypt(args);
    }
    let common = &args.common;
    let suite: Suite = args.cipher.parse()?;
    check_chunk_size(args.chunk_size)?;
    let salt = fixed_salt(&args)?;
    if salt.is_some() {
        warn("--fixed-salt makes the output reproducible and reuses nonces: for tests only");
    }
    if suite.is_legacy() && !common.quiet {
        warn(format!(
            "{suite} is a legacy suite, kept for compatibility studies; prefer aes-256-gcm"
        ));
    }
    let mut input = Input::open(&common.input)?;
    let target = OutputTarget::new(&common.output, input.path(), policy(common, true))?;
    let secret = common.secret.secret(true)?;
    let pool = thread_pool(common.threads)?;
    let bar = progress::bar(mode(common), input.len(), "encrypting");
    let mut encryptor = Encryptor::new(secret)
        .suite(suite)
        .chunk_size(args.chunk_size)
        .progress({
            let bar = bar.clone();
            move |n| bar.inc(n)
        });
    if let Some(salt) = salt {
        encryptor = encryptor.fixed_salt_for_tests(salt);
    }
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        match (input.as_file(), output.as_file()) {
            (Some(src), Some(dst)) => encryptor.encrypt_file(src, dst)?,
            _ => encryptor.encrypt_stream(&mut *input.reader(), &mut *output.writer())?,
        };
        Ok(())
    })?;
    bar.finish_and_clear();
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `paracrypt decrypt`.
pub fn run_decrypt(args: DecryptArgs) -> Result<ExitCode> {
    if args.common.distributed.distributed {
        return crate::cmd::distributed::decrypt(args);
    }
    let common = &args.common;
    let range = args.range.as_deref().map(parse_range).transpose()?;
    let mut input = Input::open(&common.input)?;
    if range.is_some() && input.as_file().is_none() {
        return usage("--range needs INPUT to be a file (it reads only the chunks it needs)");
    }
    let target = OutputTarget::new(&common.output, input.path(), policy(common, false))?;
    let secret = common.secret.secret(false)?;
    let pool = thread_pool(common.threads)?;
    let bar = progress::bar(mode(common), input.len(), "decrypting");
    let decryptor = Decryptor::new(secret).progress({
        let bar = bar.clone();
        move |n| bar.inc(n)
    });
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        match (range, input.as_file(), output.as_file()) {
            (Some((offset, len)), Some(src), _) => {
                decryptor.decrypt_range(src, offset, len, &mut *output.writer())?;
            }
            (None, Some(src), Some(dst)) => {
                decryptor.decrypt_file(src, dst)?;
            }
            _ => {
                decryptor.decrypt_stream(&mut *input.reader(), &mut *output.writer())?;
            }
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// The `--fixed-salt` the arguments give, checked.
pub(crate) fn fixed_salt(args: &EncryptArgs) -> Result<Option<[u8; SALT_LEN]>> {
    let Some(hex) = &args.fixed_salt else {
        return Ok(None);
    };
    let bytes = decode_hex("--fixed-salt", hex)?;
    match <[u8; SALT_LEN]>::try_from(bytes) {
        Ok(salt) => Ok(Some(salt)),
        Err(_) => usage(format!("--fixed-salt needs {SALT_LEN} bytes")),
    }
}

pub(crate) fn policy(common: &CommonArgs, binary: bool) -> OutputPolicy {
    OutputPolicy {
        force: common.force,
        binary,
        sync: common.sync,
        private: false,
    }
}

fn mode(common: &CommonArgs) -> Mode {
    Mode::from_flags(common.progress, common.quiet)
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
