//! `paracrypt ecdsa`: P-256 keys openssl accepts, DER signatures interoperable with
//! `openssl dgst -sha256` both ways, and keys of other types or curves refused.

use crate::common::*;
use crate::sigfiles::*;

#[test]
fn keygen_writes_keys_openssl_checks() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "ecdsa", &[]);
    assert_eq!(mode(&key), 0o600);
    assert_eq!(
        mode(&public),
        0o666 & !umask(),
        "public key: any output's mode"
    );
    assert!(
        std::fs::read_to_string(&key)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----\n")
    );
    if openssl().is_none() {
        return;
    }
    openssl_ok(&["pkey", "-in", s(&key), "-check", "-noout"]);
    let text = String::from_utf8(openssl_ok(&["pkey", "-in", s(&key), "-noout", "-text"])).unwrap();
    assert!(text.contains("prime256v1"), "{text}");
    let derived = openssl_ok(&["pkey", "-in", s(&key), "-pubout"]);
    assert_eq!(derived, std::fs::read(&public).unwrap());
}

#[test]
fn signatures_of_many_files_verify_with_openssl_and_paracrypt() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "ecdsa", &[]);
    let files = files(dir.path());
    ok(run(cmd_with_files(
        &["ecdsa", "sign", "--key", s(&key), "-j", "2"],
        &files,
    )));
    let out = ok(run(cmd_with_files(
        &["ecdsa", "verify", "--public", s(&public)],
        &files,
    )));
    assert_eq!(String::from_utf8(out).unwrap(), all_ok(&files));
    // RFC 6979 (RustCrypto's signing; aws-lc's nonces are random): signing again gives the
    // same bytes.
    let rfc6979 = [
        "--provider",
        "rustcrypto",
        "ecdsa",
        "sign",
        "--force",
        "--key",
        s(&key),
    ];
    ok(run(cmd_with_files(&rfc6979, &files[3..4])));
    let first = std::fs::read(format!("{}.sig", files[3].display())).unwrap();
    ok(run(cmd_with_files(&rfc6979, &files[3..4])));
    assert_eq!(
        std::fs::read(format!("{}.sig", files[3].display())).unwrap(),
        first
    );
    if openssl().is_none() {
        return;
    }
    for file in &files {
        let sig = format!("{}.sig", file.display());
        let out = openssl_ok(&[
            "dgst",
            "-sha256",
            "-verify",
            s(&public),
            "-signature",
            &sig,
            s(file),
        ]);
        assert_eq!(out, b"Verified OK\n");
    }
}

#[test]
fn openssl_keys_and_signatures_work_in_paracrypt() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    // SEC1 with an EC PARAMETERS block first, as `openssl ecparam -genkey` writes it.
    let sec1 = d.join("sec1.pem");
    openssl_ok(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-out",
        s(&sec1),
    ]);
    let pkcs8 = d.join("pkcs8.pem");
    openssl_ok(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        s(&pkcs8),
    ]);
    let file = write(d, "m.bin", &data(70_000, 5));
    for key in [&sec1, &pkcs8] {
        let public = d.join("pub.pem");
        openssl_ok(&["pkey", "-in", s(key), "-pubout", "-out", s(&public)]);
        let sig = d.join("openssl.sig");
        openssl_ok(&[
            "dgst",
            "-sha256",
            "-sign",
            s(key),
            "-out",
            s(&sig),
            s(&file),
        ]);
        let mut cmd = paracrypt();
        cmd.args([
            "ecdsa",
            "verify",
            "--public",
            s(&public),
            "--signature",
            s(&sig),
            s(&file),
        ]);
        ok(run(cmd));
        let ours = d.join("ours.sig");
        let mut cmd = paracrypt();
        cmd.args([
            "ecdsa",
            "sign",
            "--force",
            "--key",
            s(key),
            "--signature",
            s(&ours),
            s(&file),
        ]);
        ok(run(cmd));
        let out = openssl_ok(&[
            "dgst",
            "-sha256",
            "-verify",
            s(&public),
            "-signature",
            s(&ours),
            s(&file),
        ]);
        assert_eq!(out, b"Verified OK\n");
    }
}

#[test]
fn tampered_files_fail_verification() {
    let dir = scratch();
    let (key, public) = keygen(dir.path(), "ecdsa", &[]);
    let file = write(dir.path(), "m", b"original");
    ok(run(cmd_with_files(
        &["ecdsa", "sign", "--key", s(&key)],
        std::slice::from_ref(&file),
    )));
    std::fs::write(&file, b"0riginal").unwrap();
    let out = run(cmd_with_files(
        &["ecdsa", "verify", "--public", s(&public)],
        std::slice::from_ref(&file),
    ));
    assert_eq!(
        out.stdout,
        format!("{}: FAILED\n", file.display()).as_bytes()
    );
    fails(out, 1, "1 of 1 signatures did NOT verify");
}

#[test]
fn rsa_keys_and_other_curves_are_refused() {
    let dir = scratch();
    let d = dir.path();
    let (rsa_key, rsa_public) = keygen(d, "rsa", &["--bits", "2048"]);
    let file = write(d, "m", b"m");
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "sign", "--key", s(&rsa_key), s(&file)]);
    fails(
        run(cmd),
        2,
        "expected an EC (P-256) private key, found an RSA private key",
    );
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "verify", "--public", s(&rsa_public), s(&file)]);
    fails(run(cmd), 2, "found an RSA public key");
    assert!(!d.join("m.sig").exists());
    if openssl().is_none() {
        return;
    }
    let p384 = d.join("p384.pem");
    openssl_ok(&[
        "ecparam",
        "-name",
        "secp384r1",
        "-genkey",
        "-noout",
        "-out",
        s(&p384),
    ]);
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "sign", "--key", s(&p384), s(&file)]);
    fails(run(cmd), 2, "secp384r1");
}
