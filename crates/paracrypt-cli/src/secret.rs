//! Where a container's key or password comes from: `--key-file`, else `--password-file`, else
//! `PARACRYPT_PASSWORD`, else a no-echo prompt on the terminal (asked twice when encrypting).

use std::path::Path;

use anyhow::Result;
use clap::Args;
use paracrypt_core::Error as CoreError;
use paracrypt_core::request::{Key, Secret};
use zeroize::Zeroizing;

use crate::exit::{Usage, usage};

/// The environment variable a password may come from.
pub const PASSWORD_ENV: &str = "PARACRYPT_PASSWORD";

/// `--key-file` / `--password-file`.
#[derive(Clone, Debug, Args)]
pub struct SecretArgs {
    /// Key file (from `paracrypt keygen`).
    #[arg(
        short = 'k',
        long,
        value_name = "FILE",
        conflicts_with = "password_file",
        help_heading = crate::flags::heading::SECRET
    )]
    pub key_file: Option<std::path::PathBuf>,
    /// The password: FILE's first line.
    ///
    /// Else PARACRYPT_PASSWORD, else a prompt on the terminal. `-p FILE` still means this in this release, with a warning: `-p` is to mean
    /// --passphrase, as in age.
    #[arg(long, value_name = "FILE", help_heading = crate::flags::heading::SECRET)]
    pub password_file: Option<std::path::PathBuf>,
}

/// Reads a key file ([`Key::read_file`]). A malformed one is a usage error naming the file, like
/// a malformed `--key`.
pub fn read_key_file(path: &Path) -> Result<Key> {
    Key::read_file(path).map_err(|e| match e {
        CoreError::KeyFile(reason) => {
            Usage(format!("key file {}: {reason}", path.display())).into()
        }
        other => other.into(),
    })
}

impl SecretArgs {
    /// The secret, asking on the terminal as a last resort when `may_prompt` (`confirm`: ask
    /// twice). A distributed run may not prompt: only rank 0 has a terminal, and the secret
    /// never crosses MPI.
    pub fn secret(&self, confirm: bool, may_prompt: bool) -> Result<Secret> {
        if let Some(path) = &self.key_file {
            return Ok(Secret::Key(read_key_file(path)?));
        }
        let password = self.password(confirm, may_prompt)?;
        Ok(Secret::password(password.to_string()))
    }

    /// The password: `--password-file`'s first line, else PARACRYPT_PASSWORD, else (when
    /// `may_prompt`) a prompt on the terminal, asked twice when `confirm`.
    pub fn password(&self, confirm: bool, may_prompt: bool) -> Result<Zeroizing<String>> {
        let password = if let Some(path) = &self.password_file {
            paracrypt_core::secret_file::read_password(path)?
        } else if let Ok(password) = std::env::var(PASSWORD_ENV) {
            Zeroizing::new(password)
        } else if may_prompt {
            prompt(confirm)?
        } else {
            return usage(format!(
                "--distributed cannot prompt for a password: use --key-file FILE, --password-file \
                 FILE or {PASSWORD_ENV} (pass it to every rank with mpirun -x {PASSWORD_ENV})"
            ));
        };
        if password.is_empty() {
            return usage("the password is empty");
        }
        Ok(password)
    }
}

fn prompt(confirm: bool) -> Result<Zeroizing<String>> {
    let no_terminal = || {
        Err::<Zeroizing<String>, _>(anyhow::Error::from(paracrypt_core::Error::NoSecret {
            encrypting: confirm,
        }))
    };
    let Ok(first) = rpassword::prompt_password("Password: ") else {
        return no_terminal();
    };
    let first = Zeroizing::new(first);
    if confirm {
        let Ok(again) = rpassword::prompt_password("Password (again): ") else {
            return no_terminal();
        };
        if *first != again {
            return usage("the passwords do not match");
        }
    }
    Ok(first)
}
