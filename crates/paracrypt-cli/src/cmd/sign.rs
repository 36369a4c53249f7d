//! `paracrypt sign` and `paracrypt verify`: detached signatures of large files over a tree
//! hash of their chunks, hashed on every core (`docs/SIGNATURES.md`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::Runner;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::sign::{Signature, SigningKey, VerifyingKey};

use crate::cmd::signatures::{key_error_core, read_key_file};
use crate::exit::usage;
use crate::flags::{DistributedFlags, ThreadsFlag, parse_chunk_size};
use crate::io::{Input, OutputPolicy, OutputTarget};

/// The largest signature file read: its header and 2^26 leaves.
const MAX_SIGNATURE_FILE: u64 = (1 << 26) * 32 + 16 * 1024;

/// Arguments of `paracrypt sign`.
#[derive(Debug, Args)]
#[command(after_help = "\
Signs FILE with a detached signature over a tree hash of its chunks: every chunk is hashed with
BLAKE3 on its own thread, so signing runs on every core, and the signature file (FILE.psig by
default) lists each chunk's hash so that any byte range can be verified alone (`paracrypt verify
--range`). Keys: Ed25519 (`paracrypt keygen --kind ed25519`, `openssl genpkey -algorithm ed25519`,
or an unencrypted OpenSSH key from `ssh-keygen -t ed25519`), ECDSA P-256 (`paracrypt ecdsa
keygen`) and RSA (`paracrypt rsa keygen`). The format is specified in docs/SIGNATURES.md.

Exit status: 0 success, 1 failure, 2 usage error.")]
pub struct SignArgs {
    /// Private key: Ed25519, ECDSA P-256 or RSA (PEM or DER), or an OpenSSH Ed25519 key.
    #[arg(short, long, value_name = "KEY")]
    key: PathBuf,
    /// Where to write the signature (default: FILE.psig; `-` for stdout).
    #[arg(short, long, value_name = "SIG")]
    output: Option<PathBuf>,
    /// Bytes per chunk of the tree hash (the signature stores it): a multiple of 16, at most
    /// 1GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_chunk_size, default_value_t = ChunkSize::DEFAULT)]
    chunk_size: ChunkSize,
    /// The RSA signature scheme, for an RSA key.
    #[arg(long, value_name = "SCHEME", default_value_t = RsaScheme::Pkcs1v15)]
    rsa_scheme: RsaScheme,
    /// Replace an existing signature file.
    #[arg(short, long)]
    force: bool,
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    distributed: DistributedFlags,
    /// The file to sign (`-`: stdin, which needs -o).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// Arguments of `paracrypt verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
Verifies FILE against its detached signature (FILE.psig by default) and the signer's public key:
prints `FILE: OK` and exits 0, or says what failed on one line and exits 4 (the first altered
chunk and its bytes, a length other than the signed one, another signer, a damaged signature).
--range OFFSET:LENGTH hashes only the chunks that cover those bytes (`1GiB:4096`, `0:1MiB`).

Exit status: 0 verified, 1 failure (unreadable input, malformed signature file), 2 usage error,
4 not verified.")]
pub struct VerifyArgs {
    /// The signer's public key: Ed25519 (SPKI PEM or DER, or an `ssh-ed25519 AAAA…` line),
    /// ECDSA P-256 or RSA (SPKI or PKCS#1); a private key gives its public half.
    #[arg(short, long, value_name = "PUB")]
    public: PathBuf,
    /// The signature file (default: FILE.psig).
    #[arg(short, long, value_name = "SIG")]
    signature: Option<PathBuf>,
    /// Verify only these bytes: OFFSET:LENGTH (needs a regular file).
    #[arg(long, value_name = "OFFSET:LENGTH")]
    range: Option<String>,
    #[command(flatten)]
    threads: ThreadsFlag,
    /// The signed file (`-`: stdin, which needs -s).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// `FILE.psig`.
fn default_signature(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".psig");
    PathBuf::from(name)
}

/// Runs `paracrypt sign`.
pub fn run_sign(args: SignArgs, provider: Provider) -> Result<ExitCode> {
    let output = match (&args.output, args.file.as_path() == Path::new("-")) {
        (Some(output), _) => output.clone(),
        (None, true) => return usage("signing stdin (`-`) needs -o SIG"),
        (None, false) => default_signature(&args.file),
    };
    if args.distributed.distributed {
        let (path, scheme) = (args.key.clone(), args.rsa_scheme);
        let job = crate::run::distributed::SignJob {
            input: args.file,
            output,
            force: args.force,
            threads: args.threads,
            chunk_size: args.chunk_size,
            key: Box::new(move || {
                Ok(SigningKey::from_key_file(&read_key_file(&path)?, scheme)
                    .map_err(key_error_core(&path))?
                    .with_provider(provider)?)
            }),
        };
        return crate::run::distributed::sign(args.distributed, provider, job);
    }
    let key = SigningKey::from_key_file(&read_key_file(&args.key)?, args.rsa_scheme)
        .map_err(key_error_core(&args.key))?
        .with_provider(provider)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: true,
        ..OutputPolicy::default()
    };
    let target = OutputTarget::new(&output, &args.file, policy)?;
    let mut input = Input::open(&args.file)?;
    let runner = Runner::new().provider(provider);
    let pool = args.threads.pool()?;
    let signature = pool.install(|| match input.as_file() {
        Some(file) => Signature::sign_file(&runner, &key, args.chunk_size, file),
        None => Signature::sign_stream(&runner, &key, args.chunk_size, &mut input.reader()),
    });
    let signature = signature.with_context(|| format!("cannot sign {}", args.file.display()))?;
    let mut out = target.create()?;
    out.writer()
        .write_all(&signature.to_bytes())
        .context("writing the signature")?;
    out.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `paracrypt verify`.
pub fn run_verify(args: VerifyArgs, provider: Provider) -> Result<ExitCode> {
    let sig_path = match (&args.signature, args.file.as_path() == Path::new("-")) {
        (Some(path), _) => path.clone(),
        (None, true) => return usage("verifying stdin (`-`) needs -s SIG"),
        (None, false) => default_signature(&args.file),
    };
    let range = args
        .range
        .as_deref()
        .map(paracrypt_core::size::parse_range)
        .transpose()
        .context("--range")?;
    let mut input = Input::open(&args.file)?;
    if range.is_some() && input.as_file().is_none() {
        return usage("--range needs a regular file (it is read with positional reads)");
    }
    let signature = read_signature(&sig_path)?;
    let public = VerifyingKey::from_key_file(&read_key_file(&args.public)?, RsaScheme::Pkcs1v15)
        .map_err(key_error_core(&args.public))?
        .with_provider(provider)?;
    let runner = Runner::new().provider(provider);
    let pool = args.threads.pool()?;
    let name = args.file.display();
    let verified = pool.install(|| match (input.as_file(), range) {
        (Some(file), None) => signature.verify_file(&runner, &public, file).map(|()| None),
        (Some(file), Some((offset, len))) => signature
            .verify_range(&runner, &public, file, offset, len)
            .map(Some),
        (None, None) => signature
            .verify_stream(&runner, &public, &mut input.reader())
            .map(|()| None),
        (None, Some(_)) => unreachable!("a range of a stream was refused above"),
    });
    let chunks = verified.with_context(|| format!("{name}"))?;
    let mut stdout = std::io::stdout().lock();
    match chunks {
        None => writeln!(stdout, "{name}: OK"),
        Some(chunks) => writeln!(
            stdout,
            "{name}: OK (chunks {}..{} of {})",
            chunks.start,
            chunks.end,
            signature.chunks()
        ),
    }
    .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Reads a signature file, refusing one larger than any signature.
fn read_signature(path: &Path) -> Result<Signature> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_SIGNATURE_FILE {
        anyhow::bail!(
            "{}: not a paracrypt signature (larger than any signature file)",
            path.display()
        );
    }
    Signature::read(&mut file).with_context(|| format!("{}", path.display()))
}
