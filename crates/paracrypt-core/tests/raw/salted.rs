//! openssl password files: byte-identical to `openssl enc -pbkdf2` both ways for every raw
//! cipher (same salt), read at any thread count; legacy `EVP_BytesToKey` files read.

use std::process::Command;

use paracrypt_core::Runner;
use paracrypt_core::raw::salted::{Digest, PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipherName};

use super::{chunk_size, data, have, with_threads};

const CHUNK: usize = 4096;
const SIZES: [usize; 9] = [0, 1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];
const SALT: [u8; 8] = [0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18];

fn have_openssl() -> bool {
    have("openssl", "version")
}

/// `openssl enc` with the legacy provider (DES, Blowfish, RC4), a password, and `extra`.
fn openssl_enc(dir: &std::path::Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    let (i, o) = (dir.join("in"), dir.join("out"));
    std::fs::write(&i, input).unwrap();
    let out = Command::new("openssl")
        .args(["enc", "-provider", "legacy", "-provider", "default"])
        .args(["-pass", "pass:open sesame"])
        .args(args)
        .arg("-in")
        .arg(&i)
        .arg("-out")
        .arg(&o)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(o).unwrap()
}

/// `openssl enc -S SALT` output as a password file: OpenSSL 3.0 leaves out the `Salted__`
/// header when the salt is given (1.1 wrote it), so it is put back here.
fn with_header(out: Vec<u8>) -> Vec<u8> {
    if out.starts_with(b"Salted__") {
        out
    } else {
        [&b"Salted__"[..], &SALT, &out].concat()
    }
}

fn seal(cipher: &PasswordCipher, plain: &[u8], threads: usize) -> Vec<u8> {
    let recipe = cipher.clone().recipe(Direction::Encrypt, chunk_size(CHUNK));
    with_threads(threads, || Runner::new().vec(&recipe, plain)).unwrap()
}

fn open(cipher: &PasswordCipher, sealed: &[u8], threads: usize) -> paracrypt_core::Result<Vec<u8>> {
    let recipe = cipher.clone().recipe(Direction::Decrypt, chunk_size(CHUNK));
    with_threads(threads, || Runner::new().vec(&recipe, sealed))
}

#[test]
fn pbkdf2_files_are_openssl_s_both_ways() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let salt = hex::encode(SALT);
    for &name in RawCipherName::ALL {
        for (iter, md) in [(10_000, Digest::Sha256), (1000, Digest::Sha512)] {
            let kdf = PasswordKdf::Pbkdf2 { iter, md };
            let cipher = PasswordCipher::new(name, b"open sesame", kdf).fixed_salt_for_tests(SALT);
            let iter_s = iter.to_string();
            let flag = format!("-{name}");
            let args = [
                flag.as_str(),
                "-pbkdf2",
                "-iter",
                &iter_s,
                "-md",
                md.as_str(),
                "-S",
                &salt,
            ];
            for (n, &len) in SIZES.iter().enumerate() {
                let plain = data(len, n as u32);
                let theirs = with_header(openssl_enc(
                    dir.path(),
                    &[&["-e"], &args[..]].concat(),
                    &plain,
                ));
                let threads = 1 + n % 3;
                assert!(
                    seal(&cipher, &plain, threads) == theirs,
                    "{name} {kdf}: encrypt {len} bytes"
                );
                assert!(
                    open(&cipher, &theirs, threads).unwrap() == plain,
                    "{name} {kdf}: decrypt {len} bytes"
                );
                // And openssl reads a file with a fresh salt.
                let fresh = PasswordCipher::new(name, b"open sesame", kdf);
                let ours = seal(&fresh, &plain, threads);
                let back = openssl_enc(
                    dir.path(),
                    &[
                        flag.as_str(),
                        "-d",
                        "-pbkdf2",
                        "-iter",
                        &iter_s,
                        "-md",
                        md.as_str(),
                    ],
                    &ours,
                );
                assert!(
                    back == plain,
                    "{name} {kdf}: openssl -d of ours, {len} bytes"
                );
            }
        }
    }
}

#[test]
fn legacy_files_are_read() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, md) in [
        ("aes-256-cbc", Digest::Sha256),
        ("aes-128-cbc", Digest::Md5),
        ("aes-192-ctr", Digest::Sha1),
        ("des-ede3-cbc", Digest::Md5),
        ("bf-cbc", Digest::Sha256),
        ("rc4", Digest::Md5),
    ] {
        let plain = data(3 * CHUNK + 5, 7);
        let flag = format!("-{name}");
        let theirs = openssl_enc(dir.path(), &["-e", &flag, "-md", md.as_str()], &plain);
        let cipher = PasswordCipher::new(
            name.parse().unwrap(),
            b"open sesame",
            PasswordKdf::Legacy { md },
        );
        assert!(
            open(&cipher, &theirs, 2).unwrap() == plain,
            "{name} -md {md}"
        );
    }
}

#[test]
fn a_wrong_password_or_kdf_fails_cleanly_in_padded_modes() {
    if !have_openssl() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = data(2 * CHUNK + 3, 8);
    // A fixed salt: a wrong key gives valid padding once in 256 salts, and this one does not.
    let salt = hex::encode(SALT);
    let theirs = with_header(openssl_enc(
        dir.path(),
        &["-e", "-aes-256-cbc", "-pbkdf2", "-S", &salt],
        &plain,
    ));
    for (password, kdf) in [
        (&b"open sesame!"[..], PasswordKdf::default()),
        (
            b"open sesame",
            PasswordKdf::Pbkdf2 {
                iter: 9999,
                md: Digest::Sha256,
            },
        ),
        (b"open sesame", PasswordKdf::Legacy { md: Digest::Sha256 }),
    ] {
        let cipher = PasswordCipher::new(RawCipherName::Aes256Cbc, password, kdf);
        let err = open(&cipher, &theirs, 3).unwrap_err();
        assert_eq!(err.to_string(), format!("bad password or not a {kdf} file"));
    }
}
