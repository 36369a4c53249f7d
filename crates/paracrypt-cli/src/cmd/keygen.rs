//! `paracrypt keygen`: a new random 256-bit key file, or an age identity (post-quantum or
//! X25519), mode 0600,
//! never overwriting; `-y` prints the recipients of an identity file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use paracrypt_core::keygen::{self, Kind};
use paracrypt_core::recipient::{read_identity_file, recipients_of};
use paracrypt_core::sign::SigningKey;

/// Arguments of `paracrypt keygen`.
#[derive(Debug, Args)]
#[command(after_help = "\
`--kind pq` writes a post-quantum age identity (AGE-SECRET-KEY-PQ-1…, as `age-keygen -pq`), \
`--kind x25519` a classical one (AGE-SECRET-KEY-1…, as age-keygen); each prints its recipient \
(`Public key: age1pq1…` or `age1…`) on stderr. Others encrypt to you with `paracrypt encrypt \
-r RECIPIENT` (or `age -r`), you decrypt with `-i FILE`. `-y FILE` prints the recipients of \
the identities in FILE: age1pq1… and age1… for age identities, ssh-ed25519/ssh-rsa lines for \
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
    /// With a signing key (--kind ed25519 or ml-dsa-65): also write its public key here (SPKI
    /// PEM).
    #[arg(long, value_name = "PUB", requires = "output")]
    public_out: Option<PathBuf>,
    /// With -y and an Ed25519 key: print its minisign public key (for `minisign -V -p`).
    #[arg(long, requires = "recipients_of")]
    minisign: bool,
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
    /// An Ed25519 signing key (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519`) for
    /// `paracrypt sign`; its public key (an `ssh-ed25519` line) is printed, and written as SPKI
    /// PEM with --public-out.
    Ed25519,
    /// An ML-DSA-65 signing key (FIPS 204, post-quantum; PKCS#8 PEM holding its 32-byte seed,
    /// RFC 9881) for `paracrypt sign`; its fingerprint is printed, its public key (SPKI PEM,
    /// 1952 bytes inside) written with --public-out.
    #[value(name = "ml-dsa-65", alias = "mldsa65")]
    MlDsa65,
}

/// Runs `paracrypt keygen`.
pub fn run(args: KeygenArgs) -> Result<ExitCode> {
    if let Some(identity) = &args.recipients_of {
        return print_recipients(identity, args.minisign);
    }
    let output = args.output.as_ref().expect("clap requires -o without -y");
    let kind = match args.kind {
        KindArg::Key => Kind::Key,
        KindArg::X25519 => Kind::X25519,
        KindArg::Pq => Kind::PostQuantum,
        KindArg::Ed25519 => Kind::Ed25519,
        KindArg::MlDsa65 => Kind::MlDsa65,
    };
    if let Some(public) = keygen::generate(output, kind, args.public_out.as_deref())? {
        crate::exit::say!("Public key: {public}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `-y`: the recipients of an identity file, on stdout.
fn print_recipients(path: &Path, minisign: bool) -> Result<ExitCode> {
    let bytes = read_identity_file(path)?;
    // A PKCS#8 Ed25519 signing key (`keygen --kind ed25519`): its OpenSSH public key line.
    if minisign {
        let key = SigningKey::from_key_file(&bytes, Default::default())
            .map_err(crate::cmd::signatures::key_error_core(path))?;
        let file = paracrypt_core::sign::minisign::public_key_file(&key.verifying_key())
            .map_err(crate::cmd::signatures::key_error_core(path))?;
        print!("{file}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Ok(key) = SigningKey::from_key_file(&bytes, Default::default()) {
        if let Some(line) = key.verifying_key().to_openssh()
            && !bytes.starts_with(b"-----BEGIN OPENSSH")
        {
            println!("{line}");
            return Ok(ExitCode::SUCCESS);
        }
        // An ML-DSA-65 key has no one-line form: its SPKI PEM.
        if key.scheme() == paracrypt_core::sign::Scheme::MlDsa65 {
            print!("{}", key.verifying_key().to_spki_pem()?);
            return Ok(ExitCode::SUCCESS);
        }
    }
    let recipients = recipients_of(&path.display().to_string(), &bytes)?;
    let mut out = std::io::stdout().lock();
    for recipient in recipients {
        writeln!(out, "{recipient}").context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
