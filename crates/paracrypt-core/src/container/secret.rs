//! What a container is opened with: a 256-bit key (from a key file), a password (through
//! Argon2id), or, for files encrypted to recipients, identities. Keys and passwords zeroize on
//! drop.

use std::path::Path;
use std::sync::Arc;

use rand::Rng;
use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::recipient::{Identities, Recipients};

/// The first line of a key file.
const KEY_FILE_COMMENT: &str = "# paracrypt key (256-bit, hex): keep this file secret";

/// A 256-bit key, zeroized on drop.
///
/// ```
/// use paracrypt_core::container::Key;
///
/// let key = Key::generate();
/// let text = key.to_file_text();
/// assert_eq!(Key::from_file_text(&text).unwrap(), key);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Key(Zeroizing<[u8; 32]>);

impl Key {
    /// A fresh random key from the operating system's CSPRNG (through `rand`'s thread RNG).
    pub fn generate() -> Self {
        let mut key = Zeroizing::new([0u8; 32]);
        rand::rng().fill_bytes(&mut key[..]);
        Key(key)
    }

    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Key(Zeroizing::new(bytes))
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key file's text: a comment line and the key as 64 hex digits.
    pub fn to_file_text(&self) -> String {
        format!("{KEY_FILE_COMMENT}\n{}\n", hex::encode(&self.0[..]))
    }

    /// Parses a key file: `#` comment lines and blank lines are skipped; exactly one line of
    /// 64 hex digits must remain. A PEM key (an RSA or ECDSA key given by mistake) is named as
    /// such.
    pub fn from_file_text(text: &str) -> Result<Self> {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("");
        if first.starts_with("AGE-SECRET-KEY-") || first.starts_with("AGE-PLUGIN-") {
            return Err(Error::KeyFile(
                "it is an age identity: give it with -i FILE instead (Python: identities=)".into(),
            ));
        }
        if first.starts_with("age1") || first.starts_with("ssh-") {
            return Err(Error::KeyFile(
                "it is a recipient (a public key): encrypt to it with -r or -R (Python: \
                 recipients=), and decrypt with its identity"
                    .into(),
            ));
        }
        if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") {
            return Err(Error::KeyFile(
                "it is an SSH private key: give it with -i FILE instead (Python: identities=)"
                    .into(),
            ));
        }
        if text.contains("-----BEGIN ") {
            return Err(Error::KeyFile(
                "it is a PEM key (for `paracrypt rsa`/`ecdsa`); make a paracrypt key with \
                 `paracrypt keygen`"
                    .into(),
            ));
        }
        let mut lines = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        let line = lines
            .next()
            .ok_or_else(|| Error::KeyFile("no key in the file".into()))?;
        if lines.next().is_some() {
            return Err(Error::KeyFile("more than one key line".into()));
        }
        let bytes = Zeroizing::new(hex::decode(line).map_err(|_| {
            Error::KeyFile(
                "not a key: it must be 64 hex digits, as `paracrypt keygen` writes; a password is \
                 read from a file with --password-file FILE (Python: password=)"
                    .into(),
            )
        })?);
        let bytes: [u8; 32] = bytes[..]
            .try_into()
            .map_err(|_| Error::KeyFile(format!("key is {} bytes, expected 32", bytes.len())))?;
        Ok(Key::from_bytes(bytes))
    }

    /// Reads and parses the key file at `path` (as [`Key::from_file_text`]). A key file is a
    /// line of text: a file larger than [`MAX_KEY_FILE`] or not UTF-8 is refused unread, with
    /// [`Error::KeyFile`] (whose reason does not name the path: callers add it); a file that
    /// cannot be read is [`Error::Io`], naming it.
    ///
    /// ```
    /// use paracrypt_core::container::Key;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("my.key");
    /// let key = Key::generate();
    /// std::fs::write(&path, key.to_file_text())?;
    /// assert_eq!(Key::read_file(&path)?, key);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_file(path: &Path) -> Result<Self> {
        let text = read_text_file(path, "key file", MAX_KEY_FILE)?;
        let text =
            std::str::from_utf8(&text).map_err(|_| Error::KeyFile("is not text (UTF-8)".into()))?;
        Key::from_file_text(text)
    }
}

/// The largest key file [`Key::read_file`] reads (64 KiB): a key file is a line of text.
pub const MAX_KEY_FILE: u64 = 64 * 1024;

/// Reads the file at `path` (`what` names its kind in errors), refusing one larger than `max`
/// bytes with [`Error::KeyFile`] before reading more than `max + 1` of them.
fn read_text_file(path: &Path, what: &str, max: u64) -> Result<Zeroizing<Vec<u8>>> {
    let cannot = |e| Error::io(format!("cannot read {what} {}", path.display()), e);
    let bytes = crate::secret_file::read(path, max).map_err(cannot)?;
    if bytes.len() as u64 > max {
        return Err(Error::KeyFile(format!("is larger than {} KiB", max / 1024)));
    }
    Ok(bytes)
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Argon2id cost parameters, stored in the header of password-protected files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Argon2Params {
    /// Memory in KiB.
    pub m_cost: u32,
    /// Passes.
    pub t_cost: u32,
    /// Lanes.
    pub p_cost: u32,
}

impl Argon2Params {
    /// The most memory a header may ask for (4 GiB): a hostile header cannot make decryption
    /// allocate without bound.
    pub const MAX_M_COST: u32 = 4 << 20;
    /// The most passes a header may ask for.
    pub const MAX_T_COST: u32 = 64;
    /// The most lanes a header may ask for.
    pub const MAX_P_COST: u32 = 64;

    /// Checks that the parameters are ones Argon2 accepts and within paracrypt's limits.
    pub fn check(&self) -> Result<()> {
        if self.m_cost > Self::MAX_M_COST
            || self.t_cost > Self::MAX_T_COST
            || self.p_cost > Self::MAX_P_COST
        {
            return Err(Error::Kdf(format!(
                "Argon2 parameters m={} KiB t={} p={} exceed paracrypt's limits",
                self.m_cost, self.t_cost, self.p_cost
            )));
        }
        argon2::Params::new(self.m_cost, self.t_cost, self.p_cost, Some(32))
            .map(drop)
            .map_err(|e| Error::Kdf(format!("invalid Argon2 parameters: {e}")))
    }
}

impl Default for Argon2Params {
    /// Argon2's recommended defaults (19 MiB, 2 passes, 1 lane: the OWASP minimum), which keep
    /// a password-protected stream's memory well under 64 MiB.
    fn default() -> Self {
        Argon2Params {
            m_cost: argon2::Params::DEFAULT_M_COST,
            t_cost: argon2::Params::DEFAULT_T_COST,
            p_cost: argon2::Params::DEFAULT_P_COST,
        }
    }
}

/// A key, a password, or recipients and identities: what the container's key schedule starts
/// from.
#[derive(Clone)]
pub enum Secret {
    /// A 256-bit key, used as HKDF input directly.
    Key(Key),
    /// A password, stretched with Argon2id (parameters used when encrypting; decryption takes
    /// them from the header).
    Password(Zeroizing<String>, Argon2Params),
    /// Encrypting to people: a fresh random file key is wrapped for each recipient in the
    /// header (format version 2).
    Recipients(Arc<Recipients>),
    /// Decrypting a file encrypted to recipients: the first identity that unwraps the file key.
    Identities(Arc<Identities>),
}

impl Secret {
    /// A password secret with the default Argon2id parameters.
    pub fn password(password: impl Into<String>) -> Self {
        Self::password_with_params(password, Argon2Params::default())
    }

    /// A password secret with chosen Argon2id parameters (used when encrypting).
    pub fn password_with_params(password: impl Into<String>, params: Argon2Params) -> Self {
        Secret::Password(Zeroizing::new(password.into()), params)
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Key(_) => f.write_str("Secret::Key(..)"),
            Secret::Password(_, params) => write!(f, "Secret::Password(.., {params:?})"),
            Secret::Recipients(r) => write!(f, "Secret::Recipients({} recipients)", r.len()),
            Secret::Identities(i) => write!(f, "Secret::Identities({} identities)", i.len()),
        }
    }
}

impl From<Key> for Secret {
    fn from(key: Key) -> Self {
        Secret::Key(key)
    }
}

impl From<Recipients> for Secret {
    fn from(recipients: Recipients) -> Self {
        Secret::Recipients(Arc::new(recipients))
    }
}

impl From<Identities> for Secret {
    fn from(identities: Identities) -> Self {
        Secret::Identities(Arc::new(identities))
    }
}

/// Argon2id of `password` with `salt` into 32 bytes.
pub(crate) fn argon2id(
    password: &str,
    salt: &[u8],
    params: Argon2Params,
) -> Result<Zeroizing<[u8; 32]>> {
    params.check()?;
    let argon = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(params.m_cost, params.t_cost, params.p_cost, Some(32))
            .map_err(|e| Error::Kdf(e.to_string()))?,
    );
    let mut out = Zeroizing::new([0u8; 32]);
    argon
        .hash_password_into(password.as_bytes(), salt, &mut out[..])
        .map_err(|e| Error::Kdf(e.to_string()))?;
    Ok(out)
}
