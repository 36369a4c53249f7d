//! Integration tests of paracrypt-core (`cargo test -p paracrypt-core`): one test binary, a
//! module per area.

mod agefile;
mod cctv;
mod container;
mod job;
mod pubkey;
mod raw;
mod sign;
mod tree;
mod tree_rekey;
