//! Which input a job was made for: a job's header fixes its keys and nonces, so a job made
//! for one input must never seal another, and an input that changes while its parts are read
//! elsewhere must not be cut or mixed silently.

use std::fs::File;
use std::os::unix::fs::MetadataExt;

use crate::error::{Error, Result};

/// A file input as it was when a job was made for it: its inode, length, modification time and
/// change time. A process that runs part of the job checks its own open file against it before
/// and after reading ([`InputId::check`]), and the commit checks once more, so that a job is
/// never run over another input (sealing two plaintexts under one keystream) and an input that
/// grew, shrank or was rewritten meanwhile is an error, not a silent cut.
///
/// The modification time alone does not tell a rewrite in place that keeps the length: `cp -p`,
/// `touch -r` and `rsync -t --inplace` put it back. The change time (`st_ctime`) moves on every
/// write and change of metadata and no call sets it, so it does.
///
/// The device number is left out: it differs between the clients of one network filesystem
/// (NFS, Lustre), while the inode number and the times come from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputId {
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
}

/// The length of [`InputId::to_bytes`].
pub const INPUT_ID_LEN: usize = 48;

impl InputId {
    /// The identity of the open file `file` now.
    pub fn of(file: &File) -> Result<Self> {
        let meta = file
            .metadata()
            .map_err(|e| Error::io("reading the input's metadata", e))?;
        Ok(InputId {
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        })
    }

    /// The input's length when the job was made.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the input was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks that `file` is still the input this identity describes: another file fails with
    /// [`Error::OtherInput`], the same file changed (longer, shorter, rewritten) with
    /// [`Error::InputChanged`].
    pub fn check(&self, file: &File) -> Result<()> {
        let now = InputId::of(file)?;
        if now == *self {
            return Ok(());
        }
        if now.ino != self.ino {
            return Err(Error::OtherInput(format!(
                "inode {}, {} bytes, where the job was made for inode {}, {} bytes",
                now.ino, now.len, self.ino, self.len
            )));
        }
        let how = match now.len.cmp(&self.len) {
            std::cmp::Ordering::Greater => {
                format!("it grew from {} to {} bytes", self.len, now.len)
            }
            std::cmp::Ordering::Less => {
                format!("it shrank from {} to {} bytes", self.len, now.len)
            }
            std::cmp::Ordering::Equal => {
                "it was modified (its modification or change time moved)".into()
            }
        };
        Err(Error::InputChanged(how))
    }

    /// The identity as bytes, to send to another process.
    pub fn to_bytes(&self) -> [u8; INPUT_ID_LEN] {
        let mut bytes = [0u8; INPUT_ID_LEN];
        bytes[..8].copy_from_slice(&self.ino.to_be_bytes());
        bytes[8..16].copy_from_slice(&self.len.to_be_bytes());
        bytes[16..24].copy_from_slice(&self.mtime.to_be_bytes());
        bytes[24..32].copy_from_slice(&self.mtime_nsec.to_be_bytes());
        bytes[32..40].copy_from_slice(&self.ctime.to_be_bytes());
        bytes[40..].copy_from_slice(&self.ctime_nsec.to_be_bytes());
        bytes
    }

    /// The identity [`InputId::to_bytes`] gave, or `None` for bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; INPUT_ID_LEN] = bytes.try_into().ok()?;
        let word = |at: usize| <[u8; 8]>::try_from(&bytes[at..at + 8]).expect("8 bytes");
        Some(InputId {
            ino: u64::from_be_bytes(word(0)),
            len: u64::from_be_bytes(word(8)),
            mtime: i64::from_be_bytes(word(16)),
            mtime_nsec: i64::from_be_bytes(word(24)),
            ctime: i64::from_be_bytes(word(32)),
            ctime_nsec: i64::from_be_bytes(word(40)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn another_file_a_grown_one_and_a_rewritten_one_are_told_apart() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"0123456789").unwrap();
        let id = InputId::of(file.as_file()).unwrap();
        assert_eq!(InputId::from_bytes(&id.to_bytes()), Some(id));
        id.check(file.as_file()).unwrap();

        let other = tempfile::NamedTempFile::new().unwrap();
        other.as_file().set_len(10).unwrap();
        assert!(matches!(
            id.check(other.as_file()),
            Err(Error::OtherInput(_))
        ));

        file.write_all(b"more").unwrap();
        let grown = id.check(file.as_file()).unwrap_err();
        assert!(
            grown.to_string().contains("grew from 10 to 14 bytes"),
            "{grown}"
        );

        // Same length, new contents: the modification time says so.
        let id = InputId::of(file.as_file()).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        file.as_file().set_modified(old).unwrap();
        assert!(matches!(
            id.check(file.as_file()),
            Err(Error::InputChanged(_))
        ));
    }

    #[test]
    fn a_rewrite_in_place_that_puts_the_modification_time_back_is_seen() {
        use std::os::unix::fs::FileExt;
        // What `cp -p`, `touch -r` or `rsync -t --inplace` leave: the same inode, length and
        // modification time, other contents.
        let file = tempfile::NamedTempFile::new().unwrap();
        file.as_file().write_all_at(b"0123456789", 0).unwrap();
        let id = InputId::of(file.as_file()).unwrap();
        let then = file.as_file().metadata().unwrap().modified().unwrap();
        // File times come from a clock that ticks every few milliseconds: the rewrite is a
        // tick later, as a rewrite by another program is.
        std::thread::sleep(std::time::Duration::from_millis(50));
        file.as_file().write_all_at(b"9876543210", 0).unwrap();
        file.as_file().set_modified(then).unwrap();
        let meta = file.as_file().metadata().unwrap();
        assert_eq!((meta.len(), meta.modified().unwrap()), (10, then));
        let rewritten = id.check(file.as_file()).unwrap_err();
        assert!(matches!(rewritten, Error::InputChanged(_)), "{rewritten}");
    }
}
