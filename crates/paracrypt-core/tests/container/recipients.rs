//! Containers encrypted to recipients (format version 2): every recipient kind round-trips on
//! every driver, each of several recipients decrypts, a wrong identity or the wrong kind of
//! secret fails cleanly before any output, and an altered recipient block is caught.

use std::io::Write;
use std::process::Command;

use age::secrecy::ExposeSecret;
use paracrypt_core::container::{Decryptor, Encryptor, HEADER_LEN, Key, Suite, read_header};
use paracrypt_core::container::{Kdf, VERSION_RECIPIENTS};
use paracrypt_core::pubkey::rsa::RsaPrivateKey;
use paracrypt_core::recipient::{Identities, Recipients, recipients_of};
use paracrypt_core::{Error, Runner};

use super::{chunk_size, data, with_threads};
use crate::raw::have;

const CHUNK: usize = 4096;

/// One person: how others encrypt to them, and their identity file.
struct Person {
    recipient: Recipient,
    identity: Vec<u8>,
}

enum Recipient {
    Text(String),
    File(Vec<u8>),
}

fn x25519() -> Person {
    let id = age::x25519::Identity::generate();
    Person {
        recipient: Recipient::Text(id.to_public().to_string()),
        identity: id.to_string().expose_secret().as_bytes().to_vec(),
    }
}

/// A post-quantum (`age1pq1…`) person: a 1959-character recipient, a stanza argument of 1494
/// base64 characters in the recipient block.
fn post_quantum() -> Person {
    let id = paracrypt_core::recipient::pq::HybridIdentity::generate();
    Person {
        recipient: Recipient::Text(id.to_public().to_string()),
        identity: id.to_secret_string().expose_secret().as_bytes().to_vec(),
    }
}

fn rsa_pem() -> Person {
    let key = RsaPrivateKey::generate(2048).unwrap();
    Person {
        recipient: Recipient::File(key.public_key().to_spki_pem().unwrap().into_bytes()),
        identity: key.to_pkcs8_pem().unwrap().as_bytes().to_vec(),
    }
}

/// An OpenSSH key made by `ssh-keygen` (in CI: openssh-client is on every Debian machine),
/// or `None` without it.
fn ssh(kind: &str) -> Option<Person> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("id");
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", kind, "-N", "", "-f"]).arg(&path);
    if kind == "rsa" {
        cmd.args(["-b", "2048"]);
    }
    if !have("ssh-keygen", "-?") {
        return None;
    }
    assert!(
        cmd.status().is_ok_and(|s| s.success()),
        "ssh-keygen -t {kind}"
    );
    Some(Person {
        recipient: Recipient::Text(
            std::fs::read_to_string(path.with_extension("pub"))
                .unwrap()
                .trim()
                .to_owned(),
        ),
        identity: std::fs::read(&path).unwrap(),
    })
}

fn recipients(people: &[&Person]) -> Recipients {
    let mut r = Recipients::new();
    for (i, person) in people.iter().enumerate() {
        match &person.recipient {
            Recipient::Text(text) => r.add(text, format!("recipient {}", i + 1)).unwrap(),
            Recipient::File(bytes) => r.add_file("key.pem", bytes).unwrap(),
        }
    }
    r
}

fn identities(person: &Person) -> Identities {
    let mut ids = Identities::new();
    ids.add_file("identity", &person.identity).unwrap();
    ids
}

fn encryptor(people: &[&Person]) -> Encryptor {
    Encryptor::new(recipients(people))
        .suite(Suite::ChaCha20Poly1305)
        .chunk_size(chunk_size(CHUNK))
}

/// Decrypts with every driver; all must agree.
fn decrypt_all_ways(decryptor: &Decryptor, sealed: &[u8]) -> Result<Vec<u8>, Error> {
    let runner = Runner::new();
    let in_memory = runner.vec(decryptor, sealed)?;
    let mut streamed = Vec::new();
    runner.stream(decryptor, &mut &sealed[..], &mut streamed)?;
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(sealed).unwrap();
    let output = tempfile::tempfile().unwrap();
    runner.file(decryptor, &input, &output)?;
    let mut ranged = Vec::new();
    runner.range(decryptor, &input, 0, u64::MAX, &mut ranged)?;
    assert_eq!(in_memory, streamed);
    assert_eq!(ranged, in_memory);
    Ok(in_memory)
}

#[test]
fn every_recipient_kind_round_trips() {
    let mut people = vec![
        ("X25519", x25519()),
        ("post-quantum", post_quantum()),
        ("RSA PEM", rsa_pem()),
    ];
    for kind in ["ed25519", "rsa"] {
        if let Some(person) = ssh(kind) {
            people.push((kind, person));
        }
    }
    for (n, (kind, person)) in people.iter().enumerate() {
        for len in [0, 1, CHUNK, 3 * CHUNK + 1] {
            let plain = data(len, n as u32);
            let sealed =
                with_threads(3, || Runner::new().vec(&encryptor(&[person]), &plain)).unwrap();
            let info = read_header(&mut &sealed[..]).unwrap();
            assert_eq!(info.version, VERSION_RECIPIENTS);
            assert_eq!(info.kdf, Kdf::Recipients);
            assert_eq!(info.recipients, 1);
            assert!(info.len > HEADER_LEN);
            let opened = with_threads(2, || {
                decrypt_all_ways(&Decryptor::new(identities(person)), &sealed)
            });
            assert!(opened.unwrap() == plain, "{kind}, {len} bytes");
        }
    }
}

#[test]
fn each_of_several_recipients_decrypts() {
    let people = [x25519(), rsa_pem(), x25519()];
    let all: Vec<&Person> = people.iter().collect();
    let plain = data(5 * CHUNK + 3, 7);
    let sealed = Runner::new().vec(&encryptor(&all), &plain).unwrap();
    assert_eq!(read_header(&mut &sealed[..]).unwrap().recipients, 3);
    for person in &people {
        let opened = decrypt_all_ways(&Decryptor::new(identities(person)), &sealed);
        assert!(opened.unwrap() == plain);
    }
    // An identity file holding someone else's key and then the right one.
    let mut both = x25519().identity;
    both.push(b'\n');
    both.extend_from_slice(&people[2].identity);
    let mut ids = Identities::new();
    ids.add_file("both", &both).unwrap();
    assert!(Runner::new().vec(&Decryptor::new(ids), &sealed).unwrap() == plain);
}

#[test]
fn a_wrong_identity_or_secret_fails_before_any_output() {
    let (alice, bob, eve) = (x25519(), rsa_pem(), x25519());
    let sealed = Runner::new()
        .vec(&encryptor(&[&alice, &bob]), &data(3 * CHUNK, 1))
        .unwrap();
    let mut written = Vec::new();
    let err = Runner::new()
        .stream(
            &Decryptor::new(identities(&eve)),
            &mut &sealed[..],
            &mut written,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no identity matches this file; it was encrypted to 2 recipients"
    );
    assert!(written.is_empty());
    let err = Runner::new()
        .vec(&Decryptor::new(Key::generate()), &sealed)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "this file was encrypted with public keys (decrypt it with an identity)"
    );
    // And identities given to a key-file container.
    let keyed = Runner::new()
        .vec(&Encryptor::new(Key::generate()), b"x")
        .unwrap();
    let err = Runner::new()
        .vec(&Decryptor::new(identities(&alice)), &keyed)
        .unwrap_err();
    assert_eq!(err.to_string(), "this file was encrypted with a key file");
}

#[test]
fn an_altered_recipient_block_is_caught() {
    let (alice, bob) = (x25519(), x25519());
    let sealed = Runner::new()
        .vec(&encryptor(&[&alice]), &data(100, 2))
        .unwrap();
    // Replace alice's stanza with one for bob (same file key unknown to the attacker: a
    // stanza of another file), keeping the checksum right: the MAC or the key check fails.
    let other = Runner::new()
        .vec(&encryptor(&[&bob]), &data(100, 2))
        .unwrap();
    let len = read_header(&mut &sealed[..]).unwrap().len;
    let other_len = read_header(&mut &other[..]).unwrap().len;
    assert_eq!(len, other_len);
    let mut spliced = sealed.clone();
    spliced[76..len - 40].copy_from_slice(&other[76..len - 40]);
    let checksum = <sha2::Sha256 as sha2::Digest>::digest(&spliced[..len - 40]);
    spliced[len - 40..len - 32].copy_from_slice(&checksum[..8]);
    let err = Runner::new()
        .vec(&Decryptor::new(identities(&bob)), &spliced)
        .unwrap_err();
    assert!(matches!(err, Error::WrongKey | Error::Header(_)), "{err}");
    // Accidental damage in the block: the checksum says so, before any identity is tried.
    let mut damaged = sealed.clone();
    damaged[80] ^= 1;
    assert_eq!(
        Runner::new()
            .vec(&Decryptor::new(identities(&alice)), &damaged)
            .unwrap_err()
            .to_string(),
        "header damaged: checksum mismatch"
    );
}

#[test]
fn keygen_minus_y_gives_recipients_that_encrypt_to_the_identity() {
    let rsa = rsa_pem();
    let [line] = &recipients_of("rsa.pem", &rsa.identity).unwrap()[..] else {
        panic!("one recipient")
    };
    let person = Person {
        recipient: Recipient::Text(line.clone()),
        identity: rsa.identity.clone(),
    };
    let sealed = Runner::new()
        .vec(&encryptor(&[&person]), b"to the ssh-rsa line")
        .unwrap();
    assert_eq!(
        Runner::new()
            .vec(&Decryptor::new(identities(&rsa)), &sealed)
            .unwrap(),
        b"to the ssh-rsa line"
    );
}
