//! Every command to and from objects: the same bytes as with files, in parts, concurrently.

use std::path::Path;
use std::process::Command;

use super::Server;
use crate::common::*;
use crate::container::keygen;

const SALT: &str = "0101010101010101010101010101010101010101010101010101010101010101";

fn enc(mut cmd: Command, key: &Path, args: &[&str]) -> Command {
    cmd.args(["encrypt", "--fixed-salt", SALT, "-q", "--key-file"])
        .arg(key)
        .args(args);
    cmd
}

fn dec(mut cmd: Command, key: &Path, args: &[&str]) -> Command {
    cmd.args(["decrypt", "--key-file"]).arg(key).args(args);
    cmd
}

/// A file sealed to an object is the very file sealed locally (parts are runs of whole
/// chunks, made by the engine), at sizes around the part boundaries: empty, one byte, one part,
/// several parts with a short last chunk; and it decrypts back to a file, to stdout, as a
/// stream and as an object.
#[test]
fn files_and_objects_round_trip_with_the_same_bytes() {
    let server = Server::shared();
    let bucket = server.bucket("roundtrip");
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    // 8 MiB parts of 64 KiB chunks: 0, 1, 8 MiB + 5 (two parts), 20 MiB + 17 (two parts of
    // 10 MiB, the second with a short last chunk) — chunk boundaries both inside and on parts.
    for (n, len) in [0usize, 1, (8 << 20) + 5, (20 << 20) + 17]
        .into_iter()
        .enumerate()
    {
        let plain = data(len, n as u8);
        let input = write(d, &format!("in{n}"), &plain);
        let local = d.join(format!("local{n}.pcr"));
        let mut cmd = enc(paracrypt(), &key, &["--chunk-size", "64KiB", "-o"]);
        cmd.arg(&local).arg(&input);
        ok(run(cmd));
        let object = bucket.url(&format!("f{n}.pcr"));
        let mut cmd = enc(
            server.client(),
            &key,
            &["--chunk-size", "64KiB", "-j", "2", "-o", &object],
        );
        cmd.arg(&input);
        ok(run(cmd));
        assert_eq!(
            bucket.get(&format!("f{n}.pcr")),
            std::fs::read(&local).unwrap(),
            "size {len}"
        );

        // Back: to a file, to stdout, and to another object.
        let back = d.join(format!("back{n}"));
        let mut cmd = dec(server.client(), &key, &["-o"]);
        cmd.arg(&back).arg(&object);
        ok(run(cmd));
        assert!(std::fs::read(&back).unwrap() == plain, "size {len}: file");
        let out = ok(run(dec(server.client(), &key, &[&object])));
        assert!(out == plain, "size {len}: stdout");
        let plain_object = bucket.url(&format!("plain{n}"));
        ok(run(dec(
            server.client(),
            &key,
            &["-o", &plain_object, &object],
        )));
        assert!(
            bucket.get(&format!("plain{n}")) == plain,
            "size {len}: object"
        );
    }
    bucket.holds_only(&[
        "f0.pcr", "f1.pcr", "f2.pcr", "f3.pcr", "plain0", "plain1", "plain2", "plain3",
    ]);
}

/// stdin → object (parts of a stream of unknown length) gives the bytes of stdin → file.
#[test]
fn a_stream_goes_up_in_parts() {
    let server = Server::shared();
    let bucket = server.bucket("stream");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let plain = data((17 << 20) + 3, 7);
    let local = ok(run_with_stdin(enc(paracrypt(), &key, &[]), &plain));
    let object = bucket.url("s.pcr");
    ok(run_with_stdin(
        enc(server.client(), &key, &["-o", &object]),
        &plain,
    ));
    assert!(bucket.get("s.pcr") == local);
    // Object → stdout reads in order (ranged GETs read ahead).
    assert!(ok(run(dec(server.client(), &key, &[&object]))) == plain);
    bucket.holds_only(&["s.pcr"]);
}

/// `raw` (CTR in parallel, CBC encryption serial), age files to a recipient and `rekey` of an
/// object: the same bytes as with files, and rekey rewrites the header only.
#[test]
fn raw_age_and_rekey_work_on_objects() {
    let server = Server::shared();
    let bucket = server.bucket("kinds");
    let dir = scratch();
    let d = dir.path();
    let plain = data((9 << 20) + 77, 3);
    let input = write(d, "in", &plain);
    for cipher in ["aes-256-ctr", "aes-128-cbc"] {
        let raw = |mut cmd: Command, dir: &str| {
            cmd.args(["raw", dir, "-c", cipher, "-K"])
                .arg("00".repeat(if cipher == "aes-256-ctr" { 32 } else { 16 }))
                .args(["--iv", &"11".repeat(16)]);
            cmd
        };
        let local = ok(run({
            let mut c = raw(paracrypt(), "-e");
            c.arg(&input);
            c
        }));
        let object = bucket.url(&format!("{cipher}.bin"));
        let mut c = raw(server.client(), "-e");
        c.args(["-o", &object]).arg(&input);
        ok(run(c));
        assert!(bucket.get(&format!("{cipher}.bin")) == local, "{cipher}");
        let mut c = raw(server.client(), "-d");
        c.arg(&object);
        assert!(ok(run(c)) == plain, "{cipher} back");
    }

    // age: encrypt to an X25519 recipient into an object, decrypt it from there, rekey it in
    // place to someone else.
    let me = d.join("me.key");
    let out = ok(run({
        let mut c = paracrypt();
        c.args(["keygen", "--kind", "x25519", "-o"]).arg(&me);
        c
    }));
    let _ = out;
    let recipient = |key: &Path| {
        let mut c = paracrypt();
        c.args(["keygen", "-y"]).arg(key);
        String::from_utf8(ok(run(c))).unwrap().trim().to_string()
    };
    let you = d.join("you.key");
    ok(run({
        let mut c = paracrypt();
        c.args(["keygen", "--kind", "x25519", "-o"]).arg(&you);
        c
    }));
    let object = bucket.url("a.age");
    let mut c = server.client();
    c.args([
        "encrypt",
        "--format",
        "age",
        "-q",
        "-r",
        &recipient(&me),
        "-o",
        &object,
    ])
    .arg(&input);
    ok(run(c));
    let open = |who: &Path| {
        let mut c = server.client();
        c.args(["decrypt", "-i"]).arg(who).arg(&object);
        run(c)
    };
    assert!(ok(open(&me)) == plain);
    let before = bucket.get("a.age");
    let mut c = server.client();
    c.args(["rekey", "-i"])
        .arg(&me)
        .args(["-r", &recipient(&you), "-o", &object, &object]);
    ok(run(c));
    assert!(ok(open(&you)) == plain);
    fails(open(&me), 1, "");
    // Only the header changed: the payload (nonce and chunks) is the same bytes.
    let after = bucket.get("a.age");
    let tail = |file: &[u8]| file[file.len() - (plain.len() + 16 * 145)..].to_vec();
    assert_eq!(tail(&before), tail(&after));
    bucket.holds_only(&["aes-256-ctr.bin", "aes-128-cbc.bin", "a.age"]);
}

/// Outputs keep the local rules: an existing object needs --force, the input object is not
/// the output, `http(s)://` is read-only, and a local file named like a URL is `./s3://…`.
#[test]
fn outputs_keep_the_local_rules() {
    let server = Server::shared();
    let bucket = server.bucket("rules");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let input = write(dir.path(), "in", b"hello");
    let object = bucket.url("x.pcr");
    let first = || {
        let mut c = enc(server.client(), &key, &["-o", &object]);
        c.arg(&input);
        c
    };
    ok(run(first()));
    let sealed = bucket.get("x.pcr");
    fails(
        run(first()),
        2,
        "already exists (use --force to overwrite; Python: overwrite=True)",
    );
    assert_eq!(bucket.get("x.pcr"), sealed);
    let mut forced = first();
    forced.arg("--force");
    ok(run(forced));
    fails(
        run(dec(server.client(), &key, &["-o", &object, &object])),
        2,
        "is the input object",
    );
    let mut http = enc(server.client(), &key, &["-o", "http://127.0.0.1:1/x"]);
    http.arg(&input);
    fails(run(http), 2, "read-only");
    bucket.holds_only(&["x.pcr"]);
}

/// The variables of other programs may hold any bytes: a command on objects runs beside one
/// that is not UTF-8 (it panicked once, on every `s3://` command), while a setting of the store
/// that is not UTF-8 is refused in one line (exit 2) rather than skipped without a word.
#[test]
fn the_environment_may_hold_any_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let server = Server::shared();
    let bucket = server.bucket("environment");
    let dir = scratch();
    let key = keygen(dir.path(), "k");
    let plain = data(100_000, 9);
    let input = write(dir.path(), "in", &plain);
    let object = bucket.url("e.pcr");
    let mut cmd = server.client();
    cmd.env("PARACRYPT_TEST_LATIN1", latin1)
        .args(["encrypt", "-q", "--key-file"])
        .arg(&key)
        .args(["-o", &object])
        .arg(&input);
    ok(run(cmd));
    let mut cmd = dec(server.client(), &key, &[&object]);
    cmd.env("PARACRYPT_TEST_LATIN1", latin1);
    assert!(ok(run(cmd)) == plain);

    let mut cmd = dec(server.client(), &key, &[&object]);
    cmd.env("AWS_REGION", latin1);
    let stderr = fails(run(cmd), 2, "AWS_REGION is not valid UTF-8");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    bucket.holds_only(&["e.pcr"]);
}
