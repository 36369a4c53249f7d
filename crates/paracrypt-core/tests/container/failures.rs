//! Decryption names what went wrong — wrong key, damaged header, which chunk failed, cut
//! after which chunk, trailing data — and never panics, whatever the damage.

use paracrypt_core::container::{Decryptor, Encryptor, HEADER_LEN, Key, Secret, Suite};
use paracrypt_core::{Error, Runner};
use proptest::prelude::*;

use super::{chunk_size, data, key};

const CHUNK: usize = 1024;

fn sealed(suite: Suite, len: usize) -> Vec<u8> {
    Runner::new()
        .vec(
            &Encryptor::new(key())
                .suite(suite)
                .chunk_size(chunk_size(CHUNK)),
            &data(len, 42),
        )
        .unwrap()
}

fn open(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    Runner::new().vec(&Decryptor::new(key()), bytes)
}

/// Where sealed chunk `i` starts.
fn chunk_at(suite: Suite, i: usize) -> usize {
    HEADER_LEN + i * suite.sealed_chunk_len(CHUNK)
}

#[test]
fn wrong_key_and_wrong_password_fail_before_any_chunk() {
    let file = sealed(Suite::Aes256Gcm, 5000);
    let err = Runner::new()
        .vec(&Decryptor::new(Key::generate()), &file)
        .unwrap_err();
    assert_eq!(err.to_string(), "wrong key or password");

    let pw = Runner::new()
        .vec(&Encryptor::new(Secret::password("right")), b"x")
        .unwrap();
    let err = Runner::new()
        .vec(&Decryptor::new(Secret::password("wrong")), &pw)
        .unwrap_err();
    assert!(matches!(err, Error::WrongKey));
    let err = Runner::new().vec(&Decryptor::new(key()), &pw).unwrap_err();
    assert_eq!(err.to_string(), "this file was encrypted with a password");
    let err = Runner::new()
        .vec(&Decryptor::new(Secret::password("x")), &file)
        .unwrap_err();
    assert_eq!(err.to_string(), "this file was encrypted with a key file");
}

#[test]
fn header_damage_is_named() {
    let file = sealed(Suite::Aes256Gcm, 3000);
    let flip = |at: usize| {
        let mut f = file.clone();
        f[at] ^= 0x01;
        open(&f).unwrap_err().to_string()
    };
    assert_eq!(flip(0), "not a paracrypt file (no PARACRYPT header)");
    assert!(flip(9).contains("unsupported paracrypt format version 0"));
    // Any other field: the checksum catches it.
    for at in [10, 11, 12, 15, 20, 28, 59, 60, 75, 76, 83] {
        assert_eq!(flip(at), "header damaged: checksum mismatch", "byte {at}");
    }
    // The MAC itself.
    for at in [84, 115] {
        assert_eq!(
            flip(at),
            "header damaged: authentication failed",
            "byte {at}"
        );
    }
    assert_eq!(
        open(&file[..50]).unwrap_err().to_string(),
        "header damaged: file shorter than a header"
    );
    assert_eq!(
        open(b"").unwrap_err().to_string(),
        "not a paracrypt file (no PARACRYPT header)"
    );
    assert_eq!(
        open(&file[..HEADER_LEN]).unwrap_err().to_string(),
        "file truncated after the header (no chunks)"
    );
}

/// Every bit flipped and every truncation of a three-chunk file (64-byte chunks, the last one
/// short) is refused, in memory and as a stream, at 1 and 3 threads; a stream writes nothing
/// past the last chunk that authenticated. The CLI's sweep (`hardening::every_byte_damaged_…`)
/// checks one flip of every byte through the binary, and that no output is left.
#[test]
fn every_bit_flip_and_every_truncation_is_refused() {
    let encryptor = Encryptor::new(key()).chunk_size(chunk_size(64));
    let plain = data(148, 13);
    let good = Runner::new().vec(&encryptor, &plain).unwrap();
    assert_eq!(good.len(), HEADER_LEN + 3 * 16 + 148);
    let mut damaged: Vec<Vec<u8>> = (0..good.len() * 8)
        .map(|bit| {
            let mut bytes = good.clone();
            bytes[bit / 8] ^= 1 << (bit % 8);
            bytes
        })
        .collect();
    damaged.extend((0..good.len()).map(|len| good[..len].to_vec()));
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            for (case, bytes) in damaged.iter().enumerate() {
                assert!(
                    open(bytes).is_err(),
                    "case {case} at {threads} threads got through"
                );
                let mut out = Vec::new();
                let streamed =
                    Runner::new().stream(&Decryptor::new(key()), &mut &bytes[..], &mut out);
                assert!(
                    streamed.is_err(),
                    "case {case} streamed at {threads} threads"
                );
                assert!(
                    plain.starts_with(&out),
                    "case {case}: unproven bytes written"
                );
            }
        });
    }
}

#[test]
fn a_forged_header_with_a_fixed_checksum_fails_its_mac() {
    // An attacker who changes the chunk size and recomputes the unkeyed checksum.
    use sha2::{Digest, Sha256};
    let mut file = sealed(Suite::Aes256Gcm, 3000);
    file[14] ^= 0x04; // chunk size 1024 → 0 + 1024 ^ 0x0400
    file[15] = 0x10;
    let sum = Sha256::digest(&file[..76]);
    file[76..84].copy_from_slice(&sum[..8]);
    assert_eq!(
        open(&file).unwrap_err().to_string(),
        "header damaged: authentication failed"
    );
}

#[test]
fn every_suite_names_the_damaged_chunk() {
    for &suite in Suite::ALL {
        let file = sealed(suite, 4 * CHUNK + 100); // chunks 0..=4, chunk 4 is the short last one
        for chunk in 0..5 {
            for offset in [0, 7] {
                let mut f = file.clone();
                f[chunk_at(suite, chunk) + offset] ^= 0x80;
                let err = open(&f).unwrap_err();
                assert!(
                    matches!(err, Error::ChunkAuth { index } if index == chunk as u64),
                    "{suite} chunk {chunk}: {err}"
                );
            }
        }
        // The tag at the very end.
        let mut f = file.clone();
        let n = f.len();
        f[n - 1] ^= 1;
        assert!(
            matches!(open(&f).unwrap_err(), Error::ChunkAuth { index: 4 }),
            "{suite}"
        );
    }
}

#[test]
fn truncation_is_detected_at_and_between_chunk_boundaries() {
    for &suite in Suite::ALL {
        let file = sealed(suite, 4 * CHUNK); // four full chunks, chunk 3 last
        // Cut exactly after chunk 1 or 2: the rest authenticates, but not as the last chunk.
        for keep in [1, 2, 3] {
            let err = open(&file[..chunk_at(suite, keep)]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("file truncated after chunk {}", keep - 1),
                "{suite}"
            );
        }
        // Cut inside a chunk.
        let err = open(&file[..chunk_at(suite, 2) + 100]).unwrap_err();
        assert!(
            matches!(err, Error::ChunkAuth { index: 2 }),
            "{suite}: {err}"
        );
        let err = open(&file[..chunk_at(suite, 2) + 5]).unwrap_err();
        assert!(
            matches!(err, Error::Truncated { index: 2 }),
            "{suite}: {err}"
        );
        let err = open(&file[..file.len() - 1]).unwrap_err();
        assert!(
            matches!(err, Error::ChunkAuth { index: 3 }),
            "{suite}: {err}"
        );
    }
}

#[test]
fn extension_swaps_and_splices_fail() {
    for &suite in Suite::ALL {
        let file = sealed(suite, 4 * CHUNK);
        let stride = suite.sealed_chunk_len(CHUNK);
        // A copy of the last chunk appended: the real last chunk now sits before the end.
        let mut longer = file.clone();
        longer.extend_from_slice(&file[chunk_at(suite, 3)..]);
        assert_eq!(
            open(&longer).unwrap_err().to_string(),
            "trailing data after the last chunk (chunk 3)",
            "{suite}"
        );
        // A few bytes appended.
        let mut longer = file.clone();
        longer.extend_from_slice(b"junk");
        assert!(open(&longer).is_err(), "{suite}");
        // Chunks 0 and 1 swapped.
        let mut swapped = file.clone();
        let (a, b) = (chunk_at(suite, 0), chunk_at(suite, 1));
        swapped[a..a + stride].copy_from_slice(&file[b..b + stride]);
        swapped[b..b + stride].copy_from_slice(&file[a..a + stride]);
        assert!(
            matches!(open(&swapped).unwrap_err(), Error::ChunkAuth { index: 0 }),
            "{suite}"
        );
        // Chunk 1 from another file encrypted with the same key (a different salt).
        let other = sealed(suite, 4 * CHUNK);
        let mut spliced = file.clone();
        spliced[b..b + stride].copy_from_slice(&other[b..b + stride]);
        assert!(
            matches!(open(&spliced).unwrap_err(), Error::ChunkAuth { index: 1 }),
            "{suite}"
        );
        // The other file's header with this file's chunks.
        let mut mixed = other[..HEADER_LEN].to_vec();
        mixed.extend_from_slice(&file[HEADER_LEN..]);
        assert!(
            matches!(open(&mixed).unwrap_err(), Error::ChunkAuth { index: 0 }),
            "{suite}"
        );
    }
}

#[test]
fn the_empty_file_is_one_final_empty_chunk() {
    for &suite in Suite::ALL {
        let file = sealed(suite, 0);
        assert_eq!(
            file.len(),
            HEADER_LEN + suite.cbc_block().unwrap_or(0) + suite.tag_len()
        );
        assert_eq!(open(&file).unwrap(), b"");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random damage anywhere: always an error, never a panic, never wrong plaintext. Each
    /// edit flips at least one bit of a byte no other edit touches (later edits of the same
    /// byte are dropped, so two edits cannot cancel out), and a cut always removes bytes.
    #[test]
    fn random_mutations_are_errors_not_panics(
        suite_index in 0..Suite::ALL.len(),
        len in 0usize..5000,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let suite = Suite::ALL[suite_index];
        let mut file = sealed(suite, len);
        let original = file.clone();
        let mut edited = std::collections::BTreeSet::new();
        for (at, mask) in edits {
            let i = at.index(file.len());
            if edited.insert(i) {
                file[i] ^= mask;
            }
        }
        prop_assert_ne!(&file, &original);
        if let Some(cut) = cut {
            let keep = cut.index(file.len());
            file.truncate(keep);
        }
        prop_assert!(open(&file).is_err());
        let mut out = Vec::new();
        prop_assert!(Runner::new().stream(&Decryptor::new(key()), &mut &file[..], &mut out).is_err());
    }
}
