//! `paracrypt sign` / `verify`: detached tree-hash signatures, the same bytes at any thread
//! count and on every provider, keys from paracrypt, openssl and ssh-keygen, range checks, and
//! every kind of bad input caught on one line with its exit code.

use std::path::{Path, PathBuf};

use crate::common::*;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `keygen --kind ed25519`: the key and its SPKI public key.
fn ed25519(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    let mut cmd = paracrypt();
    cmd.args([
        "keygen",
        "--kind",
        "ed25519",
        "-o",
        s(&key),
        "--public-out",
        s(&public),
    ]);
    let out = run(cmd);
    let (_, stderr) = status_and_stderr(&out);
    assert!(
        stderr.starts_with("Public key: ssh-ed25519 AAAA"),
        "{stderr}"
    );
    ok(out);
    (key, public)
}

fn sign(key: &Path, file: &Path, extra: &[&str]) -> Vec<u8> {
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(key), "-f"]).args(extra).arg(file);
    ok(run(cmd));
    std::fs::read(format!("{}.psig", file.display())).unwrap()
}

fn verify(public: &Path, file: &Path, extra: &[&str]) -> std::process::Output {
    let mut cmd = paracrypt();
    cmd.args(["verify", "--public", s(public)])
        .args(extra)
        .arg(file);
    run(cmd)
}

#[test]
fn signatures_are_the_same_bytes_at_any_thread_count_chunk_boundary_and_provider() {
    let dir = scratch();
    let (key, public) = ed25519(dir.path(), "me");
    for len in [0, 1, 4095, 4096, 4097, 3 * 4096 + 1] {
        let file = write(dir.path(), "f", &data(len, 3));
        let one = sign(&key, &file, &["-j", "1", "--chunk-size", "4KiB"]);
        for provider in providers() {
            let three = sign(
                &key,
                &file,
                &["-j", "3", "--chunk-size", "4KiB", "--provider", provider],
            );
            assert_eq!(one, three, "len {len}, {provider}");
        }
        // From stdin: the same signature.
        let mut cmd = paracrypt();
        cmd.args([
            "sign",
            "-k",
            s(&key),
            "--chunk-size",
            "4KiB",
            "-o",
            "-",
            "-",
        ]);
        assert_eq!(
            ok(run_with_stdin(cmd, &data(len, 3))),
            one,
            "stdin, len {len}"
        );
        let out = ok(verify(&public, &file, &["-j", "2"]));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "f: OK\n".replace("f", s(&file))
        );
        let mut cmd = paracrypt();
        cmd.args(["verify", "--public", s(&public), "-s"])
            .arg(format!("{}.psig", file.display()))
            .arg("-");
        ok(run_with_stdin(cmd, &data(len, 3)));
    }
}

#[test]
fn keys_from_openssl_and_ssh_keygen_sign_and_verify() {
    let dir = scratch();
    let file = write(dir.path(), "f", &data(100_000, 1));
    if openssl().is_some() {
        let key = dir.path().join("o.pem");
        let public = dir.path().join("o.pub");
        openssl_ok(&["genpkey", "-algorithm", "ed25519", "-out", s(&key)]);
        openssl_ok(&["pkey", "-in", s(&key), "-pubout", "-out", s(&public)]);
        sign(&key, &file, &[]);
        ok(verify(&public, &file, &[]));
        // paracrypt's key is one openssl reads, with the same public key.
        let (mine, mine_pub) = ed25519(dir.path(), "mine");
        let derived = openssl_ok(&["pkey", "-in", s(&mine), "-pubout"]);
        assert_eq!(derived, std::fs::read(&mine_pub).unwrap());
    }
    if have("ssh-keygen", "-?") {
        let key = dir.path().join("id");
        let made = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "", "-f", s(&key)])
            .status()
            .unwrap();
        assert!(made.success());
        sign(&key, &file, &[]);
        ok(verify(&dir.path().join("id.pub"), &file, &[]));
        // The private key verifies too (its public half).
        ok(verify(&key, &file, &[]));
        // `keygen -y` of paracrypt's key prints the OpenSSH line ssh-keygen would.
        let (mine, _) = ed25519(dir.path(), "y");
        let mut cmd = paracrypt();
        cmd.args(["keygen", "-y", s(&mine)]);
        let line = String::from_utf8(ok(run(cmd))).unwrap();
        assert!(line.starts_with("ssh-ed25519 AAAA"), "{line}");
        let sshpub = write(dir.path(), "y.sshpub", line.as_bytes());
        sign(&mine, &file, &[]);
        ok(verify(&sshpub, &file, &[]));
    }
}

#[test]
fn rsa_and_ecdsa_keys_sign_and_verify_on_every_provider() {
    let dir = scratch();
    let file = write(dir.path(), "f", &data(300_000, 2));
    for kind in ["rsa", "ecdsa"] {
        let key = dir.path().join(format!("{kind}.pem"));
        let public = dir.path().join(format!("{kind}.pub"));
        let mut cmd = paracrypt();
        cmd.args([kind, "keygen", "-o", s(&key), "--public-out", s(&public)]);
        ok(run(cmd));
        let mut signatures = Vec::new();
        for provider in providers() {
            signatures.push(sign(&key, &file, &["--provider", provider, "-j", "2"]));
            for verifier in providers() {
                ok(verify(&public, &file, &["--provider", verifier]));
            }
        }
        if kind == "rsa" {
            // PKCS#1 v1.5 is deterministic: the same bytes from every provider.
            assert!(signatures.windows(2).all(|w| w[0] == w[1]));
            sign(&key, &file, &["--rsa-scheme", "pss"]);
            ok(verify(&public, &file, &[]));
        }
    }
}

/// `keygen --kind ml-dsa-65`: PKCS#8 and SPKI PEM; every provider signs (hedged: the
/// signature bytes differ, the rest of the file does not) and every provider verifies every
/// other's; an altered chunk, a flipped signature bit and another key each fail with exit 5.
#[test]
fn ml_dsa_65_keys_sign_and_verify_across_providers() {
    let dir = scratch();
    let key = dir.path().join("pq.pem");
    let public = dir.path().join("pq.pub");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "--kind", "ml-dsa-65", "-o", s(&key)])
        .args(["--public-out", s(&public)]);
    let out = run(cmd);
    let (_, stderr) = status_and_stderr(&out);
    assert!(
        stderr.starts_with("Public key: ml-dsa-65 SHA256:"),
        "{stderr}"
    );
    ok(out);
    let pem = std::fs::read_to_string(&public).unwrap();
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"), "{pem}");
    assert!(
        std::fs::read_to_string(&key)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    // -y prints the public key file.
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-y", s(&key)]);
    assert_eq!(String::from_utf8(ok(run(cmd))).unwrap(), pem);

    let original = data(3 * 4096 + 77, 8);
    let file = write(dir.path(), "f", &original);
    let mut signatures = Vec::new();
    for signer in providers() {
        let signature = sign(
            &key,
            &file,
            &["--provider", signer, "-j", "2", "--chunk-size", "4KiB"],
        );
        let path = write(dir.path(), &format!("f.{signer}.psig"), &signature);
        for verifier in providers() {
            ok(verify(
                &public,
                &file,
                &["--provider", verifier, "-s", s(&path)],
            ));
        }
        signatures.push(signature);
    }
    // The header, key and leaves are the same bytes; the 3309-byte signatures are not.
    let sig_at = 30 + 1952 + 2;
    for pair in signatures.windows(2) {
        assert_eq!(pair[0].len(), sig_at + 3309 + 4 * 32);
        assert_eq!(pair[0][..sig_at], pair[1][..sig_at]);
        assert_eq!(pair[0][sig_at + 3309..], pair[1][sig_at + 3309..]);
        assert_ne!(pair[0], pair[1], "hedged signing");
    }
    // A range, an altered chunk, a flipped signature bit, another key.
    ok(verify(&public, &file, &["--range", "5000:10"]));
    let mut altered = original.clone();
    altered[2 * 4096 + 1] ^= 1;
    std::fs::write(&file, &altered).unwrap();
    fails(verify(&public, &file, &[]), 5, "chunk 2 does not match");
    ok(verify(&public, &file, &["--range", "0:4096"]));
    std::fs::write(&file, &original).unwrap();
    let mut flipped = signatures[0].clone();
    flipped[sig_at + 100] ^= 0x04;
    let sig_path = write(dir.path(), "f.psig", &flipped);
    fails(
        verify(&public, &file, &["-s", s(&sig_path)]),
        5,
        "the signature does not verify",
    );
    let (_, ed_public) = ed25519(dir.path(), "ed");
    std::fs::write(&sig_path, &signatures[0]).unwrap();
    fails(verify(&ed_public, &file, &[]), 5, "signed by another key");
    ok(verify(&public, &file, &[]));
    // The public key cannot sign.
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(&public), "-f"]).arg(&file);
    fails(run(cmd), 2, "ML-DSA-65 public key");
}

#[test]
fn a_range_verifies_only_the_chunks_that_cover_it() {
    let dir = scratch();
    let (key, public) = ed25519(dir.path(), "me");
    let mut bytes = data(10 * 4096 + 5, 4);
    let file = write(dir.path(), "f", &bytes);
    sign(&key, &file, &["--chunk-size", "4KiB"]);
    bytes[4096 * 7 + 3] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let out = ok(verify(&public, &file, &["--range", "100:5000"]));
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("OK (chunks 0..2 of 11)")
    );
    fails(
        verify(&public, &file, &["--range", "28700:1"]),
        5,
        "chunk 7 does not match the signature (bytes 28672..32768 were altered)",
    );
    // The last chunk, short.
    ok(verify(&public, &file, &["--range", "40960:100"]));
    fails(
        verify(&public, &file, &["--range", "50000:1"]),
        1,
        "beyond the end",
    );
    fails(verify(&public, &file, &[]), 5, "chunk 7 does not match");
}

#[test]
fn bad_input_is_caught_on_one_line_with_its_exit_code() {
    let dir = scratch();
    let (key, public) = ed25519(dir.path(), "me");
    let original = data(5 * 4096 + 100, 5);
    let file = write(dir.path(), "f", &original);
    let signature = sign(&key, &file, &["--chunk-size", "4KiB"]);
    let sig_path = dir.path().join("f.psig");
    let check = |bytes: &[u8], sig: &[u8], code: i32, needle: &str| {
        std::fs::write(&file, bytes).unwrap();
        std::fs::write(&sig_path, sig).unwrap();
        let out = verify(&public, &file, &[]);
        let (got, stderr) = status_and_stderr(&out);
        let code = if code == 0 && [1, 5].contains(&got) {
            got
        } else {
            code
        };
        assert_eq!((got, needle), (code, needle), "{stderr}");
        let stderr = fails(out, code, needle);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    };
    // A flipped bit in every chunk.
    for chunk in 0..6 {
        let mut bytes = original.clone();
        bytes[chunk * 4096 + 17] ^= 0x10;
        check(
            &bytes,
            &signature,
            5,
            &format!("chunk {chunk} does not match"),
        );
    }
    // Truncated and extended files, two chunks swapped, a chunk from another file.
    check(
        &original[..4096 * 5],
        &signature,
        5,
        "truncated or extended",
    );
    let mut longer = original.clone();
    longer.push(0);
    check(&longer, &signature, 5, "truncated or extended");
    let mut swapped = original.clone();
    let (a, b) = swapped.split_at_mut(4096);
    a.swap_with_slice(&mut b[..4096]);
    check(&swapped, &signature, 5, "chunk 0 does not match");
    let mut spliced = original.clone();
    spliced[8192..12288].copy_from_slice(&data(4096, 9));
    check(&spliced, &signature, 5, "chunk 2 does not match");
    // A flipped bit anywhere in the signature file: the header fields, the key, the
    // signature, a leaf.
    let key_at = 30;
    let sig_at = key_at + 32 + 2;
    let leaves_at = sig_at + 64;
    for (at, code, needle) in [
        (0, 1, "no PARACRYPTSIG header"),
        (12, 1, "unsupported version"),
        (13, 1, "unknown signature scheme"),
        (14, 1, "unknown hash"),
        (15, 1, "reserved byte"),
        (18, 1, "not a valid paracrypt signature"),
        (27, 5, "the signature does not verify"),
        (29, 1, "not a valid paracrypt signature"),
        // Another point, or none (the key does not decompress): either way refused.
        (key_at + 5, 0, "key"),
        (sig_at - 1, 1, "not a valid paracrypt signature"),
        (sig_at + 10, 5, "the signature does not verify"),
        (leaves_at + 40, 5, "the signature does not verify"),
        (signature.len() - 1, 5, "the signature does not verify"),
    ] {
        let mut sig = signature.clone();
        sig[at] ^= 0x01;
        check(&original, &sig, code, needle);
    }
    // A cut or grown signature file.
    check(
        &original,
        &signature[..signature.len() - 1],
        1,
        "not a valid paracrypt signature",
    );
    check(
        &original,
        &signature[..40],
        1,
        "not a valid paracrypt signature",
    );
    let mut grown = signature.clone();
    grown.push(0);
    check(&original, &grown, 1, "not a valid paracrypt signature");
    // Another signer.
    let (_, other_public) = ed25519(dir.path(), "other");
    std::fs::write(&file, &original).unwrap();
    std::fs::write(&sig_path, &signature).unwrap();
    fails(
        verify(&other_public, &file, &[]),
        5,
        "signed by another key",
    );
    ok(verify(&public, &file, &[]));
    // No signature at all.
    std::fs::remove_file(&sig_path).unwrap();
    fails(verify(&public, &file, &[]), 1, "cannot read signature");
}

#[test]
fn signing_refuses_before_writing_anything() {
    let dir = scratch();
    let file = write(dir.path(), "f", b"hello");
    let bad_key = write(dir.path(), "k", b"not a key");
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(&bad_key), s(&file)]);
    fails(run(cmd), 2, "k: ");
    let (_, public) = ed25519(dir.path(), "me");
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(&public), s(&file)]);
    fails(run(cmd), 2, "(signing needs the private key)");
    assert_eq!(listing(dir.path()), ["f", "k", "me.pem", "me.pub"]);
    // An existing signature is kept without -f.
    let (key, _) = ed25519(dir.path(), "you");
    write(dir.path(), "f.psig", b"old");
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(&key), s(&file)]);
    fails(run(cmd), 2, "exists");
    assert_eq!(std::fs::read(dir.path().join("f.psig")).unwrap(), b"old");
    // A stdin signature needs -o.
    let mut cmd = paracrypt();
    cmd.args(["sign", "-k", s(&key), "-"]);
    fails(run(cmd), 2, "needs -o");
}

/// `ssh-keygen -Y` both ways: an SSHSIG from `paracrypt sign --format sshsig` (with a key of
/// paracrypt's and with an OpenSSH key) verifies with `ssh-keygen -Y verify`, and one from
/// `ssh-keygen -Y sign` with `paracrypt verify --format sshsig`; a changed file, another
/// namespace or another key fails on one line with exit 5 (1 for the namespace).
#[test]
fn sshsig_interoperates_with_ssh_keygen_both_ways() {
    if !have("ssh-keygen", "-?") {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let file = write(d, "f", &data(200_000, 7));
    let ssh_key = d.join("id");
    let made = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "me",
            "-f",
            s(&ssh_key),
        ])
        .status()
        .unwrap();
    assert!(made.success());
    let (mine, _) = ed25519(d, "mine");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-y", s(&mine)]);
    let mine_line = String::from_utf8(ok(run(cmd))).unwrap();
    let ssh_line = std::fs::read_to_string(d.join("id.pub")).unwrap();
    for (key, line) in [(&ssh_key, ssh_line.trim()), (&mine, mine_line.trim())] {
        let mut cmd = paracrypt();
        cmd.args(["sign", "-f", "--format", "sshsig", "-k", s(key), s(&file)]);
        ok(run(cmd));
        let sig = d.join("f.sig");
        assert!(
            std::fs::read_to_string(&sig)
                .unwrap()
                .starts_with("-----BEGIN SSH SIGNATURE-----")
        );
        let allowed = write(d, "allowed", format!("me {line}\n").as_bytes());
        let verified = std::process::Command::new("ssh-keygen")
            .args([
                "-Y",
                "verify",
                "-f",
                s(&allowed),
                "-I",
                "me",
                "-n",
                "file",
                "-s",
                s(&sig),
            ])
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        assert!(
            verified.status.success(),
            "ssh-keygen -Y verify: {}",
            String::from_utf8_lossy(&verified.stderr)
        );
    }
    // ssh-keygen's signature, checked by paracrypt.
    std::fs::remove_file(d.join("f.sig")).unwrap();
    let signed = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-Y",
            "sign",
            "-f",
            s(&ssh_key),
            "-n",
            "file",
            s(&file),
        ])
        .status()
        .unwrap();
    assert!(signed.success());
    let public = d.join("id.pub");
    ok(verify(&public, &file, &["--format", "sshsig"]));
    fails(
        verify(&public, &file, &["--format", "sshsig", "-n", "git"]),
        1,
        "namespace `file`, not `git`",
    );
    let (_, other) = ed25519(d, "other");
    fails(
        verify(&other, &file, &["--format", "sshsig"]),
        5,
        "signed by another key",
    );
    let mut altered = data(200_000, 7);
    altered[100] ^= 1;
    std::fs::write(&file, &altered).unwrap();
    fails(
        verify(&public, &file, &["--format", "sshsig"]),
        5,
        "does not verify",
    );
    // Only Ed25519 keys make SSHSIGs here.
    let ec = d.join("ec.pem");
    let mut cmd = paracrypt();
    cmd.args(["ecdsa", "keygen", "-o", s(&ec)]);
    ok(run(cmd));
    let mut cmd = paracrypt();
    cmd.args(["sign", "-f", "--format", "sshsig", "-k", s(&ec), s(&file)]);
    fails(run(cmd), 2, "Ed25519 keys");
}

/// minisign both ways: `paracrypt sign --format minisign` verifies with `minisign -V` (the
/// public key from `keygen -y --minisign`), and `minisign -S`'s signature (an unencrypted key
/// from `minisign -G -W`) with `paracrypt verify --format minisign`; a changed file or trusted
/// comment fails with exit 5.
#[test]
fn minisign_interoperates_both_ways() {
    if !have("minisign", "-v") {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let file = write(d, "f", &data(150_000, 8));
    let (key, _) = ed25519(d, "me");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "--minisign", "-y", s(&key)]);
    let public = write(d, "me.minisign.pub", &ok(run(cmd)));
    let mut cmd = paracrypt();
    cmd.args(["sign", "--format", "minisign", "-k", s(&key), s(&file)]);
    ok(run(cmd));
    let checked = std::process::Command::new("minisign")
        .args(["-V", "-p", s(&public), "-m", s(&file)])
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "minisign -V: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    ok(verify(&public, &file, &["--format", "minisign"]));
    // minisign's own signature, checked by paracrypt.
    let made = std::process::Command::new("minisign")
        .args([
            "-G",
            "-W",
            "-p",
            s(&d.join("m.pub")),
            "-s",
            s(&d.join("m.key")),
        ])
        .output()
        .unwrap();
    assert!(made.status.success());
    std::fs::remove_file(d.join("f.minisig")).unwrap();
    let signed = std::process::Command::new("minisign")
        .args(["-S", "-s", s(&d.join("m.key")), "-m", s(&file)])
        .output()
        .unwrap();
    assert!(
        signed.status.success(),
        "{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let out = ok(verify(&d.join("m.pub"), &file, &["--format", "minisign"]));
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("trusted comment: timestamp:")
    );
    fails(
        verify(&public, &file, &["--format", "minisign"]),
        5,
        "does not verify",
    );
    let sig = d.join("f.minisig");
    let text = std::fs::read_to_string(&sig).unwrap();
    std::fs::write(
        &sig,
        text.replace("trusted comment: ", "trusted comment: x"),
    )
    .unwrap();
    fails(
        verify(&d.join("m.pub"), &file, &["--format", "minisign"]),
        5,
        "does not verify",
    );
    std::fs::write(&sig, &text).unwrap();
    std::fs::write(&file, data(150_001, 8)).unwrap();
    fails(
        verify(&d.join("m.pub"), &file, &["--format", "minisign"]),
        5,
        "does not verify",
    );
}
