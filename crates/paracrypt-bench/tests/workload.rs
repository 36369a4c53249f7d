//! The benchmark workloads: every one prepares, runs in memory and file to file without an
//! error, and a file run writes as many bytes as it reports; decryption rows give back the
//! plaintext the encryption rows start from, and the rows to recipients write the format and
//! the recipient they name. Timing is never asserted.

use std::io::Write;

use paracrypt_bench::symmetric::{AgeRecipient, Symmetric};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::raw::Direction;

fn chunk() -> ChunkSize {
    ChunkSize::new(16 * 1024).unwrap()
}

#[test]
fn every_symmetric_workload_runs_in_memory_and_file_to_file() {
    for workload in Symmetric::all() {
        assert_eq!(Symmetric::from_name(&workload.name()), Some(workload));
        let mut prepared = workload.prepare(100_000, chunk()).unwrap();
        prepared.run_in_memory().unwrap();
        prepared.run_in_memory().unwrap();
        let mut input = tempfile::tempfile().unwrap();
        input.write_all(prepared.input()).unwrap();
        let output = tempfile::tempfile().unwrap();
        let written = prepared.run_file(&input, &output).unwrap();
        assert_eq!(
            output.metadata().unwrap().len(),
            written,
            "{}",
            workload.name()
        );
    }
    assert_eq!(
        Symmetric::from_name("raw/aes-256-ctr"),
        Symmetric::from_name("raw/aes-256-ctr/encrypt")
    );
    assert!(Symmetric::from_name("raw/nope").is_none());
}

#[test]
fn decryption_rows_give_back_the_plaintext() {
    let mut checked = 0;
    for workload in Symmetric::all() {
        if matches!(workload, Symmetric::Raw { .. }) || workload.direction() != Direction::Decrypt {
            continue;
        }
        let name = workload.name();
        let encrypt = Symmetric::from_name(name.strip_suffix("/decrypt").unwrap()).unwrap();
        let plaintext = encrypt.prepare(100_000, chunk()).unwrap();
        let mut open = workload.prepare(100_000, chunk()).unwrap();
        open.run_in_memory().unwrap();
        assert!(open.output() == plaintext.input(), "{name}");
        checked += 1;
    }
    // Every container suite, the container to X25519, and age to both kinds of recipient.
    assert!(checked >= 3 + AgeRecipient::ALL.len(), "{checked}");
}

#[test]
fn rows_to_recipients_write_their_format_for_their_recipient() {
    for (name, magic, stanza) in [
        ("age/x25519", &b"age-encryption.org/v1\n"[..], "-> X25519 "),
        (
            "age/mlkem768x25519",
            b"age-encryption.org/v1\n",
            "-> mlkem768x25519 ",
        ),
        ("container/x25519/aes-256-gcm", b"PARACRYPT", "-> X25519 "),
    ] {
        let mut prepared = Symmetric::from_name(name)
            .unwrap()
            .prepare(100_000, chunk())
            .unwrap();
        prepared.run_in_memory().unwrap();
        let out = prepared.output();
        assert!(out.starts_with(magic), "{name}");
        let head = String::from_utf8_lossy(&out[..out.len().min(4096)]);
        assert!(head.contains(stanza), "{name}: {head:.200}");
        assert!(out.len() > 100_000, "{name}");
    }
}
