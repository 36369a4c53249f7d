//! Encrypting to people and reading the files people already have, end to end: `encrypt
//! -r/-R`, `decrypt -i`, `keygen --kind x25519`/`-y`, `--format age` both ways with the real
//! `age` (X25519, SSH ed25519, passphrase, armor, at the chunk boundaries, 1 and 3 threads), and
//! `raw --password-file` both ways with `openssl enc -pbkdf2`. Every bad input of issue #13
//! item 4 fails with its one line, its exit code and no output.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const K: usize = 64 * 1024;

/// The `age` binary is there (CI installs it), or the test says so and passes.
pub(crate) fn have_age() -> bool {
    have("age", "--version")
}

/// Runs `age` with `args`, asserting success; stdout.
#[track_caller]
fn age(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut cmd = Command::new("age");
    cmd.args(args);
    ok(run_with_stdin(cmd, stdin))
}

/// `ssh-keygen -t KIND` into `dir`: (private key path, public key line), or `None` outside CI
/// when ssh-keygen is missing.
pub fn ssh_key(dir: &Path, kind: &str) -> Option<(PathBuf, String)> {
    let path = dir.join(format!("id_{kind}"));
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", kind, "-N", "", "-f"]).arg(&path);
    if kind == "rsa" {
        cmd.args(["-b", "2048"]);
    }
    if !have("ssh-keygen", "-?") {
        return None;
    }
    assert!(
        cmd.status().is_ok_and(|s| s.success()),
        "ssh-keygen -t {kind}"
    );
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    Some((path, public.trim().to_owned()))
}

/// `paracrypt keygen --kind x25519 -o DIR/NAME`: (identity path, recipient).
pub fn x25519(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let mut cmd = paracrypt();
    cmd.args(["keygen", "--kind", "x25519", "-o"]).arg(&path);
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(out);
    let public = stderr
        .trim()
        .strip_prefix("Public key: ")
        .unwrap_or_else(|| panic!("keygen prints the recipient: {stderr}"))
        .to_owned();
    (path, public)
}

/// Encrypts `plain` with `args`, alternating file to file and stdin to stdout.
fn ours(args: &[&str], plain: &[u8], file: bool, dir: &Path) -> Vec<u8> {
    let mut cmd = paracrypt();
    cmd.arg("encrypt").args(args);
    if file {
        let input = write(dir, "plain", plain);
        let output = dir.join("sealed");
        let _ = std::fs::remove_file(&output);
        cmd.arg(&input).arg("-o").arg(&output);
        ok(run(cmd));
        std::fs::read(output).unwrap()
    } else {
        ok(run_with_stdin(cmd, plain))
    }
}

/// Decrypts `sealed` with `args`, alternating file to file and stdin to stdout.
fn opened(args: &[&str], sealed: &[u8], file: bool, dir: &Path) -> Vec<u8> {
    let mut cmd = paracrypt();
    cmd.arg("decrypt").args(args);
    if file {
        let input = write(dir, "theirs", sealed);
        let output = dir.join("opened");
        let _ = std::fs::remove_file(&output);
        cmd.arg(&input).arg("-o").arg(&output);
        ok(run(cmd));
        std::fs::read(output).unwrap()
    } else {
        ok(run_with_stdin(cmd, sealed))
    }
}

#[test]
fn x25519_age_files_both_ways_at_every_boundary() {
    if !have_age() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (key, recipient) = x25519(d, "me.key");
    let key = key.to_str().unwrap();
    for (n, len) in [0, 1, K - 1, K, K + 1, 3 * K, 10 << 20]
        .into_iter()
        .enumerate()
    {
        let plain = data(len, n as u8);
        for threads in ["1", "3"] {
            let file = (n + threads.len()) % 2 == 0;
            let sealed = ours(
                &["--format", "age", "-r", &recipient, "-j", threads],
                &plain,
                file,
                d,
            );
            assert!(
                age(&["-d", "-i", key], &sealed) == plain,
                "age -d: {len} bytes, -j{threads}"
            );
            let theirs = age(&["-e", "-r", &recipient], &plain);
            assert!(
                opened(&["-i", key, "-j", threads], &theirs, !file, d) == plain,
                "decrypt of age -e: {len} bytes, -j{threads}"
            );
        }
    }
}

#[test]
fn ssh_and_armored_age_files_both_ways() {
    if !have_age() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let Some((key, public)) = ssh_key(d, "ed25519") else {
        return;
    };
    let key = key.to_str().unwrap();
    for (n, len) in [0, K, K + 1, 10 << 20].into_iter().enumerate() {
        let plain = data(len, 20 + n as u8);
        for (threads, armor) in [("1", false), ("3", true), ("3", false), ("1", true)] {
            let mut args = vec!["--format", "age", "-r", &public, "-j", threads];
            if armor {
                args.push("-a");
            }
            let sealed = ours(&args, &plain, n % 2 == 0, d);
            assert_eq!(
                sealed.starts_with(b"-----BEGIN AGE ENCRYPTED FILE-----"),
                armor
            );
            assert!(
                age(&["-d", "-i", key], &sealed) == plain,
                "{len} bytes, armor {armor}"
            );
            let mut theirs_args = vec!["-e", "-r", &public];
            if armor {
                theirs_args.push("-a");
            }
            let theirs = age(&theirs_args, &plain);
            assert!(
                opened(&["-i", key, "-j", threads], &theirs, n % 2 == 1, d) == plain,
                "decrypt of age -e: {len} bytes, armor {armor}"
            );
        }
    }
}

/// `age` reads a passphrase from the terminal only: `script` gives it one (util-linux, on
/// every Debian machine). `args` is a shell command line: paths in it go through [`sh_quote`].
fn age_with_passphrase(args: &str, passphrase: &str, times: usize) -> bool {
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &format!("age {args}"), "/dev/null"]);
    let out = run_with_stdin(cmd, format!("{passphrase}\n").repeat(times).as_bytes());
    out.status.success()
}

#[test]
fn passphrase_age_files_both_ways() {
    if !have_age() {
        return;
    }
    if !have("script", "--version") {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let passphrase = "correct horse battery staple";
    let pw = write(d, "pw", format!("{passphrase}\n").as_bytes());
    let pw = pw.to_str().unwrap();
    // Each length costs four scrypt runs at the default work factor (about a second each):
    // the payload's boundaries are crossed both ways by the X25519 test above.
    for (n, len) in [0, K + 1].into_iter().enumerate() {
        let plain = data(len, 30 + n as u8);
        let threads = if n % 2 == 0 { "1" } else { "3" };
        let sealed = ours(
            &[
                "--format",
                "age",
                "--passphrase",
                "--password-file",
                pw,
                "-j",
                threads,
            ],
            &plain,
            true,
            d,
        );
        let ours_path = write(d, "ours.age", &sealed);
        let out = d.join("age-out");
        let _ = std::fs::remove_file(&out);
        let args = format!("-d -o {} {}", sh_quote(&out), sh_quote(&ours_path));
        assert!(
            age_with_passphrase(&args, passphrase, 1),
            "age -d of ours, {len} bytes"
        );
        // age creates its output lazily: nothing decrypted, no file.
        assert!(
            std::fs::read(&out).unwrap_or_default() == plain,
            "{len} bytes"
        );
        let input = write(d, "plain", &plain);
        let theirs = d.join("theirs.age");
        let _ = std::fs::remove_file(&theirs);
        let args = format!("-p -o {} {}", sh_quote(&theirs), sh_quote(&input));
        assert!(
            age_with_passphrase(&args, passphrase, 2),
            "age -p, {len} bytes"
        );
        let theirs = std::fs::read(&theirs).unwrap();
        assert!(
            opened(
                &["--password-file", pw, "-j", threads],
                &theirs,
                n % 2 == 0,
                d
            ) == plain
        );
    }
}

#[test]
fn a_range_of_an_age_file() {
    if !have_age() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (key, recipient) = x25519(d, "me.key");
    let plain = data(5 * K + 3, 40);
    let theirs = write(d, "f.age", &age(&["-e", "-r", &recipient], &plain));
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "-i"])
        .arg(&key)
        .args(["--range", "65530:20"])
        .arg(&theirs);
    assert_eq!(ok(run(cmd)), &plain[65530..65550]);
    let armored = write(d, "f.asc", &age(&["-e", "-a", "-r", &recipient], &plain));
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "-i"])
        .arg(&key)
        .args(["--range", "0:10"])
        .arg(&armored);
    fails(
        run(cmd),
        2,
        "a range needs a container or a binary age file: armor is read in order",
    );
}

#[test]
fn containers_to_every_recipient_kind_and_to_several() {
    let dir = scratch();
    let d = dir.path();
    let (x_key, x_pub) = x25519(d, "x.key");
    let (y_key, y_pub) = x25519(d, "y.key");
    // An RSA key pair from `paracrypt rsa keygen`, and its public key in PEM and DER.
    let rsa = d.join("rsa.pem");
    let rsa_pub = d.join("rsa.pub.pem");
    let mut cmd = paracrypt();
    cmd.args(["rsa", "keygen", "--bits", "2048", "-o"])
        .arg(&rsa)
        .arg("--public-out")
        .arg(&rsa_pub);
    ok(run(cmd));
    let mut people: Vec<(String, Vec<String>, PathBuf)> = vec![
        (
            "X25519".into(),
            vec!["-r".into(), x_pub.clone()],
            x_key.clone(),
        ),
        (
            "RSA PEM".into(),
            vec!["-R".into(), rsa_pub.display().to_string()],
            rsa.clone(),
        ),
    ];
    // The same RSA key in DER, when openssl is there to convert it.
    if openssl().is_some() {
        let der = d.join("rsa.pub.der");
        openssl_ok(&[
            "pkey",
            "-pubin",
            "-in",
            rsa_pub.to_str().unwrap(),
            "-outform",
            "DER",
            "-out",
            der.to_str().unwrap(),
        ]);
        people.push((
            "RSA DER".into(),
            vec!["-R".into(), der.display().to_string()],
            rsa.clone(),
        ));
    }
    for kind in ["ed25519", "rsa"] {
        if let Some((key, public)) = ssh_key(d, kind) {
            people.push((format!("ssh-{kind}"), vec!["-r".into(), public], key));
        }
    }
    let plain = data(3 * 4096 + 5, 50);
    for (kind, args, key) in &people {
        for file in [true, false] {
            let mut enc: Vec<&str> = args.iter().map(String::as_str).collect();
            enc.extend(["--chunk-size", "4096"]);
            let sealed = ours(&enc, &plain, file, d);
            assert!(sealed.starts_with(b"PARACRYPT\x02"), "{kind}: version 2");
            let key = key.to_str().unwrap();
            assert!(opened(&["-i", key], &sealed, !file, d) == plain, "{kind}");
        }
    }
    // Several recipients: each decrypts; an identity file with two identities too.
    let rsa_pub_s = rsa_pub.display().to_string();
    let sealed = ours(
        &["-r", &x_pub, "-R", &rsa_pub_s, "-r", &y_pub],
        &plain,
        true,
        d,
    );
    for key in [&x_key, &rsa, &y_key] {
        assert!(opened(&["-i", key.to_str().unwrap()], &sealed, true, d) == plain);
    }
    let mut cmd = paracrypt();
    cmd.arg("info").arg(write(d, "several.pcr", &sealed));
    let info = String::from_utf8(ok(run(cmd))).unwrap();
    assert!(info.contains("secret:      3 recipients"), "{info}");
    // A recipients file, as age's -R: comments, blank lines, several kinds.
    let list = write(
        d,
        "team.txt",
        format!("# the team\n{x_pub}\n\n{y_pub}\n").as_bytes(),
    );
    let sealed = ours(&["-R", list.to_str().unwrap()], &plain, false, d);
    assert!(opened(&["-i", y_key.to_str().unwrap()], &sealed, false, d) == plain);
}

#[test]
fn keygen_makes_identities_and_minus_y_prints_their_recipients() {
    let dir = scratch();
    let d = dir.path();
    let (key, public) = x25519(d, "me.key");
    let text = std::fs::read_to_string(&key).unwrap();
    assert!(text.contains("AGE-SECRET-KEY-1"));
    assert!(text.contains(&format!("# public key: {public}")));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-y"]).arg(&key);
    assert_eq!(
        String::from_utf8(ok(run(cmd))).unwrap(),
        format!("{public}\n")
    );
    if have_age() {
        // age agrees on the recipient of the identity.
        let mut cmd = Command::new("age-keygen");
        cmd.arg("-y").arg(&key);
        assert_eq!(
            String::from_utf8(ok(run(cmd))).unwrap(),
            format!("{public}\n")
        );
    }
    let mut cmd = paracrypt();
    cmd.args(["keygen", "--kind", "x25519", "-o"]).arg(&key);
    fails(run(cmd), 2, "already exists; keygen never overwrites a key");
}

/// The error line of a failure: stderr holds exactly one `paracrypt: error:` line, and it is
/// `message`.
#[track_caller]
fn one_line(out: std::process::Output, code: i32, message: &str) {
    let stderr = fails(out, code, message);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("paracrypt: warning:"))
        .collect();
    assert_eq!(errors, [format!("paracrypt: error: {message}")], "{stderr}");
}

#[test]
fn bad_input_gets_one_clear_line_and_no_output() {
    let dir = scratch();
    let d = dir.path();
    let (key, public) = x25519(d, "me.key");
    let (other, other_pub) = x25519(d, "other.key");
    let (_, third_pub) = x25519(d, "third.key");
    let plain = write(d, "plain", &data(1000, 60));
    let out = d.join("out");
    let encrypt = |args: &[&str]| {
        let mut cmd = paracrypt();
        cmd.arg("encrypt")
            .args(args)
            .arg(&plain)
            .arg("-o")
            .arg(&out);
        run(cmd)
    };
    // An identity that matches no recipient (container and age file).
    ok(encrypt(&["-r", &other_pub, "-r", &third_pub]));
    let sealed = std::fs::rename(&out, d.join("two.pcr")).map(|()| d.join("two.pcr"));
    let sealed = sealed.unwrap();
    ok(encrypt(&["--format", "age", "-r", &other_pub]));
    std::fs::rename(&out, d.join("one.age")).unwrap();
    let decrypt = |input: &Path, identity: &Path| {
        let mut cmd = paracrypt();
        cmd.args(["decrypt", "-i"])
            .arg(identity)
            .arg(input)
            .arg("-o")
            .arg(&out);
        run(cmd)
    };
    one_line(
        decrypt(&sealed, &key),
        1,
        "no identity matches this file; it was encrypted to 2 recipients",
    );
    one_line(
        decrypt(&d.join("one.age"), &key),
        1,
        "no identity matches this file; it was encrypted to 1 recipient",
    );
    // A malformed recipient: its position and what was expected.
    one_line(
        encrypt(&["-r", &public, "-r", "age1qqqq"]),
        2,
        "recipient 2 (age1qqqq): not a valid age1… recipient (invalid Bech32 encoding)",
    );
    one_line(
        encrypt(&["-r", "hunter2"]),
        2,
        "recipient 1 (hunter2): expected an age1pq1… (post-quantum), age1… (X25519) or \
         age1NAME1… (age plugin) recipient, an awskms:KEY (AWS KMS) key, an ssh-ed25519 or \
         ssh-rsa public key, or an RSA public key file",
    );
    // A passphrase file given as a recipients file (and as an identity file).
    let pass = write(d, "pass.txt", b"correct horse battery staple\n");
    one_line(
        encrypt(&["-R", pass.to_str().unwrap()]),
        2,
        &format!(
            "{} line 1: expected an age1pq1… (post-quantum), age1… (X25519) or age1NAME1… (age \
             plugin) recipient, an awskms:KEY (AWS KMS) key, an ssh-ed25519 or ssh-rsa public \
             key, or an RSA public key file (is this a passphrase file?)",
            pass.display()
        ),
    );
    one_line(
        decrypt(&sealed, &pass),
        2,
        &format!(
            "{} line 1: not an identity: expected AGE-SECRET-KEY-PQ-1…, AGE-SECRET-KEY-1… or \
             AGE-PLUGIN-NAME-1… lines, an OpenSSH private key or an RSA private key (PEM or DER) \
             (is this a passphrase file?)",
            pass.display()
        ),
    );
    // An armored file with damage.
    ok(encrypt(&["--format", "age", "-a", "-r", &public]));
    let armored = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    let mut lines: Vec<String> = armored.lines().map(str::to_owned).collect();
    lines[2].replace_range(0..1, "#");
    let damaged = write(d, "damaged.asc", (lines.join("\n") + "\n").as_bytes());
    one_line(
        decrypt(&damaged, &key),
        1,
        "damaged armor: invalid base64 in the armor",
    );
    let cut = write(d, "cut.asc", &armored.as_bytes()[..armored.len() - 40]);
    one_line(
        decrypt(&cut, &key),
        1,
        "damaged armor: invalid armor (last line is missing padding)",
    );
    // A wrong identity kind for the file: a key file for a file to recipients.
    let keyfile = d.join("k");
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-o"]).arg(&keyfile);
    ok(run(cmd));
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "-k"])
        .arg(&keyfile)
        .arg(&sealed)
        .arg("-o")
        .arg(&out);
    one_line(
        run(cmd),
        1,
        "this file was encrypted with public keys (decrypt it with an identity); give an identity \
         with -i FILE (Python: identities=)",
    );
    let _ = other;
    assert_eq!(
        listing(d),
        [
            "cut.asc",
            "damaged.asc",
            "k",
            "me.key",
            "one.age",
            "other.key",
            "pass.txt",
            "plain",
            "third.key",
            "two.pcr"
        ],
        "no output and no temporary file left"
    );
}

/// (cipher) The 16 raw ciphers, as `openssl enc` names them.
const CIPHERS: [&str; 16] = [
    "aes-128-ecb",
    "aes-128-cbc",
    "aes-128-ctr",
    "aes-192-ecb",
    "aes-192-cbc",
    "aes-192-ctr",
    "aes-256-ecb",
    "aes-256-cbc",
    "aes-256-ctr",
    "des-ecb",
    "des-cbc",
    "des-ede3",
    "des-ede3-cbc",
    "bf-ecb",
    "bf-cbc",
    "rc4",
];

fn openssl_enc(args: &[&str], input: &Path, output: &Path) {
    let mut all = vec!["enc", "-provider", "legacy", "-provider", "default"];
    all.extend(args);
    all.extend([
        "-in",
        input.to_str().unwrap(),
        "-out",
        output.to_str().unwrap(),
    ]);
    openssl_ok(&all);
}

#[test]
fn openssl_password_files_both_ways_for_every_raw_cipher() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let pw = write(d, "pw", b"open sesame\n");
    let pw_arg = format!("file:{}", pw.display());
    for cipher in CIPHERS {
        for (n, len) in [0, 17, 3 * 4096 + 5].into_iter().enumerate() {
            let plain = data(len, n as u8);
            let input = write(d, "plain", &plain);
            let theirs = d.join("theirs.enc");
            let flag = format!("-{cipher}");
            openssl_enc(
                &["-e", &flag, "-pbkdf2", "-iter", "2000", "-pass", &pw_arg],
                &input,
                &theirs,
            );
            let raw = |direction: &str| {
                let mut cmd = paracrypt();
                cmd.args(["raw", direction, "-c", cipher, "--iter", "2000", "-j", "3"])
                    .args(["--chunk-size", "4KiB", "--password-file"])
                    .arg(&pw);
                cmd
            };
            // Ours of theirs: file to file, then stdin to stdout.
            let out = d.join("out");
            let _ = std::fs::remove_file(&out);
            let mut cmd = raw("-d");
            cmd.arg(&theirs).arg("-o").arg(&out);
            ok(run(cmd));
            assert!(
                std::fs::read(&out).unwrap() == plain,
                "{cipher} -d, {len} bytes"
            );
            let bytes = std::fs::read(&theirs).unwrap();
            assert!(
                ok(run_with_stdin(raw("-d"), &bytes)) == plain,
                "{cipher} -d stdin"
            );
            // Theirs of ours.
            let ours = if n % 2 == 0 {
                let _ = std::fs::remove_file(&out);
                let mut cmd = raw("-e");
                cmd.arg(&input).arg("-o").arg(&out);
                ok(run(cmd));
                std::fs::read(&out).unwrap()
            } else {
                ok(run_with_stdin(raw("-e"), &plain))
            };
            assert!(ours.starts_with(b"Salted__"));
            let ours = write(d, "ours.enc", &ours);
            let back = d.join("back");
            openssl_enc(
                &["-d", &flag, "-pbkdf2", "-iter", "2000", "-pass", &pw_arg],
                &ours,
                &back,
            );
            assert!(
                std::fs::read(&back).unwrap() == plain,
                "openssl -d of ours: {cipher}"
            );
        }
    }
}

#[test]
fn openssl_password_files_refuse_cleanly() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let pw = write(d, "pw", b"open sesame\n");
    let input = write(d, "plain", &data(5000, 70));
    let theirs = d.join("theirs.enc");
    let pass = format!("file:{}", pw.display());
    openssl_enc(
        &[
            "-e",
            "-aes-256-cbc",
            "-pbkdf2",
            "-S",
            "0102030405060708",
            "-pass",
            &pass,
        ],
        &input,
        &theirs,
    );
    // OpenSSL 3.0 leaves the header out when -S is given: put it back.
    let mut bytes = std::fs::read(&theirs).unwrap();
    if !bytes.starts_with(b"Salted__") {
        bytes = [&b"Salted__"[..], &[1, 2, 3, 4, 5, 6, 7, 8], &bytes].concat();
    }
    let theirs = write(d, "theirs.enc", &bytes);
    let wrong = write(d, "wrong", b"open sesame!\n");
    let out = d.join("out");
    let raw = |password: &Path, extra: &[&str]| {
        let mut cmd = paracrypt();
        cmd.args(["raw", "-d", "-c", "aes-256-cbc", "--password-file"])
            .arg(password)
            .args(extra)
            .arg(&theirs)
            .arg("-o")
            .arg(&out);
        run(cmd)
    };
    one_line(
        raw(&wrong, &["--pbkdf2"]),
        1,
        "bad password or not a -pbkdf2 -iter 10000 -md sha256 file",
    );
    let legacy = raw(&pw, &[]);
    let stderr = String::from_utf8_lossy(&legacy.stderr).into_owned();
    assert!(
        stderr.contains("legacy EVP_BytesToKey, which is weak"),
        "{stderr}"
    );
    one_line(
        legacy,
        1,
        "bad password or not a legacy (no -pbkdf2) -md sha256 file",
    );
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-256-cbc", "--password-file"])
        .arg(&pw)
        .arg(&input)
        .arg("-o")
        .arg(&out);
    fails(run(cmd), 2, "writes only PBKDF2 ones");
    assert!(!out.exists());
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        "-d",
        "-c",
        "aes-256-cbc",
        "--pbkdf2",
        "--password-file",
    ])
    .arg(&pw)
    .arg(&input);
    one_line(
        run(cmd),
        1,
        "not a password-based openssl file (no Salted__ header)",
    );
}

/// `raw --fixed-salt` (testing only) writes what `openssl enc -S` does under that salt, says it
/// is for tests, and applies to encryption only.
#[test]
fn a_fixed_salt_is_openssl_enc_s() {
    let dir = scratch();
    let d = dir.path();
    let pw = write(d, "pw", b"open sesame\n");
    let plain = data(5000, 71);
    let input = write(d, "plain", &plain);
    let raw = |direction: &str, extra: &[&str], input: &Path| {
        let mut cmd = paracrypt();
        cmd.args([
            "raw",
            direction,
            "-c",
            "aes-256-cbc",
            "--pbkdf2",
            "--password-file",
        ])
        .arg(&pw)
        .args(extra)
        .arg(input);
        run(cmd)
    };
    let out = raw("-e", &["--fixed-salt", "0102030405060708"], &input);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fixed-salt"));
    let ours = ok(out);
    assert_eq!(ours[..16], *b"Salted__\x01\x02\x03\x04\x05\x06\x07\x08");
    let again = ok(raw("-e", &["--fixed-salt", "0102030405060708"], &input));
    assert!(ours == again, "the same salt gives the same bytes");
    if openssl().is_some() {
        let theirs = openssl_ok(&[
            "enc",
            "-e",
            "-aes-256-cbc",
            "-pbkdf2",
            "-S",
            "0102030405060708",
            "-pass",
            &format!("file:{}", pw.display()),
            "-in",
            input.to_str().unwrap(),
        ]);
        // OpenSSL 3.0 leaves the header out when -S is given.
        assert!(ours.ends_with(&theirs), "differs from openssl enc -S");
    }
    let sealed = write(d, "sealed", &ours);
    assert!(ok(raw("-d", &[], &sealed)) == plain);
    fails(
        raw("-d", &["--fixed-salt", "0102030405060708"], &sealed),
        2,
        "a fixed salt applies to encryption",
    );
    fails(
        raw("-e", &["--fixed-salt", "0102"], &input),
        2,
        "a fixed salt needs 8 bytes",
    );
}

/// Identities (-i) and a key or password are refused together, in the words of each command
/// that opens with either (one rule: `Operation::decrypt`), before anything is read.
#[test]
fn identities_and_a_key_or_password_are_refused_together() {
    let dir = scratch();
    let d = dir.path();
    let (id, _) = x25519(d, "id.key");
    let key = write(d, "key", b"not read");
    let id = id.to_str().unwrap();
    let key = key.to_str().unwrap();
    for (args, words) in [
        (
            vec!["decrypt", "-i", id, "-k", key, "in", "-o", "out"],
            "decrypt with identities (-i) or with a key or password, not both",
        ),
        (
            vec![
                "info",
                "--recursive",
                "-i",
                id,
                "--password-file",
                key,
                "tree",
            ],
            "open a tree with identities (-i) or with a key or password, not both",
        ),
        (
            vec!["verify", "--recursive", "-i", id, "-k", key, "tree"],
            "verify a tree with identities (-i) or with a key or password, not both",
        ),
    ] {
        let mut cmd = paracrypt();
        cmd.current_dir(d).args(&args);
        let stderr = fails(run(cmd), 2, words);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
