//! `paracrypt generate`: the man pages and shell completions, from the clap definitions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Subcommand};
use clap_complete::Shell;

/// Arguments of `paracrypt generate`.
#[derive(Debug, Args)]
#[command(after_help = "\
Install (as root, or into your own directories):
  paracrypt generate man -o /usr/local/share/man/man1
  paracrypt generate completions bash > /usr/share/bash-completion/completions/paracrypt
  paracrypt generate completions zsh > /usr/local/share/zsh/site-functions/_paracrypt
  paracrypt generate completions fish > ~/.config/fish/completions/paracrypt.fish")]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Man pages: paracrypt.1 and one per subcommand (paracrypt-encrypt.1, …).
    Man {
        /// Directory to write them into (created if missing).
        #[arg(short, long, value_name = "DIR")]
        output: PathBuf,
    },
    /// A completion script for SHELL, on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: Shell,
    },
}

/// Runs `paracrypt generate`.
pub fn run(args: GenerateArgs) -> Result<ExitCode> {
    let mut command = crate::Cli::command();
    match args.what {
        What::Man { output } => {
            std::fs::create_dir_all(&output)
                .with_context(|| format!("cannot create {}", output.display()))?;
            clap_mangen::generate_to(command, &output)
                .with_context(|| format!("writing man pages into {}", output.display()))?;
        }
        What::Completions { shell } => {
            // clap_complete panics when its writer fails: generate in memory, then write.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "paracrypt", &mut script);
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(&script)
                .and_then(|()| stdout.flush())
                .context("writing to stdout")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
