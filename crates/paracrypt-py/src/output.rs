//! A file output written as the CLI writes one: into a temporary file beside the destination,
//! which takes the destination's place only once everything succeeded. A failure, an exception
//! or a killed worker leaves the destination as it was (nothing, when it did not exist); the
//! temporary file is removed when the output is dropped uncommitted.

use std::fs::{File, Permissions};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::errors::{Failure, usage};

/// An output file being written.
#[derive(Debug)]
pub struct Staged {
    temp: NamedTempFile,
    dest: PathBuf,
    overwrite: bool,
}

/// The destination's directory.
fn dir_of(dest: &Path) -> &Path {
    match dest.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

impl Staged {
    /// Checks `dest` (an existing file only with `overwrite`, never a directory or the input
    /// itself) and creates the temporary file beside it: mode `0666 & ~umask` for a new file, the
    /// replaced file's permission bits otherwise.
    pub fn create(dest: &Path, overwrite: bool, input: Option<&Path>) -> Result<Self, Failure> {
        let replaced = match std::fs::metadata(dest) {
            Ok(meta) if meta.is_dir() => {
                return usage(format!("output {} is a directory", dest.display()));
            }
            Ok(meta) => {
                let same = input
                    .and_then(|input| std::fs::metadata(input).ok())
                    .is_some_and(|i| (i.dev(), i.ino()) == (meta.dev(), meta.ino()));
                if same {
                    return usage(format!(
                        "output {} is the input file; choose another output",
                        dest.display()
                    ));
                }
                if !overwrite {
                    return Err(
                        paracrypt_core::Error::OutputExists(dest.display().to_string()).into(),
                    );
                }
                Some(meta.mode() & 0o7777)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Failure::Io(format!("cannot write {}", dest.display()), e)),
        };
        let staged = Self::create_in(dest, overwrite)?;
        if let Some(mode) = replaced {
            staged
                .temp
                .as_file()
                .set_permissions(Permissions::from_mode(mode))
                .map_err(|e| Failure::Io(format!("cannot create {}", dest.display()), e))?;
        }
        Ok(staged)
    }

    /// Replaces the existing file `dest` (which may be the input, kept open and intact until
    /// the commit), keeping its permission bits.
    pub fn replacing(dest: &Path) -> Result<Self, Failure> {
        let mode = std::fs::metadata(dest)
            .map_err(|e| Failure::Io(format!("cannot write {}", dest.display()), e))?
            .mode();
        let staged = Self::create_in(dest, true)?;
        staged
            .temp
            .as_file()
            .set_permissions(Permissions::from_mode(mode & 0o7777))
            .map_err(|e| Failure::Io(format!("cannot create {}", dest.display()), e))?;
        Ok(staged)
    }

    fn create_in(dest: &Path, overwrite: bool) -> Result<Self, Failure> {
        let temp = tempfile::Builder::new()
            .prefix(".paracrypt-")
            .suffix(".tmp")
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(dir_of(dest))
            .map_err(|e| Failure::Io(format!("cannot create {}", dest.display()), bare(e)))?;
        Ok(Staged {
            temp,
            dest: dest.to_path_buf(),
            overwrite,
        })
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// The temporary file.
    pub fn file(&self) -> &File {
        self.temp.as_file()
    }

    /// Puts the temporary file in the destination's place.
    pub fn commit(self) -> Result<(), Failure> {
        let dest = self.dest;
        let persisted = if self.overwrite {
            self.temp.persist(&dest)
        } else {
            self.temp.persist_noclobber(&dest)
        };
        // On failure the temporary file comes back inside the error, and is removed with it.
        persisted.map(drop).map_err(|e| {
            let error = bare(e.error);
            if error.kind() == std::io::ErrorKind::AlreadyExists {
                return paracrypt_core::Error::OutputExists(dest.display().to_string()).into();
            }
            Failure::Io(format!("cannot create {}", dest.display()), error)
        })
    }
}

/// The OS error alone: tempfile adds the temporary file's name, which means nothing to the
/// caller.
fn bare(error: std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => error.kind().into(),
    }
}
