//! `paracrypt rekey`: a new header for the same file key, the rest of the file copied as it is.

use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::pubkey::rsa::RsaScheme;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::rekey::rekey_header;
use paracrypt_core::request::{Request, Secret};
use paracrypt_core::tree::RekeyTo;
use zeroize::Zeroizing;

use crate::exit::{Usage, usage};
use crate::flags::{FilesFlags, ThreadsFlag, heading};
use crate::io::{Input, OutputTarget};
use crate::people::{IdentityFlags, RecipientFlags, passphrase};
use crate::secret::{PASSWORD_ENV, SecretArgs};

/// The environment variable the new passphrase may come from.
pub const NEW_PASSWORD_ENV: &str = "PARACRYPT_NEW_PASSWORD";

/// `rekey -h`'s examples (and the end of `rekey --help`).
macro_rules! rekey_examples {
    () => {
        "\
Examples:
  paracrypt rekey -i me.txt -R team.txt big.tar.pcr -o big.tar.pcr   # in place
  paracrypt rekey -i me.txt -R team.txt --recursive photos.enc -o photos2.enc"
    };
}

/// Arguments of `paracrypt rekey`.
#[derive(Debug, Args)]
#[command(after_help = rekey_examples!(), after_long_help = concat!("\
Rekeying changes who can open a file without re-encrypting it: the old credential opens the \
header, a new header wraps the same file key for exactly the new recipients (-r/-R: give \
every recipient the file should keep; one left out is removed) or the new passphrase \
(--passphrase), and every byte after the header is copied as it is. It reads containers \
encrypted to recipients (version 2) and binary age files. Version 1 containers (key file or \
password) have no file key to re-wrap: decrypt and encrypt them again. Armored age files are \
refused.

The old credential: -i FILE, or the old passphrase from --password-file, PARACRYPT_PASSWORD or \
a prompt. The new passphrase: --new-password-file, PARACRYPT_NEW_PASSWORD or a prompt (twice).

-o INPUT rekeys in place, atomically: the new file replaces the old one only once it is \
complete. A wrong credential or a damaged header changes nothing. The payload is not read: \
a damaged chunk is copied as it is and found by the next decryption.

Rekeying is NOT revocation: the file key and the payload do not change, so anyone who had the \
file key, or a copy of the old file and an old credential, can still read the data. To cut \
someone off, decrypt and encrypt again.

With --recursive, INPUT is an encrypted tree (`encrypt --recursive`) and -o OUTPUT a new \
directory (or an empty one; --force writes into one that holds files); INPUT is not changed. A \
tree to recipients gets a new header in every file (the payloads copied as they are, on every \
core) and a new manifest sealed to the new recipients (-r/-R). A password tree's files are \
sealed with a key its manifest carries: they are copied byte for byte and only the manifest is \
sealed again, with the new password (--passphrase). A tree encrypted with a key file is refused, \
as one such file is. A signed tree needs --sign with the key that signed it. The new manifest \
keeps the tree id and is the next generation (`info --recursive`). Every file's header is \
checked against the manifest before anything is written: a tree that is not as its manifest \
lists it (a file missing, swapped, or an old manifest put back) is refused whole, naming every \
such file, and nothing at OUTPUT is made or replaced, with --force too (`verify --recursive` \
names each difference). What INPUT holds that its manifest does not list is not carried into \
the new tree: each is named on stderr as left behind (a warning, not a failure).

Exit status: 0 success, 1 failure, 2 usage error, 4 a cryptographic provider failed inside \
(not the data's fault), 6 a tree (--recursive) done in part.

", rekey_examples!()))]
pub struct RekeyArgs {
    #[command(flatten)]
    identities: IdentityFlags,
    /// The old passphrase, FILE's first line (when no -i is given).
    ///
    /// Else PARACRYPT_PASSWORD, else a prompt.
    #[arg(long, value_name = "FILE", conflicts_with = "identity_files", help_heading = heading::SECRET)]
    password_file: Option<PathBuf>,
    #[command(flatten)]
    to: RecipientFlags,
    /// Rekey to a passphrase (age's scrypt recipient; age files only).
    ///
    /// Read from --new-password-file, PARACRYPT_NEW_PASSWORD or a prompt.
    #[arg(long, conflicts_with_all = ["recipients", "recipient_files"], help_heading = heading::SECRET)]
    passphrase: bool,
    /// The new passphrase: the first line of FILE.
    #[arg(long, value_name = "FILE", requires = "passphrase", help_heading = heading::SECRET)]
    new_password_file: Option<PathBuf>,
    #[command(flatten)]
    files: FilesFlags,
    /// INPUT is an encrypted tree, OUTPUT the new one.
    ///
    /// INPUT is an encrypted tree (`encrypt --recursive`) and OUTPUT a new directory: every
    /// file gets a new header for the new recipients, and the manifest is sealed again.
    #[arg(long, help_heading = heading::TREES)]
    recursive: bool,
    /// With --recursive: the key that signed the tree, to sign its new manifest.
    ///
    /// The key of `encrypt --recursive --sign`.
    #[arg(long, value_name = "KEY", requires = "recursive", help_heading = heading::TREES)]
    sign: Option<PathBuf>,
    #[command(flatten)]
    threads: ThreadsFlag,
    /// With --sign and an RSA key: the RSA signature scheme the tree was signed with.
    #[arg(long, value_name = "SCHEME", requires = "sign", default_value_t = RsaScheme::Pkcs1v15, help_heading = heading::EXPERT, hide_short_help = true)]
    rsa_scheme: RsaScheme,
    #[command(flatten)]
    verbose: crate::flags::VerboseFlag,
    #[command(flatten)]
    report: crate::flags::TreeReportFlags,
}

/// Runs `paracrypt rekey`.
pub fn run(args: RekeyArgs) -> Result<ExitCode> {
    if args.to.is_empty() && !args.passphrase {
        return usage("rekey needs the new recipients (-r RECIPIENT, -R FILE) or --passphrase");
    }
    if args.recursive {
        return tree(args);
    }
    if args.threads.threads.is_some() {
        return usage("-j sets the threads of a tree (--recursive): one file's rekey copies it");
    }
    let target = OutputTarget::new_in_place(
        &args.files.output,
        &args.files.input,
        args.files.policy(true),
    )?;
    let old = old_identities(&args)?;
    let new = Arc::new(if args.passphrase {
        Recipients::passphrase(passphrase(&new_password(&args)?), None)
    } else {
        args.to.read()?
    });
    match Input::open(&args.files.input)? {
        Input::Stdin => rekey(std::io::stdin().lock(), old, new, target),
        Input::File { file, .. } => rekey(&file, old, new, target),
        // An object: read ahead with ranged GETs, and the new file uploaded in parts. No store
        // offers a copy of the payload under a new header through object_store (S3's
        // UploadPartCopy is not in its API), so the payload crosses the network twice.
        Input::Remote(remote) => rekey(remote.reader(), old, new, target),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Reads and rekeys the header from `input`, then writes the new header and the rest of
/// `input` as it is to `target` (file to file with `copy_file_range` where the system can).
fn rekey(
    input: impl Read,
    old: Arc<Identities>,
    new: Arc<Recipients>,
    target: OutputTarget,
) -> Result<()> {
    let mut reader = BufReader::new(input);
    let header = rekey_header(&mut reader, old, new)?;
    let mut output = target.create()?;
    let copied = match output.as_file() {
        Some(mut file) => file
            .write_all(&header)
            .and_then(|()| std::io::copy(&mut reader, &mut file)),
        None => {
            let mut writer = output.writer();
            writer
                .write_all(&header)
                .and_then(|()| std::io::copy(&mut reader, &mut writer))
        }
    };
    copied.context("copying the file after its header")?;
    output.commit()
}

/// `rekey --recursive`: the tree's refusals that need no credential first, then the old
/// credential (`-i`/`--kms`, else the old password), the new recipients or password, and the
/// signing key.
fn tree(args: RekeyArgs) -> Result<ExitCode> {
    let report = crate::run::tree::Report {
        verbose: args.verbose.verbose,
        json: args.report.json,
        dry_run: args.report.dry_run,
    };
    let options = report.options(crate::run::tree::write_options(
        args.files.force,
        args.files.sync,
    ));
    let credentials = || {
        let old = args
            .identities
            .or_else(|| Ok(Secret::Password(old_password(&args)?, Default::default())))?;
        let secret = if args.passphrase {
            Secret::Password(new_password(&args)?, Default::default())
        } else {
            Secret::Recipients(Arc::new(args.to.read()?))
        };
        let sign = args
            .sign
            .as_deref()
            .map(|path| paracrypt_core::sign::SigningKey::read(path, args.rsa_scheme))
            .transpose()?;
        Ok((Request::decrypt(old, None)?, RekeyTo { secret, sign }))
    };
    crate::run::tree::rekey(
        &args.files.input,
        &args.files.output,
        &options,
        credentials,
        args.threads,
        report,
    )
}

/// The old credential: `-i`'s identities, else the old passphrase.
fn old_identities(args: &RekeyArgs) -> Result<Arc<Identities>> {
    match args.identities.read_given()? {
        Some(identities) => Ok(identities),
        None => Ok(Arc::new(Identities::passphrase(
            passphrase(&old_password(args)?),
            None,
        ))),
    }
}

/// The old passphrase: `--password-file`'s first line, else [`PASSWORD_ENV`], else a prompt.
fn old_password(args: &RekeyArgs) -> Result<Zeroizing<String>> {
    let password = if args.password_file.is_some() || std::env::var_os(PASSWORD_ENV).is_some() {
        let old = SecretArgs {
            key_file: None,
            password_file: args.password_file.clone(),
        };
        old.password(false, false)?
    } else {
        let password = rpassword::prompt_password("Old passphrase: ").map_err(|_| {
            Usage(format!(
                "no old credential: use -i FILE, --password-file FILE or {PASSWORD_ENV}, or run \
                 on a terminal"
            ))
        })?;
        Zeroizing::new(password)
    };
    if password.is_empty() {
        return usage("the old passphrase is empty");
    }
    Ok(password)
}

/// The new passphrase: `--new-password-file`'s first line, else [`NEW_PASSWORD_ENV`], else a
/// prompt, asked twice.
fn new_password(args: &RekeyArgs) -> Result<Zeroizing<String>> {
    let password = if let Some(path) = &args.new_password_file {
        paracrypt_core::secret_file::read_password(path)?
    } else if let Ok(password) = std::env::var(NEW_PASSWORD_ENV) {
        Zeroizing::new(password)
    } else {
        let no_terminal = || {
            format!(
                "no new passphrase: use --new-password-file FILE or {NEW_PASSWORD_ENV}, or run \
                 on a terminal"
            )
        };
        let first = Zeroizing::new(
            rpassword::prompt_password("New passphrase: ").map_err(|_| Usage(no_terminal()))?,
        );
        let again = Zeroizing::new(
            rpassword::prompt_password("New passphrase (again): ")
                .map_err(|_| Usage(no_terminal()))?,
        );
        if *first != *again {
            return usage("the new passphrases do not match");
        }
        first
    };
    if password.is_empty() {
        return usage("the new passphrase is empty");
    }
    if std::env::var(PASSWORD_ENV).is_ok_and(|old| *old == **password) {
        crate::exit::warn("the new passphrase is the old one");
    }
    Ok(password)
}
