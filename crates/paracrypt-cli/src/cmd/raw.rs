//! `paracrypt raw`: OpenSSL-compatible raw ciphers over the chunk engine.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{ArgGroup, Args};
use paracrypt_core::plan::DEFAULT_CHUNK_SIZE;
use paracrypt_core::raw::{Direction, Hazard, RawCipher, RawCipherName};

use crate::cmd::warn;
use crate::exit::usage;
use crate::io::{Input, OutputPolicy, OutputTarget, decode_hex, thread_pool};

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
    pub(crate) encrypt: bool,
    /// Decrypt INPUT.
    #[arg(short, long)]
    pub(crate) decrypt: bool,
    /// Cipher, by its OpenSSL name (e.g. aes-256-ctr).
    #[arg(short, long, value_name = "NAME")]
    pub(crate) cipher: String,
    /// Key as hex (16/24/32 bytes for AES, 8 for DES, 24 for 3DES, 4-56 for bf, 1-256 for rc4).
    #[arg(short = 'K', long, value_name = "HEX")]
    pub(crate) key: String,
    /// IV as hex (CBC and CTR: one block; ECB and RC4 take none).
    #[arg(long, value_name = "HEX")]
    pub(crate) iv: Option<String>,
    /// No PKCS#7 padding (openssl -nopad): the input must be whole blocks.
    #[arg(long)]
    pub(crate) no_pad: bool,
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Chunk size, a multiple of 16 bytes (4096, 64KiB, 1MiB, ...).
    #[arg(long, value_name = "SIZE", value_parser = crate::size::parse_usize, default_value_t = DEFAULT_CHUNK_SIZE)]
    pub(crate) chunk_size: usize,
    /// Overwrite OUTPUT if it exists.
    #[arg(short, long)]
    pub(crate) force: bool,
    /// fsync OUTPUT before renaming it into place.
    #[arg(long)]
    pub(crate) sync: bool,
    /// Input file, `-` for stdin.
    #[arg(value_name = "INPUT", default_value = "-")]
    pub(crate) input: PathBuf,
    /// Output file, `-` for stdout.
    #[arg(short, long, value_name = "OUTPUT", default_value = "-")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) distributed: crate::cmd::distributed::DistributedArgs,
}

/// Runs `paracrypt raw`.
pub fn run(args: RawArgs) -> Result<ExitCode> {
    if args.distributed.distributed {
        return crate::cmd::distributed::raw(args);
    }
    let (direction, cipher) = cipher(&args)?;
    warn_hazards(cipher.name());

    let mut input = Input::open(&args.input)?;
    let policy = OutputPolicy {
        force: args.force,
        binary: direction == Direction::Encrypt,
        sync: args.sync,
        private: false,
    };
    let target = OutputTarget::new(&args.output, input.path(), policy)?;
    let pool = thread_pool(args.threads)?;
    // Fail on lengths that cannot be right before creating any output.
    if let Some(len) = input.len() {
        cipher.plan(direction, len, args.chunk_size)?;
    }
    // What a stream's first bytes were, once read to look for openssl's `Salted__`.
    let head = match direction {
        Direction::Decrypt => refuse_salted(&mut input, cipher.name())?,
        Direction::Encrypt => Vec::new(),
    };
    let mut output = target.create()?;
    pool.install(|| -> Result<()> {
        match (input.as_file(), output.as_file()) {
            (Some(src), Some(dst)) => {
                cipher.process_file(direction, src, dst, args.chunk_size)?;
            }
            _ => {
                let mut reader = head.as_slice().chain(input.reader());
                let mut writer = output.writer();
                cipher.process_stream(direction, &mut reader, &mut *writer, args.chunk_size, 0)?;
            }
        }
        Ok(())
    })?;
    output.commit()?;
    Ok(ExitCode::SUCCESS)
}

/// The direction and the cipher the arguments ask for, checked (no output is touched).
pub(crate) fn cipher(args: &RawArgs) -> Result<(Direction, RawCipher)> {
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
    let cipher = RawCipher::new(name, &key, iv.as_deref())?;
    if args.no_pad && !name.is_padded_mode() {
        return usage(format!(
            "--no-pad applies to ECB and CBC only; {name} never pads"
        ));
    }
    RawCipher::check_chunk_size(args.chunk_size)?;
    Ok((direction, cipher.with_padding(!args.no_pad)))
}

/// What `openssl enc` writes first when it derives the key from a password.
const OPENSSL_SALTED: &[u8; 8] = b"Salted__";

/// The input's first 8 bytes (fewer if it is shorter), and whether they were taken from it: a
/// file is read positionally (and later read whole), a stream gives them up (the caller puts
/// them back in front).
fn read_head(input: &mut Input) -> Result<(Vec<u8>, bool)> {
    let path = input.path().display().to_string();
    let cannot = || format!("cannot read {path}");
    let mut head = vec![0u8; OPENSSL_SALTED.len()];
    if let Some(file) = input.as_file() {
        let mut n = 0;
        while n < head.len() {
            match file.read_at(&mut head[n..], n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).with_context(cannot),
            }
        }
        head.truncate(n);
        return Ok((head, false));
    }
    head.clear();
    let read = input
        .reader()
        .take(OPENSSL_SALTED.len() as u64)
        .read_to_end(&mut head);
    read.with_context(cannot)?;
    Ok((head, true))
}

/// Refuses an input that `openssl enc` encrypted with a password, and says how to read it.
/// Returns the bytes it took from a stream, which belong in front of the rest (none from a
/// file).
pub(crate) fn refuse_salted(input: &mut Input, cipher: RawCipherName) -> Result<Vec<u8>> {
    let (head, taken) = read_head(input)?;
    if head != OPENSSL_SALTED {
        return Ok(if taken { head } else { Vec::new() });
    }
    let (what, file) = match input.path() {
        path if path == Path::new("-") => ("the input".to_string(), "FILE".to_string()),
        path => (path.display().to_string(), path.display().to_string()),
    };
    let iv = if cipher.iv_len() > 0 { " --iv IV" } else { "" };
    anyhow::bail!(
        "{what} starts with `Salted__`: `openssl enc` encrypted it with a password, from which \
         openssl derives the key and IV, while `paracrypt raw` takes them directly. Print them \
         with `openssl enc -d -{cipher} -pbkdf2 -P -in {file}` (with the options used to \
         encrypt), then decrypt what follows the 16-byte salt header: \
         `tail -c +17 {file} | paracrypt raw -d -c {cipher} -K KEY{iv}`"
    )
}

/// Warns about legacy ciphers, ECB and the lack of integrity protection.
pub(crate) fn warn_hazards(name: RawCipherName) {
    for hazard in name.hazards() {
        warn(match hazard {
            Hazard::LegacyAlgorithm => {
                format!(
                    "{name} is a legacy cipher (broken or deprecated); use it only for compatibility"
                )
            }
            Hazard::EcbMode => {
                format!(
                    "{name} uses ECB mode, which shows patterns in the data; use it only for compatibility"
                )
            }
        });
    }
    warn("raw output has no integrity protection; `paracrypt encrypt` authenticates every chunk");
}
