//! Shared helpers: run the binary, make scratch directories, find `openssl`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `paracrypt` binary under test.
pub fn paracrypt() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paracrypt"));
    cmd.env_remove("PARACRYPT_PASSWORD");
    cmd
}

/// Runs `cmd` with `stdin` as standard input and returns its output.
pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait");
    feeder.join().unwrap();
    out
}

/// Runs `cmd` with stdin closed and returns its output.
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("spawn")
}

/// The exit code, stderr as text.
pub fn status_and_stderr(out: &Output) -> (i32, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts success and returns stdout.
#[track_caller]
pub fn ok(out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "command failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Asserts the exit code and that stderr contains `needle`; returns stderr.
#[track_caller]
pub fn fails(out: Output, code: i32, needle: &str) -> String {
    let (status, stderr) = status_and_stderr(&out);
    assert_eq!(status, code, "expected exit {code}, stderr: {stderr}");
    assert!(
        stderr.contains(needle),
        "stderr should mention `{needle}`: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    stderr
}

/// A scratch directory removed at the end of the test.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("paracrypt-test-")
        .tempdir()
        .expect("tempdir")
}

/// Deterministic test data.
pub fn data(len: usize, seed: u8) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9 ^ u32::from(seed);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// The `openssl` binary when it is on PATH, or `None` (the test then says so and passes:
/// CI installs openssl, so there it always runs).
pub fn openssl() -> Option<PathBuf> {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        Some(PathBuf::from("openssl"))
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "openssl is required in CI (the README's test command installs it)"
        );
        eprintln!("openssl not found: skipping interop test");
        None
    }
}

/// Runs openssl with `args`, asserting success; returns stdout.
#[track_caller]
pub fn openssl_ok(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// This process's umask (its children inherit it), from `/proc/self/status`.
pub fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

/// `path` quoted for a POSIX shell's command line, whatever it holds (spaces, quotes): a test
/// may run from a checkout or a `TMPDIR` anywhere.
pub fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.to_str().unwrap().replace('\'', "'\\''"))
}

/// Names of the files in `dir` (to check that nothing was left behind).
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether the external `tool` is installed (`tool ARG` runs). Outside CI a missing tool skips
/// the test that needs it, which says so; in CI it fails the test (scripts/test.sh installs
/// them).
pub fn have(tool: &str, arg: &str) -> bool {
    let found = Command::new(tool).arg(arg).output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is required in CI (scripts/test.sh installs it)"
        );
        eprintln!("{tool} not found: skipping");
    }
    found
}

/// The providers this build has (the pure-Rust build has only rustcrypto).
pub fn providers() -> Vec<&'static str> {
    let mut providers = Vec::new();
    if cfg!(feature = "aws-lc") {
        providers.push("aws-lc");
    }
    if cfg!(feature = "openssl") {
        providers.push("openssl");
    }
    providers.push("rustcrypto");
    providers
}
