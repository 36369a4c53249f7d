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
    ChunkSizeFlag, DistributedFlags, FilesFlags, ProgressFlags, RecursiveFlag, ThreadsFlag, heading,
};
use crate::people::{IdentityFlags, RecipientFlags};
use crate::secret::SecretArgs;
use crate::spec::{JobSpec, Operation};

/// `encrypt -h`'s examples (and the end of `encrypt --help`).
macro_rules! encrypt_examples {
    () => {
        "\
Examples:
  paracrypt keygen -o my.key
  paracrypt encrypt -k my.key big.tar -o big.tar.pcr
  paracrypt encrypt -R team.txt --format age big.tar -o big.tar.age
  paracrypt encrypt --recursive --password-file pw.txt photos -o photos.enc"
    };
}
const ENCRYPT_EXAMPLES: &str = encrypt_examples!();

/// `decrypt -h`'s examples (and the end of `decrypt --help`).
macro_rules! decrypt_examples {
    () => {
        "\
Examples:
  paracrypt decrypt -k my.key big.tar.pcr -o big.tar
  paracrypt decrypt -i me.txt --range 1MiB: big.tar.age > tail.bin
  paracrypt decrypt --recursive --password-file pw.txt photos.enc -o photos"
    };
}
const DECRYPT_EXAMPLES: &str = decrypt_examples!();

/// Options shared by `encrypt` and `decrypt`, first in their help: the secret, INPUT and
/// OUTPUT.
#[derive(Debug, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    files: FilesFlags,
}

/// Options shared by `encrypt` and `decrypt`, last in their help: how the work runs.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    progress: ProgressFlags,
    #[command(flatten)]
    distributed: DistributedFlags,
}

/// A spec for `operation` with these options; `binary`: the output is ciphertext.
fn spec(common: &CommonArgs, run: &RunArgs, operation: Operation, binary: bool) -> JobSpec {
    let mut spec = JobSpec::new(operation, run.threads, &common.files, binary);
    spec.progress = run.progress.show();
    spec.quiet = run.progress.quiet;
    spec
}

/// How a tree run reports (`-v`, `--json`, `--dry-run`).
fn tree_report(run: &RunArgs, report: &crate::flags::TreeReportFlags) -> crate::run::tree::Report {
    crate::run::tree::Report {
        verbose: run.distributed.verbose,
        json: report.json,
        dry_run: report.dry_run,
    }
}

/// Arguments of `paracrypt encrypt`.
#[derive(Debug, Args)]
#[command(after_help = ENCRYPT_EXAMPLES, after_long_help = concat!("\
Suites: aes-256-gcm (default), aes-128-gcm, chacha20-poly1305; legacy (warned):
  aes-256-ctr-hmac-sha256, des-ede3-cbc-hmac-sha256, bf-cbc-hmac-sha256, rc4-hmac-sha256
  (segmented RC4: a key per chunk, not RC4-compatible).
Without --key-file or recipients (-r/-R) the password comes from --password-file, \
PARACRYPT_PASSWORD, or a prompt. Recipients: age1… (X25519, from `paracrypt keygen --kind \
x25519` or age-keygen), ssh-ed25519 and ssh-rsa public keys, RSA public keys in PEM or DER. \
--format age writes an age v1 file (`age -d` reads it) to recipients or with --passphrase. \
--sign KEY signs every chunk (a version 3 file: docs/FORMAT.md, \"Version 3: signed files\"). \
The format is specified in docs/FORMAT.md. Exit status: 0 success, 1 failure, 2 usage error, \
3 a --distributed job stalled, 4 a cryptographic provider failed inside (not the data's fault).

", encrypt_examples!()))]
pub struct EncryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    to: RecipientFlags,
    /// With --format age: a passphrase (age's scrypt).
    ///
    /// The passphrase is read from --password-file, PARACRYPT_PASSWORD or a prompt.
    #[arg(long, conflicts_with_all = ["recipients", "recipient_files", "key_file"], help_heading = heading::SECRET)]
    passphrase: bool,
    /// paracrypt (the default: the container) or age (v1).
    ///
    /// age v1 is written in 64 KiB ChaCha20-Poly1305 chunks, sealed on every core.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = FormatArg::Paracrypt, help_heading = heading::FORMAT, hide_possible_values = true, hide_default_value = true)]
    format: FormatArg,
    /// With --format age: write ASCII armor (as `age -a`).
    #[arg(short, long, requires = "format", help_heading = heading::FORMAT)]
    armor: bool,
    /// Cipher suite (default: aes-256-gcm).
    #[arg(short, long, value_name = "SUITE", help_heading = heading::FORMAT)]
    cipher: Option<String>,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    /// Sign every chunk with this private key (as `paracrypt sign -k` takes it).
    ///
    /// Ed25519, ECDSA P-256, RSA or ML-DSA-65: decryption verifies each chunk before it
    /// releases it, and `decrypt --verify-with PUBKEY` requires this signer.
    #[arg(long, value_name = "KEY", help_heading = heading::FORMAT, hide_short_help = true)]
    sign: Option<PathBuf>,
    #[command(flatten)]
    recursive: RecursiveFlag,
    #[command(flatten)]
    report: crate::flags::TreeReportFlags,
    /// With --recursive: store every file under an opaque name (a keyed hash of its path).
    ///
    /// The names, directories and links are then only in the encrypted manifest.
    #[arg(long, requires = "recursive", help_heading = heading::TREES, hide_short_help = true)]
    hide_names: bool,
    /// With --recursive: update the encrypted tree at OUTPUT.
    ///
    /// One written before, or one whose run was interrupted: only files missing or changed
    /// (size and modification time) are encrypted, those of files gone are removed, and a new
    /// manifest is written.
    #[arg(long, requires = "recursive", help_heading = heading::TREES)]
    update: bool,
    /// With --update: compare files by their contents, not size and time.
    ///
    /// The contents' BLAKE3 tree hash: every file is read whole.
    #[arg(long, requires = "update", help_heading = heading::TREES, hide_short_help = true)]
    checksum: bool,
    /// With --update of a tree to recipients: the identities that open its manifest.
    ///
    /// As `decrypt -i` takes them; new and changed files go to -r/-R, the files kept stay
    /// encrypted to whom they were (repeatable).
    #[arg(
        short = 'i',
        long = "identity",
        value_name = "FILE",
        requires = "update",
        help_heading = heading::TREES,
        hide_short_help = true
    )]
    update_identities: Vec<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    /// With --sign and an RSA key: the RSA signature scheme.
    #[arg(long, value_name = "SCHEME", requires = "sign", default_value_t = RsaScheme::Pkcs1v15, help_heading = heading::EXPERT, hide_short_help = true)]
    rsa_scheme: RsaScheme,
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
#[command(after_help = DECRYPT_EXAMPLES, after_long_help = concat!("\
Every chunk is verified; a failure names it (wrong key or password, header damaged, chunk N \
failed authentication, file truncated after chunk N, trailing data) and exits 1 (4 when a \
cryptographic provider failed inside, 3 when a --distributed job stalled). A file OUTPUT \
appears only once everything verified; to stdout only verified chunks are written, in order. \
A signed file (encrypt --sign) has every chunk's signature checked before the chunk is opened, \
against the key its header names, and stderr says who signed it; --verify-with PUBKEY requires \
that signer: an unsigned file, another signer, or a chunk the signer did not sign exits 5. \
age files (binary or armored) are recognised and decrypted on every core, with -i or a \
passphrase.

", decrypt_examples!()))]
pub struct DecryptArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    identities: IdentityFlags,
    #[command(flatten)]
    recursive: RecursiveFlag,
    #[command(flatten)]
    report: crate::flags::TreeReportFlags,
    /// Only plaintext bytes OFFSET..OFFSET+LENGTH; `OFFSET:` to the end.
    ///
    /// Decrypts and verifies only the chunks covering them. Sizes as --chunk-size takes them
    /// (4096, 1MiB, 1MB); INPUT must be a file or an object.
    #[arg(long, value_name = "OFFSET:LENGTH", help_heading = heading::OUTPUT)]
    range: Option<String>,
    /// Require the file to be signed by this public key.
    ///
    /// As `paracrypt verify --public` takes it: an unsigned file, another signer or a chunk it
    /// did not sign fails with exit status 5.
    #[arg(long, value_name = "PUBKEY", help_heading = heading::SECRET)]
    verify_with: Option<PathBuf>,
    /// With --recursive: refuse a manifest of an older generation than N.
    ///
    /// An old manifest put back; `info --recursive` shows a tree's generation. Proves something
    /// where the manifest is authenticated: a key file, a password, or --verify-with.
    #[arg(long, value_name = "N", help_heading = heading::TREES, hide_short_help = true)]
    min_generation: Option<u64>,
    #[command(flatten)]
    run: RunArgs,
}

/// Runs `paracrypt encrypt`, sealing on `provider`.
pub fn run_encrypt(args: EncryptArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive.recursive {
        let tree = crate::run::tree::TreeArgs {
            hide_names: args.hide_names,
            update: args.update,
            checksum: args.checksum,
            update_identities: args.update_identities.clone(),
            min_generation: None,
            report: tree_report(&args.run, &args.report),
        };
        if args.run.distributed.distributed {
            return crate::run::distributed::tree(
                args.run.distributed,
                provider,
                encrypt_spec(&args),
                tree,
            );
        }
        return crate::run::tree::run(encrypt_spec(&args)?, provider, tree);
    }
    crate::run::job(args.run.distributed, provider, encrypt_spec(&args))
}

/// Runs `paracrypt decrypt`, opening on `provider`.
pub fn run_decrypt(args: DecryptArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive.recursive {
        if args.range.is_some() {
            return usage("--range reads one file: drop --recursive");
        }
        let tree = crate::run::tree::TreeArgs {
            min_generation: args.min_generation,
            report: tree_report(&args.run, &args.report),
            ..Default::default()
        };
        if args.run.distributed.distributed {
            // Refused once, by rank 0, after the ranks agree on it.
            return crate::run::distributed::tree(
                args.run.distributed,
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
    crate::run::job(args.run.distributed, provider, decrypt_spec(&args))
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
             a password as it is (--password-file FILE, PARACRYPT_PASSWORD or a prompt)",
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
    let mut spec = spec(&args.common, &args.run, operation, true);
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
    Ok(spec(&args.common, &args.run, operation, false))
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
