//! Test hooks are not product surface: `--fixed-salt` (reproducible output, which reuses the
//! keystream when a salt is reused) exists only in a test build (the `test-hooks` feature,
//! which no default build enables). A build without it refuses the flag as it refuses any
//! unknown one; stage 2 of scripts/test.sh runs this module on such a build, and checks that
//! no default feature set enables the hooks.

use crate::common::*;

/// `encrypt` and `raw` with `--fixed-salt`, and what the build says.
fn with_fixed_salt() -> [std::process::Output; 2] {
    let dir = scratch();
    let input = write(dir.path(), "in", &data(1000, 1));
    let key = dir.path().join("key");
    ok(run({
        let mut cmd = paracrypt();
        cmd.args(["keygen", "-o"]).arg(&key);
        cmd
    }));
    let password = write(dir.path(), "password", b"pw\n");
    let mut encrypt = paracrypt();
    encrypt
        .args(["encrypt", "--fixed-salt", &"00".repeat(32), "-k"])
        .arg(&key)
        .arg(&input)
        .arg("-o")
        .arg(dir.path().join("out.pcr"));
    let mut raw = paracrypt();
    raw.args([
        "raw",
        "-e",
        "-c",
        "aes-128-ctr",
        "--pbkdf2",
        "--fixed-salt",
        &"00".repeat(8),
    ])
    .arg("--password-file")
    .arg(&password)
    .arg(&input)
    .arg("-o")
    .arg(dir.path().join("out.enc"));
    [run(encrypt), run(raw)]
}

#[cfg(not(feature = "test-hooks"))]
#[test]
fn a_build_without_test_hooks_refuses_fixed_salts() {
    for out in with_fixed_salt() {
        let stderr = fails(out, 2, "--fixed-salt");
        assert!(stderr.contains("unexpected argument"), "{stderr}");
    }
}

#[cfg(feature = "test-hooks")]
#[test]
fn a_test_build_has_fixed_salts_and_warns() {
    for out in with_fixed_salt() {
        let (status, stderr) = status_and_stderr(&out);
        assert_eq!(status, 0, "{stderr}");
        assert!(stderr.contains("for tests only"), "{stderr}");
    }
}
