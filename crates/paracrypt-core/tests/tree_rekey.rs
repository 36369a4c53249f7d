//! Rekeying whole trees (`paracrypt_core::tree::rekey`): a tree to recipients gets new headers
//! over the same payloads, at any thread count; a password tree keeps its files byte for byte
//! and only its manifest changes; a signed tree needs its own signing key; what cannot be
//! rekeyed is refused before anything is written; the old tree is never changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use age::secrecy::ExposeSecret;
use paracrypt_core::container::Argon2Params;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::request::{ChunkSize, Format, Key, Request, Sealing, Secret};
use paracrypt_core::sign::SigningKey;
use paracrypt_core::tree::{self, Options, RekeyTo};
use paracrypt_core::{Error, Runner};

use super::raw::{data, with_threads};

/// A small tree: files batched together, one of 3 MiB (copied in several steps), an empty
/// one, a link.
fn sample(dir: &Path) -> PathBuf {
    let root = dir.join("plain");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    for i in 0..20u32 {
        let sub = ["a", "a/b"][i as usize % 2];
        std::fs::write(
            root.join(sub).join(format!("f{i}")),
            data(i as usize * 301, i),
        )
        .unwrap();
    }
    std::fs::write(root.join("large"), data(3 << 20, 99)).unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::os::unix::fs::symlink("large", root.join("a/link")).unwrap();
    root
}

fn to(who: &age::x25519::Identity) -> Secret {
    let mut recipients = Recipients::new();
    recipients.add(&who.to_public().to_string(), "r").unwrap();
    Secret::Recipients(Arc::new(recipients))
}

fn with(who: &age::x25519::Identity) -> Secret {
    Secret::Identities(identities(who))
}

fn identities(who: &age::x25519::Identity) -> Arc<Identities> {
    let mut identities = Identities::new();
    identities
        .add_file("k", who.to_string().expose_secret().as_bytes())
        .unwrap();
    Arc::new(identities)
}

fn password(text: &str) -> Secret {
    Secret::password_with_params(
        text,
        Argon2Params {
            m_cost: 64,
            t_cost: 1,
            p_cost: 1,
        },
    )
}

fn encrypt(secret: Secret, sealing: Sealing, plain: &Path, out: &Path) {
    let seal = Request::encrypt(secret, sealing).unwrap();
    let done = tree::encrypt(&Runner::new(), &seal, plain, out, &Options::default()).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
}

fn rekey(open: Secret, to: RekeyTo, input: &Path, output: &Path) -> Result<tree::Summary, Error> {
    let open = Request::decrypt(open, None).unwrap();
    tree::rekey(
        &Runner::new(),
        &open,
        &to,
        input,
        output,
        &Options::default(),
    )
}

fn to_secret(secret: Secret) -> RekeyTo {
    RekeyTo { secret, sign: None }
}

/// Decrypts `sealed` with `secret` and checks every file against `plain`.
fn opens_to(secret: Secret, sealed: &Path, plain: &Path, back: &Path) {
    let open = Request::decrypt(secret, None).unwrap();
    let done = tree::decrypt(&Runner::new(), &open, sealed, back, &Options::default()).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!(done.files, 22);
    for name in ["a/f0", "a/b/f19", "large", "empty"] {
        assert_eq!(
            std::fs::read(back.join(name)).unwrap(),
            std::fs::read(plain.join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(
        std::fs::read_link(back.join("a/link")).unwrap(),
        Path::new("large")
    );
}

/// Every stored file of a tree, by its path in the tree: (its header, the bytes after it).
fn stored(secret: Secret, sealed: &Path) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let open = Request::decrypt(secret, None).unwrap();
    let manifest = tree::read_manifest(&Runner::new(), &open, sealed).unwrap();
    manifest
        .files()
        .map(|(entry, file)| {
            let name = String::from_utf8(manifest.stored(&entry.path)).unwrap();
            let bytes = std::fs::read(sealed.join(name)).unwrap();
            let (head, rest) = bytes.split_at(file.header_len as usize);
            (entry.path.clone(), head.to_vec(), rest.to_vec())
        })
        .collect()
}

#[test]
fn a_recipient_tree_gets_new_headers_over_the_same_payloads_at_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let (alice, bob) = (
        age::x25519::Identity::generate(),
        age::x25519::Identity::generate(),
    );
    let container = Sealing {
        chunk_size: Some(ChunkSize::new(64 << 10).unwrap()),
        ..Sealing::default()
    };
    let age = Sealing {
        format: Format::Age,
        ..Sealing::default()
    };
    for (name, sealing, hide_names) in [("pcr", container, false), ("age", age, true)] {
        let old = dir.path().join(format!("old-{name}"));
        let seal = Request::encrypt(to(&alice), sealing).unwrap();
        let options = Options {
            hide_names,
            ..Options::default()
        };
        tree::encrypt(&Runner::new(), &seal, &plain, &old, &options).unwrap();
        let before = stored(with(&alice), &old);
        let old_manifest = std::fs::read(old.join(tree::MANIFEST)).unwrap();
        for threads in [1, 3] {
            let new = dir.path().join(format!("new-{name}-{threads}"));
            let done = with_threads(threads, || {
                rekey(with(&alice), to_secret(to(&bob)), &old, &new)
            })
            .unwrap();
            assert!(done.is_complete(), "{:?}", done.failures);
            assert_eq!(done.files, 22);
            // Bob opens it, Alice no longer does; every payload is the old one, byte for byte,
            // under a new header.
            opens_to(
                with(&bob),
                &new,
                &plain,
                &dir.path().join(format!("back-{name}-{threads}")),
            );
            let refused = rekey(
                with(&alice),
                to_secret(to(&alice)),
                &new,
                &dir.path().join("x"),
            );
            assert!(refused.is_err());
            assert!(!dir.path().join("x").exists());
            let after = stored(with(&bob), &new);
            assert_eq!(after.len(), before.len());
            for ((path, old_head, old_rest), (path2, new_head, new_rest)) in
                before.iter().zip(&after)
            {
                assert_eq!(path, path2);
                assert_ne!(old_head, new_head, "{path:?}");
                assert_eq!(old_rest, new_rest, "{path:?}");
            }
            // The same tree, one generation on.
            let old_m = tree::read_manifest(
                &Runner::new(),
                &Request::decrypt(with(&alice), None).unwrap(),
                &old,
            )
            .unwrap();
            let new_m = tree::read_manifest(
                &Runner::new(),
                &Request::decrypt(with(&bob), None).unwrap(),
                &new,
            )
            .unwrap();
            assert_eq!(new_m.tree_id, old_m.tree_id);
            assert_eq!((new_m.generation, new_m.parent), (2, old_m.digest));
            assert_eq!(new_m.hides_names(), hide_names);
            assert!(new_m.complete);
        }
        // The old tree is as it was, and still Alice's.
        assert_eq!(
            std::fs::read(old.join(tree::MANIFEST)).unwrap(),
            old_manifest
        );
        assert_eq!(stored(with(&alice), &old), before);
    }
}

#[test]
fn a_password_tree_keeps_its_files_and_only_its_manifest_is_sealed_again() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let old = dir.path().join("old");
    encrypt(password("old words"), Sealing::default(), &plain, &old);
    let new = dir.path().join("new");
    let done = rekey(
        password("old words"),
        to_secret(password("new words")),
        &old,
        &new,
    )
    .unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    // Every stored file is the old one, byte for byte; the manifest is not.
    let listed = stored(password("new words"), &new);
    assert_eq!(listed.len(), 22);
    for (path, _, _) in &listed {
        let open = Request::decrypt(password("new words"), None).unwrap();
        let manifest = tree::read_manifest(&Runner::new(), &open, &new).unwrap();
        let name = String::from_utf8(manifest.stored(path)).unwrap();
        assert_eq!(
            std::fs::read(old.join(&name)).unwrap(),
            std::fs::read(new.join(&name)).unwrap(),
            "{name}"
        );
    }
    assert_ne!(
        std::fs::read(old.join(tree::MANIFEST)).unwrap(),
        std::fs::read(new.join(tree::MANIFEST)).unwrap()
    );
    opens_to(
        password("new words"),
        &new,
        &plain,
        &dir.path().join("back"),
    );
    let wrong = Request::decrypt(password("old words"), None).unwrap();
    assert!(tree::read_manifest(&Runner::new(), &wrong, &new).is_err());
    // The old tree still opens with the old password.
    opens_to(
        password("old words"),
        &old,
        &plain,
        &dir.path().join("back-old"),
    );
}

#[test]
fn a_signed_tree_is_rekeyed_with_its_signing_key_only() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let (alice, bob) = (
        age::x25519::Identity::generate(),
        age::x25519::Identity::generate(),
    );
    let signer = SigningKey::generate_ed25519();
    let old = dir.path().join("old");
    let sealing = Sealing {
        sign: Some(signer.clone()),
        ..Sealing::default()
    };
    encrypt(to(&alice), sealing, &plain, &old);
    let new = dir.path().join("new");
    let refusals = [
        (None, "is signed by"),
        (
            Some(SigningKey::generate_ed25519()),
            "its new manifest is signed by that key",
        ),
    ];
    for (sign, words) in refusals {
        let to = RekeyTo {
            secret: to(&bob),
            sign,
        };
        let err = rekey(with(&alice), to, &old, &new).unwrap_err();
        assert!(err.to_string().contains(words), "{err}");
        assert!(!new.exists());
    }
    let to_bob = RekeyTo {
        secret: to(&bob),
        sign: Some(signer.clone()),
    };
    let done = rekey(with(&alice), to_bob, &old, &new).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    let open = Request::decrypt(with(&bob), Some(signer.verifying_key())).unwrap();
    let back = dir.path().join("back");
    let done = tree::decrypt(&Runner::new(), &open, &new, &back, &Options::default()).unwrap();
    assert!(
        done.is_complete() && done.files == 22,
        "{:?}",
        done.failures
    );
    assert!(done.signer.unwrap().required);
    // A signing key for an unsigned tree would sign a manifest over unsigned files.
    let unsigned = dir.path().join("unsigned");
    encrypt(to(&alice), Sealing::default(), &plain, &unsigned);
    let to_bob = RekeyTo {
        secret: to(&bob),
        sign: Some(signer),
    };
    let err = rekey(with(&alice), to_bob, &unsigned, &dir.path().join("n2")).unwrap_err();
    assert!(err.to_string().contains("not signed"), "{err}");
}

#[test]
fn what_cannot_be_rekeyed_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let alice = age::x25519::Identity::generate();
    let keyed = dir.path().join("keyed");
    let key = Key::generate();
    encrypt(Secret::Key(key.clone()), Sealing::default(), &plain, &keyed);
    let to_people = dir.path().join("people");
    encrypt(to(&alice), Sealing::default(), &plain, &to_people);
    let by_password = dir.path().join("password");
    encrypt(password("pw"), Sealing::default(), &plain, &by_password);
    let armored = dir.path().join("armored");
    let armor = Sealing {
        format: Format::Age,
        armor: true,
        ..Sealing::default()
    };
    encrypt(to(&alice), armor, &plain, &armored);
    let passphrase = Secret::Recipients(Arc::new(Recipients::passphrase(
        "pw".to_owned().into(),
        Some(2),
    )));
    let out = dir.path().join("out");
    let cases = [
        (&keyed, Secret::Key(key), to(&alice), "key file"),
        (
            &to_people,
            with(&alice),
            password("pw"),
            "rekeyed to recipients",
        ),
        (
            &to_people,
            with(&alice),
            passphrase,
            "rekeyed to recipients",
        ),
        (
            &by_password,
            password("pw"),
            to(&alice),
            "rekeyed to a new password",
        ),
        (&armored, with(&alice), to(&alice), "armored"),
    ];
    for (tree, open, new, words) in cases {
        let err = rekey(open, to_secret(new), tree, &out).unwrap_err();
        assert!(err.to_string().contains(words), "{}: {err}", tree.display());
        assert!(!out.exists(), "{}", tree.display());
    }
    // An output that holds files, without force.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("x"), b"x").unwrap();
    let err = rekey(with(&alice), to_secret(to(&alice)), &to_people, &out).unwrap_err();
    assert!(matches!(err, Error::TreeOutputExists(_)), "{err}");
}

/// A tree that is not as its manifest lists it (a file swapped for another, a file missing,
/// an old manifest put back over newer files) is refused whole, naming every file, and nothing
/// is left at the output: a rekeyed tree is the next generation of the tree, and one that left
/// those files out would no longer name them (it would only say it is incomplete).
#[test]
fn a_tree_that_differs_from_its_manifest_is_refused_whole_naming_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let (alice, bob) = (
        age::x25519::Identity::generate(),
        age::x25519::Identity::generate(),
    );
    let old = dir.path().join("old");
    encrypt(to(&alice), Sealing::default(), &plain, &old);
    let refused = |tree: &Path, says: &[&str]| {
        let new = dir.path().join("new");
        let err = rekey(with(&alice), to_secret(to(&bob)), tree, &new).unwrap_err();
        assert!(matches!(err, Error::TreeDiffers(_)), "{err}");
        assert_eq!(err.kind(), paracrypt_core::ErrorKind::Data);
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        for words in says {
            assert!(text.contains(words), "`{words}`: {text}");
        }
        assert!(!new.exists(), "{text}");
    };

    // Two files swapped; then one of them missing.
    let swapped = dir.path().join("swapped");
    copy_tree(&old, &swapped);
    std::fs::rename(swapped.join("a/f0.pcr"), swapped.join("t")).unwrap();
    std::fs::rename(swapped.join("a/f2.pcr"), swapped.join("a/f0.pcr")).unwrap();
    std::fs::rename(swapped.join("t"), swapped.join("a/f2.pcr")).unwrap();
    refused(
        &swapped,
        &[
            "a/f0: its encrypted file a/f0.pcr is not the one the manifest lists",
            "a/f2: its encrypted file a/f2.pcr is not the one the manifest lists",
        ],
    );
    std::fs::remove_file(swapped.join("a/f2.pcr")).unwrap();
    refused(&swapped, &["a/f2: its encrypted file a/f2.pcr is missing"]);

    // An old manifest put back over a newer tree: a/f0 changed and the tree updated.
    let replayed = dir.path().join("replayed");
    copy_tree(&old, &replayed);
    std::fs::write(plain.join("a/f0"), b"changed").unwrap();
    let update = Request::encrypt(to(&alice), Sealing::default()).unwrap();
    let options = Options {
        update: true,
        update_with: Some(identities(&alice)),
        ..Options::default()
    };
    let done = tree::encrypt(&Runner::new(), &update, &plain, &replayed, &options).unwrap();
    // A copy this host never wrote, whose manifest is unsigned: nothing of it is taken on
    // faith, and every file is encrypted again.
    assert!(
        done.is_complete() && done.unchanged == 0 && done.files > 1,
        "{done:?}"
    );
    std::fs::copy(old.join(tree::MANIFEST), replayed.join(tree::MANIFEST)).unwrap();
    refused(
        &replayed,
        &["a/f0: its encrypted file a/f0.pcr is not the one the manifest lists"],
    );
}

/// An entry of a tree: its path, mode, modification time and, for a file, its bytes.
type Entry = (PathBuf, u32, (i64, i64), Option<Vec<u8>>);

/// Every entry under `root` (links not followed).
fn state(root: &Path) -> Vec<Entry> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(at) = todo.pop() {
        let meta = std::fs::symlink_metadata(&at).unwrap();
        let bytes = meta.is_file().then(|| std::fs::read(&at).unwrap());
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&at).unwrap().map(|e| e.unwrap().path()));
        }
        out.push((
            at.strip_prefix(root).unwrap().to_path_buf(),
            meta.mode(),
            (meta.mtime(), meta.mtime_nsec()),
            bytes,
        ));
    }
    out.sort();
    out
}

/// The refusal of a tree that differs from its manifest comes from a first pass over every
/// file's header, before anything is written: with `force` into an output that holds files of
/// the tree's names, those are not replaced (and then removed), and nothing else is made.
#[test]
fn a_tampered_tree_rekeyed_with_force_leaves_the_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let (alice, bob) = (
        age::x25519::Identity::generate(),
        age::x25519::Identity::generate(),
    );
    let old = dir.path().join("old");
    encrypt(to(&alice), Sealing::default(), &plain, &old);
    // a/f4 swapped for a/f2; every other file (large.pcr, a/b/f1.pcr) is as listed.
    std::fs::copy(old.join("a/f2.pcr"), old.join("a/f4.pcr")).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("a/b")).unwrap();
    std::fs::write(out.join("large.pcr"), b"mine").unwrap();
    std::fs::write(out.join("a/b/f1.pcr"), b"mine too").unwrap();
    std::fs::write(out.join("keep"), b"kept").unwrap();
    let before = state(&out);
    for threads in [1, 3] {
        let err = with_threads(threads, || {
            tree::rekey(
                &Runner::new(),
                &Request::decrypt(with(&alice), None).unwrap(),
                &to_secret(to(&bob)),
                &old,
                &out,
                &Options {
                    force: true,
                    ..Options::default()
                },
            )
        })
        .unwrap_err();
        assert!(matches!(err, Error::TreeDiffers(_)), "{err}");
        assert!(
            err.to_string()
                .contains("a/f4: its encrypted file a/f4.pcr is not the one the manifest lists"),
            "{err}"
        );
        assert_eq!(state(&out), before, "{threads} threads");
    }
}

/// What the old tree holds that its manifest does not list is not carried into the new tree,
/// and is named in the summary (a directory once): not a failure.
#[test]
fn what_the_tree_holds_beyond_its_manifest_is_named_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let (alice, bob) = (
        age::x25519::Identity::generate(),
        age::x25519::Identity::generate(),
    );
    let old = dir.path().join("old");
    encrypt(to(&alice), Sealing::default(), &plain, &old);
    std::fs::copy(old.join("a/f2.pcr"), old.join("a/b/extra.pcr")).unwrap();
    std::fs::create_dir_all(old.join("more/deeper")).unwrap();
    std::fs::write(old.join("more/deeper/notes.pcr"), b"not in the manifest").unwrap();
    let new = dir.path().join("new");
    let done = rekey(with(&alice), to_secret(to(&bob)), &old, &new).unwrap();
    assert!(done.is_complete(), "{:?}", done.failures);
    assert_eq!(done.files, 22);
    assert_eq!(done.left_behind, [&b"a/b/extra.pcr"[..], b"more"]);
    assert_eq!(
        done.left_behind_lines().next().unwrap(),
        "left behind: a/b/extra.pcr (in the encrypted tree, not in its manifest: not in the \
         new tree)"
    );
    assert!(!new.join("a/b/extra.pcr").exists() && !new.join("more").exists());
    opens_to(with(&bob), &new, &plain, &dir.path().join("back"));
    // The new tree is as its manifest lists it: nothing added.
    let open = Request::decrypt(with(&bob), None).unwrap();
    let checked = tree::verify(&Runner::new(), &open, &new, &[]).unwrap();
    assert!(checked.is_intact(), "{:?}", checked.why_not_intact());
    // A tree holding nothing else leaves nothing behind.
    let again = rekey(
        with(&bob),
        to_secret(to(&alice)),
        &new,
        &dir.path().join("again"),
    )
    .unwrap();
    assert!(again.is_complete() && again.left_behind.is_empty());
}

/// A copy of the tree `from` at `to` (directories and regular files).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn a_signed_plaintext_tree_names_every_file_added_removed_renamed_or_changed() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let signer = SigningKey::generate_ed25519();
    let runner = Runner::new();
    let signed = with_threads(3, || tree::sign(&runner, &signer, &plain)).unwrap();
    assert_eq!(signed.manifest.format, tree::TreeFormat::Plain);
    // The same manifest at one thread, but for the time it was written.
    let again = with_threads(1, || tree::sign(&runner, &signer, &plain)).unwrap();
    assert_eq!(again.manifest.entries, signed.manifest.entries);
    let check = |only: &[Vec<u8>]| {
        tree::verify_signed(
            &runner,
            &signed.bytes,
            &plain,
            Some(&signer.verifying_key()),
            only,
        )
        .unwrap()
    };
    let intact = check(&[]);
    assert!(intact.why_not_intact().is_none(), "{:?}", intact.changes);
    assert_eq!(intact.files, 22);
    assert!(intact.signer.required);
    // One byte changed, one file moved, one removed, one added.
    let mut large = std::fs::read(plain.join("large")).unwrap();
    large[2 << 20] ^= 1;
    std::fs::write(plain.join("large"), &large).unwrap();
    std::fs::rename(plain.join("a/f2"), plain.join("moved")).unwrap();
    std::fs::remove_file(plain.join("a/b/f1")).unwrap();
    std::fs::write(plain.join("new"), b"new").unwrap();
    let lines: Vec<String> = check(&[]).changes.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        lines,
        [
            "removed: a/b/f1 (in the signed manifest, missing)",
            "renamed: a/f2 (the same contents are now at moved)",
            "changed: large: its contents are not those signed",
            "added: new (not in the signed manifest)",
        ]
    );
    let one = check(&[b"large".to_vec()]);
    assert_eq!(one.changes.len(), 1);
    assert_eq!(check(&[b"a/f0".to_vec()]).changes.len(), 0);
    // Another signer required, or a flipped byte of the signature file, is refused.
    let other = SigningKey::generate_ed25519();
    let err = tree::verify_signed(
        &runner,
        &signed.bytes,
        &plain,
        Some(&other.verifying_key()),
        &[],
    )
    .unwrap_err();
    assert!(matches!(err, Error::WrongSigner { .. }), "{err}");
    let mut bad = signed.bytes.clone();
    bad[40] ^= 1;
    assert!(tree::verify_signed(&runner, &bad, &plain, None, &[]).is_err());
}

/// A rekey into an output whose directory is swapped for a link mid-run writes nothing where
/// the link leads.
#[test]
fn a_rekey_writes_nothing_through_a_directory_swapped_for_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let plain = sample(dir.path());
    let old = dir.path().join("old");
    encrypt(password("old words"), Sealing::default(), &plain, &old);
    let new = dir.path().join("new");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let guard = Arc::new(super::tree::Swapping {
        dir: new.join("a/b"),
        elsewhere,
        swapped: Default::default(),
    });
    let options = Options {
        named_temps: true,
        guard: guard.clone(),
        ..Options::default()
    };
    let open = Request::decrypt(password("old words"), None).unwrap();
    let to = to_secret(password("new words"));
    let done = with_threads(2, || {
        tree::rekey(&Runner::new(), &open, &to, &old, &new, &options)
    })
    .unwrap();
    guard.nothing_through(&done.failures);
}
