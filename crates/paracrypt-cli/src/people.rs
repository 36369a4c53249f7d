//! Who a file is encrypted to and what decrypts it: `-r`, `-R`, `-i`, and the passphrase of an
//! age file. Each flag resolves, once, into the core's [`Recipients`] or [`Identities`].

use std::path::PathBuf;
use std::sync::Arc;

use age::secrecy::SecretString;
use anyhow::Result;
use clap::Args;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::request::Secret;

/// `-r/--recipient` and `-R/--recipients-file`.
#[derive(Clone, Debug, Default, Args)]
pub struct RecipientFlags {
    /// To age1…, ssh-… or awskms:… keys (repeatable).
    ///
    /// RECIPIENT is an age1… X25519 public key, an `ssh-ed25519 AAAA…` or `ssh-rsa AAAA…`
    /// public key line, an age plugin's age1NAME1… recipient or AGE-PLUGIN-NAME-1… identity
    /// (age-plugin-NAME on PATH wraps the key), or an AWS KMS key, awskms:ARN-OR-ALIAS
    /// (wrapped by KMS with the AWS credentials of s3://).
    #[arg(
        short = 'r',
        long = "recipient",
        value_name = "RECIPIENT",
        help_heading = crate::flags::heading::SECRET
    )]
    pub recipients: Vec<String>,
    /// To each recipient line of FILE (repeatable).
    ///
    /// As age's -R; an RSA public key in PEM or DER is taken too.
    #[arg(
        short = 'R',
        long = "recipients-file",
        value_name = "FILE",
        help_heading = crate::flags::heading::SECRET
    )]
    pub recipient_files: Vec<PathBuf>,
}

impl RecipientFlags {
    /// Whether no recipient was given.
    pub fn is_empty(&self) -> bool {
        self.recipients.is_empty() && self.recipient_files.is_empty()
    }

    /// Every recipient, parsed: a malformed one names its position and what was expected.
    pub fn read(&self) -> Result<Recipients> {
        let mut recipients = Recipients::new();
        #[cfg(feature = "s3")]
        recipients.set_kms(paracrypt_store::Kms::from_env());
        for (n, text) in self.recipients.iter().enumerate() {
            recipients.add(text, format!("recipient {}", n + 1))?;
        }
        for path in &self.recipient_files {
            recipients.add_path(path)?;
        }
        Ok(recipients)
    }
}

/// `-i/--identity`.
#[derive(Clone, Debug, Default, Args)]
pub struct IdentityFlags {
    /// The identities in FILE: age, OpenSSH, RSA (repeatable).
    ///
    /// FILE holds AGE-SECRET-KEY-1… lines (`paracrypt keygen --kind x25519`, age-keygen),
    /// AGE-PLUGIN-NAME-1… lines (age-plugin-NAME on PATH unwraps), an OpenSSH private key, or
    /// an RSA private key in PEM or DER.
    #[arg(
        short = 'i',
        long = "identity",
        value_name = "FILE",
        help_heading = crate::flags::heading::SECRET
    )]
    pub identity_files: Vec<PathBuf>,
    /// Decrypt with AWS KMS (the awskms stanzas, with the AWS credentials of s3://).
    ///
    /// The file's awskms stanzas are unwrapped by the KMS keys they name, with the AWS
    /// credentials, region and endpoint of s3:// (AWS_ACCESS_KEY_ID, AWS_REGION,
    /// AWS_ENDPOINT_URL_KMS…).
    #[arg(long = "kms", help_heading = crate::flags::heading::SECRET, hide_short_help = true)]
    pub kms: bool,
}

impl IdentityFlags {
    /// The identity files of `-i` beside another flag (`encrypt --update -i FILE`).
    pub fn files(identity_files: Vec<PathBuf>) -> Self {
        IdentityFlags {
            identity_files,
            kms: false,
        }
    }

    /// The identities given, read; `None` when none was (the command then opens with its key or
    /// password).
    pub fn read_given(&self) -> Result<Option<Arc<Identities>>> {
        if self.is_empty() {
            return Ok(None);
        }
        self.read().map(|identities| Some(Arc::new(identities)))
    }

    /// The secret a decryption opens with: these identities when any is given, else
    /// `otherwise` (the key or password, read only then: no prompt when -i is given).
    pub fn or_else(&self, otherwise: impl FnOnce() -> Result<Secret>) -> Result<Secret> {
        match self.read_given()? {
            Some(identities) => Ok(Secret::Identities(identities)),
            None => otherwise(),
        }
    }

    /// Whether no identity was given.
    pub fn is_empty(&self) -> bool {
        self.identity_files.is_empty() && !self.kms
    }

    /// Every identity of every file.
    pub fn read(&self) -> Result<Identities> {
        let mut identities = Identities::new();
        for path in &self.identity_files {
            identities.add_path(path)?;
        }
        if self.kms {
            #[cfg(feature = "s3")]
            identities.set_kms(paracrypt_store::Kms::from_env());
            #[cfg(not(feature = "s3"))]
            anyhow::bail!(
                "--kms: this build has no KMS client (it comes with the `s3` feature, which \
                 the default build has)"
            );
        }
        Ok(identities)
    }
}

/// A passphrase as the age crate takes it.
pub fn passphrase(password: &str) -> SecretString {
    SecretString::from(password.to_owned())
}
