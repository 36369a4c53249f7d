//! `paracrypt ecdsa`: P-256 keys and SHA-256 signatures, openssl-compatible.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use paracrypt_core::provider::Provider;
use paracrypt_core::pubkey::ecdsa::{EcdsaPrivateKey, EcdsaPublicKey};

use crate::cmd::signatures::{
    KeyOutputArgs, SignFilesArgs, VerifyFilesArgs, key_error, read_key_file, sign_files,
    verify_files, write_key_pair,
};

/// Arguments of `paracrypt ecdsa`.
#[derive(Debug, Args)]
#[command(after_help = "\
Keys are PEM files: paracrypt writes PKCS#8 private keys (mode 0600) and SPKI public keys, and \
reads every form openssl writes (PKCS#8, SPKI, SEC1 `EC PRIVATE KEY`, PEM or DER). Only P-256 \
(prime256v1) keys. Signatures are ASN.1 DER over SHA-256, as
  openssl dgst -sha256 -sign KEY.pem -out FILE.sig FILE
makes, always with a low s (at most half the group order): deterministic (RFC 6979) with \
--provider rustcrypto, randomised with aws-lc and openssl. Verification accepts either s, as \
openssl does (its own signatures have a high s half the time).

Parallelism: many files are signed or verified one per thread.
Exit status: 0 success, 1 failure, 2 usage error, 4 a cryptographic provider failed inside (not \
the data's fault).")]
pub struct EcdsaArgs {
    #[command(subcommand)]
    command: EcdsaCommand,
}

#[derive(Debug, Subcommand)]
enum EcdsaCommand {
    /// Generate a P-256 key pair.
    Keygen(KeyOutputArgs),
    /// Sign files: writes FILE.sig beside each (SHA-256, DER).
    Sign(SignArgs),
    /// Verify files against FILE.sig: prints `FILE: OK` or `FILE: FAILED`.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
struct SignArgs {
    /// Private key (PEM or DER: PKCS#8 or SEC1).
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    #[command(flatten)]
    files: SignFilesArgs,
}

#[derive(Debug, Args)]
struct VerifyArgs {
    /// Public key (SPKI; a private key works too).
    #[arg(long, value_name = "PUB.pem")]
    public: PathBuf,
    #[command(flatten)]
    files: VerifyFilesArgs,
}

/// Runs `paracrypt ecdsa`.
pub fn run(args: EcdsaArgs, provider: Provider) -> Result<ExitCode> {
    match args.command {
        EcdsaCommand::Keygen(output) => {
            let key = EcdsaPrivateKey::generate().with_provider(provider);
            let private = key.to_pkcs8_pem()?;
            let public = key.public_key().to_spki_pem()?;
            write_key_pair(&output, &private, &public)?;
            Ok(ExitCode::SUCCESS)
        }
        EcdsaCommand::Sign(args) => {
            let key = EcdsaPrivateKey::from_key_file(&read_key_file(&args.key)?)
                .map_err(key_error(&args.key))?
                .with_provider(provider);
            sign_files(&key, &args.files)
        }
        EcdsaCommand::Verify(args) => {
            let key = EcdsaPublicKey::from_key_file(&read_key_file(&args.public)?)
                .map_err(key_error(&args.public))?
                .with_provider(provider);
            verify_files(&key, &args.files)
        }
    }
}
