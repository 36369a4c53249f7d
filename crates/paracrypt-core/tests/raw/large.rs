//! Files over 4 GiB: offsets are 64-bit end to end. Only the chunks past 4 GiB of a sparse
//! 4 GiB + 2.5 MiB file are run (the positional driver takes any index range, as an MPI rank does), and
//! checked against RustCrypto's `ctr` seeked to the same byte.

use aes::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use paracrypt_core::{Recipe, engine};
use std::os::unix::fs::FileExt;

#[test]
fn chunks_past_4_gib_land_at_their_offsets() {
    let len: u64 = (4 << 30) + (5 << 19) + 12_345;
    let chunk = 1 << 20;
    let input = tempfile::tempfile().unwrap();
    input.set_len(len).unwrap(); // sparse: reads as zeros
    input.write_all_at(b"marker", (4 << 30) + 7).unwrap();
    let output = tempfile::tempfile().unwrap();

    let (key, iv) = ([7u8; 32], [9u8; 16]);
    let cipher = RawCipher::new(RawCipherName::Aes256Ctr, &key, Some(&iv)).unwrap();
    let recipe = cipher.recipe(Direction::Encrypt, ChunkSize::new(chunk).unwrap());
    let job = (recipe.first_job(&mut &[][..], Some(len), Provider::default())).unwrap();
    let first = (4u64 << 30) / chunk as u64;
    let chunks = job.plan().unwrap().len();
    let end = engine::run(&job, first..chunks, &input, &output).unwrap();
    assert_eq!(end, Some(len));
    assert_eq!(output.metadata().unwrap().len(), len);

    let from = 4u64 << 30;
    let mut got = vec![0u8; (len - from) as usize];
    output.read_exact_at(&mut got, from).unwrap();
    let mut expected = vec![0u8; got.len()];
    expected[7..13].copy_from_slice(b"marker");
    let mut reference = ctr::Ctr128BE::<aes::Aes256>::new(&key.into(), &iv.into());
    reference.seek(from);
    reference.apply_keystream(&mut expected);
    assert!(got == expected);
}
