//! One module per subcommand.

pub mod bench;
pub mod container;
pub mod ecdsa;
pub mod generate;
pub mod info;
pub mod keygen;
pub mod raw;
pub mod rekey;
pub mod rsa;
pub mod sign;
pub mod signatures;
