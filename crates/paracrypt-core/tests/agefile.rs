//! age v1 files: what paracrypt writes `age -d` reads and the reverse (X25519, SSH ed25519,
//! passphrase, armor), at the chunk boundaries and at 1 and 3 threads, on every provider; the
//! payload equals age's for the same file key and nonce on every provider; every driver gives
//! the same bytes; damage is named, in the same words on every provider.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use age::secrecy::{ExposeSecret, SecretString};
use paracrypt_core::agefile::{self, AgeFormat, Decryptor, Encryptor, Header, NONCE_LEN};
use paracrypt_core::provider::Provider;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::{Error, Runner};

use crate::raw::{data, have, with_threads};

const K: usize = 64 * 1024;
/// The sizes the issue names: around the 64 KiB chunk, and about 10 MiB.
const SIZES: [usize; 7] = [0, 1, K - 1, K, K + 1, 3 * K, 10 * 1024 * 1024 + 5];

/// Whether the `age` binary is there (in CI it must be).
fn age() -> bool {
    have("age", "--version")
}

fn run_age(args: &[&str], stdin: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new("age")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("age");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.unwrap_or_default().to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(
        out.status.success(),
        "age {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A fresh X25519 identity: (identity file text, recipient).
fn x25519() -> (String, String) {
    let id = age::x25519::Identity::generate();
    (
        format!("{}\n", id.to_string().expose_secret()),
        id.to_public().to_string(),
    )
}

fn recipients(recipient: &str) -> Recipients {
    let mut r = Recipients::new();
    r.add(recipient, "recipient 1").unwrap();
    r
}

fn identities(text: &str) -> Identities {
    let mut ids = Identities::new();
    ids.add_file("identity", text.as_bytes()).unwrap();
    ids
}

/// Encrypts with every driver (in memory, file to file, stream; armor is a stream).
fn our_file(
    encryptor: &Encryptor,
    armor: bool,
    runner: &Runner,
    plain: &[u8],
    driver: usize,
    dir: &Path,
) -> Vec<u8> {
    let mut out = Vec::new();
    match driver % 3 {
        _ if armor => {
            (encryptor.encrypt_armored(runner, &mut &plain[..], &mut out)).unwrap();
        }
        0 => out = runner.vec(encryptor, plain).unwrap(),
        1 => {
            let input = std::fs::File::open(write(dir, "plain", plain)).unwrap();
            let out_path = dir.join("sealed");
            let output = std::fs::File::create(&out_path).unwrap();
            runner.file(encryptor, &input, &output).unwrap();
            out = std::fs::read(out_path).unwrap();
        }
        _ => {
            runner.stream(encryptor, &mut &plain[..], &mut out).unwrap();
        }
    }
    out
}

/// Decrypts with every driver (in memory, file to file, stream; armor is a stream).
fn our_plain(
    decryptor: &Decryptor,
    runner: &Runner,
    sealed: &[u8],
    driver: usize,
    dir: &Path,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    match driver % 3 {
        _ if agefile::detect(sealed) == Some(AgeFormat::Armored) => {
            decryptor.decrypt_armored(runner, &mut &sealed[..], &mut out)?;
        }
        0 => out = runner.vec(decryptor, sealed)?,
        1 => {
            let input = std::fs::File::open(write(dir, "theirs", sealed)).unwrap();
            let out_path = dir.join("opened");
            let output = std::fs::File::create(&out_path).unwrap();
            runner.file(decryptor, &input, &output)?;
            out = std::fs::read(out_path).unwrap();
        }
        _ => {
            runner.stream(decryptor, &mut &sealed[..], &mut out)?;
        }
    }
    Ok(out)
}

/// Both ways against `age` with one kind of recipient, binary and armored, on every provider.
fn both_ways(
    recipient: Recipients,
    identity: Identities,
    age_encrypt: &[&str],
    age_decrypt: &[&str],
) {
    let (recipient, identity) = (Arc::new(recipient), Arc::new(identity));
    let dir = scratch();
    let d = dir.path();
    for (n, &len) in SIZES.iter().enumerate() {
        let plain = data(len, n as u32);
        for threads in [1, 3] {
            for armor in [false, true] {
                let mut args = age_encrypt.to_vec();
                if armor {
                    args.push("-a");
                }
                let theirs = run_age(&args, Some(&plain));
                for &provider in Provider::ALL {
                    let what = format!("{len} bytes, {threads} threads, armor {armor}, {provider}");
                    let (encryptor, runner) = (
                        Encryptor::new(recipient.clone()),
                        Runner::new().provider(provider),
                    );
                    let ours = with_threads(threads, || {
                        our_file(&encryptor, armor, &runner, &plain, n + threads, d)
                    });
                    assert_eq!(
                        run_age(age_decrypt, Some(&ours)),
                        plain,
                        "age -d of ours: {what}"
                    );
                    let decryptor = Decryptor::new(identity.clone());
                    let opened = with_threads(threads, || {
                        our_plain(&decryptor, &runner, &theirs, n + threads, d)
                    });
                    assert!(opened.unwrap() == plain, "ours of age -e: {what}");
                }
            }
        }
    }
}

#[test]
fn x25519_both_ways_with_age() {
    if !age() {
        return;
    }
    let dir = scratch();
    let (identity, recipient) = x25519();
    let key = write(dir.path(), "me.key", identity.as_bytes());
    let key = key.to_str().unwrap();
    both_ways(
        recipients(&recipient),
        identities(&identity),
        &["-e", "-r", &recipient],
        &["-d", "-i", key],
    );
}

/// An OpenSSH ed25519 key pair made by the `age` crate's test vector format is not at hand,
/// so `ssh-keygen` makes one when it is installed; without it the test says so and passes.
#[test]
fn ssh_ed25519_both_ways_with_age() {
    if !age() {
        return;
    }
    let dir = scratch();
    let key = dir.path().join("id_ed25519");
    if !have("ssh-keygen", "-?") {
        return;
    }
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "ssh-keygen -t ed25519");
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let private = std::fs::read(&key).unwrap();
    let mut ids = Identities::new();
    ids.add_file("id_ed25519", &private).unwrap();
    let public = public.trim();
    let key = key.to_str().unwrap();
    both_ways(
        recipients(public),
        ids,
        &["-e", "-r", public],
        &["-d", "-i", key],
    );
}

#[test]
fn passphrase_both_ways_with_age() {
    if !age() {
        return;
    }
    // age reads the passphrase from a terminal only; `script` gives it one where present.
    // Files age writes with a passphrase are made through the age crate instead, which is
    // age's own scrypt recipient.
    let passphrase = "correct horse battery staple";
    let plain = data(3 * K + 1, 9);
    for threads in [1, 3] {
        let encryptor = Encryptor::new(Recipients::passphrase(
            SecretString::from(passphrase.to_owned()),
            Some(10),
        ));
        let ours = with_threads(threads, || Runner::new().vec(&encryptor, &plain).unwrap());
        // age's own reader (the crate) opens ours.
        let identity = age::scrypt::Identity::new(SecretString::from(passphrase.to_owned()));
        let decryptor = age::Decryptor::new(&ours[..]).unwrap();
        let mut reader = decryptor
            .decrypt(std::iter::once(&identity as &dyn age::Identity))
            .unwrap();
        let mut opened = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut opened).unwrap();
        assert!(opened == plain);
        // And ours opens age's.
        let mut theirs = Vec::new();
        let mut recipient = age::scrypt::Recipient::new(SecretString::from(passphrase.to_owned()));
        recipient.set_work_factor(10);
        let encryptor =
            age::Encryptor::with_recipients(std::iter::once(&recipient as &dyn age::Recipient))
                .unwrap();
        let mut writer = encryptor.wrap_output(&mut theirs).unwrap();
        writer.write_all(&plain).unwrap();
        writer.finish().unwrap();
        let decryptor = Decryptor::new(Identities::passphrase(
            SecretString::from(passphrase.to_owned()),
            Some(20),
        ));
        let ours = with_threads(threads, || Runner::new().vec(&decryptor, &theirs).unwrap());
        assert!(ours == plain);
    }
}

/// The test-only hook: take an age-made file, unwrap its file key with the test identity,
/// read its nonce, and seal the same plaintext with that key and nonce: the payload (nonce and
/// every chunk) is age's byte for byte, at any thread count.
#[test]
fn payload_equals_age_s_for_the_same_key_and_nonce() {
    if !age() {
        return;
    }
    let (identity, recipient) = x25519();
    let ids = identities(&identity);
    for (n, &len) in SIZES.iter().enumerate() {
        let plain = data(len, 100 + n as u32);
        let theirs = run_age(&["-e", "-r", &recipient], Some(&plain));
        let mut input = &theirs[..];
        let header = Header::read(&mut input).unwrap();
        let file_key = ids.unwrap(header.stanzas()).unwrap();
        let nonce: [u8; NONCE_LEN] = input[..NONCE_LEN].try_into().unwrap();
        // So the payloads of every provider are identical too.
        for (threads, &provider) in [1, 3]
            .into_iter()
            .flat_map(|t| Provider::ALL.iter().map(move |p| (t, p)))
        {
            let encryptor = Encryptor::new(recipients(&recipient))
                .fixed_key_and_nonce_for_tests(*file_key.expose_secret(), nonce);
            let runner = Runner::new().provider(provider);
            let ours = with_threads(threads, || runner.vec(&encryptor, &plain).unwrap());
            let our_header = Header::read(&mut &ours[..]).unwrap();
            assert!(
                ours[our_header.as_bytes().len()..] == theirs[header.as_bytes().len()..],
                "payload of {len} bytes at {threads} threads on {provider}"
            );
        }
    }
}

#[test]
fn a_range_opens_only_what_it_needs() {
    let (identity, recipient) = x25519();
    let plain = data(5 * K + 17, 3);
    let dir = scratch();
    let sealed = Runner::new()
        .vec(&Encryptor::new(recipients(&recipient)), &plain)
        .unwrap();
    let file = std::fs::File::open(write(dir.path(), "f.age", &sealed)).unwrap();
    let decryptor = Decryptor::new(identities(&identity));
    for (offset, len) in [
        (0, 10),
        (K as u64 - 3, 10),
        (3 * K as u64, 2 * K as u64 + 17),
        (5 * K as u64 + 16, 100),
    ] {
        let mut out = Vec::new();
        with_threads(2, || {
            Runner::new().range(&decryptor, &file, offset, len, &mut out)
        })
        .unwrap();
        let end = (offset + len).min(plain.len() as u64) as usize;
        assert_eq!(out, &plain[offset as usize..end], "range {offset}+{len}");
    }
}

#[test]
fn damage_is_named() {
    for &provider in Provider::ALL {
        damage_is_named_on(provider);
    }
}

fn damage_is_named_on(provider: Provider) {
    let (identity, recipient) = x25519();
    let plain = data(3 * K + 5, 4);
    let runner = Runner::new().provider(provider);
    let sealed = runner.vec(&Encryptor::new(recipients(&recipient)), &plain);
    let sealed = sealed.unwrap();
    let header_len = Header::read(&mut &sealed[..]).unwrap().as_bytes().len() + NONCE_LEN;
    let chunk = |i: usize| header_len + i * (K + 16);
    let decryptor = Decryptor::new(identities(&identity));
    let fails = |bytes: &[u8], message: &str| {
        for driver in 0..3 {
            let dir = scratch();
            let err = our_plain(&decryptor, &runner, bytes, driver, dir.path()).unwrap_err();
            assert_eq!(err.to_string(), message, "driver {driver} on {provider}");
        }
    };
    let mut flipped = sealed.clone();
    flipped[chunk(2) + 7] ^= 1;
    fails(
        &flipped,
        "chunk 2 failed authentication (damaged, reordered or from another file)",
    );
    fails(&sealed[..chunk(3)], "file truncated after chunk 2");
    fails(&sealed[..chunk(3) + 10], "input truncated inside chunk 3");
    let mut swapped = sealed.clone();
    swapped.copy_within(chunk(0)..chunk(1), chunk(1));
    fails(
        &swapped,
        "chunk 1 failed authentication (damaged, reordered or from another file)",
    );
    // A stanza changed after the MAC was made: the header MAC catches it.
    let mut altered = sealed.clone();
    let at = sealed.windows(3).position(|w| w == b"---").unwrap();
    let body = at - 5;
    altered[body] = if altered[body] == b'A' { b'B' } else { b'A' };
    let err = runner.vec(&decryptor, &altered).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Header(_) | Error::NoIdentityMatches { .. } | Error::AgeHeader(_)
        ),
        "{err}"
    );
    // An empty last chunk after data: age refuses it, and so does paracrypt. Chunk 0 of a
    // 64 KiB + 1 file is full and not last; an empty chunk 1 sealed as last follows it.
    let (key, nonce) = ([5u8; 16], [6u8; NONCE_LEN]);
    let longer = Runner::new()
        .vec(
            &Encryptor::new(recipients(&recipient)).fixed_key_and_nonce_for_tests(key, nonce),
            &data(K + 1, 1),
        )
        .unwrap();
    let payload_key = age_core::primitives::hkdf(&nonce, b"payload", &key);
    let aead = <chacha20poly1305::ChaCha20Poly1305 as chacha20poly1305::KeyInit>::new_from_slice(
        &payload_key,
    )
    .unwrap();
    let mut chunk_nonce = [0u8; 12];
    chunk_nonce[10] = 1;
    chunk_nonce[11] = 1;
    let empty_last =
        chacha20poly1305::aead::Aead::encrypt(&aead, (&chunk_nonce).into(), &[][..]).unwrap();
    let empty_header_len = Header::read(&mut &longer[..]).unwrap().as_bytes().len() + NONCE_LEN;
    let forged = [&longer[..empty_header_len + K + 16], &empty_last].concat();
    fails(
        &forged,
        "chunk 1 is an empty last chunk after data (not allowed)",
    );
    let wrong = identities(&x25519().0);
    assert_eq!(
        Runner::new()
            .vec(&Decryptor::new(wrong), &sealed)
            .unwrap_err()
            .to_string(),
        "no identity matches this file; it was encrypted to 1 recipient"
    );
}

/// `plain` in an armored age file to `recipients`.
fn armored(recipients: Recipients, plain: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Encryptor::new(recipients)
        .encrypt_armored(&Runner::new(), &mut &plain[..], &mut out)
        .unwrap();
    out
}

#[test]
fn damaged_armor_is_named() {
    let (identity, recipient) = x25519();
    let sealed = armored(recipients(&recipient), &data(K + 3, 5));
    let text = String::from_utf8(sealed).unwrap();
    let decryptor = Decryptor::new(identities(&identity));
    let open = |armored: &[u8]| {
        let (runner, dir) = (Runner::new(), scratch());
        our_plain(&decryptor, &runner, armored, 0, dir.path())
    };
    let cut = &text[..text.len() - 40];
    let err = open(cut.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Armor(_)), "{err}");
    let mut lines: Vec<&str> = text.lines().collect();
    let short = &lines[3][..20].to_owned();
    lines[3] = short;
    let err = open(lines.join("\n").as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "damaged armor: invalid armor (short line in middle of encoding)"
    );
}

/// Found by the `age_decrypt` fuzz target: a byte that is not UTF-8 in the armor's body was
/// reported as an I/O error while reading chunk 0.
#[test]
fn armor_that_is_not_text_is_damaged_armor() {
    let (identity, recipient) = x25519();
    let sealed = armored(recipients(&recipient), &data(300, 6));
    let body_line = sealed.iter().rposition(|&b| b == b'\n').unwrap() - 40;
    for at in [40, body_line - 10] {
        let mut damaged = sealed.clone();
        damaged[at] = 0xaa;
        let decryptor = Decryptor::new(identities(&identity));
        let mut out = Vec::new();
        let err = decryptor
            .decrypt_armored(&Runner::new(), &mut &damaged[..], &mut out)
            .unwrap_err();
        assert!(matches!(err, Error::Armor(_)), "byte {at}: {err:?}");
        assert_eq!(err.kind(), paracrypt_core::ErrorKind::Data);
    }
}

/// The armored `Read` and `Write` adapters give what the armored streams give, and `age`
/// reads what the writer wrote; damaged armor is named through the reader too.
#[test]
fn armor_through_the_read_and_write_adapters() {
    use paracrypt_core::StreamReader;
    use std::io::Read;
    let (identity, recipient) = x25519();
    let plain = data(3 * K + 11, 12);
    let encryptor = Encryptor::new(recipients(&recipient));
    let runner = Runner::new();
    let mut writer = encryptor.armored_writer(&runner, Vec::new()).unwrap();
    for piece in plain.chunks(10_000) {
        writer.write_all(piece).unwrap();
    }
    let sealed = writer.finish().unwrap();
    assert!(sealed.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----"));
    let decryptor = Decryptor::new(identities(&identity));
    let mut out = Vec::new();
    decryptor
        .armored_reader(&runner, b"\n\n".chain(&sealed[..]))
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, plain);
    if age() {
        let dir = scratch();
        let key = write(dir.path(), "key", identity.as_bytes());
        let key = key.to_str().unwrap();
        assert_eq!(run_age(&["-d", "-i", key], Some(&sealed)), plain);
    }
    let text = String::from_utf8(sealed).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // A line in the payload: the header opens, a later chunk's read fails.
    let at = lines.len() - 3;
    let short = &lines[at][..20].to_owned();
    lines[at] = short;
    let damaged = lines.join("\n");
    let mut reader = decryptor
        .armored_reader(&runner, damaged.as_bytes())
        .unwrap();
    let error = reader.read_to_end(&mut Vec::new()).unwrap_err();
    assert!(
        matches!(
            StreamReader::<&[u8]>::error_of(&error),
            Some(Error::Armor(_))
        ),
        "{error}"
    );
}
