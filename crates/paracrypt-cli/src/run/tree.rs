//! `--recursive`: a directory tree through the core's tree driver (`paracrypt_core::tree`),
//! which walks it, runs every file on one schedule in this command's pool and writes the
//! manifest. This module keeps what is the command line's own: the flags, the interrupt
//! handler's view of temporary files, the lines on stderr and the exit status.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use paracrypt_core::Runner;
use paracrypt_core::provider::Provider;
use paracrypt_core::tree::{self, Guard, Options, Summary};

use crate::exit::{self, usage};
use crate::interrupt::pending;
use crate::io::remote;
use crate::progress;
use crate::spec::{JobSpec, Operation};

/// What a tree run takes besides the spec.
#[derive(Clone, Copy, Debug, Default)]
pub struct TreeArgs {
    /// `--hide-names`.
    pub hide_names: bool,
}

/// The interrupt handler's view of a tree's temporary files: a named one is removed on an
/// interrupt, and a file replacing another (two steps) holds the handler off.
struct Interrupts;

impl Guard for Interrupts {
    fn add(&self, path: &Path) {
        pending().add_file(path);
    }

    fn forget(&self, path: &Path) {
        pending().forget_file(path);
    }

    fn commit(&self, commit: &mut dyn FnMut()) {
        let _held = pending();
        commit();
    }
}

/// Runs `spec` over trees: INPUT and OUTPUT are directories.
pub fn run(spec: JobSpec, provider: Provider, args: TreeArgs) -> Result<ExitCode> {
    if spec.input == Path::new("-") {
        return usage("--recursive needs INPUT, a directory");
    }
    if spec.output == Path::new("-") {
        return usage("--recursive needs -o OUTPUT, a directory");
    }
    if remote::is_url(&spec.input) || remote::is_url(&spec.output) {
        return usage("--recursive reads and writes local directories (not object storage)");
    }
    let options = Options {
        force: spec.policy.force,
        hide_names: args.hide_names,
        named_temps: std::env::var_os(crate::io::NO_TMPFILE_ENV).is_some(),
        sync: spec.policy.sync,
        guard: Arc::new(Interrupts),
    };
    let encrypting = matches!(spec.operation, Operation::Encrypt { .. });
    // The paths' refusals come before any prompt for a password.
    tree::check(&spec.input, &spec.output, &options).map_err(hint)?;
    let request = spec.operation.request(true)?;
    super::warn_all(&spec, &request);
    let pool = spec.threads.pool()?;
    let bar = progress::bar(spec.progress, None, spec.operation.label());
    let runner = {
        let bar = bar.clone();
        Runner::new()
            .provider(provider)
            .progress(move |n| bar.inc(n))
    };
    let summary = pool.install(|| {
        if encrypting {
            tree::encrypt(&runner, &request, &spec.input, &spec.output, &options)
        } else {
            tree::decrypt(&runner, &request, &spec.input, &spec.output, &options)
        }
    });
    bar.finish_and_clear();
    let summary = summary.map_err(hint)?;
    Ok(report(&summary, encrypting, spec.quiet))
}

/// A core refusal with the command line's flags where they help.
fn hint(error: paracrypt_core::Error) -> anyhow::Error {
    match error {
        paracrypt_core::Error::TreeOutputExists(_) => exit::Hinted {
            error,
            hint: "use --force to write into it, replacing files of the same names".into(),
        }
        .into(),
        error => error.into(),
    }
}

/// Prints every failure of `summary` on a line of its own, and what the tree is now; returns
/// the exit status: 0 for a whole tree, [`exit::PARTIAL`] when some files were done, else the
/// status of the first failure.
fn report(summary: &Summary, encrypting: bool, quiet: bool) -> ExitCode {
    if summary.is_complete() {
        if let Some(signer) = summary.signer.as_ref().filter(|_| !quiet) {
            let note = if signer.required {
                format!(
                    "good signature: the tree's manifest is signed by {}",
                    signer.key.fingerprint()
                )
            } else {
                format!(
                    "the tree's manifest is signed by {} (not checked against a key you trust: \
                     give it with --verify-with PUBKEY)",
                    signer.key.fingerprint()
                )
            };
            eprintln!("paracrypt: {note}");
        }
        return ExitCode::SUCCESS;
    }
    pending().clear_bar();
    for failure in &summary.failures {
        eprintln!(
            "paracrypt: error: {}",
            failure.to_string().replace('\n', " ")
        );
    }
    if summary.not_started > 0 {
        let s = if summary.not_started == 1 { "" } else { "s" };
        eprintln!(
            "paracrypt: error: {} file{s} not started after the failure above",
            summary.not_started
        );
    }
    if !encrypting && !summary.manifest_complete {
        eprintln!(
            "paracrypt: error: the encrypted tree is incomplete: the run that wrote it did not \
             finish every file"
        );
    }
    if summary.did_anything() {
        let s = if summary.files == 1 { "" } else { "s" };
        eprintln!(
            "paracrypt: {} file{s} done and complete; the tree is not",
            summary.files
        );
        return ExitCode::from(exit::PARTIAL);
    }
    let code = summary
        .failures
        .first()
        .map_or(1, |first| exit::code_of(first.kind()));
    ExitCode::from(code)
}
