//! One module per subcommand.

pub mod raw;

/// Prints a warning line on stderr.
pub fn warn(message: impl std::fmt::Display) {
    eprintln!("paracrypt: warning: {message}");
}
