//! `paracrypt`: encrypt, decrypt, sign and verify large data on every core.
//!
//! The binary owns the terminal: it parses arguments, builds the thread pool, prints warnings,
//! errors and progress, and maps failures to exit codes (see [`exit`]). The work itself is in
//! `paracrypt-core`.
#![forbid(unsafe_code)]

mod cmd;
mod exit;
mod io;
mod size;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Chunked-parallel encryption on every core.
#[derive(Debug, Parser)]
#[command(name = "paracrypt", version, about, long_about = None)]
#[command(after_help = "Exit status: 0 success, 1 failure, 2 usage error.")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Unauthenticated raw ciphers, byte-compatible with `openssl enc -K KEY -iv IV`.
    Raw(cmd::raw::RawArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Raw(args) => cmd::raw::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => exit::report(&error),
    }
}
