//! Helpers shared by the `rsa` and `ecdsa` tests: key pairs, file sets, path text.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::*;

/// A path as a `&str` argument.
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Makes a key pair with `paracrypt ALGO keygen [extra...]`: (private, public).
pub fn keygen(dir: &Path, algo: &str, extra: &[&str]) -> (PathBuf, PathBuf) {
    let (key, public) = (
        dir.join(format!("{algo}.pem")),
        dir.join(format!("{algo}.pub.pem")),
    );
    let mut cmd = paracrypt();
    cmd.args([algo, "keygen", "-o", s(&key), "--public-out", s(&public)])
        .args(extra);
    ok(run(cmd));
    (key, public)
}

/// The file's permission bits.
pub fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Files of boundary sizes (empty, one byte, a 64 KiB read buffer ± 1, a few MB).
pub fn files(dir: &Path) -> Vec<PathBuf> {
    [0usize, 1, 65_535, 65_536, 65_537, 3_000_000]
        .iter()
        .enumerate()
        .map(|(i, &len)| write(dir, &format!("file{i}.bin"), &data(len, i as u8)))
        .collect()
}

/// `paracrypt ALGO SUB args... files...`.
pub fn cmd_with_files(args: &[&str], files: &[PathBuf]) -> std::process::Command {
    let mut cmd = paracrypt();
    cmd.args(args).args(files);
    cmd
}

/// The `FILE: OK` lines `verify` prints for `files`.
pub fn all_ok(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| format!("{}: OK\n", f.display()))
        .collect()
}

/// Whether `openssl dgst -sha256 -verify PUBLIC -signature FILE.sig [-sigopt pss] FILE` says
/// `Verified OK` (call only when `openssl()` is there).
pub fn openssl_verifies(public: &Path, file: &Path, pss: bool) -> bool {
    let sig = format!("{}.sig", file.display());
    let mut args = vec!["dgst", "-sha256", "-verify", s(public), "-signature", &sig];
    if pss {
        args.extend(["-sigopt", "rsa_padding_mode:pss"]);
    }
    args.push(s(file));
    openssl_ok(&args) == b"Verified OK\n"
}
