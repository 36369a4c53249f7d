//! `encrypt --sign` / `decrypt --verify-with`: signed containers (format version 3) from the
//! command line, file to file, stdin to stdout and by range, with every key kind `sign` takes;
//! the same bytes at 1 and 3 threads (Ed25519); `info` names the signer; `rekey` keeps the
//! signatures valid; and every bad input — another signer, an unsigned container or age file,
//! a flipped bit in a chunk, its signature or the signer field, a cut, swapped or spliced file
//! — fails on one line with its exit code, leaving nothing at the
//! destination and releasing nothing past the last verified chunk.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::people::x25519;

const CHUNK: usize = 4096;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A signing key of `kind` (`ed25519`, `ml-dsa-65`, `ecdsa`, `rsa`) and its public key.
pub fn signing_key(dir: &Path, kind: &str, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.pem"));
    let public = dir.join(format!("{name}.pub"));
    let mut cmd = paracrypt();
    match kind {
        "ecdsa" | "rsa" => cmd.args([kind, "keygen"]),
        _ => cmd.args(["keygen", "--kind", kind]),
    };
    cmd.args(["-o", s(&key), "--public-out", s(&public)]);
    ok(run(cmd));
    (key, public)
}

/// `encrypt` of a container in 4 KiB chunks (an age file has age's own: `--format age`).
fn encrypt(args: &[&str], input: &Path, output: &Path) -> std::process::Output {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "-q", "-f"]);
    if !args.contains(&"--format") {
        cmd.args(["--chunk-size", "4KiB"]);
    }
    cmd.args(args).arg(input).arg("-o").arg(output);
    run(cmd)
}

fn decrypt(args: &[&str], input: &Path) -> std::process::Output {
    let mut cmd = paracrypt();
    cmd.arg("decrypt").args(args).arg(input);
    run(cmd)
}

#[test]
fn signed_files_round_trip_with_every_key_kind_and_secret() {
    let dir = scratch();
    let d = dir.path();
    let plain = data(5 * CHUNK + 77, 1);
    let input = write(d, "plain", &plain);
    let sealed = d.join("sealed");
    let (id, recipient) = x25519(d, "id");
    let mut keyfile = paracrypt();
    keyfile.args(["keygen", "-o", s(&d.join("key"))]);
    ok(run(keyfile));
    let key = d.join("key");
    for kind in ["ed25519", "ecdsa", "rsa", "ml-dsa-65"] {
        let (signer, public) = signing_key(d, kind, kind);
        for (to, with) in [
            (vec!["-r", &recipient[..]], vec!["-i", s(&id)]),
            (vec!["-k", s(&key)], vec!["-k", s(&key)]),
        ] {
            let mut args = to.clone();
            args.extend(["--sign", s(&signer)]);
            ok(encrypt(&args, &input, &sealed));
            // Verified against the given key: file to stdout, and stdin to stdout.
            let mut verify = with.clone();
            verify.extend(["--verify-with", s(&public)]);
            let out = decrypt(&verify, &sealed);
            let (_, stderr) = status_and_stderr(&out);
            assert!(
                stderr.contains("good signature: every chunk is signed by"),
                "{stderr}"
            );
            assert_eq!(ok(out), plain, "{kind}");
            let mut cmd = paracrypt();
            cmd.arg("decrypt").args(&verify).arg("-");
            let bytes = std::fs::read(&sealed).unwrap();
            assert_eq!(ok(run_with_stdin(cmd, &bytes)), plain, "{kind} stdin");
            // Without --verify-with: verified against the header's key, which stderr names.
            let out = decrypt(&with, &sealed);
            let (_, stderr) = status_and_stderr(&out);
            assert!(
                stderr.contains("every chunk is signed by") && stderr.contains("--verify-with"),
                "{stderr}"
            );
            assert_eq!(ok(out), plain);
            // A range.
            let mut range = verify.clone();
            range.extend(["--range", "5000:3000"]);
            assert_eq!(ok(decrypt(&range, &sealed)), &plain[5000..8000]);
        }
    }
}

#[test]
fn ed25519_signed_files_are_the_same_bytes_at_1_and_3_threads_and_from_stdin() {
    let dir = scratch();
    let d = dir.path();
    let (signer, _) = signing_key(d, "ed25519", "me");
    let mut keyfile = paracrypt();
    keyfile.args(["keygen", "-o", s(&d.join("key"))]);
    ok(run(keyfile));
    let plain = data(9 * CHUNK + 5, 2);
    let input = write(d, "plain", &plain);
    let salt = "ab".repeat(32);
    let key = d.join("key");
    let common = ["-k", s(&key), "--sign", s(&signer), "--fixed-salt", &salt];
    let mut outputs = Vec::new();
    for threads in ["1", "3"] {
        let out = d.join(format!("sealed{threads}"));
        let mut args = common.to_vec();
        args.extend(["-j", threads]);
        ok(encrypt(&args, &input, &out));
        outputs.push(std::fs::read(out).unwrap());
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--chunk-size", "4KiB", "-j", threads])
            .args(common)
            .args(["-o", "-", "-"]);
        outputs.push(ok(run_with_stdin(cmd, &plain)));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn info_names_the_signer() {
    let dir = scratch();
    let d = dir.path();
    let (signer, _) = signing_key(d, "ed25519", "me");
    let (_, recipient) = x25519(d, "id");
    let input = write(d, "plain", &data(10_000, 3));
    let sealed = d.join("sealed");
    ok(encrypt(
        &["-r", &recipient, "--sign", s(&signer)],
        &input,
        &sealed,
    ));
    let mut cmd = paracrypt();
    cmd.arg("info").arg(&sealed);
    let text = String::from_utf8(ok(run(cmd))).unwrap();
    assert!(text.contains("format:      paracrypt version 3"), "{text}");
    assert!(text.contains("signed by:   ed25519 SHA256:"), "{text}");
    let mut cmd = paracrypt();
    cmd.args(["info", "--json"]).arg(&sealed);
    let json: serde_json::Value = serde_json::from_slice(&ok(run(cmd))).unwrap();
    assert_eq!(json["version"], 3);
    assert_eq!(json["signer"]["scheme"], "ed25519");
    assert_eq!(json["signer"]["signature_len"], 64);
    assert!(
        json["signer"]["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("ed25519 SHA256:")
    );
    assert_eq!(json["chunks"], 3);
}

#[test]
fn rekey_keeps_a_signed_file_verifiable() {
    let dir = scratch();
    let d = dir.path();
    let (signer, public) = signing_key(d, "ed25519", "me");
    let (a_id, a) = x25519(d, "a");
    let (b_id, b) = x25519(d, "b");
    let plain = data(3 * CHUNK + 1, 4);
    let input = write(d, "plain", &plain);
    let sealed = d.join("sealed");
    ok(encrypt(&["-r", &a, "--sign", s(&signer)], &input, &sealed));
    let rekeyed = d.join("rekeyed");
    let mut cmd = paracrypt();
    cmd.args(["rekey", "-i", s(&a_id), "-r", &b, "-o", s(&rekeyed)])
        .arg(&sealed);
    ok(run(cmd));
    let out = decrypt(&["-i", s(&b_id), "--verify-with", s(&public)], &rekeyed);
    assert_eq!(ok(out), plain);
    fails(
        decrypt(&["-i", s(&a_id), "--verify-with", s(&public)], &rekeyed),
        1,
        "no identity matches",
    );
}

#[test]
fn bad_input_fails_on_one_line_with_its_exit_code_and_leaves_nothing() {
    let dir = scratch();
    let d = dir.path();
    let (signer, public) = signing_key(d, "ed25519", "me");
    let (_, other_public) = signing_key(d, "ed25519", "other");
    let (id, recipient) = x25519(d, "id");
    let plain = data(5 * CHUNK + 10, 5);
    let input = write(d, "plain", &plain);
    let sealed = d.join("sealed");
    ok(encrypt(
        &["-r", &recipient, "--sign", s(&signer)],
        &input,
        &sealed,
    ));
    let unsigned = d.join("unsigned");
    ok(encrypt(&["-r", &recipient], &input, &unsigned));
    let age_file = d.join("age");
    ok(encrypt(
        &["--format", "age", "-r", &recipient],
        &input,
        &age_file,
    ));
    let armored = d.join("armored");
    ok(encrypt(
        &["--format", "age", "-a", "-r", &recipient],
        &input,
        &armored,
    ));
    let bytes = std::fs::read(&sealed).unwrap();
    let h = paracrypt_core::container::read_header(&mut &bytes[..])
        .unwrap()
        .len;
    let stride = CHUNK + 16 + 64;
    let altered = |name: &str, edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        write(d, name, &b)
    };
    let body_flip = altered("body", &|b| b[h + 2 * stride + 9] ^= 1);
    let sig_flip = altered("sig", &|b| b[h + 2 * stride + CHUNK + 16 + 9] ^= 1);
    let signer_flip = altered("signer", &|b| b[h - 45] ^= 1);
    let truncated = altered("cut", &|b| b.truncate(h + 3 * stride));
    let swapped = altered("swapped", &|b| {
        let (one, two) = (h + stride, h + 2 * stride);
        let first = b[one..two].to_vec();
        b.copy_within(two..two + stride, one);
        b[two..two + stride].copy_from_slice(&first);
    });
    let other_file = d.join("other");
    ok(encrypt(
        &["-r", &recipient, "--sign", s(&signer)],
        &input,
        &other_file,
    ));
    let other_bytes = std::fs::read(&other_file).unwrap();
    let spliced = altered("spliced", &|b| {
        b[h + 3 * stride..h + 4 * stride]
            .copy_from_slice(&other_bytes[h + 3 * stride..h + 4 * stride]);
    });
    let id = s(&id);
    let with = |key: &Path| {
        vec!["-i", id, "--verify-with", s(key)]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let cases: Vec<(&Path, Vec<String>, i32, &str, usize)> = vec![
        (
            &sealed,
            with(&other_public),
            5,
            "signed by another key (ed25519 SHA256:",
            0,
        ),
        (
            &unsigned,
            with(&public),
            5,
            "the file is not signed (a signature by ed25519",
            0,
        ),
        (
            &age_file,
            with(&public),
            5,
            "the file is not signed (a signature by ed25519",
            0,
        ),
        (
            &armored,
            with(&public),
            5,
            "the file is not signed (a signature by ed25519",
            0,
        ),
        (
            &body_flip,
            with(&public),
            1,
            "chunk 2 failed authentication",
            2,
        ),
        (
            &sig_flip,
            with(&public),
            5,
            "chunk 2 is not signed by the file's signer",
            2,
        ),
        (
            &signer_flip,
            with(&public),
            1,
            "header damaged: checksum mismatch",
            0,
        ),
        (
            &truncated,
            with(&public),
            1,
            "file truncated after chunk 2",
            2,
        ),
        (
            &swapped,
            with(&public),
            1,
            "chunk 1 failed authentication",
            1,
        ),
        (
            &spliced,
            with(&public),
            1,
            "chunk 3 failed authentication",
            3,
        ),
    ];
    for (file, args, code, needle, released) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // To stdout: only the chunks before the failing one.
        let out = decrypt(&args, file);
        assert_eq!(out.stdout.len(), released * CHUNK, "{needle}");
        assert_eq!(&out.stdout[..], &plain[..released * CHUNK]);
        let stderr = fails(out, code, needle);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        // To a file: nothing at the destination, no temporary left.
        let before = listing(d);
        let dest = d.join("dest");
        let mut cmd = paracrypt();
        cmd.arg("decrypt")
            .args(&args)
            .arg(file)
            .arg("-o")
            .arg(&dest);
        fails(run(cmd), code, needle);
        assert_eq!(listing(d), before, "{needle}");
    }
}

/// P-256's group order `n`, big-endian.
const P256_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
];

/// `n − s` for a 32-byte big-endian `s` below `n`: an ECDSA signature's other form.
fn order_minus(s: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = P256_ORDER[i] as i16 - s[i] as i16 - borrow;
        out[i] = d.rem_euclid(256) as u8;
        borrow = (d < 0) as i16;
    }
    assert_eq!(borrow, 0, "s is below n");
    out
}

/// ECDSA chunk signatures have a low `s` whichever provider signs, and only that form is
/// accepted, whichever provider reads: a real signed file whose chunk 1 carries `(r, n − s)`
/// (as valid an ECDSA signature of the same statement, which anyone can compute) is refused as
/// altered, exit 5, with nothing written; otherwise anyone could change a signed file's bytes
/// and it would still verify.
#[test]
fn ecdsa_chunk_signatures_have_one_form_on_every_provider() {
    let dir = scratch();
    let d = dir.path();
    let (signer, public) = signing_key(d, "ecdsa", "me");
    let key = d.join("key");
    let mut keygen = paracrypt();
    keygen.args(["keygen", "-o", s(&key)]);
    ok(run(keygen));
    let plain = data(7 * CHUNK + 5, 6);
    let input = write(d, "plain", &plain);
    let stride = CHUNK + 16 + 64;
    for signing in providers() {
        let sealed = d.join(format!("sealed-{signing}"));
        ok(encrypt(
            &["-k", s(&key), "--sign", s(&signer), "--provider", signing],
            &input,
            &sealed,
        ));
        let bytes = std::fs::read(&sealed).unwrap();
        let h = paracrypt_core::container::read_header(&mut &bytes[..])
            .unwrap()
            .len;
        // Every chunk's `s` (the last chunk's after its 5 bytes and tag) is the low one.
        for i in 0..8 {
            let at = h + i * stride + if i < 7 { CHUNK } else { 5 } + 16 + 32;
            let s_bytes = &bytes[at..at + 32];
            assert!(
                s_bytes <= &order_minus(s_bytes)[..],
                "{signing}: chunk {i} has a high s"
            );
        }
        let mut flipped = bytes.clone();
        let at = h + stride + CHUNK + 16 + 32;
        let high = order_minus(&bytes[at..at + 32]);
        flipped[at..at + 32].copy_from_slice(&high);
        let flipped = write(d, &format!("flipped-{signing}"), &flipped);
        for reading in providers() {
            let out = d.join("out");
            let verify = ["-k", s(&key), "--verify-with", s(&public)];
            let mut cmd = paracrypt();
            cmd.args(["decrypt", "--provider", reading])
                .args(verify)
                .arg(&sealed)
                .arg("-o")
                .arg(&out);
            ok(run(cmd));
            assert!(std::fs::read(&out).unwrap() == plain, "{signing}/{reading}");
            std::fs::remove_file(&out).unwrap();
            let mut cmd = paracrypt();
            cmd.args(["decrypt", "--provider", reading])
                .args(verify)
                .arg(&flipped)
                .arg("-o")
                .arg(&out);
            fails(
                run(cmd),
                5,
                "chunk 1 is not signed by the file's signer (its signature was altered",
            );
            assert!(
                !out.exists(),
                "{signing}/{reading}: nothing at the destination"
            );
        }
    }
}
