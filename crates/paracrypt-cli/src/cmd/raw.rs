//! `paracrypt raw`: OpenSSL-compatible raw ciphers over the chunk engine.

use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgGroup, Args};
use std::path::PathBuf;

use paracrypt_core::provider::Provider;
use paracrypt_core::raw::salted::{DEFAULT_ITER, Digest, PasswordKdf, SALT_LEN};
use paracrypt_core::raw::{Direction, Hazard, RawCipher, RawCipherName, RawRecipe};

use crate::exit::{Usage, usage};
use crate::flags::{ChunkSizeFlag, DistributedFlags, FilesFlags, ThreadsFlag};
use crate::io::decode_hex;
use crate::secret::SecretArgs;
use crate::spec::{JobSpec, Operation, PasswordSpec};

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

The output is byte-identical to `openssl enc -e -CIPHER -K KEY -iv IV [-nopad]`. With
--password-file the key and IV come from a password and a random salt, as `openssl enc -pass
file:FILE -pbkdf2 [-iter N] [-md MD]` (a `Salted__` header first); without --pbkdf2 openssl's
legacy EVP_BytesToKey (weak: one hash per guess) is used to read old files.
Exit status: 0 success, 1 failure, 2 usage error, 3 a --distributed job stalled, 4 a
cryptographic provider failed inside (not the data's fault).")]
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
        required_unless_present = "password_file"
    )]
    key: Option<String>,
    /// Derive the key and IV from the password on FILE's first line, as `openssl enc -pass
    /// file:FILE` (openssl's `Salted__` files).
    #[arg(short = 'p', long, value_name = "FILE", conflicts_with_all = ["key", "iv"])]
    password_file: Option<PathBuf>,
    /// With --password-file: PBKDF2, as `openssl enc -pbkdf2`.
    #[arg(long, requires = "password_file")]
    pbkdf2: bool,
    /// PBKDF2 iterations (as `openssl enc -iter`, which implies -pbkdf2; default 10000).
    #[arg(long, value_name = "N", requires = "password_file")]
    iter: Option<u32>,
    /// The derivation's digest, as `openssl enc -md`: md5, sha1, sha256 (default), sha384,
    /// sha512.
    #[arg(long, value_name = "NAME", requires = "password_file")]
    md: Option<String>,
    /// IV as hex (CBC and CTR: one block; ECB and RC4 take none).
    #[arg(long, value_name = "HEX")]
    iv: Option<String>,
    /// No PKCS#7 padding (openssl -nopad): the input must be whole blocks.
    #[arg(long)]
    no_pad: bool,
    /// Testing only: with --password-file, encrypt under this salt (hex, 8 bytes) instead of a
    /// random one, as `openssl enc -S`. Never reuse a salt.
    #[arg(long, value_name = "HEX", hide = true, requires = "password_file")]
    fixed_salt: Option<String>,
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
    let cipher = RawCipher::new(name, &key, iv.as_deref()).map_err(|e| match e {
        paracrypt_core::Error::MissingIv { .. } => Usage(format!("{e} (--iv HEX)")).into(),
        other => anyhow::Error::from(other),
    })?;
    if args.no_pad && !name.is_padded_mode() {
        return usage(format!(
            "--no-pad applies to ECB and CBC only; {name} never pads"
        ));
    }
    let operation = Operation::Raw(RawRecipe {
        cipher: cipher.with_padding(!args.no_pad),
        direction,
        chunk_size: args.chunk_size.chunk_size,
    });
    let mut spec = JobSpec::new(operation, args.threads, &args.files, args.encrypt);
    spec.warnings = warnings(name);
    Ok(spec)
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
        let iter = args.iter.unwrap_or(DEFAULT_ITER);
        if iter == 0 {
            return usage("--iter needs at least 1 iteration");
        }
        PasswordKdf::Pbkdf2 { iter, md }
    } else {
        PasswordKdf::Legacy { md }
    };
    if args.no_pad && !name.is_padded_mode() {
        return usage(format!(
            "--no-pad applies to ECB and CBC only; {name} never pads"
        ));
    }
    if kdf.is_weak() && direction == Direction::Encrypt {
        return usage(
            "--password-file without --pbkdf2 would use openssl's legacy EVP_BytesToKey \
             derivation, which is weak (one hash per password guess); paracrypt reads such \
             files but writes only --pbkdf2 ones",
        );
    }
    let salt = match &args.fixed_salt {
        None => None,
        Some(_) if direction == Direction::Decrypt => {
            return usage("--fixed-salt applies to encryption (the file holds its salt)");
        }
        Some(hex) => match <[u8; SALT_LEN]>::try_from(decode_hex("--fixed-salt", hex)?) {
            Ok(salt) => Some(salt),
            Err(_) => return usage(format!("--fixed-salt needs {SALT_LEN} bytes")),
        },
    };
    let operation = Operation::RawPassword(PasswordSpec {
        name,
        kdf,
        padding: !args.no_pad,
        direction,
        chunk_size: args.chunk_size.chunk_size,
        secret: SecretArgs {
            key_file: None,
            password_file: Some(password_file.to_path_buf()),
        },
        salt,
    });
    let mut spec = JobSpec::new(operation, args.threads, &args.files, args.encrypt);
    spec.warnings = warnings(name);
    if kdf.is_weak() {
        spec.warnings.push(
            "without --pbkdf2 the key comes from openssl's legacy EVP_BytesToKey, which is weak \
             (one hash per password guess): re-encrypt the data with --pbkdf2"
                .into(),
        );
    }
    if salt.is_some() {
        spec.warnings
            .push("--fixed-salt makes the output reproducible: for tests only".into());
    }
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
