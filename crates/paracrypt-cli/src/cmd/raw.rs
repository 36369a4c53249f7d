//! `paracrypt raw`: OpenSSL-compatible raw ciphers over the chunk engine.

use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgGroup, Args};
use std::path::PathBuf;

use paracrypt_core::provider::Provider;
use paracrypt_core::request::{
    DEFAULT_ITER, Digest, Direction, PasswordKdf, RawCipherName, Request,
};

use crate::exit::Usage;
use crate::flags::{ChunkSizeFlag, DistributedFlags, FilesFlags, ThreadsFlag, heading};
use crate::io::decode_hex;
use crate::secret::SecretArgs;
use crate::spec::{JobSpec, Operation, PasswordSpec};

/// `raw -h`'s examples (and the end of `raw --help`).
macro_rules! raw_examples {
    () => {
        "\
Examples:
  paracrypt raw -e -c aes-256-ctr -K $KEY --iv $IV big.bin -o big.ctr
  paracrypt raw -d -c aes-256-cbc --password-file pw.txt --pbkdf2 f.enc -o f"
    };
}

/// Arguments of `paracrypt raw`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("direction").required(true).args(["encrypt", "decrypt"])))]
#[command(after_help = raw_examples!(), after_long_help = concat!("\
Ciphers (OpenSSL names): aes-128-ecb aes-128-cbc aes-128-ctr aes-192-ecb aes-192-cbc aes-192-ctr
  aes-256-ecb aes-256-cbc aes-256-ctr des-ecb des-cbc des-ede3 des-ede3-cbc bf-ecb bf-cbc rc4

Parallelism: ECB and CTR run on every thread both ways; CBC decryption runs on every thread, \
but CBC encryption is serial by nature (each block chains on the previous one); RC4 is one \
keystream and runs on one thread.

Raw output has no integrity protection: prefer `paracrypt encrypt`. DES, 3DES, Blowfish, RC4 \
and ECB are legacy and print a warning.

The output is byte-identical to `openssl enc -e -CIPHER -K KEY -iv IV [-nopad]`. With \
--password-file the key and IV come from a password and a random salt, as `openssl enc -pass \
file:FILE -pbkdf2 [-iter N] [-md MD]` (a `Salted__` header first); without --pbkdf2 openssl's \
legacy EVP_BytesToKey (weak: one hash per guess) is used to read old files.
Exit status: 0 success, 1 failure, 2 usage error, 3 a --distributed job stalled, 4 a \
cryptographic provider failed inside (not the data's fault).

", raw_examples!()))]
pub struct RawArgs {
    /// Encrypt INPUT.
    #[arg(short, long)]
    encrypt: bool,
    /// Decrypt INPUT.
    #[arg(short, long)]
    decrypt: bool,
    /// Cipher, by its OpenSSL name (e.g. aes-256-ctr).
    #[arg(short, long, value_name = "NAME")]
    cipher: String,
    /// Key as hex (16/24/32 bytes for AES, 8 for DES, 24 for 3DES, 4-56 for bf, 1-256 for rc4).
    #[arg(
        short = 'K',
        long,
        value_name = "HEX",
        required_unless_present = "password_file",
        help_heading = heading::SECRET
    )]
    key: Option<String>,
    /// Derive the key and IV from the password on FILE's first line, as `openssl enc -pass
    /// file:FILE` (openssl's `Salted__` files).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["key", "iv"], help_heading = heading::SECRET)]
    password_file: Option<PathBuf>,
    /// With --password-file: PBKDF2, as `openssl enc -pbkdf2`.
    #[arg(long, requires = "password_file", help_heading = heading::SECRET, hide_short_help = true)]
    pbkdf2: bool,
    /// PBKDF2 iterations (as `openssl enc -iter`, which implies -pbkdf2; default 10000).
    #[arg(long, value_name = "N", requires = "password_file", help_heading = heading::SECRET, hide_short_help = true)]
    iter: Option<u32>,
    /// The derivation's digest, as `openssl enc -md`: md5, sha1, sha256 (default), sha384,
    /// sha512.
    #[arg(long, value_name = "NAME", requires = "password_file", help_heading = heading::SECRET, hide_short_help = true)]
    md: Option<String>,
    /// IV as hex (CBC and CTR: one block; ECB and RC4 take none).
    #[arg(long, value_name = "HEX", help_heading = heading::SECRET)]
    iv: Option<String>,
    /// No PKCS#7 padding (openssl -nopad): the input must be whole blocks.
    #[arg(long)]
    no_pad: bool,
    /// Test builds only (the `test-hooks` feature): with --password-file, encrypt under this
    /// salt (hex, 8 bytes) instead of a random one, as `openssl enc -S`. Never reuse a salt.
    #[cfg(feature = "test-hooks")]
    #[arg(long, value_name = "HEX", hide = true, requires = "password_file")]
    fixed_salt: Option<String>,
    #[command(flatten)]
    files: FilesFlags,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    distributed: DistributedFlags,
}

/// Runs `paracrypt raw`.
pub fn run(args: RawArgs, provider: Provider) -> Result<ExitCode> {
    crate::run::job(args.distributed, provider, spec(&args))
}

/// The arguments, checked and resolved (no input or output is touched).
fn spec(args: &RawArgs) -> Result<JobSpec> {
    let direction = if args.encrypt {
        Direction::Encrypt
    } else {
        Direction::Decrypt
    };
    let name: RawCipherName = args.cipher.parse()?;
    if let Some(password_file) = &args.password_file {
        return password_spec(args, name, direction, password_file);
    }
    let key = decode_hex("--key", args.key.as_deref().unwrap_or_default())?;
    let iv = args
        .iv
        .as_deref()
        .map(|iv| decode_hex("--iv", iv))
        .transpose()?;
    let request = Request::raw(
        direction,
        name,
        &key,
        iv.as_deref(),
        !args.no_pad,
        args.chunk_size.get(),
    )
    .map_err(|e| match e {
        paracrypt_core::Error::MissingIv { .. } => Usage(format!("{e} (--iv HEX)")).into(),
        other => anyhow::Error::from(other),
    })?;
    Ok(JobSpec::new(
        Operation::Raw {
            request,
            cipher: name,
        },
        args.threads,
        &args.files,
        args.encrypt,
    ))
}

/// `--password-file`: an `openssl enc` password file.
fn password_spec(
    args: &RawArgs,
    name: RawCipherName,
    direction: Direction,
    password_file: &std::path::Path,
) -> Result<JobSpec> {
    let md: Digest = match &args.md {
        Some(md) => md.parse().map_err(|_| {
            Usage(format!(
                "--md: unknown digest `{md}` (valid: md5, sha1, sha256, sha384, sha512)"
            ))
        })?,
        None => Digest::Sha256,
    };
    let kdf = if args.pbkdf2 || args.iter.is_some() {
        PasswordKdf::Pbkdf2 {
            iter: args.iter.unwrap_or(DEFAULT_ITER),
            md,
        }
    } else {
        PasswordKdf::Legacy { md }
    };
    // The core's rules for these options, before any password is asked for.
    Request::check_password_file(direction, name, kdf, !args.no_pad)?;
    let salt = fixed_salt(args)?;
    let operation = Operation::RawPassword(PasswordSpec {
        name,
        kdf,
        padding: !args.no_pad,
        direction,
        chunk_size: args.chunk_size.get(),
        secret: SecretArgs {
            key_file: None,
            password_file: Some(password_file.to_path_buf()),
        },
        salt: salt.clone(),
    });
    let mut spec = JobSpec::new(operation, args.threads, &args.files, args.encrypt);
    if salt.is_some() {
        spec.warnings
            .push("--fixed-salt makes the output reproducible: for tests only".into());
    }
    Ok(spec)
}

/// `--fixed-salt` (a test build's; the request checks its length and direction).
#[cfg(feature = "test-hooks")]
fn fixed_salt(args: &RawArgs) -> Result<Option<Vec<u8>>> {
    args.fixed_salt
        .as_deref()
        .map(|hex| decode_hex("--fixed-salt", hex))
        .transpose()
}

#[cfg(not(feature = "test-hooks"))]
fn fixed_salt(_: &RawArgs) -> Result<Option<Vec<u8>>> {
    Ok(None)
}
