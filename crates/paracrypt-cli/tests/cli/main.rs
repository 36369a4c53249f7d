//! End-to-end tests of the `paracrypt` binary: one test binary, a module per subcommand.

mod bench;
mod cluster;
mod common;
mod container;
mod distributed;
mod ecdsa;
mod hardening;
mod people;
mod providers;
mod raw;
mod rsa;
mod sigfiles;
mod testkit;
