//! `paracrypt`: encrypt, decrypt, sign and verify large data on every core.
//!
//! The binary owns the terminal: it parses arguments, builds the thread pool, prints warnings,
//! errors and progress, and maps failures to exit codes (see [`exit`]). The work itself is in
//! `paracrypt-core` (and, for `--distributed`, `paracrypt-mpi`).
//!
//! Modules depend downward only: [`cmd`] (one per subcommand: its flags and how they resolve)
//! → [`spec`] (a chunk job, resolved) → [`run`] (the local and the distributed runner) →
//! [`io`], [`progress`], [`exit`]; [`flags`] declares the flags several subcommands share.
#![forbid(unsafe_code)]

mod cmd;
mod exit;
mod flags;
mod interrupt;
mod io;
mod parse;
mod people;
mod progress;
mod run;
mod secret;
mod size;
mod spec;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use paracrypt_core::provider::Provider;

/// Chunked-parallel encryption on every core.
#[derive(Debug, Parser)]
#[command(name = "paracrypt", version, about, long_about = None)]
#[command(
    after_help = "Exit status: 0 success, 1 failure, 2 usage error, 3 a --distributed job stalled, 4 a \
                  cryptographic provider failed inside, 5 a signature not \
                  verified, 6 a tree (--recursive) done in part, 128+N interrupted by signal N."
)]
pub struct Cli {
    /// Cryptographic provider: fastest (default), aws-lc, openssl or rustcrypto.
    ///
    /// fastest: per primitive, the fastest compiled backend on this CPU; aws-lc:
    /// assembly-optimised; openssl: the system's libcrypto 3; rustcrypto: pure Rust. Output
    /// bytes are the same with each. `bench` takes a comma-separated list and measures each.
    #[arg(
        long,
        global = true,
        help_heading = flags::heading::EXPERT,
        hide_short_help = true,
        env = "PARACRYPT_PROVIDER",
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = parse_provider
    )]
    provider: Vec<Provider>,
    #[command(flatten)]
    store: io::remote::StoreFlags,
    #[command(subcommand)]
    command: Command,
}

fn parse_provider(text: &str) -> Result<Provider, String> {
    text.parse()
        .map_err(|e: paracrypt_core::Error| e.to_string())
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Encrypt to a key, a password or people (-r/-R), on every core.
    ///
    /// The authenticated chunked container (AES-256-GCM by default), or an age file (--format
    /// age).
    Encrypt(cmd::container::EncryptArgs),
    /// Decrypt and verify a paracrypt or age file, on every core.
    ///
    /// A paracrypt container, or an age file (binary or armored).
    Decrypt(cmd::container::DecryptArgs),
    /// Change who can open a file, without re-encrypting it.
    ///
    /// A container to recipients or an age file gets a new header for the same file key. Not
    /// revocation (see --help).
    Rekey(cmd::rekey::RekeyArgs),
    /// Sign a file or a tree (a detached signature, hashed on every core).
    ///
    /// A signature over a tree hash of the file's chunks (Ed25519, ECDSA P-256, RSA or
    /// ML-DSA-65 keys); also SSHSIG and minisign signatures.
    Sign(cmd::sign::SignArgs),
    /// Verify a signature, an encrypted file or an encrypted tree.
    ///
    /// A file (or a byte range of it) against its detached signature and the signer's public
    /// key; an encrypted file with its secret (every chunk, nothing written); with --recursive,
    /// an encrypted tree against its manifest.
    Verify(cmd::sign::VerifyArgs),
    /// Create a key file, an age identity or a signing key.
    ///
    /// A random 256-bit key file, an age identity (X25519 or post-quantum) or a signing key
    /// (Ed25519, ML-DSA-65), mode 0600; -y prints an identity file's recipients.
    Keygen(cmd::keygen::KeygenArgs),
    /// Measure throughput and speed-up against threads and sizes.
    ///
    /// Time, throughput, speed-up and efficiency, for every algorithm and provider.
    Bench(cmd::bench::BenchArgs),
    /// Write the man pages or a shell completion script.
    Generate(cmd::generate::GenerateArgs),
    /// Show what an encrypted file or tree says about itself, without a key.
    ///
    /// A container, an age file or an `openssl enc` password file: suite, chunk size, secret
    /// kind, recipients, signer, sizes.
    Info(cmd::info::InfoArgs),
    /// Raw ciphers as `openssl enc` (unauthenticated).
    ///
    /// Byte-compatible with `openssl enc -K KEY -iv IV`, and `openssl enc`'s password files
    /// (`--password-file`).
    Raw(cmd::raw::RawArgs),
    /// RSA keys, signatures (PKCS#1 v1.5, PSS) and OAEP, as openssl.
    Rsa(cmd::rsa::RsaArgs),
    /// ECDSA P-256 keys and signatures, as openssl.
    Ecdsa(cmd::ecdsa::EcdsaArgs),
}

fn main() -> ExitCode {
    let cli = match parse::parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    io::remote::configure(cli.store);
    if let Err(error) = interrupt::install() {
        exit::warn(format!("cannot watch for interrupts: {error}"));
    }
    let provider = match cli.provider[..] {
        [] => Provider::default(),
        [one] => one,
        _ if matches!(cli.command, Command::Bench(_)) => Provider::default(),
        _ => {
            crate::exit::say!("paracrypt: --provider takes one provider (a list only for `bench`)");
            return ExitCode::from(2);
        }
    };
    let providers = if cli.provider.is_empty() {
        vec![provider]
    } else {
        cli.provider.clone()
    };
    let result = match cli.command {
        Command::Encrypt(args) => cmd::container::run_encrypt(args, provider),
        Command::Decrypt(args) => cmd::container::run_decrypt(args, provider),
        Command::Rekey(args) => cmd::rekey::run(args),
        Command::Keygen(args) => cmd::keygen::run(args),
        Command::Sign(args) => cmd::sign::run_sign(args, provider),
        Command::Verify(args) => cmd::sign::run_verify(args, provider),
        Command::Info(args) => cmd::info::run(args, provider),
        Command::Bench(args) => cmd::bench::run(args, &providers),
        Command::Generate(args) => cmd::generate::run(args),
        Command::Raw(args) => cmd::raw::run(args, provider),
        Command::Rsa(args) => cmd::rsa::run(args, provider),
        Command::Ecdsa(args) => cmd::ecdsa::run(args, provider),
    };
    match result {
        Ok(code) => code,
        Err(error) => exit::report(&error),
    }
}
