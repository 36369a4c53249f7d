//! `--recursive`: a directory tree through the core's tree driver (`paracrypt_core::tree`),
//! which walks it, runs every file on one schedule in this command's pool and writes the
//! manifest. This module keeps what is the command line's own: the flags, the interrupt
//! handler's view of temporary files, the lines on stderr and the exit status.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use paracrypt_core::Runner;
use paracrypt_core::provider::Provider;
use paracrypt_core::tree::{self, Action, EntryKind, FileEvent, Guard, Options, Summary};

use crate::exit::{self, say, usage};
use crate::interrupt::pending;
use crate::io::remote;
use crate::progress::{Progress, Unit};
use crate::spec::{JobSpec, Operation};

/// What a tree run takes besides the spec.
#[derive(Clone, Debug, Default)]
pub struct TreeArgs {
    /// `--hide-names`.
    pub hide_names: bool,
    /// `--update`.
    pub update: bool,
    /// `--checksum`.
    pub checksum: bool,
    /// `-i` with `--update`: the files of the identities that open the manifest of a tree
    /// encrypted to recipients (read by [`with_update_identities`], where the secret is read).
    pub update_identities: Vec<std::path::PathBuf>,
    /// `--min-generation` (a decryption).
    pub min_generation: Option<u64>,
    /// `-v`, `--json`, `--dry-run`.
    pub report: Report,
}

/// How a tree run reports what it does (`docs/guide/trees.md`, *What a run says*): with `-v`,
/// one line per file on stderr (`encrypted a/b.txt`; a dry run's `would encrypt a/b.txt`);
/// with `--json`, one JSON object per file on stdout (`{"path":"a/b.txt","result":"encrypted"}`)
/// then one summary object; with `--dry-run`, the core's dry run ([`Options::dry_run`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Report {
    /// `-v/--verbose`.
    pub verbose: bool,
    /// `--json`.
    pub json: bool,
    /// `--dry-run`.
    pub dry_run: bool,
}

impl Report {
    /// `options` with this report's dry run and, with `-v` or `--json`, told of each file.
    pub fn options(self, mut options: Options) -> Options {
        options.dry_run = self.dry_run;
        if self.verbose || self.json {
            options.on_file = Some(Arc::new(move |event: &FileEvent<'_>| self.file(event)));
        }
        options
    }

    /// One file's line(s). Events come from the one thread that finishes the run, after every
    /// file is done: the bar, if any, is cleared first.
    fn file(self, event: &FileEvent<'_>) {
        pending().clear_bar();
        let path = tree::path::shown(event.path);
        if self.verbose {
            let why = event
                .why()
                .map(|why| format!(": {why}"))
                .unwrap_or_default();
            if self.dry_run {
                say!("would {} {path}{why}", event.action.verb());
            } else {
                say!("{} {path}{why}", event.action.name());
            }
        }
        if self.json {
            let mut line = serde_json::json!({ "path": path, "result": event.action.name() });
            if let Some(why) = event.why() {
                line["error"] = why.into();
            }
            json_line(&line);
        }
    }

    /// What the run did, after its files: with `--json` the summary object on stdout; else,
    /// with `-v`, `--dry-run` or (an encryption) `update`, one line on stderr. `operation`:
    /// `encrypt`, `decrypt` or `rekey`.
    pub(crate) fn summary(self, summary: &Summary, operation: &str, update: bool, quiet: bool) {
        if self.json {
            json_line(&serde_json::json!({ "summary": {
                "operation": operation,
                "dry_run": self.dry_run,
                "files": summary.files,
                "bytes": summary.bytes,
                "unchanged": summary.unchanged,
                "removed": summary.removed,
                "failed": summary.failures.len(),
                "not_started": summary.not_started,
                "left_behind": summary.left_behind.len(),
                "complete": summary.is_complete(),
            }}));
            return;
        }
        // A run at a terminal says what it did (a first `encrypt --recursive` said nothing);
        // in a script or a log only when asked (-v, --dry-run) and for --update, as before.
        let at_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        if quiet
            || !(self.verbose || self.dry_run || at_terminal || (update && operation == "encrypt"))
        {
            return;
        }
        let s = if summary.files == 1 { "" } else { "s" };
        let done = match operation {
            "encrypt" => Action::Encrypted,
            "decrypt" => Action::Decrypted,
            _ => Action::Rekeyed,
        }
        .name();
        let what = if self.dry_run {
            format!("dry run: {} file{s} would be {done}", summary.files)
        } else {
            format!("{} file{s} {done}", summary.files)
        };
        let more = if operation == "encrypt" {
            format!(
                ", {} unchanged, {} removed",
                summary.unchanged, summary.removed
            )
        } else {
            String::new()
        };
        let nothing = if self.dry_run {
            "; nothing was written"
        } else {
            ""
        };
        say!("paracrypt: {what}{more}{nothing}");
    }
}

/// Writes `value` as one line on stdout (a reader gone is not this line's failure: the exit
/// status says how the run went).
fn json_line(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}").and_then(|()| out.flush());
}

/// The interrupt handler's view of a tree's temporary files: a named one is removed on an
/// interrupt, and a file replacing another (two steps) holds the handler off.
pub(crate) struct Interrupts;

impl Guard for Interrupts {
    fn create(
        &self,
        path: &Path,
        create: &mut dyn FnMut() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        crate::interrupt::making(|| {
            create()?;
            pending().add_file(path);
            Ok(())
        })
    }

    fn forget(&self, path: &Path) {
        pending().forget_file(path);
    }

    fn commit(&self, commit: &mut dyn FnMut()) {
        let _held = pending();
        commit();
    }
}

/// The options of a tree run of `spec`, once the command line's refusals are made (INPUT and
/// OUTPUT must be directories, or one of them a prefix): those of a local run and of one
/// across MPI ranks. What a prefix may do is decided by the store (`remote::prefix_run`, on
/// rank 0 across ranks), as for a local run.
pub(crate) fn tree_options(spec: &JobSpec, args: &TreeArgs) -> Result<Options> {
    needs_dirs(&spec.input, &spec.output)?;
    Ok(args.report.options(Options {
        force: spec.policy.force,
        hide_names: args.hide_names,
        named_temps: std::env::var_os(crate::io::NO_TMPFILE_ENV).is_some(),
        sync: spec.policy.sync,
        update: args.update,
        checksum: args.checksum,
        update_with: None,
        min_generation: args.min_generation,
        guard: Arc::new(Interrupts),
        ..Options::default()
    }))
}

/// Runs `spec` over trees: INPUT and OUTPUT are directories, or either of them a prefix in
/// object storage, or both ([`run_remote`]).
pub fn run(spec: JobSpec, provider: Provider, args: TreeArgs) -> Result<ExitCode> {
    if remote::is_url(&spec.input) || remote::is_url(&spec.output) {
        return run_remote(spec, provider, args);
    }
    let options = tree_options(&spec, &args)?;
    let encrypting = matches!(spec.operation, Operation::Encrypt { .. });
    // The paths' refusals come before any prompt for a password.
    tree::check(&spec.input, &spec.output, &options).map_err(|e| hint(e, encrypting))?;
    let options = with_update_identities(options, &args)?;
    let input = spec.input.clone();
    let output = spec.output.clone();
    execute(spec, provider, &args, |runner, request| {
        if encrypting {
            tree::encrypt(runner, request, &input, &output, &options)
        } else {
            tree::decrypt(runner, request, &input, &output, &options)
        }
    })
}

/// A tree run with object storage on one side or both: a tree (a local directory or the
/// plaintext objects of a prefix `s3://bucket/prefix/`) encrypted into a local directory or a
/// prefix, or an encrypted tree (there or local) decrypted into a local directory or a prefix. What a prefix may do is decided below the command line (`paracrypt_store::prefix_run` and the
/// core's `tree::check_in_store`), which refuses the rest before any prompt.
fn run_remote(spec: JobSpec, provider: Provider, args: TreeArgs) -> Result<ExitCode> {
    let encrypting = matches!(spec.operation, Operation::Encrypt { .. });
    let (input, output) = (spec.input.clone(), spec.output.clone());
    let options = tree_options(&spec, &args)?;
    // The refusals (and an update's listing of the prefix) come before any prompt.
    let run = remote::prefix_run(encrypting, &input, &output, &options)
        .map_err(|e| hint(e, encrypting))?
        .expect("one side is a prefix");
    let options = with_update_identities(options, &args)?;
    match run {
        remote::PrefixRun::Encrypt(run) => execute(spec, provider, &args, |runner, request| {
            run.run(runner, request, &input, &output, &options)
        }),
        remote::PrefixRun::Decrypt(run) => execute(spec, provider, &args, |runner, request| {
            run.run(runner, request, &output, &options)
        }),
    }
}

/// Runs a tree run `go` with `spec`'s request, pool and progress bar; reports its summary and
/// returns the exit status.
fn execute(
    spec: JobSpec,
    provider: Provider,
    args: &TreeArgs,
    go: impl FnOnce(&Runner, &paracrypt_core::request::Request) -> paracrypt_core::Result<Summary>
    + Send,
) -> Result<ExitCode> {
    let encrypting = matches!(spec.operation, Operation::Encrypt { .. });
    let request = spec.operation.request(true)?;
    super::warn_all(&spec, &request);
    let pool = spec.threads.pool()?;
    let bar = Progress::new(
        spec.progress,
        None,
        spec.operation.label(),
        Unit::Bytes,
        false,
    );
    let runner = {
        let bar = bar.clone();
        Runner::new()
            .provider(provider)
            .progress(move |n| bar.inc(n))
    };
    let summary = pool.install(|| go(&runner, &request));
    bar.clear();
    let summary = summary.map_err(|e| hint(e, encrypting))?;
    let operation = if encrypting { "encrypt" } else { "decrypt" };
    args.report
        .summary(&summary, operation, args.update, spec.quiet);
    let code = report(&summary, encrypting, spec.quiet);
    if code == 0 {
        bar.finish();
    }
    Ok(ExitCode::from(code))
}

/// `options` with the identities of `-i` (beside `--update`) read, where the process that
/// reads the tree's secret reads them (rank 0 of a run across ranks).
pub(crate) fn with_update_identities(mut options: Options, args: &TreeArgs) -> Result<Options> {
    options.update_with =
        crate::people::IdentityFlags::files(args.update_identities.clone()).read_given()?;
    Ok(options)
}

/// `rekey --recursive`: the encrypted tree at `input` rekeyed into the new tree `output`
/// (`tree::rekey`; either of them a prefix in object storage, `paracrypt_store::prefix_rekey`):
/// its manifest opened with `open`, the new tree sealed as `to` says; the old tree is not
/// changed. Refusals that need no credential (the paths, a key-file tree) come
/// first, in `check`, before any prompt; what INPUT holds that its manifest does not list is
/// named on stderr, a warning each (not carried, not a failure); the exit status is a tree's.
pub fn rekey(
    input: &Path,
    output: &Path,
    options: &Options,
    credentials: impl FnOnce() -> Result<(paracrypt_core::request::Request, tree::RekeyTo)>,
    threads: crate::flags::ThreadsFlag,
    shown: Report,
) -> Result<ExitCode> {
    needs_dirs(input, output)?;
    // A prefix on either side is checked (and an input prefix listed) by the store.
    let in_store = remote::prefix_rekey(input, output, options).map_err(|e| hint(e, false))?;
    if in_store.is_none() {
        tree::check_rekey(input, output, options).map_err(|e| hint(e, false))?;
    }
    let (open, to) = credentials()?;
    let pool = threads.pool()?;
    let runner = Runner::new();
    let summary = pool
        .install(|| match &in_store {
            Some(run) => run.run(&runner, &open, &to, output, options),
            None => tree::rekey(&runner, &open, &to, input, output, options),
        })
        .map_err(|e| hint(e, false))?;
    for line in summary.left_behind_lines() {
        exit::warn(line);
    }
    shown.summary(&summary, "rekey", false, false);
    Ok(ExitCode::from(report(&summary, true, false)))
}

/// The options of a tree run that writes `output` (`--force`, `--sync`), with this command's
/// interrupt handler.
pub fn write_options(force: bool, sync: bool) -> Options {
    Options {
        force,
        sync,
        named_temps: std::env::var_os(crate::io::NO_TMPFILE_ENV).is_some(),
        guard: Arc::new(Interrupts),
        ..Options::default()
    }
}

/// Refuses `-` (standard input or output) for a tree's INPUT or OUTPUT.
fn needs_dirs(input: &Path, output: &Path) -> Result<()> {
    if input == Path::new("-") {
        return usage("--recursive needs INPUT, a directory");
    }
    if output == Path::new("-") {
        return usage("--recursive needs -o OUTPUT, a directory");
    }
    Ok(())
}

/// A core refusal with the command line's flags where they help.
pub(crate) fn hint(error: paracrypt_core::Error, encrypting: bool) -> anyhow::Error {
    match error {
        paracrypt_core::Error::TreeOutputExists(_) => exit::Hinted {
            error,
            hint: if encrypting {
                "use --update to bring the encrypted tree there up to date (or to finish an \
                 interrupted run), or --force to write into it, replacing files of the same names"
            } else {
                "use --force to write into it, replacing files of the same names"
            }
            .into(),
        }
        .into(),
        paracrypt_core::Error::TreeNameClash(_) => exit::Hinted {
            error,
            hint: "use --hide-names".into(),
        }
        .into(),
        error => error.into(),
    }
}

/// Prints every failure of `summary` on a line of its own, and what the tree is now; returns
/// the exit status: 0 for a whole tree, [`exit::PARTIAL`] when some files were done, else the
/// status of the first failure.
pub(crate) fn report(summary: &Summary, encrypting: bool, quiet: bool) -> u8 {
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
            say!("paracrypt: {note}");
        }
        return 0;
    }
    pending().clear_bar();
    for failure in &summary.failures {
        say!(
            "paracrypt: error: {}",
            failure.to_string().replace('\n', " ")
        );
    }
    if summary.not_started > 0 {
        let s = if summary.not_started == 1 { "" } else { "s" };
        say!(
            "paracrypt: error: {} file{s} not started after the failure above",
            summary.not_started
        );
    }
    if !encrypting && !summary.manifest_complete {
        say!(
            "paracrypt: error: the encrypted tree is incomplete: the run that wrote it did not \
             finish every file"
        );
    }
    if summary.did_anything() {
        let done = summary.files + summary.unchanged;
        let s = if done == 1 { "" } else { "s" };
        say!("paracrypt: {done} file{s} done and complete; the tree is not");
        return exit::PARTIAL;
    }
    summary
        .failures
        .first()
        .map_or(1, |first| exit::code_of(first.kind()))
}

/// `verify --recursive`: checks the encrypted tree at `input` against its manifest (only the
/// files at `paths` of the tree, when given), writing nothing. Each difference is one line on
/// stdout, then `TREE: OK …` or one line on stderr; exit 0, or 1 when the tree differs (5 when
/// the manifest's signer is not the one required, as for one file).
pub fn verify(
    input: &Path,
    operation: Operation,
    paths: Vec<Vec<u8>>,
    threads: crate::flags::ThreadsFlag,
    provider: Provider,
    shown: Report,
) -> Result<ExitCode> {
    let in_store = if remote::is_url(input) {
        Some(remote::tree_input(input)?)
    } else if !input.is_dir() {
        return usage(format!(
            "--recursive needs an encrypted tree (a directory): {} is not one",
            input.display()
        ));
    } else {
        None
    };
    let request = operation.request(true)?;
    let pool = threads.pool()?;
    let runner = Runner::new().provider(provider);
    let checked = pool.install(|| match &in_store {
        Some(tree_in) => tree::verify_from(&runner, &request, &**tree_in, &paths),
        None => tree::verify(&runner, &request, input, &paths),
    })?;
    if shown.verbose {
        for path in &checked.verified {
            say!("verified {}", tree::path::shown(path));
        }
    }
    if shown.json {
        return verify_json(input, &checked);
    }
    let mut out = std::io::stdout().lock();
    for change in &checked.changes {
        writeln!(out, "{change}").context("writing to stdout")?;
    }
    let name = input.display();
    if let Some(why) = checked.why_not_intact() {
        out.flush().context("writing to stdout")?;
        say!("paracrypt: error: {name}: {why}");
        return Ok(ExitCode::from(1));
    }
    let s = if checked.files == 1 { "" } else { "s" };
    let signed = match &checked.signer {
        Some(signer) if signer.required => format!(
            "; good signature: the manifest is signed by {}",
            signer.key.fingerprint()
        ),
        Some(signer) => format!(
            "; the manifest is signed by {} (not checked against a key you trust: give it with \
             --verify-with PUBKEY)",
            signer.key.fingerprint()
        ),
        None => String::new(),
    };
    let what = if paths.is_empty() {
        "every file as its manifest lists it, nothing else"
    } else {
        "as its manifest lists it"
    };
    writeln!(
        out,
        "{name}: OK ({} file{s}, {} bytes, {what}{signed})",
        checked.files, checked.bytes
    )
    .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `verify --recursive --json`: one object per file on stdout, in the tree's order
/// (`verified`, or the difference: `missing`, `renamed` with `now_at`, `changed` with `error`,
/// and `added` for what the manifest does not list, by its stored path), then the summary
/// object; exit 0, or 1 when the tree is not intact (also said on stderr).
fn verify_json(input: &Path, checked: &tree::Checked) -> Result<ExitCode> {
    let mut lines: Vec<(&[u8], serde_json::Value)> = checked
        .verified
        .iter()
        .map(|path| {
            let shown = tree::path::shown(path);
            (
                &path[..],
                serde_json::json!({ "path": shown, "result": "verified" }),
            )
        })
        .collect();
    for change in &checked.changes {
        let mut line = serde_json::json!({
            "path": tree::path::shown(change.path()),
            "result": change.name(),
        });
        match change {
            tree::Change::Renamed { now_at, .. } => {
                line["now_at"] = tree::path::shown(now_at).into();
            }
            tree::Change::Changed { why, .. } => {
                line["error"] = why.to_string().replace('\n', " ").into();
            }
            _ => {}
        }
        lines.push((change.path(), line));
    }
    lines.sort_by(|a, b| a.0.cmp(b.0));
    for (_, line) in &lines {
        json_line(line);
    }
    let why = checked.why_not_intact();
    json_line(&serde_json::json!({ "summary": {
        "operation": "verify",
        "files": checked.files,
        "bytes": checked.bytes,
        "differences": checked.changes.len(),
        "complete": checked.manifest.complete,
        "intact": why.is_none(),
        "signer": checked.signer.as_ref().map(|s| s.key.fingerprint().to_string()),
        "signer_checked": checked.signer.as_ref().is_some_and(|s| s.required),
    }}));
    match why {
        Some(why) => {
            say!("paracrypt: error: {}: {why}", input.display());
            Ok(ExitCode::from(1))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `info --recursive`: the manifest of the encrypted tree at `input`, decrypted and checked,
/// as text (a summary, then one line per entry) or one JSON object; the files are not read.
pub fn info(
    input: &Path,
    operation: Operation,
    json: bool,
    provider: Provider,
) -> Result<ExitCode> {
    let in_store = if remote::is_url(input) {
        Some(remote::tree_input(input)?)
    } else {
        None
    };
    let request = operation.request(true)?;
    let runner = Runner::new().provider(provider);
    let manifest = match &in_store {
        Some(tree_in) => tree::read_manifest_from(&runner, &request, &**tree_in)?,
        None => tree::read_manifest(&runner, &request, input)?,
    };
    let mut out = std::io::stdout().lock();
    let shown = input.display().to_string();
    if json {
        serde_json::to_writer_pretty(&mut out, &manifest.json(&shown))
            .context("writing to stdout")?;
        writeln!(out).context("writing to stdout")?;
    } else {
        manifest_text(&mut out, &shown, &manifest).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// The text form: the summary, one `label: value` line each, then one line per entry (its
/// kind and mode as `ls -l` shows them, its size, its time, its path; a link's target).
fn manifest_text(
    out: &mut dyn Write,
    shown: &str,
    manifest: &tree::Manifest,
) -> std::io::Result<()> {
    let tree::Counts {
        directories: dirs,
        files,
        bytes,
        links,
    } = manifest.counts();
    writeln!(out, "tree:        {shown}")?;
    writeln!(out, "format:      {}", manifest.format.name())?;
    let sealed = if manifest.carries_key() {
        "a key drawn for the tree, carried in the manifest (a password tree)"
    } else {
        "the tree's key file or recipients"
    };
    writeln!(out, "files with:  {sealed}")?;
    let names = if manifest.hides_names() {
        "hidden (opaque stored names)"
    } else {
        "kept"
    };
    writeln!(out, "names:       {names}")?;
    match &manifest.signer {
        Some(key) => writeln!(out, "signed by:   {}", key.fingerprint())?,
        None => writeln!(out, "signed by:   nobody (unsigned)")?,
    }
    writeln!(
        out,
        "generation:  {} (tree id {})",
        manifest.generation,
        hex::encode(manifest.tree_id)
    )?;
    writeln!(
        out,
        "written:     {} ({} seconds since the epoch)",
        date_text(manifest.written, None),
        manifest.written
    )?;
    let complete = if manifest.complete {
        "yes"
    } else {
        "no: the run that wrote it did not finish every file"
    };
    writeln!(out, "complete:    {complete}")?;
    writeln!(
        out,
        "entries:     {dirs} directories, {files} files ({bytes} bytes), {links} links"
    )?;
    for entry in &manifest.entries {
        let (kind, size) = match &entry.kind {
            EntryKind::Dir => ('d', String::from("-")),
            EntryKind::File(file) => ('-', file.size.to_string()),
            EntryKind::Symlink(_) => ('l', String::from("-")),
        };
        let path = if entry.path.is_empty() {
            ".".to_string()
        } else {
            tree::path::shown(&entry.path)
        };
        write!(
            out,
            "{kind}{} {size:>12} {} {path}",
            mode_text(entry.mode),
            date_text(entry.mtime.0, Some(entry.mtime.1)),
        )?;
        if let EntryKind::Symlink(target) = &entry.kind {
            write!(out, " -> {}", tree::path::shown(target))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// A time as a date, UTC, RFC 3339 (`2026-12-02T15:12:37Z`, with `nanos` when given); a time
/// before 1970 or after 9999 (a manifest may say anything) as seconds since the epoch.
pub(crate) fn date_text(seconds: i64, nanos: Option<u32>) -> String {
    const LAST: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    let nanos = nanos.filter(|n| *n < 1_000_000_000);
    if !(0..=LAST).contains(&seconds) {
        return match nanos {
            Some(n) => format!("{seconds}.{n:09}"),
            None => seconds.to_string(),
        };
    }
    let time = std::time::UNIX_EPOCH
        + std::time::Duration::new(seconds.unsigned_abs(), nanos.unwrap_or(0));
    match nanos {
        Some(_) => humantime::format_rfc3339_nanos(time).to_string(),
        None => humantime::format_rfc3339_seconds(time).to_string(),
    }
}

/// A mode as `ls -l` writes it (`rwxr-x---`, with `s`, `S`, `t`, `T`).
fn mode_text(mode: u32) -> String {
    let mut text = String::with_capacity(9);
    for (shift, special, set) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 7;
        text.push(if bits & 4 != 0 { 'r' } else { '-' });
        text.push(if bits & 2 != 0 { 'w' } else { '-' });
        text.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => set,
            (false, true) => set.to_ascii_uppercase(),
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::date_text;

    /// Times are dates, UTC; what no date can say (before 1970, after 9999, a nanosecond
    /// field out of range) stays a number, never a panic.
    #[test]
    fn times_read_as_dates() {
        assert_eq!(date_text(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(
            date_text(1_796_224_357, Some(917_516_499)),
            "2026-12-02T15:12:37.917516499Z"
        );
        assert_eq!(date_text(-1, Some(5)), "-1.000000005");
        assert_eq!(date_text(i64::MAX, None), i64::MAX.to_string());
        assert_eq!(date_text(253_402_300_799, None), "9999-12-31T23:59:59Z");
        assert_eq!(date_text(10, Some(2_000_000_000)), "1970-01-01T00:00:10Z");
    }
}
