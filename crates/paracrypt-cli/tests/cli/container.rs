//! `paracrypt keygen | encrypt | decrypt | info`: the main job, end to end.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// `paracrypt keygen -o DIR/NAME`: a new key file's path.
pub fn keygen(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let mut cmd = paracrypt();
    cmd.args(["keygen", "-o"]).arg(&path);
    ok(run(cmd));
    path
}

fn encrypt(key: &Path, extra: &[&str]) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["encrypt", "--key-file"]).arg(key).args(extra);
    cmd
}

fn decrypt(key: &Path, extra: &[&str]) -> Command {
    let mut cmd = paracrypt();
    cmd.args(["decrypt", "--key-file"]).arg(key).args(extra);
    cmd
}

#[test]
fn keygen_makes_a_private_key_file_and_never_overwrites() {
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&key).unwrap();
    let line = text.lines().find(|l| !l.starts_with('#')).unwrap();
    assert_eq!(line.len(), 64);
    let mut again = paracrypt();
    again.args(["keygen", "-o"]).arg(&key);
    fails(run(again), 2, "already exists");
    assert_eq!(std::fs::read_to_string(&key).unwrap(), text);
}

#[test]
fn every_suite_round_trips_file_to_file_and_through_pipes() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(300_000, 1);
    let input = write(d, "in", &plain);
    let suites = [
        "aes-256-gcm",
        "aes-128-gcm",
        "chacha20-poly1305",
        "aes-256-ctr-hmac-sha256",
        "des-ede3-cbc-hmac-sha256",
        "bf-cbc-hmac-sha256",
        "rc4-hmac-sha256",
    ];
    for (i, suite) in suites.iter().enumerate() {
        let sealed = d.join(format!("{suite}.pcr"));
        let threads = ["1", "2", "3"][i % 3];
        ok(run({
            let mut c = encrypt(
                &key,
                &["--cipher", suite, "--chunk-size", "64KiB", "-j", threads],
            );
            c.arg(&input).arg("-o").arg(&sealed);
            c
        }));
        // File to file.
        let out = d.join(format!("{suite}.out"));
        ok(run({
            let mut c = decrypt(&key, &["-j", "2"]);
            c.arg(&sealed).arg("-o").arg(&out);
            c
        }));
        assert!(std::fs::read(&out).unwrap() == plain, "{suite}");
        // stdin to stdout, both ways.
        let piped = ok(run_with_stdin(
            encrypt(&key, &["--cipher", suite, "--chunk-size", "16KiB", "-q"]),
            &plain,
        ));
        let back = ok(run_with_stdin(decrypt(&key, &["-j", "3"]), &piped));
        assert!(back == plain, "{suite} pipes");
    }
}

#[test]
fn fixed_salt_output_is_identical_at_any_thread_count_and_path() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(1_000_003, 2);
    let input = write(d, "in", &plain);
    let salt = "ab".repeat(32);
    let mut outputs = Vec::new();
    for threads in ["1", "2", "3", "8"] {
        let out = d.join(format!("o{threads}"));
        let args = [
            "--fixed-salt",
            &salt,
            "--chunk-size",
            "64KiB",
            "-j",
            threads,
        ];
        ok(run({
            let mut c = encrypt(&key, &args);
            c.arg(&input).arg("-o").arg(&out);
            c
        }));
        outputs.push(std::fs::read(&out).unwrap());
        outputs.push(ok(run_with_stdin(encrypt(&key, &args), &plain)));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
    let help = ok(run({
        let mut c = paracrypt();
        c.args(["encrypt", "--help"]);
        c
    }));
    assert!(
        !String::from_utf8_lossy(&help).contains("fixed-salt"),
        "a test-only option stays out of --help"
    );
}

#[test]
fn passwords_from_file_and_environment() {
    let dir = scratch();
    let d = dir.path();
    let plain = data(10_000, 3);
    let pw = write(d, "pw", b"tr0ub4dor&3\n");
    let sealed = ok(run_with_stdin(
        {
            let mut c = paracrypt();
            c.args(["encrypt", "--password-file"]).arg(&pw);
            c
        },
        &plain,
    ));
    let mut c = paracrypt();
    c.args(["decrypt"]).env("PARACRYPT_PASSWORD", "tr0ub4dor&3");
    assert!(ok(run_with_stdin(c, &sealed)) == plain);
    let mut c = paracrypt();
    c.args(["decrypt"]).env("PARACRYPT_PASSWORD", "Tr0ub4dor&3");
    fails(run_with_stdin(c, &sealed), 1, "wrong key or password");
    let info = ok(run_with_stdin(
        {
            let mut c = paracrypt();
            c.args(["info", "-"]);
            c
        },
        &sealed,
    ));
    assert!(String::from_utf8_lossy(&info).contains("password (Argon2id, m=19456 KiB, t=2, p=1)"));
}

#[test]
fn without_a_key_or_terminal_the_error_says_what_to_give() {
    // `setsid` detaches from any controlling terminal, so no prompt can be shown.
    if Command::new("setsid").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "setsid is required in CI (util-linux, part of every Debian system)"
        );
        eprintln!("setsid not found: skipping");
        return;
    }
    let dir = scratch();
    let mut cmd = Command::new("setsid");
    cmd.arg("-w")
        .arg(env!("CARGO_BIN_EXE_paracrypt"))
        .arg("encrypt")
        .arg("-o")
        .arg(dir.path().join("x"));
    cmd.env_remove("PARACRYPT_PASSWORD");
    fails(
        run_with_stdin(cmd, b"data"),
        2,
        "no key given: use -k FILE, --password-file FILE, PARACRYPT_PASSWORD or -r/-R",
    );
    assert!(listing(dir.path()).is_empty());
}

#[test]
fn failures_name_the_problem_and_leave_no_output() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let other = keygen(d, "other");
    let plain = data(5 * 4096, 4);
    let sealed = ok(run_with_stdin(
        encrypt(&key, &["--chunk-size", "4KiB"]),
        &plain,
    ));
    let stride = 4096 + 16;
    let at = |i: usize| 116 + i * stride;
    let cases: Vec<(&str, Vec<u8>, &Path, &str)> = vec![
        ("wrong-key", sealed.clone(), &other, "wrong key or password"),
        (
            "header",
            {
                let mut s = sealed.clone();
                s[20] ^= 1;
                s
            },
            &key,
            "header damaged",
        ),
        (
            "not-ours",
            plain.clone(),
            &key,
            "not a paracrypt or age file",
        ),
        (
            "chunk",
            {
                let mut s = sealed.clone();
                s[at(3) + 9] ^= 1;
                s
            },
            &key,
            "chunk 3 failed authentication",
        ),
        (
            "cut",
            sealed[..at(4)].to_vec(),
            &key,
            "file truncated after chunk 3",
        ),
        (
            "extended",
            {
                let mut s = sealed.clone();
                s.extend_from_slice(&sealed[at(4)..]);
                s
            },
            &key,
            "trailing data after the last chunk (chunk 4)",
        ),
        ("empty", Vec::new(), &key, "not a paracrypt or age file"),
    ];
    for (name, bytes, key, message) in cases {
        let input = write(d, name, &bytes);
        let out = d.join(format!("{name}.out"));
        for threads in ["1", "3"] {
            let mut c = decrypt(key, &["-j", threads]);
            c.arg(&input).arg("-o").arg(&out);
            fails(run(c), 1, message);
            assert!(!out.exists(), "{name}: no output on failure");
            // From the file to stdout (positional reads, written in order): the same error,
            // and only chunks that were checked, all of them before the failing one.
            let mut c = decrypt(key, &["-j", threads]);
            c.arg(&input).arg("-o").arg("-");
            let out = run(c);
            let written = out.stdout.clone();
            fails(out, 1, message);
            assert!(
                plain.starts_with(&written) && written.len().is_multiple_of(4096),
                "{name}: {} bytes reached stdout",
                written.len()
            );
        }
        assert!(
            !listing(d).iter().any(|f| f.starts_with(".paracrypt-")),
            "{name}: temp file left"
        );
    }
    // To stdout, the verified chunks before the damaged one are written, in order, then exit 1.
    let mut damaged = sealed.clone();
    damaged[at(3) + 9] ^= 1;
    let out = run_with_stdin(decrypt(&key, &["-j", "2"]), &damaged);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout == plain[..3 * 4096],
        "exactly chunks 0..3 reached stdout"
    );
    let input = write(d, "damaged", &damaged);
    for threads in ["1", "2", "3"] {
        let mut c = decrypt(&key, &["-j", threads]);
        c.arg(&input).arg("-o").arg("-");
        let out = run(c);
        assert!(
            out.stdout == plain[..3 * 4096],
            "-j {threads}: exactly chunks 0..3 reached stdout from the file"
        );
        fails(out, 1, "chunk 3 failed authentication");
    }
}

#[test]
fn outputs_are_checked_before_any_work() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", b"plaintext");
    let existing = write(d, "existing", b"keep");
    let mut c = encrypt(&key, &[]);
    c.arg(&input).arg("-o").arg(&existing);
    fails(
        run(c),
        2,
        "already exists (use --force to overwrite; Python: overwrite=True)",
    );
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep");
    let mut c = encrypt(&key, &["--force"]);
    c.arg(&input).arg("-o").arg(&existing);
    ok(run(c));
    let mut c = encrypt(&key, &["--force"]);
    c.arg(&input).arg("-o").arg(&input);
    fails(run(c), 2, "is the input file");
    let mut c = encrypt(&key, &["--cipher", "aes-512-gcm"]);
    c.arg(&input).arg("-o").arg(d.join("x"));
    fails(
        run(c),
        2,
        "unknown cipher `aes-512-gcm` (valid: aes-256-gcm, aes-128-gcm, chacha20-poly1305",
    );
    let mut c = encrypt(&key, &["--chunk-size", "1000"]);
    c.arg(&input).arg("-o").arg(d.join("x"));
    fails(run(c), 2, "multiple of 16");
    let mut c = encrypt(&d.join("no-such-key"), &[]);
    c.arg(&input).arg("-o").arg(d.join("x"));
    fails(run(c), 1, "cannot read key file");
    let bad_key = write(d, "bad-key", b"not hex at all\n");
    let mut c = encrypt(&bad_key, &[]);
    c.arg(&input).arg("-o").arg(d.join("x"));
    // A malformed key file is a usage error, like a malformed --key, with one prefix.
    fails(run(c), 2, "bad-key: not a key: it must be 64 hex digits");
    assert!(!d.join("x").exists());
}

#[test]
fn legacy_suites_warn() {
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let out = run_with_stdin(encrypt(&key, &["--cipher", "rc4-hmac-sha256"]), b"x");
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: rc4-hmac-sha256 is a legacy suite")
    );
    let out = run_with_stdin(encrypt(&key, &[]), b"x");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn range_decrypts_only_what_is_asked() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(200_000, 5);
    let input = write(d, "in", &plain);
    let sealed = d.join("in.pcr");
    ok(run({
        let mut c = encrypt(&key, &["--chunk-size", "16KiB"]);
        c.arg(&input).arg("-o").arg(&sealed);
        c
    }));
    let out = ok(run({
        let mut c = decrypt(&key, &["--range", "50000:70000"]);
        c.arg(&sealed);
        c
    }));
    assert!(out == plain[50_000..120_000]);
    let out = ok(run({
        let mut c = decrypt(&key, &["--range", "16KiB:1KiB"]);
        c.arg(&sealed);
        c
    }));
    assert!(out == plain[16384..17408]);
    fails(
        run_with_stdin(
            decrypt(&key, &["--range", "0:10"]),
            &std::fs::read(&sealed).unwrap(),
        ),
        2,
        "--range needs INPUT to be a file",
    );
    fails(
        run({
            let mut c = decrypt(&key, &["--range", "10"]);
            c.arg(&sealed);
            c
        }),
        2,
        "is not OFFSET:LENGTH",
    );
    fails(
        run({
            let mut c = decrypt(&key, &["--range", "300000:1"]);
            c.arg(&sealed);
            c
        }),
        1,
        "beyond the end",
    );
}

#[test]
fn info_reads_the_header_without_a_key() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", &data(100_000, 6));
    let sealed = d.join("s");
    ok(run({
        let mut c = encrypt(
            &key,
            &["--cipher", "chacha20-poly1305", "--chunk-size", "32KiB"],
        );
        c.arg(&input).arg("-o").arg(&sealed);
        c
    }));
    let out = String::from_utf8(ok(run({
        let mut c = paracrypt();
        c.arg("info").arg(&sealed);
        c
    })))
    .unwrap();
    for line in [
        "suite:       chacha20-poly1305",
        "chunk size:  32768 bytes",
        "secret:      key file",
        "size:        100180 bytes (4 chunks)",
        "plaintext:   100000 bytes",
    ] {
        assert!(out.contains(line), "{line} in {out}");
    }
    fails(
        run({
            let mut c = paracrypt();
            c.arg("info").arg(&input);
            c
        }),
        1,
        "not an encrypted file paracrypt reads",
    );
}

/// Runs `cmd` with stderr into the file `log` (as a batch job's `2>log`); returns its status and
/// what it wrote there.
fn logged(mut cmd: Command, log: &Path) -> (std::process::ExitStatus, String) {
    let file = std::fs::File::create(log).unwrap();
    let status = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(file)
        .status()
        .unwrap();
    (status, std::fs::read_to_string(log).unwrap())
}

#[test]
fn progress_is_never_drawn_into_a_pipe_unless_asked() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", &data(3 << 20, 7));
    let out = run({
        let mut c = encrypt(&key, &[]);
        c.arg(&input).arg("-o").arg(d.join("a"));
        c
    });
    assert!(out.status.success() && out.stderr.is_empty());
    let out = run({
        let mut c = encrypt(&key, &["--progress"]);
        c.arg(&input).arg("-o").arg(d.join("b"));
        c
    });
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("encrypting"));
}

#[test]
fn progress_into_a_log_is_plain_lines_ending_with_done() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", &data(3 << 20, 7));
    let log = d.join("log");
    // Without --progress: nothing.
    let (status, text) = logged(
        {
            let mut c = encrypt(&key, &[]);
            c.arg(&input).arg("-o").arg(d.join("a"));
            c
        },
        &log,
    );
    assert!(status.success());
    assert_eq!(text, "");
    // With it: a line at each tenth passed (1 MiB chunks: 33 %, 66 %), then the final line.
    let (status, text) = logged(
        {
            let mut c = encrypt(&key, &["--progress"]);
            c.arg(&input).arg("-o").arg(d.join("b"));
            c
        },
        &log,
    );
    assert!(status.success());
    assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("encrypting: ") && l.contains("/3.00 MiB ")),
        "{text}"
    );
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("done: 3145728 bytes (3.00 MiB) in ") && last.ends_with("/s"),
        "{text}"
    );
    // A small file: the final line alone.
    let small = write(d, "small", &data(135, 1));
    let (status, text) = logged(
        {
            let mut c = encrypt(&key, &["--progress"]);
            c.arg(&small).arg("-o").arg(d.join("s"));
            c
        },
        &log,
    );
    assert!(status.success());
    assert!(text.starts_with("done: 135 bytes (135 B) in "), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    // A failure: the error line, no "done:".
    let mut sealed = std::fs::read(d.join("b")).unwrap();
    let last_byte = sealed.len() - 1;
    sealed[last_byte] ^= 1;
    let damaged = write(d, "damaged", &sealed);
    let (status, text) = logged(
        {
            let mut c = decrypt(&key, &["--progress"]);
            c.arg(&damaged).arg("-o").arg(d.join("opened"));
            c
        },
        &log,
    );
    assert_eq!(status.code(), Some(1));
    assert!(!text.contains("done:"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("paracrypt: error: "),
        "{text}"
    );
}

#[test]
fn the_largest_chunk_size_round_trips() {
    // 1 GiB, the documented maximum: the sealed chunk (plus its tag) is larger, and that is
    // the format's business, not the user's. (Buffers follow the input, so this is cheap.)
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = data(70_000, 8);
    let input = write(d, "in", &plain);
    let sealed = d.join("sealed");
    let mut c = encrypt(&key, &["--chunk-size", "1GiB"]);
    c.arg(&input).arg("-o").arg(&sealed);
    ok(run(c));
    let info = String::from_utf8(ok(run({
        let mut c = paracrypt();
        c.arg("info").arg(&sealed);
        c
    })))
    .unwrap();
    assert!(info.contains("chunk size:  1073741824 bytes"), "{info}");
    let opened = d.join("opened");
    let mut c = decrypt(&key, &[]);
    c.arg(&sealed).arg("-o").arg(&opened);
    ok(run(c));
    assert!(std::fs::read(&opened).unwrap() == plain);
}

#[test]
fn size_errors_quote_what_was_typed() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let input = write(d, "in", &data(1000, 9));
    for (flag, value, reason) in [
        ("--chunk-size", "2GiB", "must be at most 1 GiB"),
        ("--chunk-size", "1000", "must be a multiple of 16 bytes"),
        ("--chunk-size", "0", "must be at least 16 bytes"),
        ("--chunk-size", "1.5MB", "KB/MB/GB/TB (1000-based)"),
        ("--chunk-size", "1KB", "must be a multiple of 16 bytes"),
        ("--chunk-size", "99999999999G", "too large"),
    ] {
        let mut c = encrypt(&key, &[flag, value]);
        c.arg(&input).arg("-o").arg(d.join("x"));
        let stderr = fails(run(c), 2, reason);
        assert!(stderr.contains(&format!("'{value}'")), "{value}: {stderr}");
    }
    let mut c = decrypt(&key, &["--range", "1XB:10"]);
    c.arg(&input).arg("-o").arg(d.join("x"));
    fails(run(c), 2, "`1XB`");
    assert!(!d.join("x").exists());
}

/// Stdin redirected from a regular file (`< FILE`) is read as the file it is: positionally on
/// every worker (so `--range` and `verify --range` take it), left at its end afterwards as a
/// stream reader leaves it; stdin that a script already read part of stays a stream, read from
/// where it is.
#[test]
fn stdin_from_a_regular_file_is_read_as_a_file() {
    let dir = scratch();
    let d = dir.path();
    let plain = data(3 << 20, 21);
    write(d, "plain", &plain);
    write(d, "lines", b"first line\nthe rest\n");
    ok(run(sh(d, "paracrypt keygen -o key")));
    ok(run(sh(d, "paracrypt encrypt -k key < plain > sealed")));
    let part = ok(run(sh(
        d,
        "paracrypt decrypt -k key --range 1MiB:4KiB < sealed",
    )));
    assert_eq!(part, plain[1 << 20..(1 << 20) + 4096]);
    // Read to its end, as `cat` would leave it: what follows in the script reads nothing.
    let after = ok(run(sh(
        d,
        "{ paracrypt decrypt -k key -o out; wc -c; } < sealed",
    )));
    assert_eq!(String::from_utf8_lossy(&after).trim(), "0");
    assert_eq!(std::fs::read(d.join("out")).unwrap(), plain);
    // Part of it already read by the script: the rest is the input.
    ok(run(sh(
        d,
        "{ read -r line; paracrypt encrypt -k key -o rest.pcr; } < lines",
    )));
    let rest = ok(run(sh(d, "paracrypt decrypt -k key rest.pcr")));
    assert_eq!(rest, b"the rest\n");
    // A signature of stdin as a file, and a range of it verified positionally.
    ok(run(sh(
        d,
        "paracrypt keygen --kind ed25519 -o me.pem --public-out me.pub \
         && paracrypt sign -k me.pem -o plain.psig - < plain \
         && paracrypt verify --public me.pub -s plain.psig --range 2MiB:10 - < plain",
    )));
}

/// `bash -c SCRIPT` in `dir` with the binary under test first on PATH.
fn sh(dir: &Path, script: &str) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_paracrypt")).parent().unwrap();
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-u", "-o", "pipefail", "-c", script])
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("PARACRYPT_PASSWORD");
    cmd
}
