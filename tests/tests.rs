//! Library-level tests of paracrypt: one test binary, a module per area.

mod pubkey;
mod raw;
mod container;
