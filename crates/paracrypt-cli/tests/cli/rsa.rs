//! `paracrypt rsa`: keys openssl accepts, signatures and OAEP interoperable with openssl both
//! ways, `sha256sum -c`-style verification, and bad keys or missing signatures refused with one
//! line, the documented exit code and no output.

use crate::common::*;
use crate::sigfiles::*;

#[test]
fn keygen_writes_keys_openssl_checks() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "rsa", &["--bits", "2048", "-j", "2"]);
    assert_eq!(mode(&key), 0o600, "private key mode");
    assert_eq!(mode(&public), 0o666 & !umask(), "public key mode");
    let pem = std::fs::read_to_string(&key).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "PKCS#8");
    let pub_pem = std::fs::read_to_string(&public).unwrap();
    assert!(pub_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"), "SPKI");
    assert_eq!(listing(dir.path()), ["rsa.pem", "rsa.pub.pem"]);
    if openssl().is_none() {
        return;
    }
    let check = openssl_ok(&["pkey", "-in", s(&key), "-check", "-noout"]);
    assert!(String::from_utf8_lossy(&check).contains("valid"));
    let text = String::from_utf8(openssl_ok(&["pkey", "-in", s(&key), "-noout", "-text"])).unwrap();
    assert!(text.contains("Private-Key: (2048 bit, 2 primes)"), "{text}");
    assert!(text.contains("publicExponent: 65537"));
    // The public key file is the private key's public half.
    let derived = openssl_ok(&["pkey", "-in", s(&key), "-pubout"]);
    assert_eq!(derived, pub_pem.as_bytes());
}

#[test]
fn keygen_default_is_3072_bits_on_one_thread_too() {
    let dir = scratch();
    let (key, _) = keygen(dir.path(), "rsa", &["-j", "1"]);
    if openssl().is_none() {
        return;
    }
    let text = String::from_utf8(openssl_ok(&["pkey", "-in", s(&key), "-noout", "-text"])).unwrap();
    assert!(text.contains("Private-Key: (3072 bit, 2 primes)"), "{text}");
    openssl_ok(&["pkey", "-in", s(&key), "-check", "-noout"]);
}

#[test]
fn keygen_refuses_bad_sizes_and_existing_files() {
    let dir = scratch();
    let key = dir.path().join("k.pem");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "keygen", "--bits", "1024", "-o", s(&key)]);
    fails(run(cmd), 2, "valid: 2048, 3072, 4096");
    write(dir.path(), "k.pem", b"precious");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "keygen", "--bits", "2048", "-o", s(&key)]);
    fails(run(cmd), 2, "already exists");
    assert_eq!(std::fs::read(&key).unwrap(), b"precious");
    assert_eq!(listing(dir.path()), ["k.pem"]);
}

#[test]
fn signatures_of_many_files_verify_with_openssl_and_paracrypt() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "rsa", &["--bits", "2048"]);
    let files = files(dir.path());
    for scheme in ["pkcs1v15", "pss"] {
        ok(run(cmd_with_files(
            &[
                "rsa",
                "sign",
                "--key",
                s(&key),
                "--scheme",
                scheme,
                "--force",
                "-j",
                "2",
            ],
            &files,
        )));
        let out = ok(run(cmd_with_files(
            &["rsa", "verify", "--public", s(&public), "--scheme", scheme],
            &files,
        )));
        assert_eq!(String::from_utf8(out).unwrap(), all_ok(&files));
        if openssl().is_none() {
            continue;
        }
        for file in &files {
            let sig = signature_of(file);
            let mut args = vec!["dgst", "-sha256", "-verify", s(&public), "-signature", &sig];
            if scheme == "pss" {
                args.extend(["-sigopt", "rsa_padding_mode:pss"]);
            }
            args.push(s(file));
            let out = openssl_ok(&args);
            assert_eq!(out, b"Verified OK\n", "{scheme} {}", file.display());
        }
    }
}

/// `FILE.sig` as text.
fn signature_of(file: &std::path::Path) -> String {
    format!("{}.sig", file.display())
}

#[test]
fn pkcs1v15_signatures_are_byte_identical_to_openssl() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let (key, _) = keygen(dir.path(), "rsa", &["--bits", "2048"]);
    let file = write(dir.path(), "m.txt", b"deterministic padding\n");
    let theirs = dir.path().join("openssl.sig");
    openssl_ok(&[
        "dgst",
        "-sha256",
        "-sign",
        s(&key),
        "-out",
        s(&theirs),
        s(&file),
    ]);
    ok(run(cmd_with_files(
        &["rsa", "sign", "--key", s(&key)],
        std::slice::from_ref(&file),
    )));
    assert_eq!(
        std::fs::read(signature_of(&file)).unwrap(),
        std::fs::read(&theirs).unwrap()
    );
}

#[test]
fn openssl_signatures_verify_in_paracrypt() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let key = dir.path().join("k.pem");
    openssl_ok(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        s(&key),
    ]);
    let public = dir.path().join("pub.pem");
    openssl_ok(&["pkey", "-in", s(&key), "-pubout", "-out", s(&public)]);
    let file = write(dir.path(), "m.bin", &data(100_000, 9));
    for (scheme, opts) in [
        ("pkcs1v15", vec![]),
        // OpenSSL 3.0 signs PSS with the largest salt; paracrypt accepts any salt length.
        ("pss", vec!["-sigopt", "rsa_padding_mode:pss"]),
        (
            "pss",
            vec![
                "-sigopt",
                "rsa_padding_mode:pss",
                "-sigopt",
                "rsa_pss_saltlen:digest",
            ],
        ),
    ] {
        let sig = dir.path().join("m.sig");
        let mut args = vec!["dgst", "-sha256", "-sign", s(&key), "-out", s(&sig)];
        args.extend(opts);
        args.push(s(&file));
        openssl_ok(&args);
        let mut cmd = paracrypt();
        cmd.args(["rsa", "verify", "--public", s(&public), "--scheme", scheme])
            .args(["--signature", s(&sig), s(&file)]);
        assert_eq!(ok(run(cmd)), format!("{}: OK\n", file.display()).as_bytes());
    }
}

#[test]
fn verify_reports_each_file_and_fails_if_any_fails() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "rsa", &["--bits", "2048"]);
    let files = files(dir.path());
    ok(run(cmd_with_files(
        &["rsa", "sign", "--key", s(&key)],
        &files,
    )));
    // Damage one file and one signature; remove another signature.
    std::fs::write(&files[1], b"changed").unwrap();
    let mut sig = std::fs::read(signature_of(&files[2])).unwrap();
    sig[7] ^= 1;
    std::fs::write(signature_of(&files[2]), sig).unwrap();
    std::fs::remove_file(signature_of(&files[4])).unwrap();
    let out = run(cmd_with_files(
        &["rsa", "verify", "--public", s(&public)],
        &files,
    ));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let expected: String = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let verdict = if [1, 2, 4].contains(&i) {
                "FAILED"
            } else {
                "OK"
            };
            format!("{}: {verdict}\n", f.display())
        })
        .collect();
    assert_eq!(stdout, expected);
    let stderr = fails(out, 1, "3 of 6 signatures did NOT verify");
    assert!(
        stderr.contains(&format!(
            "cannot read signature {}",
            signature_of(&files[4])
        )),
        "{stderr}"
    );
}

#[test]
fn missing_signature_and_missing_file_are_clear_errors() {
    let dir = scratch();
    let (_, public) = keygen(dir.path(), "rsa", &["--bits", "2048"]);
    let file = write(dir.path(), "unsigned.txt", b"x");
    let out = run(cmd_with_files(
        &["rsa", "verify", "--public", s(&public)],
        std::slice::from_ref(&file),
    ));
    let stderr = fails(out, 1, "unsigned.txt.sig: No such file");
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    let out = run(cmd_with_files(
        &["rsa", "verify", "--public", s(&public)],
        &[dir.path().join("absent.txt")],
    ));
    fails(out, 1, "cannot read");
}

#[test]
fn signature_option_takes_exactly_one_file() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "rsa", &["--bits", "2048"]);
    let a = write(dir.path(), "a", b"a");
    let sig = dir.path().join("a.signature");
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "sign",
        "--key",
        s(&key),
        "--signature",
        s(&sig),
        s(&a),
        s(&a),
    ]);
    fails(run(cmd), 2, "exactly one FILE");
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "sign",
        "--key",
        s(&key),
        "--signature",
        s(&sig),
        s(&a),
    ]);
    ok(run(cmd));
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "verify",
        "--public",
        s(&public),
        "--signature",
        s(&sig),
        s(&a),
    ]);
    ok(run(cmd));
    // stdin needs --signature.
    let mut cmd = paracrypt();
    cmd.args(["rsa", "sign", "--key", s(&key), "-"]);
    fails(run(cmd), 2, "needs --signature");
}

#[test]
fn keys_in_every_form_openssl_writes_are_read() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let traditional = d.join("pkcs1.pem");
    openssl_ok(&["genrsa", "-traditional", "-out", s(&traditional), "2048"]);
    assert!(
        std::fs::read_to_string(&traditional)
            .unwrap()
            .starts_with("-----BEGIN RSA PRIVATE KEY-----")
    );
    let pkcs1_pub = d.join("pkcs1.pub.pem");
    openssl_ok(&[
        "rsa",
        "-in",
        s(&traditional),
        "-RSAPublicKey_out",
        "-out",
        s(&pkcs1_pub),
    ]);
    let der = d.join("key.der");
    openssl_ok(&[
        "pkey",
        "-in",
        s(&traditional),
        "-outform",
        "DER",
        "-out",
        s(&der),
    ]);
    let spki_der = d.join("pub.der");
    openssl_ok(&[
        "pkey",
        "-in",
        s(&traditional),
        "-pubout",
        "-outform",
        "DER",
        "-out",
        s(&spki_der),
    ]);
    let file = write(d, "m", b"message");
    for private in [&traditional, &der] {
        let mut cmd = paracrypt();
        cmd.args(["rsa", "sign", "--force", "--key", s(private), s(&file)]);
        ok(run(cmd));
        for public in [&pkcs1_pub, &spki_der, &traditional] {
            let mut cmd = paracrypt();
            cmd.args(["rsa", "verify", "--public", s(public), s(&file)]);
            ok(run(cmd));
        }
    }
}

#[test]
fn wrong_garbage_and_encrypted_keys_are_usage_errors_without_output() {
    let dir = scratch();
    let d = dir.path();
    let (ec_key, _) = keygen(d, "ecdsa", &[]);
    let (_, rsa_public) = keygen(d, "rsa", &["--bits", "2048"]);
    let garbage = write(
        d,
        "garbage.pem",
        b"-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n",
    );
    let file = write(d, "m", b"message");
    let before = listing(d);
    for (key, needle) in [
        (
            &ec_key,
            "expected an RSA private key, found an EC (P-256) private key",
        ),
        (
            &rsa_public,
            "expected an RSA private key, found an RSA public key",
        ),
        (&garbage, "not a key"),
    ] {
        let mut cmd = paracrypt();
        cmd.args(["rsa", "sign", "--key", s(key), s(&file)]);
        let stderr = fails(run(cmd), 2, needle);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    let mut cmd = paracrypt();
    cmd.args(["rsa", "verify", "--public", s(&ec_key), s(&file)]);
    fails(run(cmd), 2, "expected an RSA public key");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "sign", "--key", s(&d.join("absent.pem")), s(&file)]);
    fails(run(cmd), 1, "cannot read key");
    assert_eq!(listing(d), before, "no signature written");
    if openssl().is_none() {
        return;
    }
    let encrypted = d.join("enc.pem");
    openssl_ok(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-aes256",
        "-pass",
        "pass:x",
        "-out",
        s(&encrypted),
    ]);
    let mut cmd = paracrypt();
    cmd.args(["rsa", "sign", "--key", s(&encrypted), s(&file)]);
    fails(run(cmd), 2, "encrypted");
}

fn oaep_opts() -> [&'static str; 6] {
    [
        "-pkeyopt",
        "rsa_padding_mode:oaep",
        "-pkeyopt",
        "rsa_oaep_md:sha256",
        "-pkeyopt",
        "rsa_mgf1_md:sha256",
    ]
}

#[test]
fn oaep_round_trips_and_interoperates_with_openssl_pkeyutl() {
    let dir = scratch();
    let d = dir.path();
    let (key, public) = keygen(d, "rsa", &["--bits", "2048"]);
    let message = write(d, "secret.key", &data(32, 3));
    let ct = d.join("secret.enc");
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "encrypt",
        "--public",
        s(&public),
        s(&message),
        "-o",
        s(&ct),
    ]);
    ok(run(cmd));
    assert_eq!(std::fs::metadata(&ct).unwrap().len(), 256);
    let mut cmd = paracrypt();
    cmd.args(["rsa", "decrypt", "--key", s(&key), s(&ct), "-o", "-"]);
    assert_eq!(ok(run(cmd)), data(32, 3));
    if openssl().is_none() {
        return;
    }
    // paracrypt → openssl
    let mut args = vec!["pkeyutl", "-decrypt", "-inkey", s(&key), "-in", s(&ct)];
    args.extend(oaep_opts());
    assert_eq!(openssl_ok(&args), data(32, 3));
    // openssl → paracrypt, the longest message a 2048-bit key takes (190 bytes).
    let long = write(d, "long", &data(190, 4));
    let ct2 = d.join("long.enc");
    let mut args = vec![
        "pkeyutl",
        "-encrypt",
        "-pubin",
        "-inkey",
        s(&public),
        "-in",
        s(&long),
        "-out",
        s(&ct2),
    ];
    args.extend(oaep_opts());
    openssl_ok(&args);
    let mut cmd = paracrypt();
    cmd.args(["rsa", "decrypt", "--key", s(&key), s(&ct2)]);
    assert_eq!(ok(run(cmd)), data(190, 4));
}

#[test]
fn oaep_refuses_long_messages_and_bad_ciphertexts_without_output() {
    let dir = scratch();
    let d = dir.path();
    let (key, public) = keygen(d, "rsa", &["--bits", "2048"]);
    let long = write(d, "long", &data(191, 1));
    let out_path = d.join("out");
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "encrypt",
        "--public",
        s(&public),
        s(&long),
        "-o",
        s(&out_path),
    ]);
    fails(run(cmd), 1, "at most 190 bytes");
    assert!(!out_path.exists());
    let ct = d.join("ct");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "encrypt", "--public", s(&public), "-o", s(&ct)]);
    ok(run_with_stdin(cmd, b"hello"));
    let mut bytes = std::fs::read(&ct).unwrap();
    bytes[5] ^= 0x10;
    let damaged = write(d, "damaged", &bytes);
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "decrypt",
        "--key",
        s(&key),
        s(&damaged),
        "-o",
        s(&out_path),
    ]);
    fails(run(cmd), 1, "RSA-OAEP decryption failed");
    let short = write(d, "short", &bytes[..100]);
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "decrypt",
        "--key",
        s(&key),
        s(&short),
        "-o",
        s(&out_path),
    ]);
    fails(run(cmd), 1, "is 256 bytes, this is 100");
    let (other, _) = {
        let sub = d.join("other");
        std::fs::create_dir(&sub).unwrap();
        keygen(&sub, "rsa", &["--bits", "2048"])
    };
    let mut cmd = paracrypt();
    cmd.args([
        "rsa",
        "decrypt",
        "--key",
        s(&other),
        s(&ct),
        "-o",
        s(&out_path),
    ]);
    fails(run(cmd), 1, "RSA-OAEP decryption failed");
    assert!(!out_path.exists(), "no partial output");
}
