//! `paracrypt info`: what an encrypted file says about itself, without a key: a paracrypt
//! container, an age file (binary or armored) or an `openssl enc` password file. The core reads
//! the headers and says what they hold, as text or as one JSON object ([`paracrypt_core::info`];
//! `--json`'s fields are listed in docs/guide/files.md); this module opens the input and prints.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::info;
use paracrypt_core::provider::Provider;

use crate::exit::usage;
use crate::flags::heading;
use crate::io::Input;
use crate::people::IdentityFlags;
use crate::secret::SecretArgs;
use crate::spec::Operation;

/// `info --recursive`: an encrypted tree's manifest, decrypted and checked (its signature, and
/// the signer `--verify-with` requires), as text or JSON; its files are not read.
fn tree(args: InfoArgs, provider: Provider) -> Result<ExitCode> {
    let operation = Operation::decrypt(
        "open a tree",
        args.secret,
        args.identities,
        None,
        args.verify_with,
    )?;
    crate::run::tree::info(&args.input, operation, args.json, provider)
}

/// Arguments of `paracrypt info`.
#[derive(Debug, Args)]
#[command(after_help = "\
Reads only the header (and, for an armored age file, decodes the armor to count its chunks); \
no key, identity or password is asked for and nothing is decrypted. A file whose length no \
writer makes is reported as damaged after its fields (exit 1); a file that is none of the \
formats is one line (exit 1). With --recursive, FILE is an encrypted tree: its manifest is \
decrypted (with -k, a password or -i, as `decrypt --recursive` takes them) and summarised, one \
line per directory, file and link; its files are not read (`verify --recursive` checks them). \
Exit status: 0 success, 1 failure, 2 usage error.")]
pub struct InfoArgs {
    /// A paracrypt container, an age file (binary or armored) or an `openssl enc` password
    /// file (`-` for stdin); with --recursive, an encrypted tree.
    #[arg(value_name = "FILE")]
    input: PathBuf,
    /// Print one JSON object, for scripts (its fields are listed in docs/guide/files.md, and
    /// a tree's in docs/guide/trees.md).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    secret: SecretArgs,
    #[command(flatten)]
    identities: IdentityFlags,
    /// With --recursive: require the manifest to be signed by this public key (exit 5 if not).
    #[arg(long, value_name = "PUBKEY", requires = "recursive", help_heading = heading::SECRET)]
    verify_with: Option<PathBuf>,
    /// FILE is an encrypted tree: show its manifest.
    ///
    /// The manifest is decrypted (with -k, a password or -i, as `decrypt --recursive` takes
    /// them) and summarised, one line per directory, file and link; the files are not read.
    #[arg(long, help_heading = heading::TREES)]
    recursive: bool,
}

/// Runs `paracrypt info`. The header's fields and, for a container, what computes its suite on
/// `provider` (the global `--provider`: who would decrypt it), then the sizes when they are
/// known; a file whose length no writer produces is reported as damaged (exit 1) after the
/// fields.
pub fn run(args: InfoArgs, provider: Provider) -> Result<ExitCode> {
    if args.recursive {
        return tree(args, provider);
    }
    if args.secret.key_file.is_some()
        || args.secret.password_file.is_some()
        || !args.identities.is_empty()
    {
        return usage(
            "info reads a file's header without a key: -k, --password-file and -i need --recursive",
        );
    }
    let mut input = Input::open(&args.input)?;
    let len = input.len();
    let path = input.path().to_path_buf();
    let file = match input.remote() {
        // An object: its header alone, not the whole object read ahead (so armor is not
        // decoded to count its chunks).
        Some(remote) => info::read(&mut remote.header(), len, false)?,
        None => info::read(&mut input.reader(), len, true)?,
    };
    let shown = path.display().to_string();
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = file.json(&shown, len, provider);
        serde_json::to_writer_pretty(&mut out, &value).context("writing to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        file.text(&mut out, &shown, len, provider)
            .context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    match file.into_damage() {
        Some(damage) => Err(damage.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}
