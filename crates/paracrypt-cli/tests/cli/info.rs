//! `paracrypt info` on every format it decrypts, without a key: age files made by the real `age`
//! (binary, armored, to X25519 and SSH recipients, with a passphrase) and by paracrypt to a
//! post-quantum recipient, `openssl enc` password files (with and without `-pbkdf2`), containers;
//! as text and as `--json`; and a file that is none of them gets one line.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;
use crate::people::{ssh_key, x25519};

const K: usize = 64 * 1024;

/// `paracrypt info [--json] FILE`.
fn info(file: &Path, json: bool) -> Output {
    let mut cmd = paracrypt();
    cmd.arg("info");
    if json {
        cmd.arg("--json");
    }
    cmd.arg(file);
    run(cmd)
}

/// The text form, asserting success.
#[track_caller]
fn info_text(file: &Path) -> String {
    String::from_utf8(ok(info(file, false))).unwrap()
}

/// The JSON form, asserting success and that it is one JSON object.
#[track_caller]
fn json(file: &Path) -> Value {
    let value: Value = serde_json::from_slice(&ok(info(file, true))).unwrap();
    assert!(value.is_object(), "{value}");
    value
}

/// Asserts that `text` has the line `line`.
#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "no line `{line}` in:\n{text}"
    );
}

/// Runs `age` with `args`, asserting success; stdout.
#[track_caller]
fn age(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("age");
    cmd.args(args);
    ok(run_with_stdin(cmd, stdin))
}

#[test]
fn age_files_made_by_age_binary_and_armored() {
    if !have("age", "--version") {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (_, me) = x25519(d, "me.key");
    let (_, you) = x25519(d, "you.key");
    for (len, chunks) in [(0, 1), (K, 1), (K + 1, 2), (3 * K + 5, 4)] {
        let plain = data(len, 3);
        let binary = write(d, "binary.age", &age(&["-e", "-r", &me], &plain));
        let text = info_text(&binary);
        has_line(&text, "format:      age v1 (binary)");
        has_line(&text, "stanzas:     1 (X25519)");
        has_line(&text, "post-quantum: no");
        has_line(&text, "passphrase:  no");
        let size = std::fs::metadata(&binary).unwrap().len();
        let chunks_said = if chunks == 1 {
            "1 chunk".to_owned()
        } else {
            format!("{chunks} chunks")
        };
        has_line(&text, &format!("size:        {size} bytes ({chunks_said})"));
        has_line(&text, &format!("plaintext:   {len} bytes"));
        let value = json(&binary);
        assert_eq!(value["format"], "age");
        assert_eq!(value["armored"], false);
        assert_eq!(value["size"], size);
        assert_eq!(value["chunks"], chunks);
        assert_eq!(value["plaintext"]["min"], len);
        assert_eq!(value["plaintext"]["max"], len);
        assert_eq!(value["recipients"], 1);
        assert_eq!(value["stanzas"][0]["kind"], "x25519");
        assert_eq!(value["post_quantum"], false);
        assert_eq!(value["passphrase"], false);
        assert_eq!(value["damage"], Value::Null);
        let header_len = value["header_len"].as_u64().unwrap();
        assert_eq!(value["payload"], size - header_len - 16);

        let armored = age(&["-e", "-a", "-r", &me, "-r", &you], &plain);
        assert!(armored.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----"));
        let armored = write(d, "armored.age", &armored);
        let text = info_text(&armored);
        has_line(&text, "format:      age v1 (ASCII armor)");
        has_line(&text, "stanzas:     2 (X25519 ×2)");
        has_line(&text, &format!("plaintext:   {len} bytes"));
        let value = json(&armored);
        assert_eq!(value["armored"], true);
        assert_eq!(value["recipients"], 2);
        assert_eq!(value["stanzas"].as_array().unwrap().len(), 2);
        assert_eq!(value["chunks"], chunks, "{len} bytes armored");
        assert_eq!(value["plaintext"]["max"], len);
    }
    // An SSH recipient.
    if let Some((_, public)) = ssh_key(d, "ed25519") {
        let file = write(d, "ssh.age", &age(&["-e", "-r", &public], b"hi"));
        has_line(&info_text(&file), "stanzas:     1 (ssh-ed25519)");
        assert_eq!(json(&file)["stanzas"][0]["kind"], "ssh-ed25519");
    }
    // From stdin: the header alone for a binary file (no length), the chunks of armor.
    let file = age(&["-e", "-r", &me], &data(K + 1, 4));
    let mut cmd = paracrypt();
    cmd.args(["info", "--json", "-"]);
    let value: Value = serde_json::from_slice(&ok(run_with_stdin(cmd, &file))).unwrap();
    assert_eq!(value["format"], "age");
    assert_eq!(value["size"], Value::Null);
    assert_eq!(value["chunks"], Value::Null);
    let file = age(&["-e", "-a", "-r", &me], &data(K + 1, 4));
    let mut cmd = paracrypt();
    cmd.args(["info", "-"]);
    let text = String::from_utf8(ok(run_with_stdin(cmd, &file))).unwrap();
    has_line(&text, "plaintext:   65537 bytes");
}

#[test]
fn age_files_with_a_passphrase() {
    if !have("age", "--version") || !have("script", "--version") {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let input = write(d, "plain", &data(1000, 5));
    let sealed = d.join("sealed.age");
    // `age` reads a passphrase from the terminal only: `script` gives it one.
    let mut cmd = Command::new("script");
    let line = format!("age -p -o {} {}", sh_quote(&sealed), sh_quote(&input));
    cmd.args(["-qec", &line, "/dev/null"]);
    ok(run_with_stdin(cmd, b"a passphrase\na passphrase\n"));
    let text = info_text(&sealed);
    has_line(&text, "stanzas:     1 (scrypt)");
    has_line(&text, "passphrase:  yes (scrypt, work factor 2^18)");
    has_line(&text, "plaintext:   1000 bytes");
    let value = json(&sealed);
    assert_eq!(value["passphrase"], true);
    assert_eq!(value["scrypt_log_n"], 18);
    assert_eq!(value["work_factor_refused"], false);
    assert_eq!(value["stanzas"][0]["kind"], "scrypt");
    assert_eq!(value["stanzas"][0]["log_n"], 18);
}

#[test]
fn a_post_quantum_age_file() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("pq.key");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "--kind", "pq", "-o"]).arg(&key);
    ok(run(cmd));
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-y"]).arg(&key);
    let recipient = String::from_utf8(ok(run(cmd))).unwrap().trim().to_owned();
    for armor in [false, true] {
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "-q", "--format", "age", "-r", &recipient]);
        if armor {
            cmd.arg("-a");
        }
        let file = write(d, "pq.age", &ok(run_with_stdin(cmd, &data(K + 1, 6))));
        let text = info_text(&file);
        has_line(&text, "stanzas:     1 (mlkem768x25519)");
        has_line(
            &text,
            "post-quantum: yes (every recipient is mlkem768x25519 or mlkem768p256tag)",
        );
        has_line(&text, "plaintext:   65537 bytes");
        let value = json(&file);
        assert_eq!(value["post_quantum"], true);
        assert_eq!(value["armored"], armor);
        assert_eq!(value["stanzas"][0]["kind"], "mlkem768x25519");
        assert_eq!(value["chunks"], 2);
    }
}

#[test]
fn openssl_password_files_with_and_without_pbkdf2() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let pw = write(d, "pw", b"open sesame\n");
    let input = write(d, "plain", &data(1000, 7));
    let mut kdf_lines = Vec::new();
    for (cipher, pbkdf2, ciphertext) in [
        ("-aes-256-cbc", true, 1008),
        ("-aes-128-ctr", false, 1000),
        ("-des-ede3-cbc", false, 1000 + 8),
    ] {
        let out = d.join("sealed");
        let mut args = vec!["enc", "-e", cipher, "-pass"];
        let pass = format!("file:{}", pw.display());
        args.push(&pass);
        if pbkdf2 {
            args.push("-pbkdf2");
        }
        args.extend([
            "-in",
            input.to_str().unwrap(),
            "-out",
            out.to_str().unwrap(),
        ]);
        // openssl warns on stderr about its legacy KDF: only the file matters.
        openssl_ok(&args);
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(bytes[..8], *b"Salted__");
        let salt = hex::encode(&bytes[8..16]);
        let text = info_text(&out);
        has_line(&text, "format:      openssl enc password file (Salted__)");
        has_line(&text, &format!("salt:        {salt}"));
        let kdf = text.lines().find(|l| l.starts_with("kdf:")).unwrap();
        assert!(kdf.contains("not recorded in the file"), "{kdf}");
        kdf_lines.push(kdf.to_owned());
        has_line(
            &text,
            "cipher:      not recorded in the file (give it to decrypt: raw -d -c NAME)",
        );
        assert!(
            text.contains(&format!("(ciphertext {ciphertext} bytes")),
            "{text}"
        );
        let value = json(&out);
        assert_eq!(value["format"], "openssl-salted");
        assert_eq!(value["salt"], salt.as_str());
        assert_eq!(value["kdf"], Value::Null);
        assert_eq!(value["cipher"], Value::Null);
        assert_eq!(value["ciphertext"], ciphertext);
        assert_eq!(value["size"], bytes.len());
    }
    // The file cannot tell PBKDF2 from openssl's legacy KDF, and says the same for both.
    assert!(kdf_lines.iter().all(|l| *l == kdf_lines[0]));
}

#[test]
fn containers_as_json() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("k.key");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-o"]).arg(&key);
    ok(run(cmd));
    let input = write(d, "plain", &data(10_000, 8));
    let sealed = d.join("sealed.pcr");
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "-q", "-k"])
        .arg(&key)
        .args(["--chunk-size", "4KiB", "--cipher", "chacha20-poly1305"])
        .arg(&input)
        .arg("-o")
        .arg(&sealed);
    ok(run(cmd));
    let value = json(&sealed);
    assert_eq!(value["schema"], 1);
    assert_eq!(value["format"], "paracrypt");
    assert_eq!(value["suite"], "chacha20-poly1305");
    assert_eq!(value["legacy"], false);
    assert_eq!(value["chunk_size"], 4096);
    assert_eq!(value["secret"]["kind"], "key");
    assert_eq!(value["chunks"], 3);
    assert_eq!(value["plaintext"]["min"], 10_000);
    assert_eq!(value["plaintext"]["max"], 10_000);
    assert_eq!(value["damage"], Value::Null);
    assert_eq!(value["salt"].as_str().unwrap().len(), 64);
    // A damaged file (its last chunk shorter than a tag): its fields, what is wrong, exit 1.
    let bytes = std::fs::read(&sealed).unwrap();
    let cut = write(d, "cut.pcr", &bytes[..bytes.len() - 1820]);
    let out = info(&cut, true);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["suite"], "chacha20-poly1305");
    assert_eq!(value["damage"], "input truncated inside chunk 2");
    fails(out, 1, "input truncated inside chunk 2");
}

#[test]
fn a_file_of_no_format_gets_one_line() {
    let dir = scratch();
    let d = dir.path();
    let message = "not an encrypted file paracrypt reads (it starts with neither PARACRYPT, \
                   age-encryption.org/, -----BEGIN AGE ENCRYPTED FILE----- nor openssl's \
                   Salted__)";
    for (name, bytes) in [
        ("text", &b"just some text\n"[..]),
        ("empty", b""),
        ("zeros", &[0; 4096]),
        ("salted", b"Salte"),
    ] {
        let file = write(d, name, bytes);
        for json in [false, true] {
            let out = info(&file, json);
            assert!(out.stdout.is_empty(), "{name}: stdout {:?}", out.stdout);
            let stderr = fails(out, 1, message);
            assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        }
    }
}
