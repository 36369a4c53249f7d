//! age 1.3's tagged recipients (`age1tag1…` to `p256tag` stanzas, `age1tagpq1…` to
//! `mlkem768p256tag`: the public side of hardware keys) with real peers both ways. typage
//! (npm `age-encryption`) encrypts to them and paracrypt decrypts through the test plugin's
//! software tag identity (`age-plugin-pctest --p256tag`, as `age-plugin-yubikey` unwraps);
//! paracrypt encrypts (age files, binary and armored, and a container) and typage decrypts with
//! an identity written on the @noble packages it builds on (tests/typage/typage.mjs,
//! `TagIdentity`). Then each malformed stanza and recipient: one line, nothing written.
//!
//! Needs typage (scripts/test.sh installs it), node, `setsid` and the test plugin; without
//! them the tests say so and pass, except in CI.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::plugin::{have_tools, pc, plugin_dir, with_plugin};
use crate::typage::{typage, typage_dir};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A new tag identity of the test plugin, `kind` `p256tag` or `mlkem768p256tag`, written to
/// DIR/NAME: (path, recipient).
fn tag_identity(dir: &Path, name: &str, kind: &str) -> (PathBuf, String) {
    let mut cmd = with_plugin(plugin_dir().join("age-plugin-pctest"));
    cmd.arg(format!("--{kind}"));
    let text = String::from_utf8(ok(run(cmd))).unwrap();
    let recipient = text
        .lines()
        .find_map(|l| l.strip_prefix("# recipient: "))
        .expect("a recipient line")
        .to_owned();
    (write(dir, name, text.as_bytes()), recipient)
}

/// The tools, or `None` (the test passes, saying why).
fn tools() -> Option<PathBuf> {
    if !have_tools() {
        return None;
    }
    typage_dir()
}

#[test]
fn typage_encrypts_to_tagged_recipients_and_the_plugin_opens_them() {
    let Some(typage_dir) = tools() else {
        return;
    };
    let dir = scratch();
    let d = dir.path();
    let (p256_id, p256) = tag_identity(d, "p256.id", "p256tag");
    let (pq_id, pq) = tag_identity(d, "pq.id", "mlkem768p256tag");
    assert!(p256.starts_with("age1tag1") && pq.starts_with("age1tagpq1"));
    let both = write(
        d,
        "both.id",
        [
            std::fs::read(&p256_id).unwrap(),
            std::fs::read(&pq_id).unwrap(),
        ]
        .concat()
        .as_slice(),
    );
    let plain = data(70_000, 36);
    for (recipient, tag) in [(&p256, "p256tag"), (&pq, "mlkem768p256tag")] {
        let sealed = write(
            d,
            "sealed.age",
            &typage(&typage_dir, &["encrypt", recipient], &plain),
        );
        let out = d.join("out");
        ok(pc(
            &["decrypt", "-f", "-i", s(&both), "-o", s(&out), s(&sealed)],
            &[],
        ));
        assert_eq!(std::fs::read(&out).unwrap(), plain, "{tag}");
        // info names the stanza, and says only a plugin opens it.
        let json: serde_json::Value =
            serde_json::from_slice(&ok(pc(&["info", "--json", s(&sealed)], &[]))).unwrap();
        assert_eq!(json["stanzas"][0]["tag"], tag);
        assert_eq!(json["stanzas"][0]["kind"], tag);
        assert_eq!(json["plugin_stanzas"], serde_json::json!([tag]));
        assert_eq!(json["post_quantum"], tag == "mlkem768p256tag");
    }
}

#[test]
fn typage_decrypts_what_paracrypt_writes_to_tagged_recipients() {
    let Some(typage_dir) = tools() else {
        return;
    };
    let dir = scratch();
    let d = dir.path();
    let (p256_id, p256) = tag_identity(d, "p256.id", "p256tag");
    let (pq_id, pq) = tag_identity(d, "pq.id", "mlkem768p256tag");
    let plain = data(70_000, 37);
    let input = write(d, "plain", &plain);
    // -r binary, -R (a recipients file) armored; each opened by typage's Decrypter.
    let pq_file = write(d, "pq.txt", format!("# hardware key\n{pq}\n").as_bytes());
    for (id, to, armor) in [
        (&p256_id, ["-r", &p256], false),
        (&pq_id, ["-R", s(&pq_file)], true),
    ] {
        let sealed = d.join(format!("sealed-{armor}.age"));
        let mut args = vec!["encrypt", "--format", "age", to[0], to[1], "-o", s(&sealed)];
        if armor {
            args.push("--armor");
        }
        args.push(s(&input));
        ok(pc(&args, &[]));
        let file = std::fs::read(&sealed).unwrap();
        assert_eq!(file.starts_with(b"-----BEGIN AGE"), armor);
        assert_eq!(typage(&typage_dir, &["decrypt-tag", s(id)], &file), plain);
    }
    // A container to the post-quantum recipient, rekeyed to add a second one: typage's
    // identity unwraps the file key from each one's stanza in the header (the same key: HPKE
    // authenticates it), and paracrypt opens the container through the plugin.
    let (pq2_id, pq2) = tag_identity(d, "pq2.id", "mlkem768p256tag");
    let sealed = d.join("sealed.pcr");
    ok(pc(
        &["encrypt", "-r", &pq, "-o", s(&sealed), s(&input)],
        &[],
    ));
    let rekeyed = d.join("rekeyed.pcr");
    ok(pc(
        &[
            "rekey",
            "-i",
            s(&pq_id),
            "-r",
            &pq,
            "-r",
            &pq2,
            "-o",
            s(&rekeyed),
            s(&sealed),
        ],
        &[],
    ));
    let header = std::fs::read(&rekeyed).unwrap();
    let key = typage(&typage_dir, &["unwrap-tag", s(&pq_id)], &header);
    assert_eq!(key.len(), 33, "{}", String::from_utf8_lossy(&key));
    assert_eq!(
        typage(&typage_dir, &["unwrap-tag", s(&pq2_id)], &header),
        key
    );
    let out = d.join("out");
    ok(pc(
        &["decrypt", "-i", s(&pq2_id), "-o", s(&out), s(&rekeyed)],
        &[],
    ));
    assert_eq!(std::fs::read(&out).unwrap(), plain);
}

/// An age file's header with its first stanza's argument line and body line rewritten by
/// `edit`.
fn edit_stanza(file: &[u8], edit: impl Fn(&mut Vec<String>, &mut String)) -> Vec<u8> {
    let end = file.windows(4).position(|w| w == b"\n---").unwrap() + 1;
    let header = std::str::from_utf8(&file[..end]).unwrap();
    let mut lines: Vec<String> = header.lines().map(str::to_owned).collect();
    let mut args: Vec<String> = lines[1].split(' ').map(str::to_owned).collect();
    edit(&mut args, &mut lines[2]);
    lines[1] = args.join(" ");
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out.extend_from_slice(&file[end..]);
    out
}

#[test]
fn malformed_tagged_stanzas_and_recipients_are_one_line_and_write_nothing() {
    let Some(_) = tools() else {
        return;
    };
    use base64::Engine;
    use base64::prelude::BASE64_STANDARD_NO_PAD as B64;
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = tag_identity(d, "p256.id", "p256tag");
    let input = write(d, "plain", b"tagged\n");
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
            s(&input),
        ],
        &[],
    ));
    let file = std::fs::read(&sealed).unwrap();
    let out = d.join("out");
    let decrypt = |name: &str, bytes: &[u8], code: i32, needle: &str| {
        let path = write(d, name, bytes);
        let stderr = fails(
            pc(&["decrypt", "-i", s(&id), "-o", s(&out), s(&path)], &[]),
            code,
            needle,
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{name}: {stderr}");
        assert!(!out.exists(), "{name}");
    };
    // Another recipient's tag: not this identity's stanza.
    let wrong_tag = edit_stanza(&file, |args, _| args[2] = "AAAAAA".into());
    decrypt(
        "wrong-tag.age",
        &wrong_tag,
        1,
        "no identity matches this file",
    );
    // A truncated enc (64 bytes) and a 31-byte body: the plugin refuses the stanza.
    let short_enc = edit_stanza(&file, |args, _| {
        let enc = B64.decode(&args[3]).unwrap();
        args[3] = B64.encode(&enc[..64]);
    });
    decrypt("short-enc.age", &short_enc, 1, "enc is 65 bytes");
    let short_body = edit_stanza(&file, |_, body| {
        let bytes = B64.decode(&*body).unwrap();
        *body = B64.encode(&bytes[..31]);
    });
    decrypt("short-body.age", &short_body, 1, "body is 32 bytes");
    // Unchanged, it opens.
    ok(pc(
        &["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)],
        &[],
    ));

    // An invalid recipient string, and a post-quantum tagged recipient beside X25519.
    let (_, pq) = tag_identity(d, "pq.id", "mlkem768p256tag");
    let (_, x25519) = crate::people::x25519(d, "x.key");
    let no = d.join("no");
    for (args, needle) in [
        (
            vec!["-r", "age1tag1qqqqqqqq"],
            "recipient 1 (age1tag1qqqqqqqq): not a valid age1tag1… recipient",
        ),
        (
            vec!["-r", &pq, "-r", &x25519],
            "a post-quantum (age1pq1…, age1tagpq1…) recipient cannot share a file with \
             classical ones",
        ),
    ] {
        let mut all = vec!["encrypt"];
        all.extend(&args);
        all.extend(["-o", s(&no), s(&input)]);
        let stderr = fails(pc(&all, &[]), 2, needle);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(!no.exists());
    }
}

/// `--distributed`: an age file to a tagged recipient, written by 2 ranks, opens in typage; the
/// container they write opens through the plugin.
#[cfg(feature = "mpi")]
#[test]
fn distributed_encrypts_to_a_tagged_recipient() {
    use crate::distributed::with_mpi::{have_mpirun, mpirun_with};
    let Some(typage_dir) = tools() else {
        return;
    };
    if !have_mpirun() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let (id, recipient) = tag_identity(d, "p256.id", "p256tag");
    let plain = data(64 * 1024 + 5, 38);
    let input = write(d, "plain", &plain);
    let env = |cmd: &mut std::process::Command| {
        cmd.env("PATH", crate::plugin::path_with_plugin());
    };
    for format in ["age", "paracrypt"] {
        let sealed = d.join(format!("sealed.{format}"));
        let mut args = vec!["encrypt", "--format", format, "-r", &recipient];
        if format == "paracrypt" {
            // Chunks for both ranks (age's are 64 KiB, two here).
            args.extend(["--chunk-size", "4096"]);
        }
        args.extend(["-o", s(&sealed), s(&input)]);
        ok(mpirun_with(2, args, env));
        if format == "age" {
            let file = std::fs::read(&sealed).unwrap();
            assert_eq!(typage(&typage_dir, &["decrypt-tag", s(&id)], &file), plain);
        } else {
            let out = d.join("out");
            ok(pc(
                &["decrypt", "-i", s(&id), "-o", s(&out), s(&sealed)],
                &[],
            ));
            assert_eq!(std::fs::read(&out).unwrap(), plain);
        }
    }
}
