//! Inputs that cannot be right are refused with an error that says why, before any work.

use paracrypt_core::Error;
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};

use super::{chunk_size, cipher, process};

#[test]
fn unknown_cipher_lists_the_valid_names() {
    let err = "aes-256-gcm".parse::<RawCipherName>().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unknown cipher `aes-256-gcm`"), "{text}");
    assert!(
        text.contains("aes-256-ctr") && text.contains("rc4"),
        "{text}"
    );
    assert_eq!(
        "AES-256-CTR".parse::<RawCipherName>().unwrap(),
        RawCipherName::Aes256Ctr
    );
    assert_eq!(
        "-des-ede3-ecb".parse::<RawCipherName>().unwrap(),
        RawCipherName::DesEde3
    );
}

#[test]
fn key_and_iv_lengths_are_checked() {
    let err = RawCipher::new(RawCipherName::Aes256Ctr, &[0; 16], Some(&[0; 16])).unwrap_err();
    assert!(matches!(err, Error::KeyLength { got: 16, .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "aes-256-ctr needs a key of 32 bytes, got 16 bytes"
    );
    let err = RawCipher::new(RawCipherName::BfCbc, &[0; 3], Some(&[0; 8])).unwrap_err();
    assert!(err.to_string().contains("4 to 56 bytes"), "{err}");
    assert!(RawCipher::new(RawCipherName::BfCbc, &[0; 56], Some(&[0; 8])).is_ok());
    assert!(RawCipher::new(RawCipherName::Rc4, &[0; 257], None).is_err());
    assert!(RawCipher::new(RawCipherName::Rc4, &[0; 1], None).is_ok());

    let err = RawCipher::new(RawCipherName::Aes128Cbc, &[0; 16], None).unwrap_err();
    assert_eq!(err.to_string(), "aes-128-cbc needs an IV of 16 bytes");
    let err = RawCipher::new(RawCipherName::DesCbc, &[0; 8], Some(&[0; 16])).unwrap_err();
    assert_eq!(err.to_string(), "des-cbc needs an IV of 8 bytes, got 16");
    let err = RawCipher::new(RawCipherName::Aes128Ecb, &[0; 16], Some(&[0; 16])).unwrap_err();
    assert_eq!(err.to_string(), "aes-128-ecb takes no IV");
}

#[test]
fn chunk_sizes_must_be_whole_blocks_and_bounded() {
    let c = cipher(RawCipherName::Aes128Ctr);
    for bad in [0, 15, 4097, (1 << 30) + 16] {
        let err = ChunkSize::new(bad).unwrap_err();
        assert!(matches!(err, Error::ChunkSize { .. }), "{bad}: {err}");
    }
    assert!(process(&c, Direction::Encrypt, &mut vec![0; 100], chunk_size(16)).is_ok());
}

#[test]
fn unpadded_input_must_be_whole_blocks() {
    let c = cipher(RawCipherName::Aes128Cbc).with_padding(false);
    let mut buf = vec![0u8; 17];
    let err = process(&c, Direction::Encrypt, &mut buf, chunk_size(4096)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input of 17 bytes is not a whole number of 16-byte blocks (padding is off)"
    );
    assert_eq!(buf.len(), 17, "nothing was done");
    // CTR and RC4 never pad and take any length.
    let mut buf = vec![0u8; 17];
    let ctr = cipher(RawCipherName::Aes128Ctr).with_padding(false);
    process(&ctr, Direction::Encrypt, &mut buf, chunk_size(4096)).unwrap();
}

#[test]
fn padded_ciphertext_is_checked() {
    let c = cipher(RawCipherName::Aes256Cbc);
    let mut buf = vec![0u8; 33];
    assert!(matches!(
        process(&c, Direction::Decrypt, &mut buf, chunk_size(4096)),
        Err(Error::PartialBlock { len: 33, .. })
    ));
    let mut empty = Vec::new();
    let err = process(&c, Direction::Decrypt, &mut empty, chunk_size(4096)).unwrap_err();
    assert!(matches!(err, Error::TooShort { len: 0, .. }), "{err}");

    // A wrong key almost never yields valid padding.
    let mut sealed = b"sixteen byte msg and some more".to_vec();
    process(&c, Direction::Encrypt, &mut sealed, chunk_size(4096)).unwrap();
    let wrong = RawCipher::new(RawCipherName::Aes256Cbc, &[9; 32], Some(&[0xf0; 16])).unwrap();
    let err = process(&wrong, Direction::Decrypt, &mut sealed, chunk_size(4096)).unwrap_err();
    assert!(matches!(err, Error::BadPadding), "{err}");
}

#[test]
fn padding_flag_does_not_apply_to_stream_modes() {
    assert!(!cipher(RawCipherName::Aes128Ctr).padding());
    assert!(!cipher(RawCipherName::Rc4).padding());
    assert!(cipher(RawCipherName::BfEcb).padding());
}

#[test]
fn legacy_ciphers_are_labelled() {
    use paracrypt_core::raw::Hazard;
    assert!(RawCipherName::Aes256Ctr.hazards().is_empty());
    assert!(RawCipherName::Aes256Cbc.hazards().is_empty());
    assert_eq!(RawCipherName::Aes256Ecb.hazards(), vec![Hazard::EcbMode]);
    assert_eq!(
        RawCipherName::DesCbc.hazards(),
        vec![Hazard::LegacyAlgorithm]
    );
    assert_eq!(
        RawCipherName::BfEcb.hazards(),
        vec![Hazard::LegacyAlgorithm, Hazard::EcbMode]
    );
    assert_eq!(RawCipherName::Rc4.hazards(), vec![Hazard::LegacyAlgorithm]);
}
