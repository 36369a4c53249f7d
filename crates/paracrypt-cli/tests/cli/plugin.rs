//! age plugins end to end (issue #36): recipients `age1pctest1…` and identities
//! `AGE-PLUGIN-PCTEST-1…` of the test plugin `age-plugin-pctest` (tests/age-plugin, built with
//! rage's `age-plugin` crate), with Debian's `age` as the second client both ways, binary and
//! armored; containers, rekey and info; and every way a plugin fails (missing, failing at
//! start, crashing, hanging, out of protocol, refusing, asking for a secret with no terminal):
//! one line naming the plugin, exit 1, nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::*;

/// The directory holding `age-plugin-pctest`: the workspace's binaries (scripts/test.sh builds
/// every workspace binary before the tests), built here when a partial run has not.
pub(crate) fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_paracrypt"))
            .parent()
            .unwrap()
            .to_owned();
        if !dir.join("age-plugin-pctest").exists() {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--locked", "-p", "paracrypt-test-plugin"])
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .status()
                .expect("cargo");
            assert!(status.success(), "building the test plugin");
        }
        assert!(dir.join("age-plugin-pctest").exists());
        dir
    })
}

/// PATH with the test plugin first (the refusal table's doors run with it too).
pub(crate) fn path_with_plugin() -> String {
    format!(
        "{}:{}",
        plugin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A command with the test plugin on PATH and none of its switches set.
pub(crate) fn with_plugin(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("PATH", path_with_plugin())
        .env_remove("PARACRYPT_PASSWORD")
        .env_remove("PARACRYPT_PLUGIN_SECRET")
        .env_remove("PARACRYPT_PLUGIN_TIMEOUT");
    for switch in [
        "PCTEST_LOG",
        "PCTEST_FAIL",
        "PCTEST_HALF",
        "PCTEST_ASK",
        "PCTEST_SCRIPT",
    ] {
        cmd.env_remove(switch);
    }
    cmd
}

/// `paracrypt ARGS` with the test plugin on PATH, detached from any terminal (`setsid -w`), so
/// that no prompt can be shown.
pub(crate) fn pc(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = with_plugin("setsid");
    cmd.arg("-w")
        .arg(env!("CARGO_BIN_EXE_paracrypt"))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd)
}

/// `age ARGS` with the test plugin on PATH.
fn age(args: &[&str]) -> Output {
    let mut cmd = with_plugin("age");
    cmd.args(args);
    run(cmd)
}

/// A new identity of the test plugin for `name`, written to DIR/NAME.id: (path, recipient).
fn identity(dir: &Path, name: &str) -> (PathBuf, String) {
    let mut cmd = with_plugin(plugin_dir().join("age-plugin-pctest"));
    cmd.arg(name);
    let text = String::from_utf8(ok(run(cmd))).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# recipient: "))
        .expect("a recipient line")
        .to_owned();
    let path = write(dir, &format!("{name}.id"), text.as_bytes());
    (path, recipient)
}

/// The `AGE-PLUGIN-…` line of an identity file.
fn identity_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .find(|l| l.starts_with("AGE-PLUGIN-"))
        .unwrap()
        .to_owned()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The `age` binary and `setsid` are there (CI installs them), or the test says so and passes.
pub(crate) fn have_tools() -> bool {
    have("age", "--version") && have("setsid", "--version")
}

#[test]
fn age_encrypts_to_the_plugin_and_paracrypt_decrypts_binary_and_armored() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "alice");
    let plain = write(d, "plain", &data(200 * 1024 + 7, 1));
    for armor in [false, true] {
        let sealed = d.join(format!("sealed-{armor}.age"));
        let mut args = vec!["-r", &recipient, "-o", s(&sealed)];
        if armor {
            args.insert(0, "-a");
        }
        args.push(s(&plain));
        ok(age(&args));
        let out = d.join(format!("out-{armor}"));
        ok(pc(
            &["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)],
            &[],
        ));
        assert_eq!(std::fs::read(&out).unwrap(), data(200 * 1024 + 7, 1));
    }
}

#[test]
fn paracrypt_encrypts_to_the_plugin_and_age_decrypts_binary_and_armored() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "bob");
    let plain = write(d, "plain", &data(130 * 1024, 2));
    for armor in [false, true] {
        let sealed = d.join(format!("sealed-{armor}.age"));
        let mut args = vec![
            "encrypt",
            "--format",
            "age",
            "-r",
            &recipient,
            "-o",
            s(&sealed),
            s(&plain),
        ];
        if armor {
            args.insert(3, "--armor");
        }
        ok(pc(&args, &[]));
        let out = ok(age(&["-d", "-i", s(&id), s(&sealed)]));
        assert_eq!(out, data(130 * 1024, 2));
    }
    // A plugin identity given as a recipient (what `age -e -i` does): the plugin wraps to the
    // key it names, and age opens the file with that identity.
    let sealed = d.join("to-identity.age");
    let line = identity_line(&id);
    ok(pc(
        &[
            "encrypt",
            "--format",
            "age",
            "-r",
            &line,
            "-o",
            s(&sealed),
            s(&plain),
        ],
        &[],
    ));
    assert_eq!(
        ok(age(&["-d", "-i", s(&id), s(&sealed)])),
        data(130 * 1024, 2)
    );
}

#[test]
fn a_container_to_a_plugin_and_an_x25519_key_is_rekeyed_and_described() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "carol");
    let (x_id, x_recipient) = crate::people::x25519(d, "x.key");
    let plain = write(d, "plain", &data(3 << 20, 3));
    let sealed = d.join("both.pcr");
    ok(pc(
        &[
            "encrypt",
            "--chunk-size",
            "1M",
            "-r",
            &recipient,
            "-r",
            &x_recipient,
            "-o",
            s(&sealed),
            s(&plain),
        ],
        &[],
    ));
    for key in [&id, &x_id] {
        let out = d.join("out");
        ok(pc(
            &["decrypt", "-f", "-i", s(key), "-o", s(&out), s(&sealed)],
            &[],
        ));
        assert_eq!(std::fs::read(&out).unwrap(), data(3 << 20, 3));
    }
    // info names the stanzas only a plugin opens, for a container and an age file alike.
    let info = String::from_utf8(ok(pc(&["info", s(&sealed)], &[]))).unwrap();
    assert!(info.contains("plugin:      pctest"), "{info}");
    let json: serde_json::Value =
        serde_json::from_slice(&ok(pc(&["info", "--json", s(&sealed)], &[]))).unwrap();
    assert_eq!(
        json["secret"]["plugin_stanzas"],
        serde_json::json!(["pctest"])
    );

    // Rekeyed with the X25519 key to that key alone: the plugin's identity no longer opens it.
    let only_x = d.join("only-x.pcr");
    ok(pc(
        &[
            "rekey",
            "-i",
            s(&x_id),
            "-r",
            &x_recipient,
            "-o",
            s(&only_x),
            s(&sealed),
        ],
        &[],
    ));
    fails(
        pc(
            &["decrypt", "-i", s(&id), "-o", s(&d.join("no")), s(&only_x)],
            &[],
        ),
        1,
        "no identity matches",
    );
    // Rekeyed with the plugin's identity, to the plugin alone: the X25519 key no longer opens
    // it, the plugin does.
    let only_plugin = d.join("only-plugin.pcr");
    ok(pc(
        &[
            "rekey",
            "-i",
            s(&id),
            "-r",
            &recipient,
            "-o",
            s(&only_plugin),
            s(&sealed),
        ],
        &[],
    ));
    fails(
        pc(
            &[
                "decrypt",
                "-i",
                s(&x_id),
                "-o",
                s(&d.join("no")),
                s(&only_plugin),
            ],
            &[],
        ),
        1,
        "no identity matches",
    );
    let out = d.join("out2");
    ok(pc(
        &["decrypt", "-i", s(&id), "-o", s(&out), s(&only_plugin)],
        &[],
    ));
    assert_eq!(std::fs::read(&out).unwrap(), data(3 << 20, 3));
    assert!(!d.join("no").exists());
}

#[test]
fn an_age_file_is_rekeyed_from_a_plugin_to_x25519_and_age_reads_it() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "dave");
    let (x_id, x_recipient) = crate::people::x25519(d, "x.key");
    let plain = write(d, "plain", b"rekeyed by a plugin\n");
    let sealed = d.join("a.age");
    ok(age(&["-r", &recipient, "-o", s(&sealed), s(&plain)]));
    let info = String::from_utf8(ok(pc(&["info", s(&sealed)], &[]))).unwrap();
    assert!(info.contains("plugin:      pctest"), "{info}");
    let rekeyed = d.join("b.age");
    ok(pc(
        &[
            "rekey",
            "-i",
            s(&id),
            "-r",
            &x_recipient,
            "-o",
            s(&rekeyed),
            s(&sealed),
        ],
        &[],
    ));
    assert_eq!(
        ok(age(&["-d", "-i", s(&x_id), s(&rekeyed)])),
        b"rekeyed by a plugin\n"
    );
}

/// Each way a plugin fails, while wrapping (encrypt) and unwrapping (decrypt): one line naming
/// the plugin and what happened, exit 1, and nothing in the directory but the inputs.
#[test]
fn a_failing_plugin_is_one_line_and_nothing_is_written() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "erin");
    let plain = write(d, "plain", &data(70 * 1024, 4));
    let sealed = d.join("sealed.age");
    ok(pc(
        &[
            "encrypt",
            "--format",
            "age",
            "-r",
            &recipient,
            "-o",
            s(&sealed),
            s(&plain),
        ],
        &[],
    ));
    let garbage_script = write(d, "script", b"-> done-not\nnot the protocol at all\n");
    let script = s(&garbage_script).to_owned();
    let before = listing(d);
    let cases: [(&[(&str, &str)], &str); 7] = [
        (
            &[("PATH", "/usr/bin:/bin")],
            "age-plugin-pctest: not found on PATH",
        ),
        (
            &[("PCTEST_FAIL", "start")],
            "age-plugin-pctest: exited with status 1 while PHASE the file key: \
             age-plugin-pctest: failing at start (PCTEST_FAIL=start)",
        ),
        (
            &[("PCTEST_FAIL", "crash")],
            "age-plugin-pctest: exited with status 101 while PHASE the file key",
        ),
        (
            &[("PCTEST_FAIL", "hang"), ("PARACRYPT_PLUGIN_TIMEOUT", "0.5")],
            "age-plugin-pctest: no answer within 0.5 s while PHASE the file key: stopped \
             (set PARACRYPT_PLUGIN_TIMEOUT to wait longer)",
        ),
        (
            &[("PCTEST_FAIL", "garbage")],
            "age-plugin-pctest: answered out of protocol while PHASE the file key: \
             `this is not the age plugin protocol` where a command (`-> …`) belongs",
        ),
        (
            &[("PCTEST_SCRIPT", &script)],
            "age-plugin-pctest: answered out of protocol while PHASE the file key",
        ),
        (
            &[("PCTEST_FAIL", "refuse")],
            "the test key refused (PCTEST_FAIL=refuse)",
        ),
    ];
    for (env, needle) in cases {
        for (phase, args) in [
            (
                "wrapping",
                vec!["encrypt", "--format", "age", "-r", &recipient, "-o"],
            ),
            ("unwrapping", vec!["decrypt", "-i", s(&id), "-o"]),
        ] {
            let out = d.join("out");
            let input = if phase == "wrapping" { &plain } else { &sealed };
            let mut args = args.clone();
            args.extend([s(&out), s(input)]);
            // The missing plugin is the one case where PATH is set: setsid must still be found.
            let result = pc(&args, env);
            let stderr = fails(result, 1, &needle.replace("PHASE", phase));
            assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
            assert_eq!(listing(d), before, "{env:?} {phase} left output");
        }
    }
}

#[test]
fn a_plugin_talks_to_the_user_and_a_secret_comes_from_the_environment_without_a_terminal() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "frank");
    let plain = write(d, "plain", b"a PIN-protected test key\n");
    let sealed = d.join("sealed.age");
    ok(age(&["-r", &recipient, "-o", s(&sealed), s(&plain)]));
    let out = d.join("out");
    let decrypt = ["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)];
    let before = listing(d);
    // No terminal and no answer: one line naming the plugin and what it asked.
    fails(
        pc(&decrypt, &[("PCTEST_ASK", "secret")]),
        1,
        "age-plugin-pctest: asked for a secret (\"enter the PIN of the test key 6672616e6b\") \
         and there is no terminal to ask on (set PARACRYPT_PLUGIN_SECRET to answer it); it \
         then said: identity 1: no PIN given",
    );
    fails(
        pc(&decrypt, &[("PCTEST_ASK", "confirm")]),
        1,
        "age-plugin-pctest: asked to confirm \"use the test key 6672616e6b?\"",
    );
    fails(
        pc(
            &decrypt,
            &[
                ("PCTEST_ASK", "secret"),
                ("PARACRYPT_PLUGIN_SECRET", "9999"),
            ],
        ),
        1,
        "age-plugin-pctest: identity 1: wrong PIN",
    );
    assert_eq!(listing(d), before);
    // The answer source: PARACRYPT_PLUGIN_SECRET; the plugin's message goes to stderr.
    let result = pc(
        &decrypt,
        &[
            ("PCTEST_ASK", "msg,secret"),
            ("PARACRYPT_PLUGIN_SECRET", "1234"),
        ],
    );
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    ok(result);
    assert!(
        stderr.contains("paracrypt: age-plugin-pctest: touch the test key 6672616e6b"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"a PIN-protected test key\n");
    // The same on the wrapping side (recipient-v1).
    let sealed2 = d.join("sealed2.age");
    let encrypt = [
        "encrypt",
        "--format",
        "age",
        "-r",
        &recipient,
        "-o",
        s(&sealed2),
        s(&plain),
    ];
    fails(
        pc(&encrypt, &[("PCTEST_ASK", "secret")]),
        1,
        "age-plugin-pctest: asked for a secret",
    );
    assert!(!sealed2.exists());
    ok(pc(
        &encrypt,
        &[
            ("PCTEST_ASK", "secret"),
            ("PARACRYPT_PLUGIN_SECRET", "1234"),
        ],
    ));
    assert_eq!(
        ok(age(&["-d", "-i", s(&id), s(&sealed2)])),
        b"a PIN-protected test key\n"
    );
}

/// Grease (commands a client does not know) is answered `unsupported` and the session goes on:
/// a scripted plugin sends grease and a message around the file key it read from the file's
/// own stanza (the test plugin wraps in clear).
#[test]
fn grease_from_a_plugin_is_tolerated() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "grace");
    let plain = write(d, "plain", b"greased\n");
    let sealed = d.join("sealed.age");
    ok(age(&["-r", &recipient, "-o", s(&sealed), s(&plain)]));
    let file = std::fs::read(&sealed).unwrap();
    let text = String::from_utf8_lossy(&file);
    let mut lines = text.lines();
    lines.find(|l| l.starts_with("-> pctest ")).unwrap();
    let body = lines.next().unwrap();
    let script = format!(
        "-> x-grease some args\nZ3JlYXNl\n-> msg\naGVsbG8\n-> y-grease\n\n-> file-key 0\n{body}\n-> done\n\n"
    );
    let script = write(d, "script", script.as_bytes());
    let out = d.join("out");
    let result = pc(
        &["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)],
        &[("PCTEST_SCRIPT", s(&script))],
    );
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    ok(result);
    assert!(stderr.contains("age-plugin-pctest: hello"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), b"greased\n");
}

/// A plugin runs once per command for all of its recipients (or identities), and not at all
/// when another identity opens the file first.
#[test]
fn one_session_per_plugin_and_none_when_another_identity_opens_the_file() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id_a, recipient_a) = identity(d, "heidi");
    let (id_b, recipient_b) = identity(d, "ivan");
    let (x_id, x_recipient) = crate::people::x25519(d, "x.key");
    let both_ids = write(
        d,
        "both.id",
        format!("{}\n{}\n", identity_line(&id_a), identity_line(&id_b)).as_bytes(),
    );
    let plain = write(d, "plain", &data(5000, 5));
    let sealed = d.join("sealed.pcr");
    let log = d.join("starts.log");
    let starts = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        std::fs::remove_file(&log).ok();
        text.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    ok(pc(
        &[
            "encrypt",
            "-r",
            &recipient_a,
            "-r",
            &x_recipient,
            "-r",
            &recipient_b,
            "-o",
            s(&sealed),
            s(&plain),
        ],
        &[("PCTEST_LOG", s(&log))],
    ));
    assert_eq!(starts(), ["recipient-v1"]);
    let out = d.join("out");
    ok(pc(
        &["decrypt", "-i", s(&both_ids), "-o", s(&out), s(&sealed)],
        &[("PCTEST_LOG", s(&log))],
    ));
    assert_eq!(starts(), ["identity-v1"]);
    std::fs::remove_file(&out).unwrap();
    ok(pc(
        &[
            "decrypt",
            "-i",
            s(&both_ids),
            "-i",
            s(&x_id),
            "-o",
            s(&out),
            s(&sealed),
        ],
        &[("PCTEST_LOG", s(&log))],
    ));
    assert_eq!(
        starts(),
        Vec::<String>::new(),
        "the X25519 key opened it first"
    );
    assert_eq!(std::fs::read(&out).unwrap(), data(5000, 5));
}

/// `decrypt --recursive` opens every file of a tree, and its manifest, in one plugin session
/// (a hardware key's PIN typed once), in both formats; a host with only the recipient updates
/// the tree after a change with one recipient session and none of the identity's.
#[test]
fn a_tree_is_opened_in_one_plugin_session_and_updated_without_the_identity() {
    if !have_tools() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "kim");
    let plain = d.join("plain");
    std::fs::create_dir_all(plain.join("sub")).unwrap();
    for i in 0..6u8 {
        let at = if i % 2 == 0 { "sub" } else { "." };
        write(
            &plain.join(at),
            &format!("f{i}"),
            &data(100 + usize::from(i), i),
        );
    }
    let log = d.join("starts.log");
    let starts = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        std::fs::remove_file(&log).ok();
        text.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let state = d.join("state");
    let state = [("PARACRYPT_STATE_DIR", s(&state))];
    for format in ["paracrypt", "age"] {
        let sealed = d.join(format!("sealed-{format}"));
        let back = d.join(format!("back-{format}"));
        let encrypt = |more: &[&str]| {
            let mut args = vec![
                "encrypt",
                "--recursive",
                "--format",
                format,
                "-r",
                &recipient,
            ];
            args.extend_from_slice(more);
            args.extend_from_slice(&["-o", s(&sealed), s(&plain)]);
            ok(pc(&args, &[state[0], ("PCTEST_LOG", s(&log))]));
        };
        encrypt(&[]);
        let sessions = starts();
        assert!(
            sessions.iter().all(|s| s == "recipient-v1"),
            "{format}: {sessions:?}"
        );
        ok(pc(
            &[
                "decrypt",
                "--recursive",
                "-i",
                s(&id),
                "-o",
                s(&back),
                s(&sealed),
            ],
            &[("PCTEST_LOG", s(&log))],
        ));
        assert_eq!(
            starts(),
            ["identity-v1"],
            "{format}: one session for 7 files"
        );
        for i in 0..6u8 {
            let at = if i % 2 == 0 { "sub" } else { "." };
            let got = std::fs::read(back.join(at).join(format!("f{i}"))).unwrap();
            assert_eq!(got, data(100 + usize::from(i), i), "{format} f{i}");
        }
        write(&plain, "f1", b"changed since");
        encrypt(&["--update"]);
        let sessions = starts();
        assert!(
            !sessions.is_empty() && sessions.iter().all(|s| s == "recipient-v1"),
            "{format}: the identity is never asked for: {sessions:?}"
        );
        let again = d.join(format!("again-{format}"));
        let mut args = vec!["decrypt", "--recursive", "-i", s(&id)];
        args.extend_from_slice(&["-o", s(&again), s(&sealed)]);
        ok(pc(&args, &[]));
        assert_eq!(std::fs::read(again.join("f1")).unwrap(), b"changed since");
        assert_eq!(std::fs::read(again.join("sub/f0")).unwrap(), data(100, 0));
        write(&plain, "f1", &data(101, 1));
    }
}

/// `--distributed`: rank 0 alone runs the plugin (it resolves the job, then sends the header and
/// the keys derived for the file to the other ranks), once to encrypt and once to decrypt.
#[cfg(feature = "mpi")]
#[test]
fn distributed_runs_the_plugin_once_on_rank_0() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_with};
    if !have_tools() || !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = identity(d, "judy");
    let plain = write(d, "plain", &data(64 * 1024 + 3, 6));
    let sealed = d.join("sealed.pcr");
    let out = d.join("out");
    let log = d.join("starts.log");
    let env = |cmd: &mut Command| {
        cmd.env("PATH", path_with_plugin()).env("PCTEST_LOG", &log);
    };
    ok(mpirun_with(
        3,
        [
            "encrypt",
            "--chunk-size",
            "4096",
            "-r",
            &recipient,
            "-o",
            s(&sealed),
            s(&plain),
        ],
        env,
    ));
    ok(mpirun_with(
        3,
        ["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)],
        env,
    ));
    assert_eq!(std::fs::read(&out).unwrap(), data(64 * 1024 + 3, 6));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "recipient-v1\nidentity-v1\n"
    );
}
