//! Library-level tests of paracrypt: one test binary, a module per area.

mod container;
mod pubkey;
mod raw;
mod workload;
