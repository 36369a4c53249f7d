//! `paracrypt info`: what a container's header says, without a key.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use paracrypt_core::container::{HEADER_LEN, Kdf, read_header};

use crate::io::Input;

/// Arguments of `paracrypt info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A paracrypt file (`-` for stdin).
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

/// Runs `paracrypt info`.
pub fn run(args: InfoArgs) -> Result<ExitCode> {
    let mut input = Input::open(&args.input)?;
    let len = input.len();
    let info = read_header(&mut input.reader())?;
    println!("file:        {}", input.path().display());
    println!("format:      paracrypt version {}", info.version);
    let legacy = if info.suite.is_legacy() {
        " (legacy)"
    } else {
        ""
    };
    println!("suite:       {}{legacy}", info.suite);
    println!("chunk size:  {} bytes", info.chunk_size);
    match info.kdf {
        Kdf::Key => println!("secret:      key file"),
        Kdf::Argon2id(p) => println!(
            "secret:      password (Argon2id, m={} KiB, t={}, p={})",
            p.m_cost, p.t_cost, p.p_cost
        ),
    }
    println!("salt:        {}", hex::encode(info.salt));
    if let Some(len) = len {
        let stride = info.suite.sealed_chunk_len(info.chunk_size.get()) as u64;
        let payload = len.saturating_sub(HEADER_LEN as u64);
        let chunks = payload.div_ceil(stride).max(1);
        let last = payload - (chunks - 1) * stride;
        let tag = info.suite.tag_len() as u64;
        let full = (chunks - 1) * info.chunk_size.get() as u64;
        let plaintext = match info.suite.cbc_block() {
            // The padding of the last CBC chunk is only known once it is decrypted.
            Some(block) => format!(
                "{} to {} bytes",
                full + last.saturating_sub(tag + block as u64),
                full + last.saturating_sub(tag + 1)
            ),
            None => format!("{} bytes", full + last.saturating_sub(tag)),
        };
        println!("size:        {len} bytes ({chunks} chunks)");
        println!("plaintext:   {plaintext}");
    }
    Ok(ExitCode::SUCCESS)
}
