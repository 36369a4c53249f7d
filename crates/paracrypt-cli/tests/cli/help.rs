//! The tool explains itself: `-h` of every subcommand fits an 80-column terminal, parse errors
//! are one line with exit status 2, sizes are taken as users type them, `--range OFFSET:` reads
//! to the end, and the short flags renamed in this release still work, with a warning.

use std::path::Path;

use crate::common::*;
use crate::container::keygen;
use crate::people::x25519;

/// Every (sub)command, as typed: `["rsa", "keygen"]`, found from `paracrypt -h`'s own lists.
fn commands() -> Vec<Vec<String>> {
    fn listed(prefix: &[String]) -> Vec<String> {
        let mut c = paracrypt();
        c.args(prefix).arg("-h");
        let help = String::from_utf8(ok(run(c))).unwrap();
        let Some(list) = help.split("Commands:\n").nth(1) else {
            return Vec::new();
        };
        list.lines()
            .take_while(|line| line.starts_with("  "))
            .filter_map(|line| line.strip_prefix("  "))
            .filter(|line| !line.starts_with(' '))
            .filter_map(|line| line.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(String::from)
            .collect()
    }
    let mut all = vec![Vec::new()];
    let mut next = 0;
    while next < all.len() {
        let prefix = all[next].clone();
        for name in listed(&prefix) {
            let mut command = prefix.clone();
            command.push(name);
            all.push(command);
        }
        next += 1;
    }
    all
}

/// `-h` of every subcommand, piped: at most 80 columns and about 40 lines; `--help` at most 80
/// columns too, and longer than `-h` where there is more to say.
#[test]
fn short_help_fits_a_terminal() {
    let commands = commands();
    assert!(commands.len() > 15, "{commands:?}");
    for command in &commands {
        let short = {
            let mut c = paracrypt();
            c.args(command).arg("-h");
            String::from_utf8(ok(run(c))).unwrap()
        };
        let long = {
            let mut c = paracrypt();
            c.args(command).arg("--help");
            String::from_utf8(ok(run(c))).unwrap()
        };
        for (what, text) in [("-h", &short), ("--help", &long)] {
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 80,
                    "paracrypt {} {what}: a line of {} columns: {line}",
                    command.join(" "),
                    line.chars().count()
                );
            }
        }
        let lines = short.lines().count();
        assert!(
            lines <= 42,
            "paracrypt {} -h is {lines} lines:\n{short}",
            command.join(" ")
        );
    }
}

/// The options are grouped by what users do: the provider is an expert's, `--recursive` is a
/// tree's in every command, and each command says what it does with a tree.
#[test]
fn options_are_grouped_and_each_command_says_its_own() {
    let help = |args: &[&str]| {
        let mut c = paracrypt();
        c.args(args);
        String::from_utf8(ok(run(c))).unwrap()
    };
    let heading_of = |text: &str, flag: &str| -> String {
        let at = text
            .find(flag)
            .unwrap_or_else(|| panic!("{flag} in {text}"));
        text[..at]
            .lines()
            .rev()
            .find(|line| line.ends_with(':') && !line.starts_with(' '))
            .unwrap_or("")
            .to_owned()
    };
    let encrypt = help(&["encrypt", "--help"]);
    assert_eq!(heading_of(&encrypt, "--provider <NAME>"), "Expert:");
    assert!(encrypt.find("--provider <NAME>") > encrypt.find("\n      --recursive"));
    assert!(!help(&["encrypt", "-h"]).contains("--provider"));
    for command in ["encrypt", "decrypt", "rekey", "sign", "verify", "info"] {
        let text = help(&[command, "--help"]);
        assert_eq!(
            heading_of(&text, "\n      --recursive"),
            "Trees:",
            "{command}"
        );
    }
    let sign = help(&["sign", "-h"]);
    assert_eq!(heading_of(&sign, "<FILE>  "), "Arguments:");
    let manifest_at_top = "encrypted manifest at OUTPUT's top";
    assert!(encrypt.contains(manifest_at_top));
    for command in ["sign", "verify", "rekey", "info"] {
        assert!(
            !help(&[command, "--help"]).contains(manifest_at_top),
            "{command} copies encrypt's --recursive"
        );
    }
    // -h ends with examples.
    for command in ["encrypt", "decrypt", "sign", "verify", "rekey", "raw"] {
        let text = help(&[command, "-h"]);
        assert!(
            text.contains("\nExamples:\n  paracrypt "),
            "{command}: {text}"
        );
    }
}

/// clap's refusals are one line, `paracrypt: error: ...`, with exit status 2; `--help` and
/// `--version` print and exit 0.
#[test]
fn parse_errors_are_one_line_with_status_2() {
    for (args, needle) in [
        (
            &["encrypt", "--chunk-size", "1.5MB"][..],
            "invalid value '1.5MB'",
        ),
        (
            &["decrypt", "--forc"],
            "a similar argument exists: '--force'",
        ),
        (&["nonsense"], "unrecognized subcommand 'nonsense'"),
        (&["sign", "x"], "--key-file <KEY>"),
        (&["encrypt", "--threads", "many"], "invalid value 'many'"),
    ] {
        let mut c = paracrypt();
        c.args(args);
        let stderr = fails(run(c), 2, needle);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("paracrypt: error: "), "{stderr}");
        assert!(stderr.trim_end().ends_with(" -h)"), "{stderr}");
    }
    for args in [&["--version"][..], &["encrypt", "--help"], &["-h"]] {
        let mut c = paracrypt();
        c.args(args);
        let out = run(c);
        assert!(out.status.success(), "{args:?}");
        assert!(!out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
}

/// Sizes as users type them: `1MB` is 1,000,000 bytes (a multiple of 16: a chunk size), `1KB`
/// is not a multiple of 16, `1.5MB` is no size and the refusal names the accepted forms.
#[test]
fn sizes_as_users_type_them() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let plain = write(d, "plain", &data(2_500_000, 4));
    let mut c = paracrypt();
    c.args(["encrypt", "-k"]).arg(&key);
    c.args(["--chunk-size", "1MB"])
        .arg(&plain)
        .arg("-o")
        .arg(d.join("sealed"));
    ok(run(c));
    let mut c = paracrypt();
    c.args(["info", "--json"]).arg(d.join("sealed"));
    let info = String::from_utf8(ok(run(c))).unwrap();
    assert!(info.contains("1000000"), "{info}");
    let mut c = paracrypt();
    c.args(["encrypt", "-k"]).arg(&key);
    c.args(["--chunk-size", "1KB"])
        .arg(&plain)
        .arg("-o")
        .arg(d.join("no"));
    fails(run(c), 2, "must be a multiple of 16 bytes");
    let mut c = paracrypt();
    c.args(["encrypt", "-k"]).arg(&key);
    c.args(["--chunk-size", "1.5MB"])
        .arg(&plain)
        .arg("-o")
        .arg(d.join("no"));
    fails(run(c), 2, "KiB/MiB/GiB/TiB");
    assert!(!d.join("no").exists());
}

/// `decrypt --range OFFSET:` is the plaintext from OFFSET to its end (`tail -c +OFFSET+1`), of
/// a container and of an age file, sizes with units on both sides; a range past the end is
/// refused as before.
#[test]
fn open_ended_ranges_read_to_the_end() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let (identity, recipient) = x25519(d, "me");
    let plain = data(3 << 20, 7);
    let input = write(d, "plain", &plain);
    let sealed = d.join("sealed.pcr");
    let mut c = paracrypt();
    c.args(["encrypt", "-k"])
        .arg(&key)
        .arg(&input)
        .arg("-o")
        .arg(&sealed);
    ok(run(c));
    let aged = d.join("sealed.age");
    let mut c = paracrypt();
    c.args(["encrypt", "--format", "age", "-r", &recipient]);
    c.arg(&input).arg("-o").arg(&aged);
    ok(run(c));
    let decrypt = |secret: &[&str], file: &Path, range: &str| {
        let mut c = paracrypt();
        c.arg("decrypt")
            .args(secret)
            .args(["--range", range])
            .arg(file);
        run(c)
    };
    let key_args = ["-k", key.to_str().unwrap()];
    let id_args = ["-i", identity.to_str().unwrap()];
    for (secret, file) in [(&key_args, &sealed), (&id_args, &aged)] {
        assert!(ok(decrypt(secret, file, "1MiB:")) == plain[1 << 20..]);
        assert!(ok(decrypt(secret, file, "0:")) == plain);
        assert!(ok(decrypt(secret, file, "1MB:4KB")) == plain[1_000_000..1_004_000]);
        assert!(ok(decrypt(secret, file, "3MiB:")).is_empty());
        fails(decrypt(secret, file, "4MiB:"), 1, "beyond the end");
    }
    // verify --range OFFSET: checks the chunks from OFFSET to the end.
    let (signer, public) = (d.join("s.pem"), d.join("s.pub"));
    let mut c = paracrypt();
    c.args(["keygen", "--kind", "ed25519", "-o"]).arg(&signer);
    c.arg("--public-out").arg(&public);
    ok(run(c));
    let mut c = paracrypt();
    c.args(["sign", "-k"]).arg(&signer).arg(&input);
    ok(run(c));
    for range in ["1MiB:", "1MB:4KB", "0:"] {
        let mut c = paracrypt();
        c.args(["verify", "--public"])
            .arg(&public)
            .args(["--range", range]);
        c.arg(&input);
        let out = String::from_utf8(ok(run(c))).unwrap();
        assert!(out.contains("OK"), "{range}: {out}");
    }
    // A byte altered near the end: the open range reaches it, a range before it does not.
    let mut altered = plain.clone();
    *altered.last_mut().unwrap() ^= 1;
    std::fs::write(&input, &altered).unwrap();
    let verify = |range: &str| {
        let mut c = paracrypt();
        c.args(["verify", "--public"])
            .arg(&public)
            .args(["--range", range]);
        c.arg(&input);
        run(c)
    };
    ok(verify("0:4KB"));
    fails(verify("1MiB:"), 5, "");
}

/// The short flags renamed in this release: `-p FILE` is still `--password-file` (it is to
/// become age's `--passphrase`) and `verify -p PUB` still `--public`, each with one warning
/// line naming the new spelling; the new spellings warn nothing.
#[test]
fn deprecated_short_flags_still_work_and_warn() {
    let dir = scratch();
    let d = dir.path();
    let pw = write(d, "pw", b"correct horse\n");
    let plain = write(d, "plain", &data(100_000, 2));
    let mut c = paracrypt();
    c.args(["encrypt", "-p"])
        .arg(&pw)
        .arg(&plain)
        .arg("-o")
        .arg(d.join("sealed"));
    let out = run(c);
    let (status, stderr) = status_and_stderr(&out);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        stderr,
        "paracrypt: warning: -p FILE is deprecated: write --password-file FILE (-p is to mean \
         --passphrase, as in age)\n"
    );
    let mut c = paracrypt();
    c.args(["decrypt", "-qp"]).arg(&pw).arg(d.join("sealed"));
    let out = run(c);
    assert!(out.stdout == std::fs::read(&plain).unwrap());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    let mut c = paracrypt();
    c.args(["decrypt", "--password-file"])
        .arg(&pw)
        .arg(d.join("sealed"));
    let out = run(c);
    assert!(out.status.success() && out.stderr.is_empty());

    // verify -p PUB: the signer's public key, with a warning.
    let (signer, public) = (d.join("me.pem"), d.join("me.pub"));
    let mut c = paracrypt();
    c.args(["keygen", "--kind", "ed25519", "-o"]).arg(&signer);
    c.arg("--public-out").arg(&public);
    ok(run(c));
    let mut c = paracrypt();
    c.args(["sign", "-k"]).arg(&signer).arg(&plain);
    ok(run(c));
    let mut c = paracrypt();
    c.args(["verify", "-p"]).arg(&public).arg(&plain);
    let out = run(c);
    let (status, stderr) = status_and_stderr(&out);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("write --public PUB"), "{stderr}");

    // verify --recursive -p PASSWORD_FILE: the warning, then the way to give a password.
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    write(&tree, "a", b"a");
    let mut c = paracrypt();
    c.args(["encrypt", "--recursive", "--password-file"])
        .arg(&pw);
    c.arg(&tree).arg("-o").arg(d.join("tree.enc"));
    ok(run(c));
    let mut c = paracrypt();
    c.args(["verify", "--recursive", "-p"])
        .arg(&pw)
        .arg(d.join("tree.enc"));
    let stderr = fails(
        run(c),
        2,
        "the tree's password file is --password-file FILE",
    );
    assert!(stderr.contains("not a key"), "{stderr}");
}
