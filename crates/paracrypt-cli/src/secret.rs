//! Where a container's key or password comes from: `--key-file`, else `--password-file`, else
//! `PARACRYPT_PASSWORD`, else a no-echo prompt on the terminal (asked twice when encrypting).

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::container::{Key, Secret};
use zeroize::Zeroizing;

use crate::exit::usage;

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
        conflicts_with = "password_file"
    )]
    pub key_file: Option<std::path::PathBuf>,
    /// File whose first line is the password (else PARACRYPT_PASSWORD, else a prompt).
    #[arg(short = 'p', long, value_name = "FILE")]
    pub password_file: Option<std::path::PathBuf>,
}

/// Reads a key file.
pub fn read_key_file(path: &Path) -> Result<Key> {
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read key file {}", path.display()))?,
    );
    Key::from_file_text(&text).with_context(|| format!("key file {}", path.display()))
}

impl SecretArgs {
    /// The secret, asking on the terminal as a last resort when `may_prompt` (`confirm`: ask
    /// twice). A distributed run may not prompt: only rank 0 has a terminal, and the secret
    /// never crosses MPI.
    pub fn secret(&self, confirm: bool, may_prompt: bool) -> Result<Secret> {
        if let Some(path) = &self.key_file {
            return Ok(Secret::Key(read_key_file(path)?));
        }
        let password = if let Some(path) = &self.password_file {
            let text = Zeroizing::new(
                std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read password file {}", path.display()))?,
            );
            Zeroizing::new(text.lines().next().unwrap_or("").to_string())
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
        Ok(Secret::password(password.to_string()))
    }
}

fn prompt(confirm: bool) -> Result<Zeroizing<String>> {
    let no_terminal = || {
        usage::<Zeroizing<String>>(format!(
            "no key given: use --key-file FILE, --password-file FILE or {PASSWORD_ENV}, or run on a terminal"
        ))
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
