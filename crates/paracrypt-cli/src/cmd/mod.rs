//! One module per subcommand.

pub mod bench;
pub mod container;
pub mod distributed;
pub mod ecdsa;
pub mod generate;
pub mod info;
pub mod keygen;
pub mod raw;
pub mod rsa;
pub mod secret;
pub mod sign_common;

/// Prints a warning line on stderr.
pub fn warn(message: impl std::fmt::Display) {
    eprintln!("paracrypt: warning: {message}");
}
