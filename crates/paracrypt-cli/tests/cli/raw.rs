//! `paracrypt raw`: byte-identical to `openssl enc` both ways, and every bad input refused
//! with a one-line error, the documented exit code and no output file.

use std::path::Path;

use crate::common::*;

const CHUNK: usize = 4096;

/// (cipher, key hex, iv hex). Blowfish and RC4 use 16-byte keys because `openssl enc -K` does.
fn ciphers() -> Vec<(&'static str, String, Option<String>)> {
    let k = |n: usize| "5c".repeat(n);
    let iv = |n: usize| Some("a7".repeat(n));
    vec![
        ("aes-128-ecb", k(16), None),
        ("aes-128-cbc", k(16), iv(16)),
        ("aes-128-ctr", k(16), iv(16)),
        ("aes-192-ecb", k(24), None),
        ("aes-192-cbc", k(24), iv(16)),
        ("aes-192-ctr", k(24), iv(16)),
        ("aes-256-ecb", k(32), None),
        ("aes-256-cbc", k(32), iv(16)),
        ("aes-256-ctr", k(32), iv(16)),
        ("des-ecb", k(8), None),
        ("des-cbc", k(8), iv(8)),
        ("des-ede3", k(24), None),
        ("des-ede3-cbc", k(24), iv(8)),
        ("bf-ecb", k(16), None),
        ("bf-cbc", k(16), iv(8)),
        ("rc4", k(16), None),
    ]
}

fn openssl_enc(
    direction: &str,
    cipher: &str,
    key: &str,
    iv: Option<&str>,
    extra: &[&str],
    input: &Path,
    output: &Path,
) {
    let mut args = vec![
        "enc",
        direction,
        "-provider",
        "legacy",
        "-provider",
        "default",
    ];
    let flag = format!("-{cipher}");
    args.extend([flag.as_str(), "-K", key]);
    if let Some(iv) = iv {
        args.extend(["-iv", iv]);
    }
    args.extend(extra);
    let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
    args.extend(["-in", i, "-out", o]);
    openssl_ok(&args);
}

fn raw_cmd(
    direction: &str,
    cipher: &str,
    key: &str,
    iv: Option<&str>,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        direction,
        "--cipher",
        cipher,
        "--key",
        key,
        "--chunk-size",
        "4KiB",
    ]);
    if let Some(iv) = iv {
        cmd.args(["--iv", iv]);
    }
    cmd.args(extra);
    cmd
}

#[test]
fn byte_identical_to_openssl_enc_both_ways_on_every_provider() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let sizes = [0, 1, 15, 16, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5];
    for ((cipher, key, iv), provider) in ciphers()
        .into_iter()
        .flat_map(|c| providers().into_iter().map(move |p| (c.clone(), p)))
    {
        let iv = iv.as_deref();
        let raw_cmd = |direction, extra| {
            let mut cmd = raw_cmd(direction, cipher, &key, iv, extra);
            cmd.env("PARACRYPT_PROVIDER", provider);
            cmd
        };
        for (n, &len) in sizes.iter().enumerate() {
            let plain = data(len, n as u8);
            let pt = write(d, "pt", &plain);
            let (ours, theirs) = (d.join("ours"), d.join("theirs"));
            let _ = std::fs::remove_file(&ours);
            openssl_enc("-e", cipher, &key, iv, &[], &pt, &theirs);
            let expected = std::fs::read(&theirs).unwrap();

            // Alternate file-to-file (positional, parallel) and stdin-to-stdout (streaming).
            if n % 2 == 0 {
                let mut cmd = raw_cmd("-e", &["-j", "3"]);
                cmd.arg(&pt).arg("-o").arg(&ours);
                ok(run(cmd));
                assert!(
                    std::fs::read(&ours).unwrap() == expected,
                    "{cipher} on {provider}: encrypt {len} bytes (file)"
                );
                let mut cmd = raw_cmd("-d", &["-j", "2"]);
                cmd.arg(&theirs);
                assert!(
                    ok(run(cmd)) == plain,
                    "{cipher} on {provider}: decrypt {len} bytes of openssl output (file → stdout)"
                );
            } else {
                let out = ok(run_with_stdin(raw_cmd("-e", &[]), &plain));
                assert!(
                    out == expected,
                    "{cipher} on {provider}: encrypt {len} bytes (stdin → stdout)"
                );
                let out = ok(run_with_stdin(raw_cmd("-d", &[]), &expected));
                assert!(
                    out == plain,
                    "{cipher} on {provider}: decrypt {len} bytes of openssl output (stdin → stdout)"
                );
            }
        }
    }
}

#[test]
fn no_pad_matches_openssl_nopad() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    for (cipher, key, iv) in ciphers() {
        if cipher.ends_with("ctr") || cipher == "rc4" {
            continue;
        }
        let iv = iv.as_deref();
        for len in [0, 16, 2 * CHUNK, 3 * CHUNK + 48] {
            let plain = data(len, 9);
            let pt = write(d, "pt", &plain);
            let theirs = d.join("theirs");
            openssl_enc("-e", cipher, &key, iv, &["-nopad"], &pt, &theirs);
            let expected = std::fs::read(&theirs).unwrap();
            let out = ok(run_with_stdin(
                raw_cmd("-e", cipher, &key, iv, &["--no-pad"]),
                &plain,
            ));
            assert!(out == expected, "{cipher} -nopad {len}");
            let mut cmd = raw_cmd("-d", cipher, &key, iv, &["--no-pad"]);
            cmd.arg(&theirs);
            assert!(ok(run(cmd)) == plain, "{cipher} -nopad decrypt {len}");
            // And openssl decrypts ours.
            let ours = write(d, "ours", &out);
            let back = d.join("back");
            openssl_enc("-d", cipher, &key, iv, &["-nopad"], &ours, &back);
            assert!(std::fs::read(&back).unwrap() == plain);
        }
    }
}

#[test]
fn openssl_decrypts_what_paracrypt_wrote_at_any_thread_count() {
    if openssl().is_none() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let plain = data(10 * CHUNK + 3, 1);
    let pt = write(d, "pt", &plain);
    for (cipher, key, iv) in ciphers() {
        let iv = iv.as_deref();
        for threads in ["1", "2", "8"] {
            let ct = d.join("ct");
            let _ = std::fs::remove_file(&ct);
            let mut cmd = raw_cmd("-e", cipher, &key, iv, &["-j", threads]);
            cmd.arg(&pt).args(["-o"]).arg(&ct);
            ok(run(cmd));
            let back = d.join("back");
            openssl_enc("-d", cipher, &key, iv, &[], &ct, &back);
            assert!(
                std::fs::read(&back).unwrap() == plain,
                "{cipher} at {threads} threads"
            );
        }
    }
}

/// Runs a failing raw command in a directory holding only `input` and checks that no other file
/// appears.
#[track_caller]
fn refused(args: &[&str], stdin: Option<&[u8]>, code: i32, needle: &str) -> String {
    let dir = scratch();
    let d = dir.path();
    write(d, "input", &data(100, 1));
    let mut cmd = paracrypt();
    cmd.current_dir(d).arg("raw").args(args);
    let out = match stdin {
        Some(bytes) => run_with_stdin(cmd, bytes),
        None => run(cmd),
    };
    let stderr = fails(out, code, needle);
    assert_eq!(
        listing(d),
        vec!["input".to_string()],
        "no output may be left behind"
    );
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    stderr
}

const K32: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const IV16: &str = "00000000000000000000000000000000";

#[test]
fn bad_arguments_exit_2_with_the_reason() {
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            "0011",
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "aes-256-ctr needs a key of 32 bytes, got 2 bytes",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            "zz",
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "bad hex in --key",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            "abc",
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "bad hex in --key",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            "00zz",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "bad hex in --iv",
    );
    let stderr = refused(
        &["-e", "-c", "aes-256-xts", "-K", K32, "input", "-o", "out"],
        None,
        2,
        "unknown cipher `aes-256-xts`",
    );
    assert!(
        stderr.contains("valid: aes-128-ecb") && stderr.contains("rc4"),
        "{stderr}"
    );
    refused(
        &["-e", "-c", "aes-256-cbc", "-K", K32, "input", "-o", "out"],
        None,
        2,
        "aes-256-cbc needs an IV of 16 bytes",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-cbc",
            "-K",
            K32,
            "--iv",
            "0011",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "needs an IV of 16 bytes, got 2",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ecb",
            "-K",
            K32,
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "aes-256-ecb takes no IV",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "--no-pad",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "turning padding off applies to ECB and CBC only",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "--chunk-size",
            "1000",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "multiple of 16",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "--chunk-size",
            "2GiB",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "at most 1 GiB",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "--chunk-size",
            "1.5MB",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "KB/MB/GB/TB (1000-based)",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "-j",
            "0",
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "--threads must be at least 1",
    );
    refused(
        &[
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "--encrypt",
    );
    refused(
        &[
            "-e",
            "-d",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        2,
        "cannot be used with",
    );
}

#[test]
fn output_equal_to_input_or_existing_is_refused() {
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "input",
            "-o",
            "input",
        ],
        None,
        2,
        "is the input file",
    );
    refused(
        &[
            "-e",
            "-c",
            "aes-256-ctr",
            "-K",
            K32,
            "--iv",
            IV16,
            "--force",
            "input",
            "-o",
            "./input",
        ],
        None,
        2,
        "is the input file",
    );

    let dir = scratch();
    let d = dir.path();
    let input = write(d, "input", b"plaintext");
    let existing = write(d, "existing", b"keep me");
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-256-ctr", "-K", K32, "--iv", IV16])
        .arg(&input)
        .arg("-o")
        .arg(&existing);
    fails(
        run(cmd),
        2,
        "already exists (use --force to overwrite; Python: overwrite=True)",
    );
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        "-e",
        "-c",
        "aes-256-ctr",
        "-K",
        K32,
        "--iv",
        IV16,
        "--force",
    ])
    .arg(&input)
    .arg("-o")
    .arg(&existing);
    ok(run(cmd));
    assert_eq!(std::fs::read(&existing).unwrap().len(), 9);
    assert_eq!(listing(d), vec!["existing", "input"]);
}

#[test]
fn data_failures_exit_1_and_leave_no_output() {
    refused(
        &[
            "-e",
            "-c",
            "aes-256-cbc",
            "-K",
            K32,
            "--iv",
            IV16,
            "missing-file",
            "-o",
            "out",
        ],
        None,
        1,
        "cannot read missing-file",
    );
    // 100 bytes are not whole 16-byte blocks.
    refused(
        &[
            "-e",
            "-c",
            "aes-256-cbc",
            "-K",
            K32,
            "--iv",
            IV16,
            "--no-pad",
            "input",
            "-o",
            "out",
        ],
        None,
        1,
        "input of 100 bytes is not a whole number of 16-byte blocks",
    );
    refused(
        &[
            "-d",
            "-c",
            "aes-256-cbc",
            "-K",
            K32,
            "--iv",
            IV16,
            "input",
            "-o",
            "out",
        ],
        None,
        1,
        "not a whole number of 16-byte blocks",
    );
    refused(
        &[
            "-d",
            "-c",
            "aes-256-cbc",
            "-K",
            K32,
            "--iv",
            IV16,
            "-",
            "-o",
            "out",
        ],
        Some(&[]),
        1,
        "too short",
    );

    // Bad padding is found in the last chunk, after earlier chunks were written: the
    // temporary output must still vanish.
    let dir = scratch();
    let d = dir.path();
    let plain = data(5 * CHUNK, 2);
    let input = write(d, "input", &plain);
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        "-d",
        "-c",
        "aes-256-cbc",
        "-K",
        K32,
        "--iv",
        IV16,
        "--chunk-size",
        "4KiB",
    ])
    .arg(&input)
    .arg("-o")
    .arg(d.join("out"));
    fails(
        run(cmd),
        1,
        "bad padding after decryption (wrong key or IV, or damaged input)",
    );
    assert_eq!(listing(d), vec!["input"]);
    // Through stdin too.
    let mut cmd = paracrypt();
    cmd.args([
        "raw",
        "-d",
        "-c",
        "aes-256-cbc",
        "-K",
        K32,
        "--iv",
        IV16,
        "--chunk-size",
        "4KiB",
        "-o",
    ])
    .arg(d.join("out"));
    fails(run_with_stdin(cmd, &plain), 1, "bad padding");
    assert_eq!(listing(d), vec!["input"]);
}

#[test]
fn a_full_disk_is_an_error_not_a_panic() {
    let mut cmd = paracrypt();
    cmd.args(["raw", "-e", "-c", "aes-256-ctr", "-K", K32, "--iv", IV16]);
    cmd.stdout(std::fs::File::create("/dev/full").unwrap());
    let out = run_with_stdin_keep_stdout(cmd, &data(100_000, 3));
    fails(out, 1, "No space left on device");
}

/// Like `run_with_stdin` but without replacing the stdout the test set up.
fn run_with_stdin_keep_stdout(
    mut cmd: std::process::Command,
    stdin: &[u8],
) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn legacy_choices_warn_and_aes_ctr_only_notes_no_integrity() {
    let out = run_with_stdin(raw_cmd("-e", "des-ecb", &"11".repeat(8), None, &[]), b"x");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success());
    assert!(
        stderr.contains("warning: des-ecb is a legacy cipher"),
        "{stderr}"
    );
    assert!(stderr.contains("ECB mode"), "{stderr}");
    let out = run_with_stdin(raw_cmd("-e", "rc4", &"11".repeat(16), None, &[]), b"x");
    assert!(String::from_utf8_lossy(&out.stderr).contains("rc4 is a legacy cipher"));
    let out = run_with_stdin(raw_cmd("-e", "aes-256-ctr", K32, Some(IV16), &[]), b"x");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("legacy"), "{stderr}");
    assert!(stderr.contains("no integrity protection"), "{stderr}");
}

#[test]
fn help_says_cbc_encryption_is_serial() {
    let out = ok(run({
        let mut c = paracrypt();
        c.args(["raw", "--help"]);
        c
    }));
    // Wrapped to the terminal: one line of words.
    let help = String::from_utf8_lossy(&out).replace('\n', " ");
    assert!(help.contains("CBC encryption is serial"), "{help}");
    assert!(
        help.contains("Exit status: 0 success, 1 failure, 2 usage error"),
        "{help}"
    );
}

/// Every help text that lists exit statuses lists 4, a provider's own failure.
#[test]
fn help_texts_name_the_internal_status() {
    for command in [
        &[][..],
        &["raw"],
        &["encrypt"],
        &["rsa"],
        &["ecdsa"],
        &["rekey"],
    ] {
        let out = ok(run({
            let mut c = paracrypt();
            c.args(command).arg("--help");
            c
        }));
        let help = String::from_utf8_lossy(&out).replace('\n', " ");
        assert!(
            help.contains("4 a cryptographic provider failed inside"),
            "{command:?}: {help}"
        );
    }
}
