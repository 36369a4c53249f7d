//! `paracrypt keygen`: a new random 256-bit key file, mode 0600, never overwriting.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use paracrypt_core::container::Key;

use crate::exit::usage;

/// Arguments of `paracrypt keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the key (created with mode 0600; an existing file is never replaced).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
}

/// Runs `paracrypt keygen`.
pub fn run(args: KeygenArgs) -> Result<ExitCode> {
    if args.output.exists() {
        return usage(format!(
            "{} already exists; keygen never overwrites a key",
            args.output.display()
        ));
    }
    let key = Key::generate();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let written = file
        .write_all(key.to_file_text().as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&args.output);
        return Err(e).with_context(|| format!("writing {}", args.output.display()));
    }
    Ok(ExitCode::SUCCESS)
}
