//! The fuzz targets' one door into paracrypt.
//!
//! Every target in `fuzz_targets/` is a few lines that call the functions here, and these call
//! paracrypt's public API through as few entry points as there are formats: when that API
//! changes shape, this file is the one to fix.
//!
//! What every target checks, beyond "no panic, no hang":
//! - a rejection is an [`Error`] of the kind the input calls for ([`rejected`]): hostile bytes
//!   are bad data (or a bad key file, a usage error), never an I/O error, since nothing here
//!   touches the system;
//! - whatever is decrypted, every provider and every driver (in memory, stream) gives the
//!   same answer: the same bytes, or the same kind of error;
//! - no allocation follows a length the input claims beyond the documented limits
//!   (`scripts/fuzz.sh` runs libFuzzer with `-rss_limit_mb` and `-malloc_limit_mb`).

use std::sync::OnceLock;

use ::age::secrecy::SecretString;
use paracrypt_core::agefile::{self, AgeFormat};
use paracrypt_core::container::{self, HeaderInfo, Key, Secret};
use paracrypt_core::engine;
use paracrypt_core::raw::salted::{self, PasswordCipher, PasswordKdf};
use paracrypt_core::raw::{Direction, RawCipher, RawCipherName};
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::sign;
use paracrypt_core::{Error, ErrorKind, Recipe, Runner};

pub use paracrypt_core::container::Suite;
pub use paracrypt_core::plan::ChunkSize;
pub use paracrypt_core::provider::Provider;

pub mod reference;

/// The container key of the test vectors in `tests/testdata/container/` (so that the seeds
/// decrypt, and the fuzzer starts past the key check).
pub const CONTAINER_KEY: [u8; 32] = *b"paracrypt testkit key (32 bytes)";
/// The identities of the container vectors (version 2), of the C2SP CCTV age vectors (X25519
/// and post-quantum) and of the age files in the curated corpus.
pub const IDENTITIES: &str = "\
# the container test vectors
AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZ9K4CN
# the CCTV age vectors
AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0
AGE-SECRET-KEY-143WN7DCXU4G8R5AXQSSYD9AEPYDNT3HXSLWSPK36CDU6E8M59SSSAGZ3KG
AGE-SECRET-KEY-PQ-1HZLGZUPT4ETPKDEV8HSGFDCYZ4E522W0A7PU2LHT8EH9W6YLNC3SW78XKG
";
/// The identity the differential target seals age files to (the CCTV vectors' X25519 one).
const SEAL_IDENTITY: &str =
    "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0\n";
/// The passphrase of the CCTV age vectors.
pub const PASSPHRASE: &str = "password";
/// The highest scrypt work factor a fuzzed age file may make the passphrase pay for: enough
/// for the CCTV vectors, cheap enough for thousands of runs a second.
pub const SCRYPT_MAX_LOG_N: u8 = 10;
/// The password of the Argon2id container vectors.
pub const CONTAINER_PASSWORD: &str = "paracrypt testkit password";
/// Argon2id costs above these are not worth a fuzzing run (the header parser's own limits are
/// fuzzed by `container_header`): at most 1 MiB, 2 passes, 4 lanes.
const ARGON2_FUZZ_LIMITS: (u32, u32, u32) = (1024, 2, 4);

/// The providers compiled into this build.
pub fn providers() -> &'static [Provider] {
    Provider::ALL
}

/// A Rayon pool of `1 + threads % 4` threads, built once (building one per run would cost
/// more than the run).
pub fn pool(threads: u8) -> &'static rayon::ThreadPool {
    static POOLS: [OnceLock<rayon::ThreadPool>; 4] = [const { OnceLock::new() }; 4];
    let n = usize::from(threads % 4);
    POOLS[n].get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n + 1)
            .build()
            .expect("a thread pool")
    })
}

/// Checks a rejection: never an I/O error (these inputs are all in memory), and of `kind`.
#[track_caller]
pub fn rejected(error: &Error, kind: ErrorKind) {
    assert_eq!(error.kind(), kind, "{error:?} ({error}) should be {kind:?}");
    let message = error.to_string();
    assert!(
        !message.is_empty() && !message.contains('\n'),
        "{message:?}"
    );
}

/// Checks an outcome that should be a success or a rejection of `kind`.
#[track_caller]
pub fn ok_or<T>(outcome: Result<T, Error>, kind: ErrorKind) -> Option<T> {
    outcome.map_err(|e| rejected(&e, kind)).ok()
}

/// Checks that two runs over the same input agree: the same bytes, or errors of one kind.
#[track_caller]
pub fn agree(what: &str, a: &Result<Vec<u8>, Error>, b: &Result<Vec<u8>, Error>) {
    match (a, b) {
        (Ok(a), Ok(b)) => assert!(a == b, "{what}: the outputs differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind(), b.kind(), "{what}: {a} vs {b}"),
        (a, b) => panic!("{what}: {:?} vs {:?}", a.as_ref().err(), b.as_ref().err()),
    }
}

fn identities() -> Identities {
    let mut identities = Identities::new();
    identities
        .add_file("fuzz identities", IDENTITIES.as_bytes())
        .expect("valid identities");
    identities
}

fn passphrase_identity() -> Identities {
    Identities::passphrase(SecretString::from(PASSPHRASE), Some(SCRYPT_MAX_LOG_N))
}

/// The container format: version 1 and 2 headers, recipient blocks, whole files.
pub mod container_files {
    use super::*;

    /// Where the version 2 recipient block's length is, and the checksum's and MAC's lengths
    /// (docs/FORMAT.md).
    const CHECKSUM_LEN: usize = 8;
    const MAC_LEN: usize = 32;

    /// Makes a header's checksum match its fields, so that the fuzzer reaches the fields
    /// behind it (as PNG fuzzers mend CRCs). Does nothing to bytes too short to hold one.
    pub fn mend_checksum(bytes: &mut [u8]) {
        use sha2::Digest;
        let Ok(Some(len)) = container::header_len(bytes) else {
            return;
        };
        if len > bytes.len() {
            return;
        }
        let at = len - MAC_LEN - CHECKSUM_LEN;
        let sum = sha2::Sha256::digest(&bytes[..at]);
        bytes[at..at + CHECKSUM_LEN].copy_from_slice(&sum[..CHECKSUM_LEN]);
    }

    /// Parses a header as `paracrypt info` does, checks what it says against the bytes, and
    /// returns it.
    pub fn parse_header(bytes: &[u8]) -> Option<HeaderInfo> {
        let len = ok_or(container::header_len(bytes), ErrorKind::Data);
        let info = ok_or(HeaderInfo::parse(bytes), ErrorKind::Data)?;
        assert_eq!(len, Some(Some(info.len)), "header_len and parse disagree");
        assert!(info.len <= bytes.len());
        // A signed header (version 3) adds its signer block: 3 bytes and the public key.
        let signer = match &info.signer {
            Some(key) => {
                assert_eq!(info.version, container::VERSION_SIGNED);
                assert!(key.signature_len() > 0);
                3 + key.to_field().len()
            }
            None => 0,
        };
        assert!(info.len <= container::HEADER_LEN + container::MAX_RECIPIENT_BLOCK + signer);
        let read = container::read_header(&mut &bytes[..]).expect("a parsed header reads");
        assert_eq!(read, info);
        Some(info)
    }

    /// The secrets a fuzzed container is opened with: the vectors' key, their identities, and
    /// their password when the header's Argon2id costs are small.
    fn secrets(bytes: &[u8]) -> Vec<Secret> {
        let mut secrets = vec![
            Secret::Key(Key::from_bytes(CONTAINER_KEY)),
            Secret::Identities(identities().into()),
        ];
        if let Ok(HeaderInfo {
            kdf: container::Kdf::Argon2id(params),
            ..
        }) = HeaderInfo::parse(bytes)
        {
            let (m, t, p) = ARGON2_FUZZ_LIMITS;
            if params.m_cost <= m && params.t_cost <= t && params.p_cost <= p {
                secrets.push(Secret::password_with_params(CONTAINER_PASSWORD, params));
            }
        }
        secrets
    }

    /// The signer of the signed container vectors and seeds (Ed25519, seed 32 × `0x5e`).
    pub fn signer() -> sign::SigningKey {
        sign::SigningKey::ed25519_from_seed(&[0x5e; 32])
    }

    /// What a rejection of a container may be: bad data, or (a signed file's chunk, its signer,
    /// a missing signature) a signature failure.
    fn container_rejected(error: &Error) {
        let kind = match error.kind() {
            ErrorKind::Signature => ErrorKind::Signature,
            _ => ErrorKind::Data,
        };
        rejected(error, kind);
    }

    /// Decrypts a whole file with every secret, on every provider, in memory and as a
    /// stream, and again requiring the signed vectors' signer (`--verify-with`): each
    /// rejection is bad data or a signature failure, and all runs agree.
    pub fn open(bytes: &[u8], threads: u8) {
        let verify = [None, Some(signer().verifying_key())];
        let runs = secrets(bytes)
            .into_iter()
            .flat_map(|secret| verify.clone().map(move |key| (secret.clone(), key)));
        for (secret, expected) in runs {
            let mut first: Option<Result<Vec<u8>, Error>> = None;
            for &provider in providers() {
                let mut decryptor = container::Decryptor::new(secret.clone());
                if let Some(key) = &expected {
                    decryptor = decryptor.verify_with(key.clone());
                }
                let runner = Runner::new().provider(provider);
                let in_memory = pool(threads).install(|| runner.vec(&decryptor, bytes));
                let streamed = pool(threads.wrapping_add(1)).install(|| {
                    let mut out = Vec::new();
                    runner
                        .stream(&decryptor, &mut &bytes[..], &mut out)
                        .map(|n| {
                            assert_eq!(n as usize, out.len());
                            out
                        })
                });
                if let Err(e) = &in_memory {
                    container_rejected(e);
                }
                if let Err(e) = &streamed {
                    container_rejected(e);
                }
                agree("container: memory vs stream", &in_memory, &streamed);
                match &first {
                    None => first = Some(in_memory),
                    Some(first) => agree("container: providers", first, &in_memory),
                }
            }
        }
    }

    /// What [`seal`] makes.
    #[derive(Clone, Copy, Debug)]
    pub struct Sealing<'a> {
        /// The suite.
        pub suite: Suite,
        /// Plaintext bytes per chunk.
        pub chunk_size: ChunkSize,
        /// The key.
        pub key: [u8; 32],
        /// The salt (fixed, so that the output is reproducible).
        pub salt: [u8; container::SALT_LEN],
        /// The plaintext.
        pub plaintext: &'a [u8],
    }

    /// Seals with the key on `provider`.
    pub fn seal(how: &Sealing, provider: Provider) -> Vec<u8> {
        let encryptor = container::Encryptor::new(Key::from_bytes(how.key))
            .suite(how.suite)
            .chunk_size(how.chunk_size)
            .fixed_salt_for_tests(how.salt);
        (Runner::new().provider(provider))
            .vec(&encryptor, how.plaintext)
            .expect("sealing in memory cannot fail")
    }

    /// Opens with the key on `provider`.
    pub fn unseal(key: [u8; 32], sealed: &[u8], provider: Provider) -> Result<Vec<u8>, Error> {
        let decryptor = container::Decryptor::new(Key::from_bytes(key));
        Runner::new().provider(provider).vec(&decryptor, sealed)
    }
}

/// age v1 files: headers, stanzas, armor, whole files.
pub mod age_files {
    use super::*;

    /// Parses an age header (binary or armored prefix detection, then the header) and its
    /// stanzas; returns the header's length.
    pub fn parse_header(bytes: &[u8]) -> Option<usize> {
        let _ = agefile::detect(bytes);
        let header = ok_or(agefile::Header::read(&mut &bytes[..]), ErrorKind::Data)?;
        assert!(!header.stanzas().is_empty());
        assert!(header.as_bytes().len() <= agefile::MAX_HEADER_LEN);
        assert!(bytes.starts_with(header.as_bytes()));
        Some(header.as_bytes().len())
    }

    /// Parses a block of stanzas; what is read writes back to a block that reads the same.
    pub fn parse_stanzas(bytes: &[u8]) {
        use paracrypt_core::recipient::{read_stanzas, write_stanzas};
        if let Some(stanzas) = ok_or(read_stanzas(bytes), ErrorKind::Data) {
            let mut again = Vec::new();
            write_stanzas(&stanzas, &mut again);
            let reread = read_stanzas(&again).expect("written stanzas read back");
            assert_eq!(stanzas.len(), reread.len());
            for (a, b) in stanzas.iter().zip(&reread) {
                assert!(a.tag == b.tag && a.args == b.args && a.body == b.body);
            }
        }
    }

    /// Decrypts a whole file (binary or armored) with the fuzz identities, or with the
    /// passphrase when it holds a scrypt stanza, on every provider, in memory and as a
    /// stream: each rejection is bad data, and all runs agree.
    pub fn open(bytes: &[u8], threads: u8) {
        let scrypt = bytes.windows(9).any(|w| w == b"-> scrypt");
        let identities: std::sync::Arc<Identities> = if scrypt {
            passphrase_identity().into()
        } else {
            identities().into()
        };
        let mut first: Option<Result<Vec<u8>, Error>> = None;
        for &provider in providers() {
            let decryptor = agefile::Decryptor::new(identities.clone());
            let runner = Runner::new().provider(provider);
            let in_memory = pool(threads).install(|| decrypt(&runner, &decryptor, bytes, false));
            let streamed =
                pool(threads.wrapping_add(1)).install(|| decrypt(&runner, &decryptor, bytes, true));
            if let Err(e) = &in_memory {
                rejected(e, ErrorKind::Data);
            }
            if let Err(e) = &streamed {
                rejected(e, ErrorKind::Data);
            }
            agree("age: memory vs stream", &in_memory, &streamed);
            match &first {
                None => first = Some(in_memory),
                Some(first) => agree("age: providers", first, &in_memory),
            }
        }
    }

    /// Decrypts an age file in memory (`stream`: as a stream), or an armored one in order.
    fn decrypt(
        runner: &Runner,
        decryptor: &agefile::Decryptor,
        bytes: &[u8],
        stream: bool,
    ) -> Result<Vec<u8>, Error> {
        let armored = agefile::detect(bytes) == Some(AgeFormat::Armored);
        if !(armored || stream) {
            return runner.vec(decryptor, bytes);
        }
        let mut out = Vec::new();
        let n = if armored {
            decryptor.decrypt_armored(runner, &mut &bytes[..], &mut out)?
        } else {
            runner.stream(decryptor, &mut &bytes[..], &mut out)?
        };
        assert_eq!(n as usize, out.len());
        Ok(out)
    }

    /// The recipient of [`SEAL_IDENTITY`].
    fn recipients() -> Recipients {
        let mut recipients = Recipients::new();
        for line in paracrypt_core::recipient::recipients_of("fuzz", SEAL_IDENTITY.as_bytes())
            .expect("a valid identity")
        {
            recipients.add(&line, "fuzz").expect("a valid recipient");
        }
        recipients
    }

    /// Seals `plaintext` to the fuzz identities with a fixed file key and nonce on
    /// `provider`; returns the file and its header's length (the header's stanzas are
    /// random, the payload is not).
    pub fn seal(
        plaintext: &[u8],
        file_key: [u8; 16],
        nonce: [u8; agefile::NONCE_LEN],
        armor: bool,
        provider: Provider,
    ) -> Vec<u8> {
        let encryptor =
            agefile::Encryptor::new(recipients()).fixed_key_and_nonce_for_tests(file_key, nonce);
        let runner = Runner::new().provider(provider);
        let sealed = if armor {
            let mut out = Vec::new();
            (encryptor.encrypt_armored(&runner, &mut &plaintext[..], &mut out)).map(|_| out)
        } else {
            runner.vec(&encryptor, plaintext)
        };
        sealed.expect("sealing in memory cannot fail")
    }

    /// Opens with the fuzz identities on `provider`.
    pub fn unseal(sealed: &[u8], provider: Provider) -> Result<Vec<u8>, Error> {
        let runner = Runner::new().provider(provider);
        decrypt(
            &runner,
            &agefile::Decryptor::new(identities()),
            sealed,
            false,
        )
    }

    /// The payload of a binary age file: what follows its header.
    pub fn payload(sealed: &[u8]) -> &[u8] {
        let header = agefile::Header::read(&mut &sealed[..]).expect("a sealed header");
        &sealed[header.as_bytes().len()..]
    }
}

/// openssl `enc` files and raw ciphers.
pub mod openssl {
    use super::*;

    /// Every raw cipher.
    pub fn names() -> &'static [RawCipherName] {
        RawCipherName::ALL
    }

    /// The password of the salted seeds (`openssl enc -pass pass:fuzz`).
    pub const PASSWORD: &[u8] = b"fuzz";

    /// The raw cipher a choice byte picks.
    pub fn name(choice: u8) -> RawCipherName {
        names()[usize::from(choice) % names().len()]
    }

    /// The key derivation a choice byte picks: bit 0 legacy (`EVP_BytesToKey`) or PBKDF2 with
    /// 1 to 8 iterations (bits 1–3), the digest in the high bits.
    pub fn kdf(choice: u8) -> PasswordKdf {
        let md = salted::Digest::ALL[usize::from(choice >> 4) % salted::Digest::ALL.len()];
        if choice & 1 == 1 {
            PasswordKdf::Legacy { md }
        } else {
            PasswordKdf::Pbkdf2 {
                iter: 1 + u32::from((choice >> 1) & 7),
                md,
            }
        }
    }

    /// A chunk size from a choice byte: 16 to 4096 bytes.
    pub fn chunk_size(choice: u8) -> ChunkSize {
        ChunkSize::new(16 * (1 + usize::from(choice))).expect("a multiple of 16")
    }

    /// Decrypts a `Salted__` file with [`PASSWORD`] under the cipher, key derivation and
    /// chunk size the choice bytes pick, in memory, on every provider: a rejection is bad
    /// data, and every provider agrees.
    pub fn open_salted(cipher: u8, kdf: u8, padding: bool, chunk: u8, bytes: &[u8], threads: u8) {
        let (name, kdf, chunk_size) = (self::name(cipher), self::kdf(kdf), self::chunk_size(chunk));
        let _ = ok_or(salted::read_salt(bytes), ErrorKind::Data);
        let mut first: Option<Result<Vec<u8>, Error>> = None;
        for &provider in providers() {
            let recipe = PasswordCipher::new(name, PASSWORD, kdf)
                .with_padding(padding)
                .recipe(Direction::Decrypt, chunk_size);
            let runner = Runner::new().provider(provider);
            let outcome = pool(threads).install(|| runner.vec(&recipe, bytes));
            if let Err(e) = &outcome {
                rejected(e, ErrorKind::Data);
            }
            match &first {
                None => first = Some(outcome),
                Some(first) => agree("salted: providers", first, &outcome),
            }
        }
    }

    /// Runs a raw cipher over `data` in chunks of `chunk_size` on `provider`.
    pub fn raw(
        name: RawCipherName,
        key: &[u8],
        iv: Option<&[u8]>,
        padding: bool,
        direction: Direction,
        data: &[u8],
        chunk_size: ChunkSize,
        provider: Provider,
    ) -> Result<Vec<u8>, Error> {
        let recipe = RawCipher::new(name, key, iv)?
            .with_padding(padding)
            .recipe(direction, chunk_size);
        let job = recipe.first_job(&mut &[][..], Some(data.len() as u64), provider)?;
        let mut buf = data.to_vec();
        engine::process_in_place(&job, &mut buf)?;
        Ok(buf)
    }
}

/// Key files and recipient lines, as the CLI reads them.
pub mod keys {
    use super::*;
    use paracrypt_core::pubkey;

    /// Reads `bytes` as every kind of key file paracrypt takes: a paracrypt key, a PEM/DER
    /// RSA or EC key, an identity file (age, OpenSSH, RSA), a recipients file. Each rejection
    /// is a usage error (a bad key file), and what parses is consistent.
    pub fn parse_all(bytes: &[u8]) {
        if let Ok(text) = std::str::from_utf8(bytes) {
            if let Some(key) = ok_or(Key::from_file_text(text), ErrorKind::Usage) {
                let again = Key::from_file_text(&key.to_file_text()).expect("a written key");
                assert_eq!(again, key);
            }
            let mut recipients = Recipients::new();
            let _ = ok_or(recipients.add(text, "fuzz"), ErrorKind::Usage);
        }
        let _ = pubkey::pem::parse(bytes);
        let _ = pubkey::rsa::RsaPublicKey::from_key_file(bytes);
        let _ = pubkey::rsa::RsaPrivateKey::from_key_file(bytes);
        let _ = pubkey::ecdsa::EcdsaPublicKey::from_key_file(bytes);
        let _ = pubkey::ecdsa::EcdsaPrivateKey::from_key_file(bytes);
        let mut identities = Identities::new();
        let added = ok_or(identities.add_file("fuzz", bytes), ErrorKind::Usage);
        let listed = ok_or(
            paracrypt_core::recipient::recipients_of("fuzz", bytes),
            ErrorKind::Usage,
        );
        if let (Some(()), Some(listed)) = (added, &listed) {
            assert_eq!(identities.len(), listed.len());
        }
        let mut recipients = Recipients::new();
        let _ = ok_or(recipients.add_file("fuzz", bytes), ErrorKind::Usage);
        // Signing keys (`paracrypt sign -k`, `verify -p`): a key that reads has a public key
        // that reads back from its signature-file field.
        let rsa = pubkey::rsa::RsaScheme::Pkcs1v15;
        if let Some(key) = ok_or(
            sign::SigningKey::from_key_file(bytes, rsa),
            ErrorKind::Usage,
        ) {
            let public = key.verifying_key();
            let again = sign::VerifyingKey::from_field(public.scheme(), &public.to_field())
                .expect("a key's own field reads back");
            assert_eq!(again, public);
        }
        let _ = ok_or(
            sign::VerifyingKey::from_key_file(bytes, rsa),
            ErrorKind::Usage,
        );
    }
}

/// Signature files (`paracrypt verify`), as the CLI reads them.
pub mod signatures {
    use super::*;

    /// Parses `bytes` as a signature file three ways (whole, from a reader capped at what its
    /// header announces, and the announced length from its head), which must agree; what
    /// parses writes back to the same bytes, and is checked against its own signer and an
    /// empty file: a signature failure or bad data, never a panic.
    pub fn parse(bytes: &[u8]) {
        let whole = sign::Signature::from_bytes(bytes);
        let read = sign::Signature::read(&mut &bytes[..]);
        assert_eq!(whole.is_ok(), read.is_ok());
        if let Ok(len) =
            sign::Signature::file_len(&bytes[..bytes.len().min(sign::Signature::HEAD_LEN)])
        {
            if whole.is_ok() {
                assert_eq!(len, bytes.len() as u64);
            }
        }
        let Ok(signature) = whole else {
            rejected(&whole.unwrap_err(), ErrorKind::Data);
            return;
        };
        assert_eq!(signature.to_bytes(), bytes);
        match signature.check_signer(&signature.signer) {
            Ok(()) => {}
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::Signature | ErrorKind::Data),
                "{e}"
            ),
        }
        let runner = paracrypt_core::Runner::new();
        if let Err(e) = signature.verify_slice(&runner, &signature.signer, &[]) {
            assert!(
                matches!(e.kind(), ErrorKind::Signature | ErrorKind::Data),
                "{e}"
            );
        }
    }
}

/// Command-line arguments: sizes, ranges, names.
pub mod args {
    use super::*;

    /// Parses `text` as every argument the CLI hands to the library: a size, a range, a chunk
    /// size, a suite, raw cipher, digest or provider name. Each rejection is a usage error.
    pub fn parse_all(text: &str) {
        if let Some(size) = ok_or(paracrypt_core::size::parse_size(text), ErrorKind::Usage) {
            let again = paracrypt_core::size::parse_size(&size.to_string());
            assert_eq!(again.ok(), Some(size));
            if let Ok(bytes) = usize::try_from(size) {
                let _ = ok_or(ChunkSize::new(bytes), ErrorKind::Usage);
            }
        }
        if let Some((offset, len)) =
            ok_or(paracrypt_core::size::parse_range(text), ErrorKind::Usage)
        {
            let again = paracrypt_core::size::parse_range(&format!("{offset}:{len}"));
            assert_eq!(again.ok(), Some((offset, len)));
        }
        if let Some(suite) = ok_or(text.parse::<Suite>(), ErrorKind::Usage) {
            assert_eq!(suite.as_str().parse::<Suite>().ok(), Some(suite));
        }
        if let Some(name) = ok_or(text.parse::<RawCipherName>(), ErrorKind::Usage) {
            assert_eq!(name.as_str().parse::<RawCipherName>().ok(), Some(name));
        }
        if let Some(provider) = ok_or(text.parse::<Provider>(), ErrorKind::Usage) {
            assert_eq!(provider.as_str().parse::<Provider>().ok(), Some(provider));
        }
        let _ = ok_or(text.parse::<salted::Digest>(), ErrorKind::Usage);
    }
}

/// The differential targets: every provider against the others and against a reference.
pub mod differential {
    use super::*;
    use arbitrary::Arbitrary;

    /// A sealing: container and age, with everything the output depends on.
    #[derive(Arbitrary, Debug)]
    pub struct Sealing {
        suite: u8,
        chunk: u8,
        key: [u8; 32],
        salt: [u8; container::SALT_LEN],
        file_key: [u8; 16],
        nonce: [u8; agefile::NONCE_LEN],
        armor: bool,
        seal_threads: u8,
        open_threads: u8,
        change_at: u32,
        change_xor: u8,
        cut_at: u32,
        plaintext: Vec<u8>,
    }

    /// Checks that `sealed` with one byte changed, and cut short, is rejected by `open` as bad
    /// data.
    fn tamper(sealed: &[u8], input: &Sealing, open: impl Fn(&[u8]) -> Result<Vec<u8>, Error>) {
        let mut changed = sealed.to_vec();
        let at = input.change_at as usize % changed.len();
        changed[at] ^= input.change_xor.max(1);
        match open(&changed) {
            Err(e) => rejected(&e, ErrorKind::Data),
            Ok(_) => panic!("byte {at} of {} changed and accepted", sealed.len()),
        }
        let cut = input.cut_at as usize % sealed.len();
        match open(&sealed[..cut]) {
            Err(e) => rejected(&e, ErrorKind::Data),
            Ok(_) => panic!("cut to {cut} of {} bytes and accepted", sealed.len()),
        }
    }

    /// Seals with every provider, and checks the outputs, the openings and the tampering.
    pub fn seal(input: &Sealing) {
        let how = container_files::Sealing {
            suite: Suite::ALL[usize::from(input.suite) % Suite::ALL.len()],
            chunk_size: openssl::chunk_size(input.chunk),
            key: input.key,
            salt: input.salt,
            plaintext: &input.plaintext,
        };
        let sealed: Vec<Vec<u8>> = providers()
            .iter()
            .map(|&p| pool(input.seal_threads).install(|| container_files::seal(&how, p)))
            .collect();
        for (i, other) in sealed.iter().enumerate().skip(1) {
            assert!(
                sealed[0] == *other,
                "container: {:?} seals other bytes",
                providers()[i]
            );
        }
        for &p in providers() {
            let open = |bytes: &[u8]| {
                pool(input.open_threads).install(|| container_files::unseal(how.key, bytes, p))
            };
            assert_eq!(open(&sealed[0]).expect("opens"), input.plaintext);
            tamper(&sealed[0], input, open);
        }

        // age: the binary file is compared and tampered with; the armor, an encoding whose
        // slack the age specification allows (no final newline, whitespace around it: the
        // CCTV vectors armor_no_eol and armor_whitespace_outside), only has to open.
        let age = |armor: bool| -> Vec<Vec<u8>> {
            providers()
                .iter()
                .map(|&p| {
                    pool(input.seal_threads).install(|| {
                        age_files::seal(&input.plaintext, input.file_key, input.nonce, armor, p)
                    })
                })
                .collect()
        };
        let sealed = age(false);
        let payload = age_files::payload(&sealed[0]);
        for (i, other) in sealed.iter().enumerate().skip(1) {
            let theirs = age_files::payload(other);
            assert!(
                payload == theirs,
                "age: {:?} seals other bytes",
                providers()[i]
            );
        }
        let armored = if input.armor { age(true) } else { Vec::new() };
        for &p in providers() {
            let open =
                |bytes: &[u8]| pool(input.open_threads).install(|| age_files::unseal(bytes, p));
            for file in sealed.iter().chain(&armored) {
                assert_eq!(open(file).expect("opens"), input.plaintext);
            }
            tamper(&sealed[0], input, open);
        }
    }

    /// A raw cipher run: cipher, key, IV, padding, chunking, threads, data.
    #[derive(Arbitrary, Debug)]
    pub struct Raw {
        cipher: u8,
        key_len: u8,
        key: [u8; 32],
        iv: [u8; 16],
        nopad: bool,
        chunk: u8,
        threads: u8,
        data: Vec<u8>,
    }

    /// Encrypts on every provider in chunks: the same bytes as the one-shot reference (or, where
    /// it refuses the input, a usage error from every provider), and decrypting gives the data
    /// back.
    pub fn raw(input: &Raw) {
        let name = openssl::name(input.cipher);
        let (min, max) = name.algorithm().key_lengths();
        let len = min + usize::from(input.key_len) % (max - min + 1);
        let key: Vec<u8> = input.key.iter().copied().cycle().take(len).collect();
        let iv = (name.iv_len() > 0).then(|| &input.iv[..name.iv_len()]);
        let padding = name.is_padded_mode() && !input.nopad;
        let chunk_size = openssl::chunk_size(input.chunk);
        let expected = reference::encrypt(name, &key, iv, padding, &input.data);
        for &p in providers() {
            let run = |direction, data: &[u8]| {
                pool(input.threads).install(|| {
                    openssl::raw(name, &key, iv, padding, direction, data, chunk_size, p)
                })
            };
            let sealed = run(Direction::Encrypt, &input.data);
            match (&expected, sealed) {
                (Some(expected), Ok(sealed)) => {
                    assert!(
                        *expected == sealed,
                        "{name} on {p:?} differs from the reference"
                    );
                    let opened = run(Direction::Decrypt, &sealed).expect("decrypts");
                    assert!(
                        opened == input.data,
                        "{name} on {p:?} does not decrypt back"
                    );
                }
                (None, Err(e)) => rejected(&e, ErrorKind::Data),
                (expected, sealed) => panic!(
                    "{name} on {p:?}: reference {:?}, provider {:?}",
                    expected.is_some(),
                    sealed.err()
                ),
            }
        }
    }
}
