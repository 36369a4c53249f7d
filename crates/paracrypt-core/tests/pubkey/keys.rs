//! Key files: what paracrypt writes reads back; every PEM and DER form of the crates' encoders
//! is understood; wrong types, garbage and unsupported keys are clear errors.

use paracrypt_core::pubkey::Error;
use paracrypt_core::pubkey::ecdsa::{EcdsaPrivateKey, EcdsaPublicKey};
use paracrypt_core::pubkey::pem::{KeyFile, parse};
use paracrypt_core::pubkey::rsa::{RsaPrivateKey, RsaPublicKey};
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};

use super::rsa2048;

#[test]
fn written_keys_read_back() {
    let rsa = rsa2048();
    let pem = rsa.to_pkcs8_pem().unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
    assert_eq!(
        RsaPrivateKey::from_key_file(pem.as_bytes())
            .unwrap()
            .as_rsa(),
        rsa.as_rsa()
    );
    let public = rsa.public_key().to_spki_pem().unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----\n"));
    assert_eq!(
        RsaPublicKey::from_key_file(public.as_bytes()).unwrap(),
        rsa.public_key()
    );

    let ec = EcdsaPrivateKey::generate();
    let pem = ec.to_pkcs8_pem().unwrap();
    let back = EcdsaPrivateKey::from_key_file(pem.as_bytes()).unwrap();
    assert_eq!(back.public_key(), ec.public_key());
    let public = ec.public_key().to_spki_pem().unwrap();
    assert_eq!(
        EcdsaPublicKey::from_key_file(public.as_bytes()).unwrap(),
        ec.public_key()
    );
}

#[test]
fn pkcs1_sec1_and_der_forms_are_read() {
    let rsa = rsa2048().as_rsa();
    let pkcs1 = rsa.to_pkcs1_pem(LineEnding::LF).unwrap();
    assert!(pkcs1.starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    assert!(matches!(
        parse(pkcs1.as_bytes()).unwrap(),
        KeyFile::RsaPrivate(_)
    ));
    let pkcs1_public = rsa.to_public_key().to_pkcs1_pem(LineEnding::CRLF).unwrap();
    assert!(matches!(
        parse(pkcs1_public.as_bytes()).unwrap(),
        KeyFile::RsaPublic(_)
    ));
    let der = rsa.to_pkcs8_der().unwrap();
    assert!(matches!(
        parse(der.as_bytes()).unwrap(),
        KeyFile::RsaPrivate(_)
    ));
    let der = rsa.to_pkcs1_der().unwrap();
    assert!(matches!(
        parse(der.as_bytes()).unwrap(),
        KeyFile::RsaPrivate(_)
    ));
    let der = rsa.to_public_key().to_public_key_der().unwrap();
    assert!(matches!(
        parse(der.as_bytes()).unwrap(),
        KeyFile::RsaPublic(_)
    ));

    let secret = p256::SecretKey::from_slice(&[7; 32]).unwrap();
    let sec1 = secret.to_sec1_pem(LineEnding::LF).unwrap();
    assert!(sec1.starts_with("-----BEGIN EC PRIVATE KEY-----"));
    // openssl ecparam -genkey writes the parameters first, and -text writes a dump before.
    let with_params = format!(
        "Private-Key: (256 bit)\npriv: ...\n-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{}",
        &*sec1
    );
    let key = EcdsaPrivateKey::from_key_file(with_params.as_bytes()).unwrap();
    assert_eq!(key.as_p256().to_bytes().as_slice(), &[7; 32]);
    let der = secret.to_sec1_der().unwrap();
    assert!(matches!(parse(&der).unwrap(), KeyFile::EcPrivate(_)));
    let der = secret.public_key().to_public_key_der().unwrap();
    assert!(matches!(
        parse(der.as_bytes()).unwrap(),
        KeyFile::EcPublic(_)
    ));
}

#[test]
fn public_keys_can_be_taken_from_private_key_files() {
    let rsa = rsa2048();
    let pem = rsa.to_pkcs8_pem().unwrap();
    assert_eq!(
        RsaPublicKey::from_key_file(pem.as_bytes()).unwrap(),
        rsa.public_key()
    );
    let ec = EcdsaPrivateKey::generate();
    let pem = ec.to_pkcs8_pem().unwrap();
    assert_eq!(
        EcdsaPublicKey::from_key_file(pem.as_bytes()).unwrap(),
        ec.public_key()
    );
}

#[test]
fn wrong_key_types_say_what_the_file_holds() {
    let rsa_public = rsa2048().public_key().to_spki_pem().unwrap();
    let err = RsaPrivateKey::from_key_file(rsa_public.as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "wrong key type: expected an RSA private key, found an RSA public key"
    );
    let ec = EcdsaPrivateKey::generate().to_pkcs8_pem().unwrap();
    let err = RsaPublicKey::from_key_file(ec.as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "wrong key type: expected an RSA public key, found an EC (P-256) private key"
    );
    let rsa_private = rsa2048().to_pkcs8_pem().unwrap();
    let err = EcdsaPrivateKey::from_key_file(rsa_private.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::WrongKeyType { .. }), "{err}");
}

#[test]
fn garbage_is_not_a_key() {
    for bytes in [
        &b""[..],
        b"hello world",
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        b"-----BEGIN PRIVATE KEY-----\nno end line",
        &[0x30, 0x82, 0x01, 0x00, 0xff, 0x00],
        &[0xff; 300],
        // Found by the key_files fuzz target: a BEGIN line whose label runs on to the next
        // lines (here with NULs in it) was quoted whole, over many lines.
        b"-----BEGIN OPENSSH PRIVU\0\0----\nb3BlbnNzaC1rZXktdjEA\nAAAA-----\n",
        b"-----BEGIN \x01-----\nAAAA\n",
    ] {
        let err = parse(bytes).unwrap_err();
        assert!(matches!(err, Error::KeyFormat { .. }), "{err}");
        let message = err.to_string();
        assert!(!message.contains('\n') && message.len() < 200, "{message}");
        assert!(!message.chars().any(char::is_control), "{message}");
    }
}

#[test]
fn unsupported_keys_are_named() {
    let encrypted =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let err = parse(encrypted.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("encrypted"), "{err}");
    assert!(err.to_string().contains("openssl pkey"), "{err}");
    let traditional = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
    assert!(
        parse(traditional.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("encrypted")
    );
    let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    assert!(
        parse(cert.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("certificate")
    );
    // An Ed25519 key from `openssl genpkey -algorithm ed25519`.
    let ed25519 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ/wYA65UAGpveJy6RG62jhRvfXoTdfGLTTuNezjdNfD\n-----END PRIVATE KEY-----\n";
    let err = parse(ed25519.as_bytes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unsupported key: a private key of type Ed25519; paracrypt handles RSA and ECDSA P-256 keys"
    );
    // A P-384 public key from `openssl ecparam -name secp384r1 -genkey | openssl ec -pubout`.
    let p384 = "-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEeYdQD698SbFOvGxuD4hUEi6C8d9WjWa5
JxaWnQO71M/zddfor7HsSgsCI4TjAPxn8nbQ2209zR6JdOxdWZKMtLnLk1W4fsnQ
QkSZ8PtbcOUPDFCJ4PU3NPIYk5bBSL5n
-----END PUBLIC KEY-----
";
    let err = parse(p384.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("secp384r1"), "{err}");
}
