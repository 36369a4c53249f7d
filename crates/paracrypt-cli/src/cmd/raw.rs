//! `paracrypt raw`: OpenSSL-compatible raw ciphers over the chunk engine.

use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgGroup, Args};
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, Hazard, RawCipher, RawCipherName};

use crate::exit::{Usage, usage};
use crate::flags::{ChunkSizeFlag, DistributedFlags, FilesFlags, ThreadsFlag};
use crate::io::decode_hex;
use crate::spec::{JobSpec, Operation, RawSpec};

/// Arguments of `paracrypt raw`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("direction").required(true).args(["encrypt", "decrypt"])))]
#[command(after_help = "\
Ciphers (OpenSSL names): aes-128-ecb aes-128-cbc aes-128-ctr aes-192-ecb aes-192-cbc aes-192-ctr
  aes-256-ecb aes-256-cbc aes-256-ctr des-ecb des-cbc des-ede3 des-ede3-cbc bf-ecb bf-cbc rc4

Parallelism: ECB and CTR run on every thread both ways; CBC decryption runs on every thread,
but CBC encryption is serial by nature (each block chains on the previous one); RC4 is one
keystream and runs on one thread.

Raw output has no integrity protection: prefer `paracrypt encrypt`. DES, 3DES, Blowfish, RC4
and ECB are legacy and print a warning.

The output is byte-identical to `openssl enc -e -CIPHER -K KEY -iv IV [-nopad]`.
Exit status: 0 success, 1 failure, 2 usage error.")]
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
    #[arg(short = 'K', long, value_name = "HEX")]
    key: String,
    /// IV as hex (CBC and CTR: one block; ECB and RC4 take none).
    #[arg(long, value_name = "HEX")]
    iv: Option<String>,
    /// No PKCS#7 padding (openssl -nopad): the input must be whole blocks.
    #[arg(long)]
    no_pad: bool,
    #[command(flatten)]
    threads: ThreadsFlag,
    #[command(flatten)]
    chunk_size: ChunkSizeFlag,
    #[command(flatten)]
    files: FilesFlags,
    #[command(flatten)]
    distributed: DistributedFlags,
}

/// Runs `paracrypt raw`.
pub fn run(args: RawArgs, provider: Provider) -> Result<ExitCode> {
    crate::run::job(args.distributed, spec(&args, provider))
}

/// The arguments, checked and resolved (no input or output is touched).
fn spec(args: &RawArgs, provider: Provider) -> Result<JobSpec> {
    let direction = if args.encrypt {
        Direction::Encrypt
    } else {
        Direction::Decrypt
    };
    let name: RawCipherName = args.cipher.parse()?;
    let key = decode_hex("--key", &args.key)?;
    let iv = args
        .iv
        .as_deref()
        .map(|iv| decode_hex("--iv", iv))
        .transpose()?;
    let cipher = RawCipher::new(name, &key, iv.as_deref()).map_err(|e| match e {
        paracrypt_core::Error::MissingIv { .. } => Usage(format!("{e} (--iv HEX)")).into(),
        other => anyhow::Error::from(other),
    })?;
    if args.no_pad && !name.is_padded_mode() {
        return usage(format!(
            "--no-pad applies to ECB and CBC only; {name} never pads"
        ));
    }
    let operation = Operation::Raw(RawSpec {
        cipher: cipher.with_padding(!args.no_pad).with_provider(provider),
        direction,
        chunk_size: args.chunk_size.chunk_size,
    });
    let mut spec = JobSpec::new(operation, args.threads, &args.files, args.encrypt);
    spec.warnings = warnings(name);
    Ok(spec)
}

/// Warnings about legacy ciphers, ECB and the lack of integrity protection.
fn warnings(name: RawCipherName) -> Vec<String> {
    let mut warnings: Vec<String> = name
        .hazards()
        .into_iter()
        .map(|hazard| match hazard {
            Hazard::LegacyAlgorithm => format!(
                "{name} is a legacy cipher (broken or deprecated); use it only for compatibility"
            ),
            Hazard::EcbMode => format!(
                "{name} uses ECB mode, which shows patterns in the data; use it only for compatibility"
            ),
        })
        .collect();
    warnings.push(
        "raw output has no integrity protection; `paracrypt encrypt` authenticates every chunk"
            .into(),
    );
    warnings
}
