//! `paracrypt encrypt` / `paracrypt decrypt`: the authenticated container on every core.

use std::process::ExitCode;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::request::{Format, Sealing, Suite};

use crate::exit::usage;
use crate::flags::{
    ChunkSizeFlag, DistributedFlags, FilesFlags, ProgressFlags, RecursiveFlag, ThreadsFlag,
};
use crate::people::{IdentityFlags, RecipientFlags};
use crate::secret::SecretArgs;
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
    #[command(flatten)]
    recursive: RecursiveFlag,
    #[command(flatten)]
    report: crate::flags::TreeReportFlags,
}

impl CommonArgs {
    /// How a tree run reports (`-v`, `--json`, `--dry-run`).
    fn report(&self) -> crate::run::tree::Report {
        crate::run::tree::Report {
            verbose: self.distributed.verbose,
            json: self.report.json,
            dry_run: self.report.dry_run,
        }
    }

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
Without --key-file or recipients (-r/-R) the password comes from --password-file,
PARACRYPT_PASSWORD, or a prompt. Recipients: age1… (X25519, from `paracrypt keygen --kind
x25519` or age-keygen), ssh-ed25519 and ssh-rsa public keys, RSA public keys in PEM or DER.
--format age writes an age v1 file (`age -d` reads it) to recipients or with --passphrase.
--sign KEY signs every chunk (a version 3 file: docs/FORMAT.md, \"Version 3: signed files\").
The format is specified in docs/FORMAT.md. Exit status: 0 success, 1 failure, 2 usage error,
3 a --distributed job stalled, 4 a cryptographic provider failed inside (not the data's fault).")]
pub struct EncryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    to: RecipientFlags,
    /// The file format: paracrypt's container, or age v1 (64 KiB ChaCha20-Poly1305 chunks,
    /// sealed on every core).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = FormatArg::Paracrypt)]
    format: FormatArg,
    /// With --format age: write ASCII armor (as `age -a`).
    #[arg(short, long, requires = "format")]
    armor: bool,
    /// With --format age: encrypt with a passphrase (age's scrypt recipient), read from
    /// --password-file, PARACRYPT_PASSWORD or a prompt.
    #[arg(long, conflicts_with_all = ["recipients", "recipient_files", "key_file"])]
    passphrase: bool,
    /// Cipher suite (default: aes-256-gcm).
    #[arg(short, long, value_name = "SUITE")]
    cipher: Option<String>,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    /// Sign every chunk with this private key (Ed25519, ECDSA P-256, RSA or ML-DSA-65, as
    /// `paracrypt sign -k` takes it): decryption verifies each chunk before it releases it,
    /// and `decrypt --verify-with PUBKEY` requires this signer.
    #[arg(long, value_name = "KEY")]
    sign: Option<PathBuf>,
    /// With --sign and an RSA key: the RSA signature scheme.
    #[arg(long, value_name = "SCHEME", requires = "sign", default_value_t = RsaScheme::Pkcs1v15)]
    rsa_scheme: RsaScheme,
    /// With --recursive: store every file under an opaque name (a keyed hash of its path);
    /// the names, directories and links are only in the encrypted manifest.
    #[arg(long, requires = "recursive")]
    hide_names: bool,
    /// With --recursive: bring the encrypted tree at OUTPUT up to date (one written before, or
    /// one whose run was interrupted): only files missing or changed (size and modification
    /// time) are encrypted, those of files gone are removed, and a new manifest is written.
    #[arg(long, requires = "recursive")]
    update: bool,
    /// With --update: compare files by their contents (a BLAKE3 tree hash, read whole) rather
    /// than by size and modification time.
    #[arg(long, requires = "update")]
    checksum: bool,
    /// With --update of a tree encrypted to recipients: the identities in FILE open the
    /// manifest already at OUTPUT (as `decrypt -i` takes them); new and changed files go to
    /// -r/-R, the files kept stay encrypted to whom they were (repeatable).
    #[arg(
        short = 'i',
        long = "identity",
        value_name = "FILE",
        requires = "update"
    )]
    update_identities: Vec<PathBuf>,
    /// Test builds only (the `test-hooks` feature): a fixed salt (hex, 32 bytes) for
    /// reproducible output. Reusing a salt reuses the keystream.
    #[cfg(feature = "test-hooks")]
    #[arg(long, value_name = "HEX", hide = true)]
    fixed_salt: Option<String>,
}

/// `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// paracrypt's authenticated container (docs/FORMAT.md).
    Paracrypt,
    /// age v1 (age-encryption.org/v1).
    Age,
}

/// Arguments of `paracrypt decrypt`.
#[derive(Debug, Args)]
#[command(after_help = "\
Every chunk is verified; a failure names it (wrong key or password, header damaged, chunk N
failed authentication, file truncated after chunk N, trailing data) and exits 1 (4 when a
cryptographic provider failed inside, 3 when a --distributed job stalled). A file OUTPUT
appears only once everything verified; to stdout only verified chunks are written, in order.
A signed file (encrypt --sign) has every chunk's signature checked before the chunk is opened,
against the key its header names, and stderr says who signed it; --verify-with PUBKEY requires
that signer: an unsigned file, another signer, or a chunk the signer did not sign exits 5.
age files (binary or armored) are recognised and decrypted on every core, with -i or a
passphrase.")]
pub struct DecryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    identities: IdentityFlags,
    /// Decrypt and verify only the chunks covering plaintext bytes OFFSET..OFFSET+LENGTH
    /// (sizes like 4096 or 1MiB; INPUT must be a file).
    #[arg(long, value_name = "OFFSET:LENGTH")]
    range: Option<String>,
    /// Require the file to be signed by this public key (as `paracrypt verify -p` takes it):
    /// an unsigned file, another signer or a chunk it did not sign fails with exit status 5.
    #[arg(long, value_name = "PUBKEY")]
    verify_with: Option<PathBuf>,
    /// With --recursive: refuse a tree whose manifest is of an older generation than N (an old
    /// manifest put back; `info --recursive` shows a tree's generation). Proves something where
    /// the manifest is authenticated: a key file, a password, or --verify-with.
    #[arg(long, value_name = "N")]
    min_generation: Option<u64>,
}

/// Runs `paracrypt encrypt`, sealing on `provider`.
pub fn run_encrypt(args: EncryptArgs, provider: Provider) -> Result<ExitCode> {
    if args.common.recursive.recursive {
        let tree = crate::run::tree::TreeArgs {
            hide_names: args.hide_names,
            update: args.update,
            checksum: args.checksum,
            update_identities: args.update_identities.clone(),
            min_generation: None,
            report: args.common.report(),
        };
        if args.common.distributed.distributed {
            return crate::run::distributed::tree(
                args.common.distributed,
                provider,
                encrypt_spec(&args),
                tree,
            );
        }
        return crate::run::tree::run(encrypt_spec(&args)?, provider, tree);
    }
    crate::run::job(args.common.distributed, provider, encrypt_spec(&args))
}

/// Runs `paracrypt decrypt`, opening on `provider`.
pub fn run_decrypt(args: DecryptArgs, provider: Provider) -> Result<ExitCode> {
    if args.common.recursive.recursive {
        if args.range.is_some() {
            return usage("--range reads one file: drop --recursive");
        }
        let tree = crate::run::tree::TreeArgs {
            min_generation: args.min_generation,
            report: args.common.report(),
            ..Default::default()
        };
        if args.common.distributed.distributed {
            // Refused once, by rank 0, after the ranks agree on it.
            return crate::run::distributed::tree(
                args.common.distributed,
                provider,
                decrypt_spec(&args),
                tree,
            );
        }
        return crate::run::tree::run(decrypt_spec(&args)?, provider, tree);
    }
    if args.min_generation.is_some() {
        return usage("--min-generation checks a tree's manifest: add --recursive");
    }
    crate::run::job(args.common.distributed, provider, decrypt_spec(&args))
}

fn encrypt_spec(args: &EncryptArgs) -> Result<JobSpec> {
    let suite: Option<Suite> = args.cipher.as_deref().map(str::parse).transpose()?;
    let to_people = !args.to.is_empty();
    if to_people
        && (args.common.secret.key_file.is_some() || args.common.secret.password_file.is_some())
    {
        return usage("encrypt to recipients (-r/-R) or with a key or password, not both");
    }
    if args.passphrase && args.format != FormatArg::Age {
        return usage(
            "--passphrase writes an age file (age's scrypt): add --format age; a container takes \
             a password as it is (-p FILE, PARACRYPT_PASSWORD or a prompt)",
        );
    }
    let format = match args.format {
        FormatArg::Age if !to_people && !args.passphrase => {
            return usage("--format age needs recipients (-r RECIPIENT, -R FILE) or --passphrase");
        }
        FormatArg::Age => Format::Age,
        FormatArg::Paracrypt => Format::Container,
    };
    let sign = args
        .sign
        .as_deref()
        .map(|path| paracrypt_core::sign::SigningKey::read(path, args.rsa_scheme))
        .transpose()?;
    let sealing = Sealing {
        format,
        armor: args.armor,
        suite,
        chunk_size: args.chunk_size.chunk_size,
        sign,
    };
    // The core's rules for these options, before any password is asked for.
    sealing.check()?;
    let salt = fixed_salt(args)?;
    let operation = Operation::Encrypt {
        sealing,
        secret: args.common.secret.clone(),
        to: args.to.clone(),
        salt: salt.clone(),
    };
    let mut spec = args.common.spec(operation, true);
    if salt.is_some() {
        spec.warnings.push(
            "--fixed-salt makes the output reproducible and reuses nonces: for tests only".into(),
        );
    }
    Ok(spec)
}

fn decrypt_spec(args: &DecryptArgs) -> Result<JobSpec> {
    let range = args.range.as_deref().map(parse_range).transpose()?;
    let operation = Operation::decrypt(
        "decrypt",
        args.common.secret.clone(),
        args.identities.clone(),
        range,
        args.verify_with.clone(),
    )?;
    Ok(args.common.spec(operation, false))
}

/// The `--fixed-salt` the arguments give (a test build's; the request checks its length).
#[cfg(feature = "test-hooks")]
fn fixed_salt(args: &EncryptArgs) -> Result<Option<Vec<u8>>> {
    args.fixed_salt
        .as_deref()
        .map(|hex| crate::io::decode_hex("--fixed-salt", hex))
        .transpose()
}

#[cfg(not(feature = "test-hooks"))]
fn fixed_salt(_: &EncryptArgs) -> Result<Option<Vec<u8>>> {
    Ok(None)
}

/// Parses `--range OFFSET:LENGTH`.
fn parse_range(text: &str) -> Result<(u64, u64)> {
    paracrypt_core::size::parse_range(text).context("--range")
}
