//! AWS KMS recipients (`-r awskms:KEY`, `decrypt --kms`) end to end, against moto's KMS on
//! 127.0.0.1 (the server of the S3 tests, which serves KMS on the same port; tests/s3/server.py
//! makes the keys and the users), with SigV4 and IAM checked by moto. KMS requests are counted
//! at a proxy in front of it (tests/cli/s3/proxy.rs). A key's state (disabled, pending deletion),
//! which moto does not check, is tested against ministack's KMS (tests/kms/server.py).
#![cfg(feature = "s3")]

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::people::x25519;
use crate::s3::{Action, Proxy, Script, Server, workspace};

/// A new KMS key (with `alias`, when given): its ARN.
fn kms_key(server: &Server, alias: Option<&str>) -> String {
    let made = server.command(serde_json::json!({"op": "kms_key", "alias": alias}));
    made["arn"].as_str().unwrap().to_owned()
}

/// `paracrypt` with the credentials of the server's user.
fn client(server: &Server) -> Command {
    server.client()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// How long the header is, as `info --json` says.
fn header_len(path: &Path) -> usize {
    let mut cmd = paracrypt();
    cmd.args(["info", "--json"]).arg(path);
    let info: serde_json::Value = serde_json::from_slice(&ok(run(cmd))).unwrap();
    info["header_len"].as_u64().unwrap() as usize
}

/// A file to a KMS key and an X25519 key, for both formats: either opens it; `info` names the
/// key; each command that wraps or unwraps makes one KMS request (counted at a proxy).
#[test]
fn a_kms_key_and_an_x25519_key_both_open_one_file_with_one_request_each() {
    let server = Server::shared();
    let arn = kms_key(server, Some("alias/both"));
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let dir = scratch();
    let d = dir.path();
    let (identity, recipient) = x25519(d, "me.key");
    let plain = data(300_000, 3);
    let input = write(d, "in", &plain);
    for (format, key) in [("paracrypt", arn.as_str()), ("age", "alias/both")] {
        let sealed = d.join(format!("sealed.{format}"));
        let before = proxy.requests().len();
        let mut cmd = client(server);
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url())
            .args(["encrypt", "--format", format, "-r", &recipient, "-r"])
            .arg(format!("awskms:{key}"))
            .args(["-o", s(&sealed), s(&input)]);
        ok(run(cmd));
        assert_eq!(
            proxy.requests().len() - before,
            1,
            "{format}: Encrypt requests"
        );

        let out = d.join(format!("out.{format}"));
        let mut cmd = client(server);
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url()).args([
            "decrypt",
            "--kms",
            "-o",
            s(&out),
            s(&sealed),
        ]);
        ok(run(cmd));
        assert_eq!(std::fs::read(&out).unwrap(), plain, "{format} with --kms");
        assert_eq!(
            proxy.requests().len() - before,
            2,
            "{format}: Decrypt requests"
        );

        // The X25519 key opens it with no KMS request (nor credentials).
        let mut cmd = paracrypt();
        cmd.args(["decrypt", "-i", s(&identity), s(&sealed)]);
        assert_eq!(ok(run(cmd)), plain, "{format} with the X25519 key");
        assert_eq!(proxy.requests().len() - before, 2, "{format}: no request");

        let mut cmd = paracrypt();
        cmd.args(["info"]).arg(&sealed);
        let info = String::from_utf8(ok(run(cmd))).unwrap();
        assert!(
            info.contains(&format!("kms:         {key} (AWS KMS key")),
            "{info}"
        );
    }
}

/// `rekey` adds a KMS key to a file of an X25519 key, then removes it, without touching the
/// payload (the bytes after the header stay the same).
#[test]
fn rekey_adds_and_removes_a_kms_recipient() {
    let server = Server::shared();
    let arn = kms_key(server, None);
    let dir = scratch();
    let d = dir.path();
    let (identity, recipient) = x25519(d, "me.key");
    let plain = data(200_000, 5);
    let input = write(d, "in", &plain);
    for format in ["paracrypt", "age"] {
        let sealed = d.join(format!("sealed.{format}"));
        let mut cmd = paracrypt();
        cmd.args(["encrypt", "--format", format, "-r", &recipient])
            .args(["-o", s(&sealed), s(&input)]);
        ok(run(cmd));
        let payload = |path: &Path| {
            let bytes = std::fs::read(path).unwrap();
            bytes[header_len(path)..].to_vec()
        };

        let added = d.join(format!("added.{format}"));
        let mut cmd = client(server);
        cmd.args(["rekey", "-i", s(&identity), "-r", &recipient, "-r"])
            .arg(format!("awskms:{arn}"))
            .args(["-o", s(&added), s(&sealed)]);
        ok(run(cmd));
        assert_eq!(payload(&added), payload(&sealed), "{format}: payload kept");
        let mut cmd = client(server);
        cmd.args(["decrypt", "--kms", s(&added)]);
        assert_eq!(ok(run(cmd)), plain, "{format}: the KMS key opens it");

        let removed = d.join(format!("removed.{format}"));
        let mut cmd = client(server);
        cmd.args(["rekey", "--kms", "-r", &recipient])
            .args(["-o", s(&removed), s(&added)]);
        ok(run(cmd));
        assert_eq!(
            payload(&removed),
            payload(&sealed),
            "{format}: payload kept"
        );
        let mut cmd = client(server);
        cmd.args(["decrypt", "--kms", s(&removed)]);
        fails(run(cmd), 1, "no identity matches this file");
        let mut cmd = paracrypt();
        cmd.args(["decrypt", "-i", s(&identity), s(&removed)]);
        assert_eq!(
            ok(run(cmd)),
            plain,
            "{format}: the X25519 key still opens it"
        );
    }
}

/// A KMS stanza moved into the header of another file (same recipients, another file key) is
/// refused: its file key is sealed under a key bound to its own header.
#[test]
fn a_kms_stanza_moved_to_another_file_is_refused() {
    let server = Server::shared();
    let arn = kms_key(server, None);
    let dir = scratch();
    let d = dir.path();
    let (_, recipient) = x25519(d, "me.key");
    let input = write(d, "in", &data(1000, 9));
    let sealed = |name: &str| {
        let path = d.join(name);
        let mut cmd = client(server);
        cmd.args(["encrypt", "--format", "age", "-r", &recipient, "-r"])
            .arg(format!("awskms:{arn}"))
            .args(["-o", s(&path), s(&input)]);
        ok(run(cmd));
        std::fs::read(path).unwrap()
    };
    let (a, b) = (sealed("a.age"), sealed("b.age"));
    // `-> awskms ARN\nBODY\n` up to the MAC line, in each.
    let stanza = |file: &[u8]| {
        let text = String::from_utf8_lossy(file).into_owned();
        let start = text.find("-> awskms").unwrap();
        let end = text.find("\n---").unwrap() + 1;
        (start, end)
    };
    let (a_start, a_end) = stanza(&a);
    let (b_start, b_end) = stanza(&b);
    let mut moved = b[..b_start].to_vec();
    moved.extend_from_slice(&a[a_start..a_end]);
    moved.extend_from_slice(&b[b_end..]);
    let moved = write(d, "moved.age", &moved);
    let out = d.join("out");
    let mut cmd = client(server);
    cmd.args(["decrypt", "--kms", "-o", s(&out), s(&moved)]);
    fails(
        run(cmd),
        1,
        &format!("KMS key {arn}: the wrapped key belongs to another file (its header differs)"),
    );
    assert!(!out.exists());
}

/// A tree to a KMS key costs one KMS request to encrypt and one to decrypt, whatever its number
/// of files (one run key, wrapped once); a backup host with no way to decrypt (no `--kms`, no
/// identity, no `kms:Decrypt` in its policy) updates it after a change with one more request, and the tree then opens with one
/// request per run that sealed part of it. Both formats.
#[test]
fn a_tree_to_a_kms_key_costs_one_request_each_way_and_updates_without_decrypting() {
    let server = Server::shared();
    let arn = kms_key(server, None);
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let dir = scratch();
    let d = dir.path();
    let state = d.join("state");
    let kms = || {
        let mut cmd = client(server);
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url())
            .env("PARACRYPT_STATE_DIR", &state);
        cmd
    };
    let recipient = format!("awskms:{arn}");
    let made = server.command(serde_json::json!({
        "op": "kms_user", "name": "tree-updater", "deny": ["kms:Decrypt"]
    }));
    let updater = (
        made[0].as_str().unwrap().to_owned(),
        made[1].as_str().unwrap().to_owned(),
    );
    for format in ["paracrypt", "age"] {
        let input = d.join(format!("in.{format}"));
        let files: Vec<(String, Vec<u8>)> = (0..40)
            .map(|i| (format!("d{}/f{i}", i % 4), data(1000 + i, i as u8)))
            .collect();
        for (name, plain) in &files {
            std::fs::create_dir_all(input.join(name).parent().unwrap()).unwrap();
            std::fs::write(input.join(name), plain).unwrap();
        }
        let out = d.join(format!("out.{format}"));
        let before = proxy.requests().len();
        let requests = || proxy.requests().len() - before;
        let encrypt = |update: bool| {
            let mut cmd = kms();
            cmd.args(["encrypt", "-q", "--recursive", "--format", format]);
            if update {
                // As a backup host that may not call kms:Decrypt.
                cmd.env("AWS_ACCESS_KEY_ID", &updater.0)
                    .env("AWS_SECRET_ACCESS_KEY", &updater.1)
                    .arg("--update");
            }
            cmd.args(["-r", &recipient, "-o", s(&out), s(&input)]);
            ok(run(cmd));
        };
        let decrypt = |to: &str| {
            let back = d.join(format!("{to}.{format}"));
            let mut cmd = kms();
            cmd.args([
                "decrypt",
                "-q",
                "--recursive",
                "--kms",
                "-o",
                s(&back),
                s(&out),
            ]);
            ok(run(cmd));
            back
        };
        encrypt(false);
        assert_eq!(
            requests(),
            1,
            "{format}: 40 files and a manifest, one Encrypt"
        );
        let back = decrypt("back");
        assert_eq!(requests(), 2, "{format}: one Decrypt");
        for (name, plain) in &files {
            assert_eq!(
                &std::fs::read(back.join(name)).unwrap(),
                plain,
                "{format} {name}"
            );
        }
        let changed = data(5000, 99);
        std::fs::write(input.join(&files[7].0), &changed).unwrap();
        encrypt(true);
        assert_eq!(
            requests(),
            3,
            "{format}: the update's run key, nothing decrypted"
        );
        let back = decrypt("again");
        assert_eq!(requests(), 5, "{format}: one Decrypt per run");
        assert_eq!(std::fs::read(back.join(&files[7].0)).unwrap(), changed);
        assert_eq!(std::fs::read(back.join(&files[8].0)).unwrap(), files[8].1);
    }
}

/// A key ARN picks the server only through a region of its partition: a file whose stanza
/// names a hostile ARN (its region a host of the attacker's, an account of 11 digits, an unknown
/// partition) is refused in one line naming the key and why, exit 1, with no connection made
/// (the client's HTTPS proxy, or the KMS server the user set, sees nothing); `-r` refuses the
/// same keys. A well-formed ARN of another partition goes to that partition's endpoint, at the
/// proxy, which shows the proxy would have seen a connection.
#[test]
fn a_file_naming_a_hostile_key_arn_is_refused_before_any_connection() {
    let server = Server::shared();
    let arn = kms_key(server, None);
    let proxy = Proxy::start(server.port, |_| Action::Fail);
    let dir = scratch();
    let d = dir.path();
    let (_, recipient) = x25519(d, "me.key");
    let input = write(d, "in", &data(1000, 4));
    let sealed = d.join("sealed.age");
    let mut cmd = client(server);
    cmd.args(["encrypt", "--format", "age", "-r", &recipient, "-r"])
        .arg(format!("awskms:{arn}"))
        .args(["-o", s(&sealed), s(&input)]);
    ok(run(cmd));
    let sealed = std::fs::read(&sealed).unwrap();
    let account = arn.split(':').nth(4).unwrap();
    let with_key = |key: &str| {
        let text = String::from_utf8_lossy(&sealed).replacen(&arn, key, 1);
        assert_ne!(text.as_bytes(), &sealed[..]);
        write(d, "named.age", text.as_bytes())
    };
    // KMS requests go to the proxy: as the HTTPS proxy of the endpoint the ARN picks, or as
    // the server the user set.
    let no_endpoint = |cmd: &mut Command| {
        for var in [
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_KMS",
            "NO_PROXY",
            "no_proxy",
            "ALL_PROXY",
            "all_proxy",
            "http_proxy",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HTTPS_PROXY", proxy.url())
            .env("https_proxy", proxy.url());
    };
    let user_endpoint = |cmd: &mut Command| {
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url());
    };
    let region = "not an AWS KMS key ARN: the region must be lowercase letters, digits and dashes";
    let hostile = [
        (
            format!("arn:aws:kms:x@attacker.example/:{account}:key/1"),
            region,
        ),
        (
            format!("arn:aws:kms:us-east-1.attacker.example:{account}:key/1"),
            region,
        ),
        (
            "arn:aws:kms:us-east-1:12345678901:key/1".to_owned(),
            "not an AWS KMS key ARN: the account must be 12 digits",
        ),
        (
            format!("arn:attacker:kms:us-east-1:{account}:key/1"),
            "not an AWS KMS key ARN: unknown partition `attacker`",
        ),
    ];
    let out = d.join("out");
    for (key, why) in &hostile {
        let named = with_key(key);
        for (how, setup) in [
            ("the ARN's endpoint", &no_endpoint as &dyn Fn(&mut Command)),
            ("the user's endpoint", &user_endpoint),
        ] {
            let mut cmd = client(server);
            setup(&mut cmd);
            cmd.args(["decrypt", "--kms", "-o", s(&out), s(&named)]);
            let stderr = fails(run(cmd), 1, &format!("KMS key {key}: {why}"));
            assert_eq!(stderr.trim().lines().count(), 1, "{key}, {how}: {stderr}");
            assert!(!out.exists(), "{key}, {how}: nothing written");
            assert_eq!(proxy.requests().len(), 0, "{key}, {how}: no connection");

            let mut cmd = client(server);
            setup(&mut cmd);
            cmd.args(["encrypt", "-r"])
                .arg(format!("awskms:{key}"))
                .args(["-o", s(&out), s(&input)]);
            let stderr = fails(run(cmd), 2, why);
            assert_eq!(stderr.trim().lines().count(), 1, "{key}, -r: {stderr}");
            assert!(!out.exists(), "{key}, -r: nothing written");
            assert_eq!(proxy.requests().len(), 0, "{key}, -r: no connection");
        }
    }

    // A region the user set that is not one picks no host either.
    let mut cmd = client(server);
    no_endpoint(&mut cmd);
    cmd.env("AWS_REGION", "x@attacker.example/").args([
        "encrypt",
        "-r",
        "awskms:alias/k",
        "-o",
        s(&out),
        s(&input),
    ]);
    fails(
        run(cmd),
        1,
        "KMS key alias/k: the AWS region x@attacker.example/ is not a region name",
    );
    assert_eq!(proxy.requests().len(), 0, "a bad AWS_REGION: no connection");

    // An ARN of the China partition goes to its endpoint (here, to the proxy in its way).
    let china = format!("arn:aws-cn:kms:cn-north-1:{account}:key/1");
    let named = with_key(&china);
    let mut cmd = client(server);
    no_endpoint(&mut cmd);
    cmd.args(["decrypt", "--kms", "-o", s(&out), s(&named)]);
    fails(
        run(cmd),
        1,
        &format!("KMS key {china}: cannot reach KMS at https://kms.cn-north-1.amazonaws.com.cn"),
    );
    let seen: Vec<String> = proxy
        .requests()
        .iter()
        .map(|(r, _)| format!("{} {}", r.method, r.target))
        .collect();
    assert_eq!(seen, ["CONNECT kms.cn-north-1.amazonaws.com.cn:443"]);
}

/// KMS failing on its side (a 503) is asked again, up to 4 requests in all: two failures and
/// then an answer decrypt the file; four failures are one line, exit 1, nothing written.
#[test]
fn kms_failing_on_its_side_is_asked_again_up_to_four_times() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = Server::shared();
    let arn = kms_key(server, None);
    let dir = scratch();
    let d = dir.path();
    let plain = data(1000, 6);
    let input = write(d, "in", &plain);
    let sealed = d.join("sealed.pcr");
    let mut cmd = client(server);
    cmd.args(["encrypt", "-r"])
        .arg(format!("awskms:{arn}"))
        .args(["-o", s(&sealed), s(&input)]);
    ok(run(cmd));
    for (failures, answered) in [(2, true), (usize::MAX, false)] {
        let seen = AtomicUsize::new(0);
        let proxy = Proxy::start(server.port, move |_| {
            if seen.fetch_add(1, Ordering::Relaxed) < failures {
                Action::SlowDown
            } else {
                Action::Forward
            }
        });
        let out = d.join("out");
        let mut cmd = client(server);
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url()).args([
            "decrypt",
            "--kms",
            "-o",
            s(&out),
            s(&sealed),
        ]);
        if answered {
            ok(run(cmd));
            assert_eq!(std::fs::read(&out).unwrap(), plain);
            assert_eq!(proxy.requests().len(), 3, "two failures, then the answer");
            std::fs::remove_file(&out).unwrap();
        } else {
            let stderr = fails(
                run(cmd),
                1,
                &format!("KMS key {arn}: KMS refused (SlowDown"),
            );
            assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
            assert!(!out.exists());
            assert_eq!(proxy.requests().len(), 4, "four requests in all");
        }
    }
}

/// Each way KMS can fail is one line naming the key and why, exit 1, and nothing written:
/// access denied (IAM denies the user kms:Encrypt or kms:Decrypt), an unknown key, a key of
/// another region, refused credentials, an unreachable server. (A disabled key, or one pending
/// deletion: moto 5.2.5 encrypts and decrypts with them, so they are tested against ministack,
/// below.)
#[test]
fn kms_failures_name_the_key_and_write_nothing() {
    let server = Server::shared();
    let arn = kms_key(server, Some("alias/fails"));
    let dir = scratch();
    let d = dir.path();
    let input = write(d, "in", &data(1000, 1));
    let sealed = d.join("sealed.pcr");
    let mut cmd = client(server);
    cmd.args([
        "encrypt",
        "-r",
        "awskms:alias/fails",
        "-o",
        s(&sealed),
        s(&input),
    ]);
    ok(run(cmd));
    let user = |name: &str, deny: &str| {
        let made =
            server.command(serde_json::json!({"op": "kms_user", "name": name, "deny": [deny]}));
        (
            made[0].as_str().unwrap().to_owned(),
            made[1].as_str().unwrap().to_owned(),
        )
    };
    let no_decrypt = user("no-decrypt", "kms:Decrypt");
    let no_encrypt = user("no-encrypt", "kms:Encrypt");
    let out = d.join("out");
    type Setup<'a> = (&'a str, Vec<(&'a str, String)>, Vec<String>, String);
    let decrypt = || vec!["decrypt".to_owned(), "--kms".into(), s(&sealed).into()];
    let encrypt = |key: &str| {
        vec![
            "encrypt".to_owned(),
            "-r".into(),
            format!("awskms:{key}"),
            s(&input).into(),
        ]
    };
    let cases: Vec<Setup> = vec![
        (
            "decrypt denied",
            vec![
                ("AWS_ACCESS_KEY_ID", no_decrypt.0.clone()),
                ("AWS_SECRET_ACCESS_KEY", no_decrypt.1.clone()),
            ],
            decrypt(),
            "KMS key alias/fails: access denied (AccessDenied: ".into(),
        ),
        (
            "encrypt denied",
            vec![
                ("AWS_ACCESS_KEY_ID", no_encrypt.0.clone()),
                ("AWS_SECRET_ACCESS_KEY", no_encrypt.1.clone()),
            ],
            encrypt(&arn),
            format!("KMS key {arn}: access denied"),
        ),
        (
            "unknown key",
            vec![],
            encrypt("alias/nowhere"),
            "KMS key alias/nowhere: no such key in region us-east-1".into(),
        ),
        (
            "wrong region",
            vec![("AWS_REGION", "eu-west-3".into())],
            decrypt(),
            "KMS key alias/fails: no such key in region eu-west-3".into(),
        ),
        (
            "wrong secret",
            vec![("AWS_SECRET_ACCESS_KEY", "wrong".into())],
            decrypt(),
            "KMS key alias/fails: the AWS credentials were refused".into(),
        ),
        (
            "unreachable",
            vec![("AWS_ENDPOINT_URL_KMS", "http://127.0.0.1:1".into())],
            decrypt(),
            "KMS key alias/fails: cannot reach KMS at http://127.0.0.1:1".into(),
        ),
    ];
    for (what, env, args, needle) in cases {
        let mut cmd = client(server);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.args(&args).arg("-o").arg(&out);
        let stderr = fails(run(cmd), 1, &needle);
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{what}: one line: {stderr}"
        );
        assert!(!out.exists(), "{what}: nothing written");
        assert_eq!(listing(d).len(), 2, "{what}: no temporary file left");
    }
}

/// ministack's KMS (tests/kms/server.py), for what moto does not check: a key's state. Stopped
/// when this value is dropped.
struct KeyStates {
    port: u16,
    script: Script,
}

impl KeyStates {
    fn start() -> KeyStates {
        let python = match std::env::var_os("PARACRYPT_KMS_PYTHON") {
            Some(python) => std::path::PathBuf::from(python),
            None => {
                let venv = workspace().join("target/kms-venv/bin/python");
                assert!(
                    venv.exists(),
                    "the KMS key-state tests need ministack: run scripts/test.sh, or `python3 -m \
                     venv target/kms-venv && target/kms-venv/bin/pip install --only-binary=:all: \
                     -r tests/kms/requirements.txt` (or set PARACRYPT_KMS_PYTHON)"
                );
                venv
            }
        };
        let script = Script::start(&python, "tests/kms/server.py");
        KeyStates {
            port: script.ready[0].parse().unwrap(),
            script,
        }
    }

    /// Runs one command of tests/kms/server.py and returns its result.
    fn command(&self, command: serde_json::Value) -> serde_json::Value {
        self.script.command(command)
    }

    /// `paracrypt` with this server as its KMS.
    fn client(&self) -> Command {
        let mut cmd = paracrypt();
        for var in [
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL_KMS",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            )
            .env("AWS_ALLOW_HTTP", "true");
        cmd
    }
}

impl Drop for KeyStates {
    fn drop(&mut self) {
        self.script.kill();
    }
}

/// A disabled key and a key pending deletion, against a KMS that checks a key's state: encrypting
/// to such a key and decrypting a file wrapped by it are one line naming the key and why, exit 1,
/// nothing written (for both formats).
#[test]
fn a_disabled_key_and_a_key_pending_deletion_are_refused_by_name() {
    let kms = KeyStates::start();
    let dir = scratch();
    let d = dir.path();
    let input = write(d, "in", &data(1000, 2));
    let out = d.join("out");
    for (state, op, why) in [
        (
            "disabled",
            "disable",
            "the key is disabled (DisabledException: ",
        ),
        (
            "pending deletion",
            "delete",
            "the key cannot be used in its state (KMSInvalidStateException: ",
        ),
    ] {
        for format in ["paracrypt", "age"] {
            let made = kms.command(serde_json::json!({"op": "key"}));
            let arn = made["arn"].as_str().unwrap().to_owned();
            let sealed = d.join(format!("sealed.{format}"));
            let mut cmd = kms.client();
            cmd.args(["encrypt", "-f", "--format", format, "-r"])
                .arg(format!("awskms:{arn}"))
                .args(["-o", s(&sealed), s(&input)]);
            ok(run(cmd));
            kms.command(serde_json::json!({"op": op, "id": made["id"]}));
            let needle = format!("KMS key {arn}: {why}");
            let before = listing(d);
            for args in [
                vec!["decrypt".to_owned(), "--kms".into(), s(&sealed).into()],
                vec![
                    "encrypt".to_owned(),
                    "--format".into(),
                    format.into(),
                    "-r".into(),
                    format!("awskms:{arn}"),
                    s(&input).into(),
                ],
            ] {
                let what = format!("{state}, {format}, {}", args[0]);
                let mut cmd = kms.client();
                cmd.args(&args).arg("-o").arg(&out);
                let stderr = fails(run(cmd), 1, &needle);
                assert!(stderr.contains(&arn), "{what}: names the key: {stderr}");
                assert_eq!(
                    stderr.trim().lines().count(),
                    1,
                    "{what}: one line: {stderr}"
                );
                assert!(!out.exists(), "{what}: nothing written");
                assert_eq!(listing(d), before, "{what}: no temporary file left");
            }
        }
    }
}

/// `--distributed` under a real `mpirun` of 3 ranks: both formats, sealed to a KMS key, decrypt
/// and encrypt with one KMS request each (rank 0 opens the header and hands the other ranks the
/// keys derived for the file), the same plaintext as one process.
#[cfg(feature = "mpi")]
#[test]
fn distributed_ranks_share_one_kms_unwrap() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_with};
    if !have_mpirun() {
        return;
    }
    let server = Server::shared();
    let arn = kms_key(server, None);
    let proxy = Proxy::start(server.port, |_| Action::Forward);
    let dir = scratch();
    let d = dir.path();
    let plain = data(700_000, 7);
    let input = write(d, "in", &plain);
    let with_kms = |cmd: &mut Command| {
        server.credentials(cmd, &format!("http://127.0.0.1:{}", server.port));
        cmd.env("AWS_ENDPOINT_URL_KMS", proxy.url());
    };
    for format in ["paracrypt", "age"] {
        let sealed = d.join(format!("sealed.{format}"));
        let before = proxy.requests().len();
        // Age files are in 64 KiB chunks; containers get as many.
        let chunks: &[&str] = match format {
            "age" => &[],
            _ => &["--chunk-size", "64KiB"],
        };
        let mut args: Vec<String> = ["encrypt", "-q", "--format", format]
            .map(String::from)
            .into();
        args.extend(chunks.iter().map(|a| a.to_string()));
        args.extend(
            ["-r", &format!("awskms:{arn}"), "-o", s(&sealed), s(&input)].map(String::from),
        );
        ok(mpirun_with(3, args, with_kms));
        assert_eq!(
            proxy.requests().len() - before,
            1,
            "{format}: Encrypt requests"
        );
        let out = d.join(format!("out.{format}"));
        let args: Vec<String> = ["decrypt", "-q", "--kms", "-o", s(&out), s(&sealed)]
            .map(String::from)
            .into();
        ok(mpirun_with(3, args, with_kms));
        assert_eq!(std::fs::read(&out).unwrap(), plain, "{format}");
        assert_eq!(
            proxy.requests().len() - before,
            2,
            "{format}: Decrypt requests"
        );
    }
}
