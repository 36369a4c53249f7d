//! Signed containers (format version 3): every scheme round-trips on every driver with every
//! kind of secret, Ed25519 files are the same bytes at any thread count, and every way of
//! tampering — a flipped bit in a chunk, a signature or the signer field, a cut, reordered or
//! spliced file, another signer, a stripped signature, chunks forged by a recipient who holds
//! the file key — fails with its own error, releasing no chunk past the last verified one.

use std::io::Write;
use std::sync::Arc;

use aes_gcm::aead::{AeadInOut, KeyInit};
use age::secrecy::ExposeSecret;
use hkdf::Hkdf;
use paracrypt_core::container::{
    Decryptor, Encryptor, Key, Secret, Suite, VERSION_SIGNED, read_header,
};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::pubkey::ecdsa::EcdsaPrivateKey;
use paracrypt_core::pubkey::rsa::{RsaPrivateKey, RsaScheme};
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::rekey::rekey_header;
use paracrypt_core::request::AnyDecryptor;
use paracrypt_core::sign::{SigningKey, VerifyingKey};
use paracrypt_core::{Error, ErrorKind, HeaderFault, Runner};
use sha2::{Digest, Sha256};

use super::{SALT, data, key, read_back, temp_with, with_threads};

const CHUNK: usize = 4096;

fn chunk() -> ChunkSize {
    ChunkSize::new(CHUNK).unwrap()
}

fn ed25519(seed: u8) -> SigningKey {
    SigningKey::ed25519_from_seed(&[seed; 32])
}

fn every_scheme() -> Vec<SigningKey> {
    let rsa = RsaPrivateKey::generate(2048).unwrap();
    let same = RsaPrivateKey::from_rsa(rsa.as_rsa().clone()).unwrap();
    vec![
        ed25519(1),
        SigningKey::ecdsa(EcdsaPrivateKey::generate()),
        SigningKey::rsa(same, RsaScheme::Pkcs1v15),
        SigningKey::rsa(rsa, RsaScheme::Pss),
        SigningKey::ml_dsa_65_from_seed(&[2; 32]),
    ]
}

fn person() -> (Arc<Recipients>, Arc<Identities>) {
    let id = age::x25519::Identity::generate();
    let mut recipients = Recipients::new();
    recipients
        .add(&id.to_public().to_string(), "recipient")
        .unwrap();
    let mut identities = Identities::new();
    identities
        .add_file("identity", id.to_string().expose_secret().as_bytes())
        .unwrap();
    (Arc::new(recipients), Arc::new(identities))
}

/// The length of the header `file` starts with.
fn header_len(file: &[u8]) -> usize {
    read_header(&mut &file[..]).unwrap().len
}

/// Opens `sealed` on every decryption driver (memory at 1 and 3 threads, stream, file to
/// file, the whole range): the one result they agree on. The stream's output must be the
/// chunks before the failing one, exactly.
fn open_everywhere(decryptor: &Decryptor, sealed: &[u8]) -> Result<Vec<u8>, Error> {
    let runner = Runner::new();
    let memory = with_threads(1, || runner.vec(decryptor, sealed));
    let memory3 = with_threads(3, || runner.vec(decryptor, sealed));
    let mut streamed = Vec::new();
    let stream = with_threads(2, || {
        runner
            .clone()
            .window(2)
            .stream(decryptor, &mut &sealed[..], &mut streamed)
    });
    let output = tempfile::tempfile().unwrap();
    let file = with_threads(3, || runner.file(decryptor, &temp_with(sealed), &output));
    let mut ranged = Vec::new();
    let range = with_threads(2, || {
        runner.range(decryptor, &temp_with(sealed), 0, u64::MAX, &mut ranged)
    });
    match &memory {
        Ok(plain) => {
            assert_eq!(memory3.as_ref().unwrap(), plain);
            stream.unwrap();
            assert_eq!(&streamed, plain);
            file.unwrap();
            assert_eq!(&read_back(output), plain);
            range.unwrap();
            assert_eq!(&ranged, plain);
        }
        Err(e) => {
            let text = e.to_string();
            for other in [memory3.err(), stream.err(), file.err(), range.err()] {
                assert_eq!(other.map(|e| e.to_string()).as_deref(), Some(&text[..]));
            }
            // Released: exactly the chunks before the failing one.
            let failed = match *e {
                Error::ChunkAuth { index }
                | Error::ChunkSignature { index }
                | Error::TruncatedAfter { index }
                | Error::TrailingData { index }
                | Error::Truncated { index } => index as usize,
                _ => 0,
            };
            assert_eq!(streamed.len(), failed * CHUNK, "{e}");
        }
    }
    memory
}

#[test]
fn every_scheme_round_trips_with_every_secret_on_every_driver() {
    let plain = data(5 * CHUNK + 123, 1);
    let (recipients, identities) = person();
    let secrets: Vec<(Secret, Secret)> = vec![
        (key().into(), key().into()),
        (
            Secret::Recipients(recipients),
            Secret::Identities(identities),
        ),
    ];
    for signer in every_scheme() {
        let public = signer.verifying_key();
        for (seal_with, open_with) in &secrets {
            let seal = Encryptor::new(seal_with.clone())
                .chunk_size(chunk())
                .sign(signer.clone());
            let runner = Runner::new();
            // Every encryption driver: memory, stream, file, the Write adapter.
            let in_memory = runner.vec(&seal, &plain).unwrap();
            let mut streamed = Vec::new();
            runner
                .stream(&seal, &mut &plain[..], &mut streamed)
                .unwrap();
            let output = tempfile::tempfile().unwrap();
            runner.file(&seal, &temp_with(&plain), &output).unwrap();
            let mut writer = runner.writer(&seal, Vec::new()).unwrap();
            writer.write_all(&plain).unwrap();
            let written = writer.finish().unwrap();
            for sealed in [in_memory, streamed, read_back(output), written] {
                let info = read_header(&mut &sealed[..]).unwrap();
                assert_eq!(info.version, VERSION_SIGNED);
                assert_eq!(info.signer.as_ref(), Some(&public));
                let sig = public.signature_len();
                assert_eq!(sealed.len(), info.len + plain.len() + 6 * (16 + sig));
                let open = Decryptor::new(open_with.clone()).verify_with(public.clone());
                assert_eq!(open_everywhere(&open, &sealed).unwrap(), plain);
                assert_eq!(open.signer(), Some(public.clone()));
                // Without a key to expect, the chunks are still checked, and the signer named.
                let open = Decryptor::new(open_with.clone());
                assert_eq!(open_everywhere(&open, &sealed).unwrap(), plain);
                assert_eq!(open.signer(), Some(public.clone()), "{}", signer.scheme());
                // A range reads and verifies only its chunks.
                let mut part = Vec::new();
                runner
                    .range(
                        &open,
                        &temp_with(&sealed),
                        2 * CHUNK as u64 + 7,
                        100,
                        &mut part,
                    )
                    .unwrap();
                assert_eq!(part, &plain[2 * CHUNK + 7..2 * CHUNK + 107]);
            }
        }
    }
}

#[test]
fn every_suite_and_the_empty_file_round_trip_signed() {
    for &suite in Suite::ALL {
        for len in [0, 1, CHUNK, 2 * CHUNK + 9] {
            let plain = data(len, 2);
            let seal = Encryptor::new(key())
                .suite(suite)
                .chunk_size(chunk())
                .sign(ed25519(3));
            let sealed = Runner::new().vec(&seal, &plain).unwrap();
            let open = Decryptor::new(key()).verify_with(ed25519(3).verifying_key());
            assert_eq!(
                open_everywhere(&open, &sealed).unwrap(),
                plain,
                "{suite} {len}"
            );
        }
    }
}

#[test]
fn ed25519_files_are_the_same_bytes_at_any_thread_count_and_driver() {
    let plain = data(7 * CHUNK + 5, 3);
    let seal = Encryptor::new(key())
        .chunk_size(chunk())
        .fixed_salt_for_tests(SALT)
        .sign(ed25519(4));
    let runner = Runner::new().window(2);
    let reference = with_threads(1, || runner.vec(&seal, &plain).unwrap());
    for threads in [2, 3, 5] {
        with_threads(threads, || {
            assert_eq!(runner.vec(&seal, &plain).unwrap(), reference);
            let mut streamed = Vec::new();
            runner
                .stream(&seal, &mut &plain[..], &mut streamed)
                .unwrap();
            assert_eq!(streamed, reference);
            let output = tempfile::tempfile().unwrap();
            runner.file(&seal, &temp_with(&plain), &output).unwrap();
            assert_eq!(read_back(output), reference);
            let mut writer = runner.writer(&seal, Vec::new()).unwrap();
            writer.write_all(&plain).unwrap();
            assert_eq!(writer.finish().unwrap(), reference);
        });
    }
}

#[test]
fn another_signer_or_an_unsigned_file_fails_as_a_signature_failure() {
    let plain = data(3 * CHUNK, 4);
    let runner = Runner::new();
    let signed = runner
        .vec(
            &Encryptor::new(key()).chunk_size(chunk()).sign(ed25519(5)),
            &plain,
        )
        .unwrap();
    let other = Decryptor::new(key()).verify_with(ed25519(6).verifying_key());
    let err = open_everywhere(&other, &signed).unwrap_err();
    assert!(matches!(err, Error::WrongSigner { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Signature);
    // Another scheme's key is another signer too.
    let ecdsa = SigningKey::ecdsa(EcdsaPrivateKey::generate()).verifying_key();
    let err = open_everywhere(&Decryptor::new(key()).verify_with(ecdsa), &signed).unwrap_err();
    assert!(matches!(err, Error::WrongSigner { .. }), "{err}");

    // The downgrade: an unsigned file (the same plaintext, the same key) is refused.
    let unsigned = runner
        .vec(&Encryptor::new(key()).chunk_size(chunk()), &plain)
        .unwrap();
    let expect = Decryptor::new(key()).verify_with(ed25519(5).verifying_key());
    let err = open_everywhere(&expect, &unsigned).unwrap_err();
    assert!(matches!(err, Error::Unsigned { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Signature);
    // An unsigned file without --verify-with opens, and names no signer.
    let open = Decryptor::new(key());
    assert_eq!(open_everywhere(&open, &unsigned).unwrap(), plain);
    assert_eq!(open.signer(), None);

    // An age file has no signature.
    let (recipients, identities) = person();
    let age = runner
        .vec(&paracrypt_core::agefile::Encryptor::new(recipients), &plain)
        .unwrap();
    let any =
        AnyDecryptor::new(Secret::Identities(identities)).verify_with(ed25519(5).verifying_key());
    assert!(matches!(
        runner.vec(&any, &age),
        Err(Error::Unsigned { .. })
    ));
}

/// A signed file of 6 chunks (the last short), and its header's length.
fn six_chunks(seed: u8, salt: u8) -> (Vec<u8>, Vec<u8>, usize) {
    let plain = data(5 * CHUNK + 100, u32::from(seed));
    let seal = Encryptor::new(key())
        .chunk_size(chunk())
        .fixed_salt_for_tests([salt; 32])
        .sign(ed25519(seed));
    let sealed = Runner::new().vec(&seal, &plain).unwrap();
    let h = header_len(&sealed);
    (plain, sealed, h)
}

const STRIDE: usize = CHUNK + 16 + 64;

#[test]
fn tampering_is_caught_chunk_by_chunk() {
    let (plain, sealed, h) = six_chunks(7, 1);
    let open = Decryptor::new(key()).verify_with(ed25519(7).verifying_key());
    assert_eq!(open_everywhere(&open, &sealed).unwrap(), plain);
    let at = |i: usize| h + i * STRIDE;

    // A flipped bit in chunk 2's ciphertext: its tag fails too, a damaged chunk.
    let mut bad = sealed.clone();
    bad[at(2) + 100] ^= 1;
    let err = open_everywhere(&open, &bad).unwrap_err();
    assert!(matches!(err, Error::ChunkAuth { index: 2 }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Data);

    // A flipped bit in chunk 3's signature: the tag holds, the signature does not.
    let mut bad = sealed.clone();
    bad[at(3) + CHUNK + 16 + 10] ^= 0x40;
    let err = open_everywhere(&open, &bad).unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 3 }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Signature);

    // The signer field: the checksum catches a flipped bit, the MAC an edit that mends it.
    let signer_at = h - 40 - 32;
    let mut bad = sealed.clone();
    bad[signer_at + 5] ^= 1;
    let err = open_everywhere(&open, &bad).unwrap_err();
    assert!(matches!(err, Error::Header(HeaderFault::Checksum)), "{err}");
    let sum = Sha256::digest(&bad[..h - 40]);
    bad[h - 40..h - 32].copy_from_slice(&sum[..8]);
    let err = open_everywhere(&open, &bad).unwrap_err();
    // The key is no longer a point, or it is another one: either way refused before chunks.
    assert!(
        matches!(
            err,
            Error::Header(HeaderFault::Mac) | Error::Header(HeaderFault::Field("signer"))
        ),
        "{err}"
    );

    // Cut after chunk 3 (at a boundary): chunk 3 was not signed as the last.
    let err = open_everywhere(&open, &sealed[..at(4)]).unwrap_err();
    assert!(matches!(err, Error::TruncatedAfter { index: 3 }), "{err}");
    // Cut inside the last chunk's signature.
    let err = open_everywhere(&open, &sealed[..sealed.len() - 10]).unwrap_err();
    assert!(matches!(err, Error::ChunkAuth { index: 5 }), "{err}");
    // Bytes appended after the last chunk.
    let mut longer = sealed.clone();
    longer.extend_from_slice(b"appended\n");
    let err = open_everywhere(&open, &longer).unwrap_err();
    assert!(matches!(err, Error::TrailingData { index: 5 }), "{err}");

    // Chunks 1 and 2 swapped.
    let mut swapped = sealed.clone();
    swapped[at(1)..at(2)].copy_from_slice(&sealed[at(2)..at(3)]);
    swapped[at(2)..at(3)].copy_from_slice(&sealed[at(1)..at(2)]);
    let err = open_everywhere(&open, &swapped).unwrap_err();
    assert!(matches!(err, Error::ChunkAuth { index: 1 }), "{err}");

    // Chunk 4 from another file signed by the same key, with the same key file.
    let (_, other, _) = six_chunks(7, 2);
    let mut spliced = sealed.clone();
    spliced[at(4)..at(5)].copy_from_slice(&other[at(4)..at(5)]);
    let err = open_everywhere(&open, &spliced).unwrap_err();
    assert!(matches!(err, Error::ChunkAuth { index: 4 }), "{err}");

    // Stripped: the chunks without their signatures, under an unsigned header of the same
    // key; they do not even open (the header MAC they were sealed under is gone), and a
    // reader that expects a signer refuses the header first.
    let unsigned = Runner::new()
        .vec(
            &Encryptor::new(key())
                .chunk_size(chunk())
                .fixed_salt_for_tests([1; 32]),
            b"",
        )
        .unwrap();
    let mut stripped = unsigned[..header_len(&unsigned)].to_vec();
    for i in 0..6 {
        let end = (at(i) + STRIDE).min(sealed.len());
        stripped.extend_from_slice(&sealed[at(i)..end - 64]);
    }
    let err = open_everywhere(&open, &stripped).unwrap_err();
    assert!(matches!(err, Error::Unsigned { .. }), "{err}");
}

/// The payload key of an AES-256-GCM container with this file key and salt
/// (`docs/FORMAT.md`, "Key schedule"): what every recipient can compute.
fn payload_key(file_key: &[u8], salt: &[u8; 32]) -> [u8; 32] {
    let hk = Hkdf::<Sha256>::new(Some(salt), file_key);
    let mut key = [0u8; 32];
    hk.expand(b"paracrypt v1 payload aes-256-gcm", &mut key)
        .unwrap();
    key
}

fn nonce(index: u64, last: bool) -> [u8; 12] {
    let mut nonce = [0u8; 12];
    nonce[3..11].copy_from_slice(&index.to_be_bytes());
    nonce[11] = u8::from(last);
    nonce
}

#[test]
fn chunks_forged_by_a_recipient_with_the_file_key_fail() {
    const FILE_KEY: [u8; 16] = *b"forged file key!";
    let salt = [9u8; 32];
    let (recipients, identities) = person();
    let plain = data(3 * CHUNK + 50, 5);
    let signer = ed25519(8);
    let seal = Encryptor::new(Secret::Recipients(recipients))
        .chunk_size(chunk())
        .fixed_salt_for_tests(salt)
        .fixed_file_key_for_tests(FILE_KEY)
        .sign(signer.clone());
    let sealed = Runner::new().vec(&seal, &plain).unwrap();
    let h = header_len(&sealed);
    let open = Decryptor::new(Secret::Identities(Arc::clone(&identities)))
        .verify_with(signer.verifying_key());
    assert_eq!(open_everywhere(&open, &sealed).unwrap(), plain);

    // The recipient rewrites chunk 1 with plaintext of their choice, sealed under the file's
    // own payload key and header MAC (so the AEAD tag holds), keeping the signer's signature.
    let aead = aes_gcm::Aes256Gcm::new(&payload_key(&FILE_KEY, &salt).into());
    let header_mac = &sealed[h - 32..h];
    let mut forged_chunk = vec![b'X'; CHUNK];
    let tag = aead
        .encrypt_inout_detached(
            &nonce(1, false).into(),
            header_mac,
            forged_chunk.as_mut_slice().into(),
        )
        .unwrap();
    let at = h + STRIDE;
    let mut forged = sealed.clone();
    forged[at..at + CHUNK].copy_from_slice(&forged_chunk);
    forged[at + CHUNK..at + CHUNK + 16].copy_from_slice(&tag);
    let err = open_everywhere(&open, &forged).unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 1 }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Signature);
    assert_nothing_forged_is_released(&open, &forged);
    // Without --verify-with too: the header's signer did not sign it.
    let err = open_everywhere(
        &Decryptor::new(Secret::Identities(Arc::clone(&identities))),
        &forged,
    )
    .unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 1 }), "{err}");

    // Signed by the forger's own key instead: still not the signer's.
    let forger = ed25519(9);
    // Its statement names the forger's key: no header naming the signer accepts it.
    let statement = paracrypt_core::container::chunk_statement(
        &forger.verifying_key(),
        header_mac.try_into().unwrap(),
        1,
        false,
        &forged[at..at + CHUNK + 16],
    );
    forged[at + CHUNK + 16..at + STRIDE].copy_from_slice(&forger.sign(&statement).unwrap());
    let err = open_everywhere(&open, &forged).unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 1 }), "{err}");
}

/// Opens a file whose chunk 1 is `X`s that a recipient forged (its tag holds, its signature
/// does not) into memory the caller keeps and sees: the buffer of `engine::run_into_slice`
/// (what Python's `decrypt_into` fills) and what a `Read` adapter hands out. Nothing of the forged plaintext may be there, not even for the
/// moment the chunk is told apart from a damaged one.
fn assert_nothing_forged_is_released(open: &Decryptor, forged: &[u8]) {
    use paracrypt_core::Recipe;
    use paracrypt_core::engine;
    use paracrypt_core::provider::Provider;
    use std::io::Read;
    let forged_run = |bytes: &[u8]| bytes.windows(64).any(|w| w.iter().all(|&b| b == b'X'));
    for threads in [1, 3] {
        let job = open
            .first_job(
                &mut &forged[..],
                Some(forged.len() as u64),
                Provider::default(),
            )
            .unwrap();
        let plan = job.plan().unwrap();
        let mut out = vec![0u8; plan.output_len() as usize];
        let err = with_threads(threads, || engine::run_into_slice(&job, forged, &mut out));
        assert!(matches!(
            err.unwrap_err().source,
            Error::ChunkSignature { index: 1 }
        ));
        assert!(
            !forged_run(&out),
            "the forged chunk reached the caller's buffer"
        );
    }
    let mut read = Vec::new();
    let reader = Runner::new().reader(open, forged).unwrap();
    assert!(reader.take(u64::MAX).read_to_end(&mut read).is_err());
    assert!(!forged_run(&read));
}

/// The statement names the signer's key: a signature by the right key of a statement naming
/// another key (what the first design signed, without the key) does not verify.
#[test]
fn a_chunk_statement_names_its_signer() {
    let (plain, sealed, h) = six_chunks(13, 5);
    let signer = ed25519(13);
    let open = Decryptor::new(key()).verify_with(signer.verifying_key());
    assert_eq!(open_everywhere(&open, &sealed).unwrap(), plain);
    let binding: [u8; 32] = sealed[h - 32..h].try_into().unwrap();
    let at = h + 2 * STRIDE;
    let chunk = &sealed[at..at + CHUNK + 16];
    let mut resigned = sealed.clone();
    let statement = |key: &VerifyingKey| {
        paracrypt_core::container::chunk_statement(key, &binding, 2, false, chunk)
    };
    // Re-signing with the header's key reproduces the chunk (Ed25519 is deterministic)...
    let own = signer.sign(&statement(&signer.verifying_key())).unwrap();
    assert_eq!(own, &sealed[at + CHUNK + 16..at + STRIDE]);
    // ...and the same key signing a statement that names another key is refused.
    let other = signer
        .sign(&statement(&ed25519(14).verifying_key()))
        .unwrap();
    resigned[at + CHUNK + 16..at + STRIDE].copy_from_slice(&other);
    let err = open_everywhere(&open, &resigned).unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 2 }), "{err}");
}

#[test]
fn rekeying_keeps_the_signatures_valid() {
    let (alice_to, alice) = person();
    let (bob_to, bob) = person();
    let plain = data(4 * CHUNK + 1, 6);
    let signer = ed25519(10);
    let sealed = Runner::new()
        .vec(
            &Encryptor::new(Secret::Recipients(alice_to))
                .chunk_size(chunk())
                .sign(signer.clone()),
            &plain,
        )
        .unwrap();
    let mut input = &sealed[..];
    let mut rekeyed = rekey_header(&mut input, alice, bob_to).unwrap();
    rekeyed.extend_from_slice(input);
    let info = read_header(&mut &rekeyed[..]).unwrap();
    assert_eq!(info.version, VERSION_SIGNED);
    assert!(info.binding.is_some());
    assert_eq!(info.signer, Some(signer.verifying_key()));
    let open = Decryptor::new(Secret::Identities(bob)).verify_with(signer.verifying_key());
    assert_eq!(open_everywhere(&open, &rekeyed).unwrap(), plain);
}

#[test]
fn a_range_verifies_only_the_chunks_it_reads() {
    let (plain, sealed, h) = six_chunks(11, 3);
    let mut bad = sealed.clone();
    bad[h + 4 * STRIDE + CHUNK + 16 + 3] ^= 1; // chunk 4's signature
    let open = Decryptor::new(key()).verify_with(ed25519(11).verifying_key());
    let file = temp_with(&bad);
    let runner = Runner::new();
    let mut part = Vec::new();
    runner
        .range(&open, &file, CHUNK as u64, 2 * CHUNK as u64, &mut part)
        .unwrap();
    assert_eq!(part, &plain[CHUNK..3 * CHUNK]);
    let mut part = Vec::new();
    let err = runner
        .range(&open, &file, 4 * CHUNK as u64 + 1, 10, &mut part)
        .unwrap_err();
    assert!(matches!(err, Error::ChunkSignature { index: 4 }), "{err}");
    assert!(part.is_empty());
}

#[test]
fn a_signed_header_parses_and_older_fields_stay_checked() {
    let (_, sealed, h) = six_chunks(12, 4);
    let info = read_header(&mut &sealed[..]).unwrap();
    assert_eq!(info.len, h);
    assert_eq!(h, 119 + 32);
    assert_eq!(info.signature_len(), 64);
    let sizes = info.sizes(sealed.len() as u64);
    assert_eq!(sizes.chunks, 6);
    assert_eq!(*sizes.plaintext.end(), 5 * CHUNK as u64 + 100);
    // A key field of a length beyond the limit, or of zero, is refused from its length.
    for len in [0u16, 4097] {
        let mut bad = sealed.clone();
        bad[76 + 1..76 + 3].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(
            read_header(&mut &bad[..]),
            Err(Error::Header(HeaderFault::Field("signer")))
        ));
    }
    // An unknown scheme, checksum mended.
    let mut bad = sealed.clone();
    bad[76] = 9;
    let sum = Sha256::digest(&bad[..h - 40]);
    bad[h - 40..h - 32].copy_from_slice(&sum[..8]);
    assert!(matches!(
        read_header(&mut &bad[..]),
        Err(Error::Header(HeaderFault::Field("signer")))
    ));
    // The public key of each scheme survives the header.
    for signer in every_scheme() {
        let sealed = Runner::new()
            .vec(&Encryptor::new(Key::generate()).sign(signer.clone()), b"x")
            .unwrap();
        let info = read_header(&mut &sealed[..]).unwrap();
        let public: VerifyingKey = info.signer.unwrap();
        assert_eq!(public.to_field(), signer.verifying_key().to_field());
        assert_eq!(public.scheme(), signer.scheme());
    }
}
