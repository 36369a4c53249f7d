//! `paracrypt keygen`: a new random 256-bit key file, or an age identity (post-quantum or
//! X25519), mode 0600,
//! never overwriting; `-y` prints the recipients of an identity file.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use paracrypt_core::container::Key;
use paracrypt_core::recipient::{
    IdentityKind, generate_identity, read_identity_file, recipients_of,
};
use zeroize::Zeroizing;

use crate::exit::usage;

/// Arguments of `paracrypt keygen`.
#[derive(Debug, Args)]
#[command(after_help = "\
`--kind pq` writes a post-quantum age identity (AGE-SECRET-KEY-PQ-1…, as `age-keygen -pq`),
`--kind x25519` a classical one (AGE-SECRET-KEY-1…, as age-keygen); each prints its recipient
(`Public key: age1pq1…` or `age1…`) on stderr. Others encrypt to you with `paracrypt encrypt
-r RECIPIENT` (or `age -r`), you decrypt with `-i FILE`. `-y FILE` prints the recipients of
the identities in FILE: age1pq1… and age1… for age identities, ssh-ed25519/ssh-rsa lines for
SSH keys and RSA private keys (PEM or DER).")]
pub struct KeygenArgs {
    /// Where to write the key (created with mode 0600; an existing file is never replaced).
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "recipients_of"
    )]
    output: Option<PathBuf>,
    /// What to make.
    #[arg(long, value_enum, default_value_t = KindArg::Key)]
    kind: KindArg,
    /// Print the recipients (public keys) of the identities in IDENTITY_FILE, one a line, as
    /// `age-keygen -y` does.
    #[arg(short = 'y', value_name = "IDENTITY_FILE", conflicts_with = "output")]
    recipients_of: Option<PathBuf>,
}

/// `--kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum KindArg {
    /// A 256-bit key file for paracrypt's container (`--key-file`).
    Key,
    /// An age X25519 identity (`-i`), whose recipient (age1…) others encrypt to.
    X25519,
    /// A post-quantum age identity (ML-KEM-768 + X25519, `-i`), whose recipient (age1pq1…)
    /// others encrypt to.
    #[value(alias = "mlkem768x25519")]
    Pq,
}

/// Runs `paracrypt keygen`.
pub fn run(args: KeygenArgs) -> Result<ExitCode> {
    if let Some(identity) = &args.recipients_of {
        return print_recipients(identity);
    }
    let output = args.output.as_ref().expect("clap requires -o without -y");
    if output.exists() {
        return usage(format!(
            "{} already exists; keygen never overwrites a key",
            output.display()
        ));
    }
    let (text, public) = match args.kind {
        KindArg::Key => (Zeroizing::new(Key::generate().to_file_text()), None),
        KindArg::X25519 => {
            let (text, public) = generate_identity(IdentityKind::X25519);
            (text, Some(public))
        }
        KindArg::Pq => {
            let (text, public) = generate_identity(IdentityKind::PostQuantum);
            (text, Some(public))
        }
    };
    write_new(output, text.as_bytes())?;
    if let Some(public) = public {
        eprintln!("Public key: {public}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates `path` with mode 0600 and writes `bytes`; removes it again when writing fails.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    Ok(())
}

/// `-y`: the recipients of an identity file, on stdout.
fn print_recipients(path: &Path) -> Result<ExitCode> {
    let bytes = read_identity_file(path)?;
    let recipients = recipients_of(&path.display().to_string(), &bytes)?;
    let mut out = std::io::stdout().lock();
    for recipient in recipients {
        writeln!(out, "{recipient}").context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
