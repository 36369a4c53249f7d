//! What `paracrypt rsa` and `paracrypt ecdsa` share: key files in and out, hashing many files
//! in parallel, writing `FILE.sig` beside each, and `sha256sum -c`-style verification.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::pubkey::{self, Digest, Signer, Verifier, batch};
use rayon::prelude::*;
use zeroize::Zeroizing;

use crate::exit::{Usage, one_line, usage, warn};
use crate::flags::ThreadsFlag;
use crate::io::{Input, OutputPolicy, OutputTarget};

/// Largest signature file read (an RSA-8192 signature is 1 KB).
const MAX_SIGNATURE_FILE: u64 = 64 * 1024;

/// Where a new key goes.
#[derive(Debug, Args)]
pub struct KeyOutputArgs {
    /// Private key file to create (PKCS#8 PEM, mode 0600), `-` for stdout.
    #[arg(short, long, value_name = "KEY.pem")]
    pub output: PathBuf,
    /// Also write the public key (SPKI PEM) here.
    #[arg(long, value_name = "PUB.pem")]
    pub public_out: Option<PathBuf>,
    /// Overwrite existing files.
    #[arg(short, long)]
    pub force: bool,
}

/// The files to sign.
#[derive(Debug, Args)]
pub struct SignFilesArgs {
    /// Write the signature here instead of FILE.sig (one FILE only; `-` for stdout).
    #[arg(long, value_name = "SIG")]
    pub signature: Option<PathBuf>,
    /// Overwrite existing signature files.
    #[arg(short, long)]
    pub force: bool,
    #[command(flatten)]
    pub threads: ThreadsFlag,
    /// Files to sign; each gets FILE.sig beside it. `-` is stdin (needs --signature).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// The files to verify.
#[derive(Debug, Args)]
pub struct VerifyFilesArgs {
    /// Read the signature from here instead of FILE.sig (one FILE only).
    #[arg(long, value_name = "SIG")]
    pub signature: Option<PathBuf>,
    #[command(flatten)]
    pub threads: ThreadsFlag,
    /// Files to verify against FILE.sig. `-` is stdin (needs --signature).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads a key file ([`paracrypt_core::sign::read_key_file`]: at most 1 MiB, zeroed after use).
pub fn read_key_file(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    Ok(paracrypt_core::sign::read_key_file(path)?)
}

/// A key file that is not the right key is a usage error, naming the file.
pub fn key_error(path: &Path) -> impl FnOnce(pubkey::Error) -> anyhow::Error + '_ {
    move |error| Usage(format!("{}: {error}", path.display())).into()
}

/// A key file that the core cannot use is a usage error, naming the file.
pub fn key_error_core(path: &Path) -> impl FnOnce(paracrypt_core::Error) -> anyhow::Error + '_ {
    move |error| Usage(format!("{}: {error}", path.display())).into()
}

/// Writes the private key (mode 0600) and, if asked, the public key (mode 0666 & ~umask, like
/// every other output); neither file exists until it is complete.
pub fn write_key_pair(args: &KeyOutputArgs, private_pem: &str, public_pem: &str) -> Result<()> {
    let policy = OutputPolicy {
        force: args.force,
        ..OutputPolicy::default()
    };
    let private = OutputTarget::new(
        &args.output,
        Path::new("-"),
        OutputPolicy {
            private: true,
            ..policy
        },
    )?;
    let public = match &args.public_out {
        Some(path) if path == &args.output && path != Path::new("-") => {
            return usage("--public-out must differ from --output");
        }
        Some(path) => Some(OutputTarget::new(path, Path::new("-"), policy)?),
        None => None,
    };
    write_pem(private, private_pem)?;
    if let Some(public) = public {
        write_pem(public, public_pem)?;
    }
    Ok(())
}

fn write_pem(target: OutputTarget, pem: &str) -> Result<()> {
    let mut output = target.create()?;
    output
        .writer()
        .write_all(pem.as_bytes())
        .context("writing the key")?;
    output.commit()
}

/// `FILE.sig`: the signature path beside `file`.
pub fn signature_path(file: &Path) -> PathBuf {
    let mut name = OsString::from(file.as_os_str());
    name.push(".sig");
    PathBuf::from(name)
}

/// Checks the file list against `--signature` and returns each file's signature path.
fn signature_paths(files: &[PathBuf], signature: Option<&PathBuf>) -> Result<Vec<PathBuf>> {
    if let Some(signature) = signature {
        if files.len() != 1 {
            return usage("--signature takes exactly one FILE");
        }
        return Ok(vec![signature.clone()]);
    }
    if files.iter().any(|f| f == Path::new("-")) {
        return usage("signing or verifying stdin (`-`) needs --signature SIG");
    }
    Ok(files.iter().map(|f| signature_path(f)).collect())
}

/// SHA-256 of every file, read streaming, files in parallel (in the current pool).
fn hash_files(files: &[PathBuf]) -> Vec<Result<Digest>> {
    files
        .par_iter()
        .with_max_len(1)
        .map(|path| {
            let mut input = Input::open(path)?;
            pubkey::sha256_reader(input.reader())
                .with_context(|| format!("cannot read {}", path.display()))
        })
        .collect()
}

/// Signs every file with `signer` and writes the signatures; all or nothing.
pub fn sign_files(signer: &dyn Signer, args: &SignFilesArgs) -> Result<ExitCode> {
    let sig_paths = signature_paths(&args.files, args.signature.as_ref())?;
    let policy = OutputPolicy {
        force: args.force,
        binary: true,
        ..OutputPolicy::default()
    };
    // Refuse every output that cannot be written before doing any work.
    let targets = args
        .files
        .iter()
        .zip(&sig_paths)
        .map(|(file, sig)| OutputTarget::new(sig, file, policy))
        .collect::<Result<Vec<_>>>()?;
    let pool = args.threads.pool()?;
    pool.install(|| -> Result<()> {
        let digests = hash_files(&args.files)
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        let signatures = batch::sign_all(signer, &digests)?;
        // Every signature file is written on the pool too: one thread writing thousands of
        // small files while the others wait would bound `-jN` (Amdahl's law).
        let written: Vec<Result<()>> = targets
            .into_par_iter()
            .zip(signatures)
            .with_max_len(1)
            .map(|(target, signature)| write_signature(target, &signature))
            .collect();
        written.into_iter().collect()
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Writes one signature file (complete, or not at all).
fn write_signature(target: OutputTarget, signature: &[u8]) -> Result<()> {
    let mut output = target.create()?;
    output
        .writer()
        .write_all(signature)
        .context("writing the signature")?;
    output.commit()
}

/// Verifies every file against its signature and prints `FILE: OK` or `FILE: FAILED`, like
/// `sha256sum -c`; exit 1 if any failed.
pub fn verify_files(verifier: &dyn Verifier, args: &VerifyFilesArgs) -> Result<ExitCode> {
    let sig_paths = signature_paths(&args.files, args.signature.as_ref())?;
    let pool = args.threads.pool()?;
    let results: Vec<Result<bool>> = pool.install(|| {
        let digests = hash_files(&args.files);
        args.files
            .par_iter()
            .zip(&sig_paths)
            .zip(digests)
            .with_max_len(1)
            .map(|((_, sig_path), digest)| {
                let digest = digest?;
                let signature = read_signature(sig_path)?;
                Ok(verifier.verify_digest(&digest, &signature))
            })
            .collect()
    });
    let mut stdout = std::io::stdout().lock();
    let mut failed = 0;
    for (file, result) in args.files.iter().zip(results) {
        let ok = match result {
            Ok(ok) => ok,
            Err(error) => {
                crate::exit::say!("paracrypt: error: {}", one_line(&error));
                false
            }
        };
        failed += usize::from(!ok);
        let verdict = if ok { "OK" } else { "FAILED" };
        writeln!(stdout, "{}: {verdict}", file.display()).context("writing to stdout")?;
    }
    stdout.flush().context("writing to stdout")?;
    if failed > 0 {
        warn(format!(
            "{failed} of {} signatures did NOT verify",
            args.files.len()
        ));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads a signature file (small; anything large is not a signature).
fn read_signature(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_SIGNATURE_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read signature {}", path.display()))?;
    if bytes.len() as u64 > MAX_SIGNATURE_FILE {
        anyhow::bail!("{}: not a signature (larger than 64 KiB)", path.display());
    }
    Ok(bytes)
}
