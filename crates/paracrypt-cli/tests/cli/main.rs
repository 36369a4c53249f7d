//! End-to-end tests of the `paracrypt` binary: one test binary, a module per subcommand.
// The tests' own notes may use `eprintln!` (the binary's lines may not: clippy.toml).
#![allow(clippy::disallowed_macros)]

mod bench;
mod cctv;
/// The CCTV age vectors' reader, shared with the library's tests.
#[path = "../../../paracrypt-core/tests/cctv/vectors.rs"]
mod cctv_vectors;
mod cluster;
mod cluster_faults;
mod common;
mod container;
mod distributed;
mod ecdsa;
mod hardening;
mod help;
mod hooks;
mod info;
mod kms;
mod mistakes;
mod people;
mod plugin;
mod providers;
mod rage;
mod raw;
mod refusals;
mod rekey;
mod rsa;
mod s3;
mod sigfiles;
mod sign;
mod signed;
mod tag;
mod testkit;
mod tree;
mod tree_check;
mod tree_distributed;
mod tree_rekey;
mod tree_report;
mod tree_sign;
mod tree_trust;
mod tree_update;
mod typage;
mod verify_file;
