//! `paracrypt rsa`: key generation, signatures and RSA-OAEP, openssl-compatible.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::keygen::RSA_SIZES;
use paracrypt_core::pubkey::rsa::{RsaPrivateKey, RsaPublicKey, RsaScheme};

use crate::cmd::signatures::{
    KeyOutputArgs, SignFilesArgs, VerifyFilesArgs, key_error, read_key_file, sign_files,
    verify_files, write_key_pair,
};
use crate::flags::ThreadsFlag;
use crate::io::{Input, OutputPolicy, OutputTarget};

/// Arguments of `paracrypt rsa`.
#[derive(Debug, Args)]
#[command(after_help = "\
Keys are PEM files: paracrypt writes PKCS#8 private keys (mode 0600) and SPKI public keys, and \
reads every form openssl writes (PKCS#8, SPKI, PKCS#1 `RSA PRIVATE KEY`/`RSA PUBLIC KEY`, PEM or \
DER). Signatures are over SHA-256 and byte-compatible with
  openssl dgst -sha256 -sign KEY.pem [-sigopt rsa_padding_mode:pss] -out FILE.sig FILE
OAEP uses SHA-256 and MGF1-SHA-256, as
  openssl pkeyutl -encrypt -pubin -inkey PUB.pem -pkeyopt rsa_padding_mode:oaep \\
    -pkeyopt rsa_oaep_md:sha256 -pkeyopt rsa_mgf1_md:sha256

Parallelism: key generation searches for each prime on every thread; signing many files signs \
one file per thread, and a single PKCS#1 v1.5 signature splits its private operation over two \
threads (mod p and mod q).

Do not expose `rsa decrypt` to untrusted ciphertexts over a network (RUSTSEC-2023-0071: see \
docs/guide/pubkey.md). Exit status: 0 success, 1 failure, 2 usage error, 4 a cryptographic provider \
failed inside (not the data's fault).")]
pub struct RsaArgs {
    #[command(subcommand)]
    command: RsaCommand,
}

#[derive(Debug, Subcommand)]
enum RsaCommand {
    /// Generate an RSA key pair (e = 65537), the prime search on every thread.
    Keygen(KeygenArgs),
    /// Sign files: writes FILE.sig beside each (SHA-256, PKCS#1 v1.5 or PSS).
    Sign(SignArgs),
    /// Verify files against FILE.sig: prints `FILE: OK` or `FILE: FAILED`.
    Verify(VerifyArgs),
    /// Encrypt a short message (a key, at most k − 66 bytes) with RSA-OAEP-SHA256.
    Encrypt(EncryptArgs),
    /// Decrypt an RSA-OAEP-SHA256 ciphertext.
    Decrypt(DecryptArgs),
}

#[derive(Debug, Args)]
struct KeygenArgs {
    /// Modulus size in bits.
    #[arg(long, default_value_t = 3072, value_parser = parse_bits)]
    bits: usize,
    #[command(flatten)]
    output: KeyOutputArgs,
    #[command(flatten)]
    threads: ThreadsFlag,
}

#[derive(Debug, Args)]
struct SignArgs {
    /// Private key (PEM or DER: PKCS#8 or PKCS#1).
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    /// Signature scheme.
    #[arg(long, default_value = "pkcs1v15", value_parser = parse_scheme)]
    scheme: RsaScheme,
    #[command(flatten)]
    files: SignFilesArgs,
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// Public key (SPKI or PKCS#1; a private key works too).
    #[arg(long, value_name = "PUB.pem")]
    public: PathBuf,
    /// Signature scheme (PSS accepts any salt length, as openssl does).
    #[arg(long, default_value = "pkcs1v15", value_parser = parse_scheme)]
    scheme: RsaScheme,
    #[command(flatten)]
    files: VerifyFilesArgs,
}

#[derive(Debug, Args)]
struct EncryptArgs {
    /// Public key (SPKI or PKCS#1; a private key works too).
    #[arg(long, value_name = "PUB.pem")]
    public: PathBuf,
    /// Message to encrypt, `-` for stdin.
    #[arg(value_name = "IN", default_value = "-")]
    input: PathBuf,
    /// Ciphertext file, `-` for stdout.
    #[arg(short, long, value_name = "OUT", default_value = "-")]
    output: PathBuf,
    /// Overwrite OUT if it exists.
    #[arg(short, long)]
    force: bool,
}

#[derive(Debug, Args)]
struct DecryptArgs {
    /// Private key (PEM or DER: PKCS#8 or PKCS#1).
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    /// Ciphertext, `-` for stdin.
    #[arg(value_name = "IN", default_value = "-")]
    input: PathBuf,
    /// Plaintext file, `-` for stdout.
    #[arg(short, long, value_name = "OUT", default_value = "-")]
    output: PathBuf,
    /// Overwrite OUT if it exists.
    #[arg(short, long)]
    force: bool,
}

fn parse_bits(text: &str) -> Result<usize, String> {
    text.parse()
        .ok()
        .filter(|bits| RSA_SIZES.contains(bits))
        .ok_or_else(|| format!("`{text}` is not an offered RSA size (valid: 2048, 3072, 4096)"))
}

fn parse_scheme(text: &str) -> Result<RsaScheme, String> {
    text.parse()
}

/// Runs `paracrypt rsa`.
pub fn run(args: RsaArgs, provider: Provider) -> Result<ExitCode> {
    match args.command {
        RsaCommand::Keygen(args) => keygen(args, provider),
        RsaCommand::Sign(args) => {
            let key = RsaPrivateKey::from_key_file(&read_key_file(&args.key)?)
                .and_then(|key| key.with_provider(provider))
                .map_err(key_error(&args.key))?;
            sign_files(&key.signer(args.scheme), &args.files)
        }
        RsaCommand::Verify(args) => {
            let key = RsaPublicKey::from_key_file(&read_key_file(&args.public)?)
                .and_then(|key| key.with_provider(provider))
                .map_err(key_error(&args.public))?;
            verify_files(&key.verifier(args.scheme), &args.files)
        }
        RsaCommand::Encrypt(args) => encrypt(args),
        RsaCommand::Decrypt(args) => decrypt(args, provider),
    }
}

fn keygen(args: KeygenArgs, provider: Provider) -> Result<ExitCode> {
    let pool = args.threads.pool()?;
    let key = pool.install(|| RsaPrivateKey::generate_with(args.bits, provider))?;
    let private = key.to_pkcs8_pem()?;
    let public = key.public_key().to_spki_pem()?;
    write_key_pair(&args.output, &private, &public)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads at most `max + 1` bytes: enough to tell whether the input is too long.
fn read_limited(input: &mut Input, max: usize) -> Result<Vec<u8>> {
    let path = input.path().display().to_string();
    let mut bytes = Vec::new();
    input
        .reader()
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {path}"))?;
    Ok(bytes)
}

fn encrypt(args: EncryptArgs) -> Result<ExitCode> {
    let key = RsaPublicKey::from_key_file(&read_key_file(&args.public)?)
        .map_err(key_error(&args.public))?;
    let mut input = Input::open(&args.input)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: true,
        ..OutputPolicy::default()
    };
    let target = OutputTarget::new(&args.output, input.path(), policy)?;
    let message = read_limited(&mut input, key.max_oaep_len())?;
    let ciphertext = key.encrypt_oaep(&message)?;
    let mut output = target.create()?;
    output
        .writer()
        .write_all(&ciphertext)
        .context("writing the ciphertext")?;
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}

fn decrypt(args: DecryptArgs, provider: Provider) -> Result<ExitCode> {
    let key = RsaPrivateKey::from_key_file(&read_key_file(&args.key)?)
        .and_then(|key| key.with_provider(provider))
        .map_err(key_error(&args.key))?;
    let mut input = Input::open(&args.input)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: false,
        ..OutputPolicy::default()
    };
    let target = OutputTarget::new(&args.output, input.path(), policy)?;
    let k = key.bits().div_ceil(8);
    let ciphertext = read_limited(&mut input, k)?;
    if ciphertext.len() != k {
        anyhow::bail!(
            "{}: an RSA-OAEP ciphertext for a {}-bit key is {k} bytes, this is {}{}",
            input.path().display(),
            key.bits(),
            ciphertext.len().min(k),
            if ciphertext.len() > k { "+" } else { "" }
        );
    }
    let plaintext = key.decrypt_oaep(&ciphertext)?;
    let mut output = target.create()?;
    output
        .writer()
        .write_all(&plaintext)
        .context("writing the plaintext")?;
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}
