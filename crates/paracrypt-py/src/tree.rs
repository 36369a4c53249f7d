//! Whole directory trees: `encrypt_tree`, `decrypt_tree`, `verify_tree` and `info_tree`, the
//! CLI's `--recursive` commands on the core's tree driver (`paracrypt_core::tree`), which
//! walks the tree, runs every file on one schedule in the call's pool and writes or checks the
//! manifest. This module turns keyword arguments into the core's request and options, and the
//! core's summary into a dict or an exception; every rule about trees is the core's.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use paracrypt_core::tree::{self, Summary};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::api::{decrypt_request, encrypt_request};
use crate::errors::{Failure, exception_with};
use crate::options::Options;

/// The options of a tree run that writes `dst` (`overwrite=`).
fn write_options(overwrite: bool) -> tree::Options {
    tree::Options {
        force: overwrite,
        ..tree::Options::default()
    }
}

/// The options of a tree's encryption from the keyword arguments of :func:`encrypt_tree` (and
/// ``TreeJob.encrypt``): ``identities=`` open the manifest of a tree encrypted to recipients,
/// for an update from a manifest signed by ``sign=``.
fn seal_options(
    overwrite: bool,
    hide_names: bool,
    update: bool,
    checksum: bool,
    identities: Option<&Bound<'_, PyAny>>,
) -> PyResult<tree::Options> {
    Ok(tree::Options {
        hide_names,
        update,
        checksum,
        update_with: identities.map(crate::secrets::identities_arg).transpose()?,
        ..write_options(overwrite)
    })
}

/// Runs `work` with the core's runner of ``threads=``, ``provider=`` and ``progress=``, in the
/// call's pool without the GIL: how every tree function runs the core.
fn run_core<T: Send>(
    py: Python<'_>,
    (threads, provider, progress): (Option<i64>, Option<&str>, Option<Py<PyAny>>),
    work: impl FnOnce(&paracrypt_core::Runner) -> Result<T, Failure> + Send,
) -> PyResult<T> {
    let options = Options::new(threads, provider, progress)?;
    let runner = options.runner();
    options.run(py, || work(&runner))
}

/// ``upload_concurrency=``, ``download_concurrency=`` and ``retries=``: how a run on a prefix
/// talks to the store (the CLI's ``--upload-concurrency``, ``--download-concurrency`` and
/// ``--retries``), each `None` for the store's default and bounded by the store's limits
/// (`paracrypt_store::MAX_CONCURRENCY`, `MAX_RETRIES`, which the CLI's flags take too). Checked
/// on every call, local or not; a local tree has no use for them.
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(not(feature = "store"), allow(dead_code))]
struct StoreKeywords {
    upload_concurrency: Option<i64>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
}

#[cfg(feature = "store")]
impl StoreKeywords {
    /// The store's options these keywords ask for, or a `UsageError` naming the first out of
    /// its bounds.
    fn options(self) -> Result<paracrypt_store::Options, Failure> {
        use paracrypt_store::{MAX_CONCURRENCY, MAX_RETRIES};
        fn within(
            name: &str,
            value: Option<i64>,
            bounds: (i64, usize),
            default: usize,
        ) -> Result<usize, Failure> {
            match value {
                None => Ok(default),
                Some(n) if n >= bounds.0 && n as u64 <= bounds.1 as u64 => Ok(n as usize),
                Some(n) => crate::errors::usage(format!(
                    "{name}={n}: give {} to {}, or None for {default}",
                    bounds.0, bounds.1
                )),
            }
        }
        let default = paracrypt_store::Options::default();
        Ok(paracrypt_store::Options {
            upload_concurrency: within(
                "upload_concurrency",
                self.upload_concurrency,
                (1, MAX_CONCURRENCY),
                default.upload_concurrency,
            )?,
            download_concurrency: within(
                "download_concurrency",
                self.download_concurrency,
                (1, MAX_CONCURRENCY),
                default.download_concurrency,
            )?,
            retries: within("retries", self.retries, (0, MAX_RETRIES), default.retries)?,
        })
    }
}

/// The tree run from `src` to `dst` when either is a prefix in object storage
/// (``s3://bucket/prefix/``), checked and opened by `paracrypt_store::prefix_run`, which decides
/// what a prefix may do for every front end (its refusals are `UsageError`s in its words);
/// `None` when both are local. Credentials, region and endpoint come from the environment
/// (``AWS_ACCESS_KEY_ID``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``…), as for KMS; the store's
/// options are the call's [`StoreKeywords`]. No upload watch:
/// a call cannot be interrupted while it runs (the GIL is released and Python handles a
/// signal only once the call returns), and every upload a call starts is completed or aborted
/// before it returns.
#[cfg(feature = "store")]
fn prefix_run(
    encrypting: bool,
    src: &std::path::Path,
    dst: &std::path::Path,
    tree_options: &tree::Options,
    store: StoreKeywords,
) -> Result<Option<paracrypt_store::PrefixRun>, Failure> {
    let store = store.options()?;
    Ok(paracrypt_store::prefix_run(
        encrypting,
        src,
        dst,
        tree_options,
        store,
        None,
    )?)
}

/// The rekey from `src` to `dst` when either is a prefix in object storage, checked and opened
/// by `paracrypt_store::prefix_rekey` (the refusals that need no secret, for every front end);
/// `None` when both are local. The store's options and the environment as [`prefix_run`].
#[cfg(feature = "store")]
fn prefix_rekey(
    src: &std::path::Path,
    dst: &std::path::Path,
    tree_options: &tree::Options,
    store: StoreKeywords,
) -> Result<Option<paracrypt_store::Rekeying>, Failure> {
    let store = store.options()?;
    Ok(paracrypt_store::prefix_rekey(
        src,
        dst,
        tree_options,
        store,
        None,
    )?)
}

/// The encrypted tree under the prefix `src` (listed), when it is one.
#[cfg(feature = "store")]
fn prefix_input(
    src: &std::path::Path,
    store: StoreKeywords,
) -> Result<Option<paracrypt_store::PrefixInput>, Failure> {
    let store = store.options()?;
    match src.to_str().filter(|text| paracrypt_store::is_url(text)) {
        Some(url) => Ok(Some(paracrypt_store::prefix_input(url, store)?)),
        None => Ok(None),
    }
}

/// The plaintext tree under the prefix `src` (listed), when it is one: what `sign_tree` and
/// `verify_tree(signature=)` read instead of a directory.
fn plain_input(
    src: &std::path::Path,
    store: StoreKeywords,
) -> Result<Option<Box<dyn tree::PlainInput>>, Failure> {
    #[cfg(feature = "store")]
    {
        let store = store.options()?;
        match src.to_str().filter(|text| paracrypt_store::is_url(text)) {
            Some(url) => Ok(Some(Box::new(paracrypt_store::plain_input(url, store)?))),
            None => Ok(None),
        }
    }
    #[cfg(not(feature = "store"))]
    {
        let _ = store;
        no_store(src)?;
        Ok(None)
    }
}

/// A build without object storage (no `store` feature) has no prefix run.
#[cfg(not(feature = "store"))]
#[allow(dead_code)] // never made
enum PrefixRun {
    Encrypt(NoEncryption),
    Decrypt(NoDecryption),
}

/// An encryption with a prefix on one side, which a build without object storage never makes.
#[cfg(not(feature = "store"))]
#[allow(dead_code)] // never made
enum NoEncryption {}

#[cfg(not(feature = "store"))]
impl NoEncryption {
    fn plan(
        &self,
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::request::Request,
        _: &std::path::Path,
        _: &std::path::Path,
        _: &tree::Options,
    ) -> paracrypt_core::Result<tree::Plan> {
        match *self {}
    }

    fn run(
        &self,
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::request::Request,
        _: &std::path::Path,
        _: &std::path::Path,
        _: &tree::Options,
    ) -> paracrypt_core::Result<tree::Summary> {
        match *self {}
    }
}

/// A decryption with a prefix on one side, which a build without object storage never makes.
#[cfg(not(feature = "store"))]
#[allow(dead_code)] // never made
enum NoDecryption {}

#[cfg(not(feature = "store"))]
impl NoDecryption {
    fn plan(
        &self,
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::request::Request,
        _: &std::path::Path,
        _: &tree::Options,
        _: paracrypt_core::request::Driver,
    ) -> paracrypt_core::Result<tree::OpenPlan> {
        match *self {}
    }

    fn run(
        &self,
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::request::Request,
        _: &std::path::Path,
        _: &tree::Options,
    ) -> paracrypt_core::Result<tree::Summary> {
        match *self {}
    }
}

/// A rekey with a prefix on one side, which a build without object storage never makes.
#[cfg(not(feature = "store"))]
#[allow(dead_code)] // never made
enum NoRekeying {}

#[cfg(not(feature = "store"))]
impl NoRekeying {
    fn run(
        &self,
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::request::Request,
        _: &tree::RekeyTo,
        _: &std::path::Path,
        _: &tree::Options,
    ) -> paracrypt_core::Result<tree::Summary> {
        match *self {}
    }
}

#[cfg(not(feature = "store"))]
fn prefix_rekey(
    src: &std::path::Path,
    dst: &std::path::Path,
    _: &tree::Options,
    _: StoreKeywords,
) -> Result<Option<NoRekeying>, Failure> {
    no_store(src)?;
    no_store(dst)?;
    Ok(None)
}

/// What a build without object storage says of a URL.
#[cfg(not(feature = "store"))]
fn no_store(path: &std::path::Path) -> Result<(), Failure> {
    if path.to_str().is_some_and(|text| text.contains("://")) {
        return crate::errors::usage(format!(
            "{}: object storage needs the package built with its `store` feature",
            path.display()
        ));
    }
    Ok(())
}

#[cfg(not(feature = "store"))]
fn prefix_run(
    _: bool,
    src: &std::path::Path,
    dst: &std::path::Path,
    _: &tree::Options,
    _: StoreKeywords,
) -> Result<Option<PrefixRun>, Failure> {
    no_store(src)?;
    no_store(dst)?;
    Ok(None)
}

#[cfg(not(feature = "store"))]
fn prefix_input(
    src: &std::path::Path,
    _: StoreKeywords,
) -> Result<Option<tree::LocalInput>, Failure> {
    no_store(src)?;
    Ok(None)
}

#[cfg(feature = "store")]
use paracrypt_store::PrefixRun;

/// The signer of a manifest as a dict (`fingerprint`, and `required`: whether the call asked
/// for that signer with `verify_with=`), or `None`.
fn signer<'py>(
    py: Python<'py>,
    signer: Option<&paracrypt_core::request::Signer>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    signer
        .map(|signer| {
            let dict = PyDict::new(py);
            dict.set_item("fingerprint", signer.key.fingerprint())?;
            dict.set_item("required", signer.required)?;
            Ok(dict)
        })
        .transpose()
}

/// What a tree run did, as the dict the tree functions return (and
/// `IncompleteTreeError.summary` holds).
fn summary_dict<'py>(py: Python<'py>, summary: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("files", summary.files)?;
    dict.set_item("bytes", summary.bytes)?;
    dict.set_item("unchanged", summary.unchanged)?;
    dict.set_item("removed", summary.removed)?;
    dict.set_item("not_started", summary.not_started)?;
    dict.set_item("complete", summary.is_complete())?;
    dict.set_item("signer", signer(py, summary.signer.as_ref())?)?;
    // A rekey's (empty for every other run): the stored paths, as `os.fsdecode` gives them.
    let left: Vec<&std::ffi::OsStr> = summary
        .left_behind
        .iter()
        .map(|stored| std::os::unix::ffi::OsStrExt::from_bytes(&stored[..]))
        .collect();
    dict.set_item("left_behind", left)?;
    Ok(dict)
}

/// The summary of a whole tree as a dict; a tree done in part as `IncompleteTreeError` (the
/// CLI's exit 6: some files are complete, the tree is not), every failure as the exception of
/// its kind naming its file; a run that did nothing as its first failure's exception.
fn finish(py: Python<'_>, summary: Summary, encrypting: bool) -> PyResult<Bound<'_, PyDict>> {
    if summary.is_complete() {
        return summary_dict(py, &summary);
    }
    let dict = summary_dict(py, &summary)?;
    let failures: Vec<PyErr> = summary
        .failures
        .into_iter()
        .map(|error| Failure::Core(error).into_pyerr(py))
        .collect();
    let mut lines: Vec<String> = failures.iter().map(|e| e.value(py).to_string()).collect();
    if summary.not_started > 0 {
        let s = if summary.not_started == 1 { "" } else { "s" };
        lines.push(format!(
            "{} file{s} not started after the failure above",
            summary.not_started
        ));
    }
    if !encrypting && !summary.manifest_complete {
        lines.push(
            "the encrypted tree is incomplete: the run that wrote it did not finish every file"
                .into(),
        );
    }
    let done = summary.files + summary.unchanged;
    if done == 0 {
        let mut failures = failures.into_iter();
        if let Some(first) = failures.next() {
            // The others, as the CLI prints them on stderr, in the exception's notes.
            for other in lines.iter().skip(1) {
                first.value(py).call_method1("add_note", (other,))?;
            }
            return Err(first);
        }
        return Err(exception_with(py, "DataError", lines.join("; "), &[]));
    }
    let s = if done == 1 { "" } else { "s" };
    let message = format!(
        "{}; {done} file{s} done and complete, the tree is not",
        lines.join("; ")
    );
    let list = PyList::new(py, failures.iter().map(|e| e.value(py)))?;
    Err(exception_with(
        py,
        "IncompleteTreeError",
        message,
        &[("failures", list.into_any()), ("summary", dict.into_any())],
    ))
}

/// encrypt_tree(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     format: 'paracrypt' | 'age' = 'paracrypt',
///     armor: bool = False,
///     cipher: 'aes-256-gcm' | 'aes-128-gcm' | 'chacha20-poly1305' | 'aes-256-ctr-hmac-sha256'
///         | 'des-ede3-cbc-hmac-sha256' | 'bf-cbc-hmac-sha256' | 'rc4-hmac-sha256' | None =
///         None,
///     chunk_size: int | str | None = None,
///     sign: str | os.PathLike[str] | None = None,
///     hide_names: bool = False,
///     update: bool = False,
///     checksum: bool = False,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
///     upload_concurrency: int | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
///     dry_run: bool = False,
/// ) -> dict[str, Any]
///
/// Encrypts the directory tree ``src`` into the directory ``dst``, every file on one schedule
/// on every core (small files batched, large ones split into chunks), as ``paracrypt encrypt
/// --recursive``: each regular file becomes its own encrypted file at the same path with the
/// format's suffix (``.pcr``, ``.age``), directories, modes and modification times are kept,
/// symbolic links are recorded (never followed), and ``dst`` gets one encrypted manifest
/// (``paracrypt-manifest``) that lists the tree and binds each file to its place
/// (docs/guide/trees.md). A FIFO, socket or device in ``src`` is refused by name before any
/// work. ``dst`` may be a prefix in object storage (``"s3://bucket/prefix/"``, a ``str``): each
/// file one object, the manifest written last, credentials and endpoint from the environment
/// (``AWS_*``); ``upload_concurrency=`` (parts in flight among all the tree's files),
/// ``download_concurrency=`` (ranged GETs, an update's reads) and ``retries=`` are the CLI's
/// flags of those names (1 to 256, 1 to 256, 0 to 100; ``None``: 8, 8 and 10). ``src`` may be
/// a prefix too: its objects are the tree's files (mode 644, time their ``Last-Modified``, each
/// read at the version listed), the directories those their keys name.
///
/// Secrets and ``format=``, ``armor=``, ``cipher=``, ``chunk_size=``, ``sign=`` as
/// :func:`encrypt_file` (with ``password=``, one Argon2id for the tree: a key drawn for the
/// tree seals its files and the manifest carries it; with ``sign=``, the manifest is signed as
/// a whole and every file is a signed container). ``hide_names=True`` stores files under
/// opaque names, the real ones only in the manifest. ``dst`` must be new or empty, or
/// ``overwrite=True`` writes into it; ``update=True`` brings an encrypted tree at ``dst`` up to
/// date (or finishes an interrupted run): files unchanged since its manifest (size and
/// modification time; ``checksum=True``: contents) are kept, the others encrypted, those of
/// files gone removed, and a new manifest written (needs ``key=`` or ``password=``, which
/// open the manifest; a tree encrypted to ``recipients=`` is updated from this host's record
/// of the manifest it wrote there, with no identity, or with ``identities=`` from a manifest
/// signed by ``sign=``, else encrypted whole again: the files kept stay encrypted to whom they
/// were, new and changed files go to ``recipients=``; docs/guide/trees.md).
///
/// Returns a dict: ``files`` and ``bytes`` encrypted, ``unchanged`` and ``removed`` (an
/// update), ``not_started`` (0), ``complete`` (``True``), ``signer`` (``None`` here; a
/// decryption's names who signed the manifest), ``left_behind`` (``[]``; a rekey's names what
/// it did not carry). Every file is written to a temporary file that takes its
/// name only once complete. A file that fails (unreadable, changed while read) does not stop
/// the others: when some files were done, :class:`IncompleteTreeError` is raised (what the CLI
/// reports with exit 6), its ``failures`` the exception of each failed file (each naming it),
/// its ``summary`` the dict above; when none was, the first failure's exception.
///
/// ``dry_run=True`` writes nothing (no ``dst``, no state record, no temporary file): the tree
/// is walked and an update's previous manifest opened and checked as the run would, and the
/// dict says what the run would do (``files`` to encrypt, ``unchanged``, ``removed``).
#[pyfunction]
#[pyo3(signature = (src, dst, *, key = None, password = None, recipients = None, format = "paracrypt", armor = false, cipher = None, chunk_size = None, sign = None, hide_names = false, update = false, checksum = false, identities = None, overwrite = false, threads = None, provider = None, progress = None, upload_concurrency = None, download_concurrency = None, retries = None, dry_run = false))]
#[allow(clippy::too_many_arguments)]
pub fn encrypt_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    format: &str,
    armor: bool,
    cipher: Option<&str>,
    chunk_size: Option<&Bound<'py, PyAny>>,
    sign: Option<PathBuf>,
    hide_names: bool,
    update: bool,
    checksum: bool,
    identities: Option<&Bound<'py, PyAny>>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    upload_concurrency: Option<i64>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let store = StoreKeywords {
        upload_concurrency,
        download_concurrency,
        retries,
    };
    let request = encrypt_request(
        key, password, recipients, format, armor, cipher, chunk_size, sign,
    )?;
    let tree_options = tree::Options {
        dry_run,
        ..seal_options(overwrite, hide_names, update, checksum, identities)?
    };
    let summary = run_core(py, (threads, provider, progress), |runner| {
        Ok(match prefix_run(true, &src, &dst, &tree_options, store)? {
            Some(PrefixRun::Encrypt(run)) => {
                run.run(runner, &request, &src, &dst, &tree_options)?
            }
            Some(PrefixRun::Decrypt(_)) => unreachable!("an encryption's run"),
            None => tree::encrypt(runner, &request, &src, &dst, &tree_options)?,
        })
    })?;
    finish(py, summary, true)
}

/// rekey_tree(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str],
///     *,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     new_password: str | None = None,
///     sign: str | os.PathLike[str] | None = None,
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
///     upload_concurrency: int | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
///     dry_run: bool = False,
/// ) -> dict[str, Any]
///
/// Rekeys the encrypted tree ``src`` into the new directory ``dst``, as ``paracrypt rekey
/// --recursive``; ``src`` is not changed. The manifest is opened with ``identities=`` or the
/// old ``password=``. A tree encrypted to recipients gets a new header in every file, wrapping
/// the same file key for exactly the new ``recipients=``, its payload copied as it is on every
/// core, and a new manifest sealed to them; a password tree keeps its files byte for byte (they
/// are sealed with a key its manifest carries) and only its manifest is sealed again with
/// ``new_password=``. A signed tree needs ``sign=``, the key that signed it, which signs the new
/// manifest. Refused before anything is written (``UsageError``, or ``DataError`` for a tree of
/// a key file): a key-file tree, a recipient tree given a password or a password tree given
/// recipients, an armored age tree to recipients, a signed tree without its key. ``dst`` must
/// be new or empty, or ``overwrite=True`` writes into it.
///
/// Returns the dict :func:`encrypt_tree` returns (``files`` and ``bytes`` rekeyed), with
/// ``left_behind``: what ``src`` holds that its manifest does not list (a file added beside
/// the tree's, as :func:`verify_tree` names it "added"; a directory once), each a path
/// relative to ``src``, not carried into ``dst`` (not an error; ``paracrypt rekey --recursive``
/// names each on stderr). A tree that is not as its manifest lists it (a file missing, two
/// files swapped, an old manifest put back) is refused whole with :class:`TreeChangedError`,
/// its ``changes`` naming each such file, before anything is written (``overwrite=True``
/// replaces nothing at ``dst``); a file that cannot be read is named and left out:
/// :class:`IncompleteTreeError`, as for :func:`encrypt_tree`. Rekeying is not revocation.
///
/// ``src`` and ``dst`` may be prefixes in object storage (``"s3://bucket/prefix/"``, a
/// ``str``), as :func:`decrypt_tree` takes them: an input prefix is listed once and every file
/// read at the version listed (``download_concurrency=``, ``retries=``); each new file is
/// uploaded as one object (``upload_concurrency=`` parts in flight) that appears only once it
/// is whole. Two prefixes that overlap are refused.
///
/// ``dry_run=True`` opens and checks the tree as the rekey would and returns what it would
/// do, writing nothing (a local ``dst`` only).
#[pyfunction]
#[pyo3(signature = (src, dst, *, identities = None, password = None, recipients = None, new_password = None, sign = None, overwrite = false, threads = None, provider = None, progress = None, upload_concurrency = None, download_concurrency = None, retries = None, dry_run = false))]
#[allow(clippy::too_many_arguments)]
pub fn rekey_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    identities: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    recipients: Option<&Bound<'py, PyAny>>,
    new_password: Option<&Bound<'py, PyAny>>,
    sign: Option<PathBuf>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    upload_concurrency: Option<i64>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let store = StoreKeywords {
        upload_concurrency,
        download_concurrency,
        retries,
    };
    let tree_options = tree::Options {
        dry_run,
        ..write_options(overwrite)
    };
    // What the paths and the manifest's header refuse, before any secret is read (a prefix on
    // either side listed or asked here).
    let in_store = prefix_rekey(&src, &dst, &tree_options, store)?;
    if in_store.is_none() {
        tree::check_rekey(&src, &dst, &tree_options).map_err(Failure::from)?;
    }
    let open = decrypt_request(None, password, identities, None)?;
    let to = tree::RekeyTo {
        secret: crate::secrets::to_encrypt(None, new_password, recipients)?,
        sign: sign
            .map(|path| crate::secrets::read_signing_key(&path))
            .transpose()?,
    };
    let summary = run_core(py, (threads, provider, progress), |runner| {
        Ok(match &in_store {
            Some(run) => run.run(runner, &open, &to, &dst, &tree_options)?,
            None => tree::rekey(runner, &open, &to, &src, &dst, &tree_options)?,
        })
    })?;
    finish(py, summary, true)
}

/// decrypt_tree(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     progress: Callable[[int], object] | None = None,
///     upload_concurrency: int | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
///     min_generation: int | None = None,
///     dry_run: bool = False,
/// ) -> dict[str, Any]
///
/// Decrypts the encrypted tree ``src`` (written by :func:`encrypt_tree` or ``paracrypt encrypt
/// --recursive``) into the directory ``dst``, as ``paracrypt decrypt --recursive``: its
/// manifest is read and checked first (its signature; with ``verify_with=``, that signer),
/// then every file's header is checked against the manifest before any key is used on it,
/// every chunk authenticated, and its length and BLAKE3 tree-hash root checked before it takes
/// its name; directories, modes, times and links are restored. ``dst`` must be new or empty,
/// or ``overwrite=True`` writes into it. Secrets and options as :func:`decrypt_file`. ``src``
/// may be a prefix in object storage (``"s3://bucket/prefix/"``, a ``str``), listed once and
/// read with ``download_concurrency=`` ranged GETs in flight and ``retries=`` (as
/// :func:`encrypt_tree` takes them). ``dst`` may be a prefix too (new or empty, or
/// ``overwrite=True``): each file is uploaded as one object (``upload_concurrency=`` parts in
/// flight) that appears only once its contents are checked; a prefix keeps no directories,
/// modes or times, and each symbolic link the tree holds is a failure that names it.
///
/// Returns the dict :func:`encrypt_tree` returns (``files`` and ``bytes`` decrypted;
/// ``signer``: ``None`` for an unsigned manifest, else ``{"fingerprint", "required"}``,
/// ``required`` when ``verify_with=`` asked for that signer). A tree
/// done in part raises :class:`IncompleteTreeError` as there (also when the manifest says the
/// run that wrote it did not finish every file); a tree of which nothing could be done, the
/// first failure's exception. ``min_generation=N`` refuses a tree whose manifest is of an older
/// generation (an old manifest put back), as ``--min-generation`` does. ``dry_run=True`` reads
/// and checks the manifest as the run would and returns what it would do, writing nothing (a
/// local ``dst`` only).
#[pyfunction]
#[pyo3(signature = (src, dst, *, key = None, password = None, identities = None, verify_with = None, overwrite = false, threads = None, provider = None, progress = None, upload_concurrency = None, download_concurrency = None, retries = None, min_generation = None, dry_run = false))]
#[allow(clippy::too_many_arguments)]
pub fn decrypt_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    progress: Option<Py<PyAny>>,
    upload_concurrency: Option<i64>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
    min_generation: Option<u64>,
    dry_run: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let store = StoreKeywords {
        upload_concurrency,
        download_concurrency,
        retries,
    };
    let request = decrypt_request(key, password, identities, verify_with)?;
    let tree_options = tree::Options {
        min_generation,
        dry_run,
        ..write_options(overwrite)
    };
    let summary = run_core(py, (threads, provider, progress), |runner| {
        Ok(match prefix_run(false, &src, &dst, &tree_options, store)? {
            Some(PrefixRun::Decrypt(run)) => run.run(runner, &request, &dst, &tree_options)?,
            Some(PrefixRun::Encrypt(_)) => unreachable!("a decryption's run"),
            None => tree::decrypt(runner, &request, &src, &dst, &tree_options)?,
        })
    })?;
    finish(py, summary, false)
}

/// The signature file of a plaintext tree, refusing one larger than any manifest.
fn read_signature(path: &std::path::Path) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let cannot = |e| Failure::Io(format!("cannot read signature {}", path.display()), e);
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(tree::manifest::MAX_MANIFEST + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > tree::manifest::MAX_MANIFEST {
        return Err(Failure::Usage(format!(
            "{}: not a tree's signature (larger than 1 GiB)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// sign_tree(
///     src: str | os.PathLike[str],
///     sig: str | os.PathLike[str] | None = None,
///     *,
///     key: str | os.PathLike[str],
///     overwrite: bool = False,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
/// ) -> dict[str, Any]
///
/// Signs the plaintext directory tree ``src`` with the private key at ``key`` (as ``paracrypt
/// sign -k`` takes it) and writes the signature to ``sig`` (default: ``src`` + ``.psig``, beside
/// the tree), as ``paracrypt sign --recursive``: every file hashed on every core, one signature
/// over a manifest of the whole tree (paths, kinds, modes, times, sizes, BLAKE3 roots).
/// :func:`verify_tree` with ``signature=`` checks the tree against it later. ``sig`` is written
/// through a temporary file; an existing one is replaced only with ``overwrite=True``. ``src``
/// may be a prefix in object storage (``"s3://bucket/prefix/"``, read as
/// :func:`encrypt_tree` reads one, with ``download_concurrency=`` and ``retries=``); ``sig``
/// is then required (a local file). Returns a dict: ``files``, ``bytes``, ``signer``
/// (``{"fingerprint", "required"}``), ``written``.
#[pyfunction]
#[pyo3(signature = (src, sig = None, *, key, overwrite = false, threads = None, provider = None, download_concurrency = None, retries = None))]
#[allow(clippy::too_many_arguments)]
pub fn sign_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    sig: Option<PathBuf>,
    key: PathBuf,
    overwrite: bool,
    threads: Option<i64>,
    provider: Option<&str>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let store = StoreKeywords {
        download_concurrency,
        retries,
        ..StoreKeywords::default()
    };
    let tree_in = plain_input(&src, store)?;
    let src = match tree_in {
        Some(_) => src,
        None => src.components().as_path().to_path_buf(),
    };
    let sig =
        tree::signature_path(&src, sig.as_deref(), tree_in.is_some()).map_err(Failure::from)?;
    let key = crate::secrets::read_signing_key(&key)?;
    let signed = run_core(py, (threads, provider, None), |runner| {
        let signed = match &tree_in {
            Some(tree_in) => tree::sign_from(runner, &key, &**tree_in)?,
            None => tree::sign(runner, &key, &src)?,
        };
        let output = crate::output::Staged::create(&sig, overwrite, Some(&src))?;
        std::io::Write::write_all(&mut output.file(), &signed.bytes)
            .map_err(|e| Failure::Io(format!("writing {}", sig.display()), e))?;
        output.commit()?;
        Ok(signed)
    })?;
    let counts = signed.manifest.counts();
    let dict = PyDict::new(py);
    dict.set_item("files", counts.files)?;
    dict.set_item("bytes", counts.bytes)?;
    let who = paracrypt_core::request::Signer {
        key: signed.manifest.signer.clone().expect("signed"),
        required: true,
    };
    dict.set_item("signer", signer(py, Some(&who))?)?;
    dict.set_item("written", signed.manifest.written)?;
    Ok(dict)
}

/// verify_tree(
///     src: str | os.PathLike[str],
///     paths: Sequence[str | os.PathLike[str]] | None = None,
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     signature: str | os.PathLike[str] | None = None,
///     threads: int | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
/// ) -> dict[str, Any]
///
/// Checks the encrypted tree ``src`` against its manifest, writing nothing, as ``paracrypt
/// verify --recursive``: every file the manifest lists is there, is the encryption it names
/// and decrypts (every chunk authenticated) to the length and BLAKE3 root it lists, and
/// nothing else is stored. ``paths=`` (paths in the tree, as :func:`decrypt_tree` restores
/// them) checks only those files. Secrets as :func:`decrypt_tree`; ``verify_with=`` requires
/// the manifest to be signed by that key (:class:`SignatureError` if not). ``src`` may be a
/// prefix in object storage (``"s3://bucket/prefix/"``, read with ``download_concurrency=``
/// and ``retries=`` as :func:`decrypt_tree` reads it), not with ``signature=``.
///
/// Returns a dict when the tree is intact: ``files`` and ``bytes`` checked, ``signer``
/// (``None`` or ``{"fingerprint", "required"}``). Otherwise raises :class:`TreeChangedError`,
/// its ``changes`` one line per file added, removed, renamed or changed (the lines ``paracrypt
/// verify --recursive`` prints), ``complete`` whether the manifest says the run that wrote it
/// finished every file.
#[pyfunction]
#[pyo3(signature = (src, paths = None, *, key = None, password = None, identities = None, verify_with = None, signature = None, threads = None, provider = None, download_concurrency = None, retries = None))]
#[allow(clippy::too_many_arguments)]
pub fn verify_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    paths: Option<Vec<PathBuf>>,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    signature: Option<PathBuf>,
    threads: Option<i64>,
    provider: Option<&str>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let store = StoreKeywords {
        download_concurrency,
        retries,
        ..StoreKeywords::default()
    };
    let only: Vec<Vec<u8>> = paths
        .unwrap_or_default()
        .iter()
        .map(|path| path.as_os_str().as_bytes().to_vec())
        .collect();
    let options = Options::new(threads, provider, None)?;
    let runner = options.runner();
    let dict = PyDict::new(py);
    let (why, changes, complete) = if let Some(signature) = signature {
        if key.is_some() || password.is_some() || identities.is_some() {
            return Err(Failure::Usage(
                "signature= checks a plaintext tree: it takes no key=, password= or identities="
                    .into(),
            )
            .into());
        }
        let expected = verify_with
            .map(|path| crate::secrets::read_verifying_key(&path))
            .transpose()?;
        let bytes = read_signature(&signature)?;
        let tree_in = plain_input(&src, store)?;
        let checked = options.run(py, || {
            Ok(match &tree_in {
                Some(tree_in) => {
                    tree::verify_signed_from(&runner, &bytes, &**tree_in, expected.as_ref(), &only)?
                }
                None => tree::verify_signed(&runner, &bytes, &src, expected.as_ref(), &only)?,
            })
        })?;
        dict.set_item("files", checked.files)?;
        dict.set_item("bytes", checked.bytes)?;
        dict.set_item("signer", signer(py, Some(&checked.signer))?)?;
        dict.set_item("written", checked.manifest.written)?;
        let changes: Vec<String> = checked.changes.iter().map(ToString::to_string).collect();
        (checked.why_not_intact(), changes, true)
    } else {
        let request = decrypt_request(key, password, identities, verify_with)?;
        let checked = options.run(py, || {
            Ok(match prefix_input(&src, store)? {
                Some(input) => tree::verify_from(&runner, &request, &input, &only)?,
                None => tree::verify(&runner, &request, &src, &only)?,
            })
        })?;
        dict.set_item("files", checked.files)?;
        dict.set_item("bytes", checked.bytes)?;
        dict.set_item("signer", signer(py, checked.signer.as_ref())?)?;
        let changes: Vec<String> = checked.changes.iter().map(ToString::to_string).collect();
        (checked.why_not_intact(), changes, checked.manifest.complete)
    };
    let Some(mut why) = why else {
        return Ok(dict);
    };
    if let Some(first) = changes.first() {
        why.push_str(": ");
        why.push_str(first);
    }
    let message = format!("{}: {why}", src.display());
    let list = PyList::new(py, &changes)?;
    let complete = pyo3::types::PyBool::new(py, complete).to_owned();
    Err(exception_with(
        py,
        "TreeChangedError",
        message,
        &[
            ("changes", list.into_any()),
            ("complete", complete.into_any()),
        ],
    ))
}

/// info_tree(
///     src: str | os.PathLike[str],
///     *,
///     key: Key | str | os.PathLike[str] | None = None,
///     password: str | None = None,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     verify_with: str | os.PathLike[str] | None = None,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
/// ) -> dict[str, Any]
///
/// The manifest of the encrypted tree ``src``, decrypted and checked (its signature; with
/// ``verify_with=``, that signer), as one dict: what ``paracrypt info --recursive --json``
/// prints (docs/guide/trees.md lists its fields: ``format``, ``signer``, ``generation``,
/// ``complete``, the counts, and ``entries``, one dict per directory, file and link). Its
/// files are not read (:func:`verify_tree` checks them). Secrets as :func:`decrypt_tree`;
/// ``src`` may be a prefix in object storage (``"s3://bucket/prefix/"``, with
/// ``download_concurrency=`` and ``retries=`` as there).
#[pyfunction]
#[pyo3(signature = (src, *, key = None, password = None, identities = None, verify_with = None, provider = None, download_concurrency = None, retries = None))]
#[allow(clippy::too_many_arguments)]
pub fn info_tree<'py>(
    py: Python<'py>,
    src: PathBuf,
    key: Option<&Bound<'py, PyAny>>,
    password: Option<&Bound<'py, PyAny>>,
    identities: Option<&Bound<'py, PyAny>>,
    verify_with: Option<PathBuf>,
    provider: Option<&str>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
) -> PyResult<Bound<'py, PyAny>> {
    let store = StoreKeywords {
        download_concurrency,
        retries,
        ..StoreKeywords::default()
    };
    let request = decrypt_request(key, password, identities, verify_with)?;
    let json = run_core(py, (Some(1), provider, None), |runner| {
        let manifest = match prefix_input(&src, store)? {
            Some(input) => tree::read_manifest_from(runner, &request, &input)?,
            None => tree::read_manifest(runner, &request, &src)?,
        };
        Ok(manifest.json(&src.display().to_string()).to_string())
    })?;
    py.import("json")?.call_method1("loads", (json,))
}

/// One tree's encryption or decryption planned here and run in tasks by other processes, as
/// :func:`paracrypt.dask.encrypt_tree` and :func:`paracrypt.dask.decrypt_tree` run it
/// (docs/guide/trees.md, *One tree over many processes*): ``TreeJob.encrypt(src, dst, …)``
/// checks everything :func:`encrypt_tree` checks, walks ``src``, draws the tree's secrets and
/// makes ``dst``'s directories; ``TreeJob.decrypt(src, dst, …)`` reads and checks the manifest
/// as :func:`decrypt_tree` does and makes ``dst``'s directories. Then ``job.tasks()`` cuts the
/// files into runs ``(first, end)``; ``job.task(part)`` makes one task's bytes, which
/// :func:`run_tree_task` runs on any process that sees ``src`` and ``dst``;
/// ``job.add(result)`` takes what it returned (``job.lost(part, why)`` when it returned
/// nothing); and ``job.finish()`` writes the manifest (an encryption) or the links and
/// directory times (a decryption) and returns or raises as :func:`encrypt_tree` and
/// :func:`decrypt_tree` do.
///
/// A task's bytes hold its files' headers and the keys derived for those files alone (never
/// the key file, password, identities or the tree's own key), and for a signed encryption the
/// signing key: treat them as a secret, and send them over an encrypted connection (Dask's
/// TLS). Armored age trees are written and read on one process (:func:`encrypt_tree`,
/// :func:`decrypt_tree`).
#[pyclass(module = "paracrypt", frozen)]
pub struct TreeJob {
    /// The plan and what its tasks returned; `None` once finished.
    state: std::sync::Mutex<Option<Job>>,
    files: usize,
    provider: Option<String>,
}

/// A tree job's plan and what its tasks returned.
#[allow(clippy::large_enum_variant)] // one for each TreeJob, never moved in bulk
enum Job {
    Seal(tree::Plan, tree::Sealed),
    Open(tree::OpenPlan, tree::Opened),
}

impl TreeJob {
    fn with<T>(&self, work: impl FnOnce(&mut Job) -> PyResult<T>) -> PyResult<T> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state.as_mut() {
            Some(job) => work(job),
            None => Ok(crate::errors::usage("the tree job is already finished")?),
        }
    }

    fn part(&self, part: (usize, usize)) -> PyResult<std::ops::Range<usize>> {
        let (first, end) = part;
        if first >= end || end > self.files {
            return Ok(crate::errors::usage(format!(
                "part ({first}, {end}) is not a run of the tree's {} files",
                self.files
            ))?);
        }
        Ok(first..end)
    }
}

#[pymethods]
impl TreeJob {
    /// Plans the encryption of the tree ``src`` (a directory every process sees, or a prefix of
    /// plaintext objects, listed once here: each task reads its objects at the versions listed)
    /// into ``dst`` (a directory every process sees, or a prefix in object storage, checked and
    /// listed here).
    /// Arguments as :func:`encrypt_tree` (``armor=`` is not run in tasks).
    #[staticmethod]
    #[pyo3(signature = (src, dst, *, key = None, password = None, recipients = None, format = "paracrypt", cipher = None, chunk_size = None, sign = None, hide_names = false, update = false, checksum = false, identities = None, overwrite = false, threads = None, provider = None, upload_concurrency = None, download_concurrency = None, retries = None))]
    #[allow(clippy::too_many_arguments)]
    fn encrypt<'py>(
        py: Python<'py>,
        src: PathBuf,
        dst: PathBuf,
        key: Option<&Bound<'py, PyAny>>,
        password: Option<&Bound<'py, PyAny>>,
        recipients: Option<&Bound<'py, PyAny>>,
        format: &str,
        cipher: Option<&str>,
        chunk_size: Option<&Bound<'py, PyAny>>,
        sign: Option<PathBuf>,
        hide_names: bool,
        update: bool,
        checksum: bool,
        identities: Option<&Bound<'py, PyAny>>,
        overwrite: bool,
        threads: Option<i64>,
        provider: Option<&str>,
        upload_concurrency: Option<i64>,
        download_concurrency: Option<i64>,
        retries: Option<i64>,
    ) -> PyResult<Self> {
        let store = StoreKeywords {
            upload_concurrency,
            download_concurrency,
            retries,
        };
        let request = encrypt_request(
            key, password, recipients, format, false, cipher, chunk_size, sign,
        )?;
        let tree_options = seal_options(overwrite, hide_names, update, checksum, identities)?;
        let plan = run_core(py, (threads, provider, None), |runner| {
            Ok(match prefix_run(true, &src, &dst, &tree_options, store)? {
                Some(PrefixRun::Encrypt(run)) => {
                    run.plan(runner, &request, &src, &dst, &tree_options)?
                }
                Some(PrefixRun::Decrypt(_)) => unreachable!("an encryption's run"),
                None => tree::plan(runner, &request, &src, &dst, &tree_options)?,
            })
        })?;
        let sealed = tree::Sealed::new(&plan);
        Ok(TreeJob {
            files: plan.files(),
            state: std::sync::Mutex::new(Some(Job::Seal(plan, sealed))),
            provider: provider.map(str::to_owned),
        })
    }

    /// Plans the decryption of the encrypted tree ``src`` (a directory every process sees, or a
    /// prefix in object storage, listed once here: each task reads its objects at the versions
    /// listed) into ``dst`` (a directory every process sees, or a prefix: each task uploads its
    /// files): its manifest read and checked
    /// here (with ``verify_with=``, its signer). Arguments as :func:`decrypt_tree`. An armored
    /// age tree is refused (:class:`UsageError`): it is read on one process.
    #[staticmethod]
    #[pyo3(signature = (src, dst, *, key = None, password = None, identities = None, verify_with = None, overwrite = false, threads = None, provider = None, upload_concurrency = None, download_concurrency = None, retries = None, min_generation = None))]
    #[allow(clippy::too_many_arguments)]
    fn decrypt<'py>(
        py: Python<'py>,
        src: PathBuf,
        dst: PathBuf,
        key: Option<&Bound<'py, PyAny>>,
        password: Option<&Bound<'py, PyAny>>,
        identities: Option<&Bound<'py, PyAny>>,
        verify_with: Option<PathBuf>,
        overwrite: bool,
        threads: Option<i64>,
        provider: Option<&str>,
        upload_concurrency: Option<i64>,
        download_concurrency: Option<i64>,
        retries: Option<i64>,
        min_generation: Option<u64>,
    ) -> PyResult<Self> {
        let store = StoreKeywords {
            upload_concurrency,
            download_concurrency,
            retries,
        };
        let request = decrypt_request(key, password, identities, verify_with)?;
        let tree_options = tree::Options {
            min_generation,
            ..write_options(overwrite)
        };
        let driver = paracrypt_core::request::Driver::Distributed;
        let plan = run_core(py, (threads, provider, None), |runner| {
            Ok(match prefix_run(false, &src, &dst, &tree_options, store)? {
                Some(PrefixRun::Decrypt(run)) => {
                    run.plan(runner, &request, &dst, &tree_options, driver)?
                }
                Some(PrefixRun::Encrypt(_)) => unreachable!("a decryption's run"),
                None => tree::open_plan(runner, &request, &src, &dst, &tree_options, driver)?,
            })
        })?;
        let opened = tree::Opened::new(&plan);
        Ok(TreeJob {
            files: plan.files(),
            state: std::sync::Mutex::new(Some(Job::Open(plan, opened))),
            provider: provider.map(str::to_owned),
        })
    }

    /// How many files the tasks run (an update's unchanged files are not among them).
    #[getter]
    fn files(&self) -> usize {
        self.files
    }

    /// The files cut into tasks ``(first, end)``, in the tree's order: consecutive small files
    /// together (up to 1024 files and 64 MiB), a large file alone, and at least ``at_least``
    /// tasks (the workers) when there are as many files; every file in exactly one.
    #[pyo3(signature = (at_least = 1))]
    fn tasks(&self, at_least: usize) -> PyResult<Vec<(usize, usize)>> {
        self.with(|job| {
            let cut = match job {
                Job::Seal(plan, _) => plan.tasks(at_least),
                Job::Open(plan, _) => plan.tasks(at_least),
            };
            Ok(cut.iter().map(|r| (r.start, r.end)).collect())
        })
    }

    /// The bytes of the task of files ``part`` (a secret: see the class), for
    /// :func:`run_tree_task`. Each file's header is made (an encryption) or read and opened (a
    /// decryption) here.
    fn task<'py>(&self, py: Python<'py>, part: (usize, usize)) -> PyResult<Bound<'py, PyBytes>> {
        let part = self.part(part)?;
        let bytes = py.detach(|| {
            self.with(|job| match job {
                Job::Seal(plan, _) => {
                    let task = plan.task(part).map_err(Failure::Core)?;
                    Ok(task.to_bytes().map_err(Failure::Core)?)
                }
                Job::Open(plan, _) => Ok(plan.task(part).map_err(Failure::Core)?.to_bytes()),
            })
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Takes what :func:`run_tree_task` returned for one task. An encryption then writes a
    /// checkpoint when one is due, as a local run and rank 0 of an MPI run do: the manifest of
    /// the files done so far, marked incomplete, after the first task and then at most a tenth
    /// of the job's time, so that a client that dies before ``finish()`` leaves a tree that
    /// ``update=True`` goes on from.
    fn add(&self, py: Python<'_>, result: &[u8]) -> PyResult<()> {
        let result = tree::TaskResult::from_bytes(result).map_err(Failure::Core)?;
        let options = Options::new(Some(1), self.provider.as_deref(), None)?;
        let runner = options.runner();
        self.with(|job| match job {
            Job::Seal(plan, sealed) => {
                sealed.add(plan, result).map_err(Failure::Core)?;
                options.run(py, || {
                    sealed.checkpoint(plan, &runner);
                    Ok(())
                })
            }
            Job::Open(plan, opened) => Ok(opened.add(plan, result).map_err(Failure::Core)?),
        })
    }

    /// A task that returned nothing (its worker died, it was cancelled): each of the files of
    /// ``part`` not yet done failed with ``why``.
    fn lost(&self, part: (usize, usize), why: &str) -> PyResult<()> {
        let part = self.part(part)?;
        self.with(|job| {
            match job {
                Job::Seal(plan, sealed) => sealed.lost(plan, part, why),
                Job::Open(plan, opened) => opened.lost(plan, part, why),
            }
            Ok(())
        })
    }

    /// Finishes the job and returns the dict :func:`encrypt_tree` or :func:`decrypt_tree`
    /// returns: an encryption writes the manifest of what the tasks sealed, a decryption makes
    /// the links and gives the directories their modes and times. A tree done in part raises
    /// :class:`IncompleteTreeError`, one of which nothing was done the first failure (the
    /// directories the plan made are removed, and an encryption writes no manifest).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Some(job) = self.state.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return Ok(crate::errors::usage("the tree job is already finished")?);
        };
        let options = Options::new(Some(1), self.provider.as_deref(), None)?;
        let runner = options.runner();
        match job {
            Job::Seal(plan, sealed) => {
                let summary = options.run(py, || Ok(plan.finish(&runner, sealed)))?;
                finish(py, summary, true)
            }
            Job::Open(plan, opened) => {
                let summary = options.run(py, || Ok(plan.finish(opened)))?;
                finish(py, summary, false)
            }
        }
    }

    fn __repr__(&self) -> String {
        format!("TreeJob({} files)", self.files)
    }
}

/// run_tree_task(
///     task: bytes,
///     *,
///     threads: int | None = None,
///     upload_concurrency: int | None = None,
///     download_concurrency: int | None = None,
///     retries: int | None = None,
/// ) -> bytes
///
/// Runs one task of a :class:`TreeJob` (its bytes, from ``job.task(part)``) on this process,
/// with ``threads`` threads (default 1), without the GIL: an encryption's task seals its
/// files (into a prefix in object storage when the job's ``dst`` is one: opened here, with
/// this process's ``AWS_*`` credentials), a decryption's decrypts and checks them (read from a
/// prefix when the job's ``src`` is one, likewise, at the versions the job listed).
/// ``upload_concurrency=``, ``download_concurrency=`` and ``retries=`` are the store's options
/// for such a task, as :func:`encrypt_tree` takes them (give a task the job's). Returns the
/// bytes ``job.add`` takes: each file done, or why it failed. A file that fails does not stop
/// the others and raises nothing here: ``job.finish()`` reports it, naming it. Bytes that are
/// not a task, and store options out of their bounds, raise :class:`UsageError`.
#[pyfunction]
#[pyo3(signature = (task, *, threads = None, upload_concurrency = None, download_concurrency = None, retries = None))]
pub fn run_tree_task<'py>(
    py: Python<'py>,
    task: &[u8],
    threads: Option<i64>,
    upload_concurrency: Option<i64>,
    download_concurrency: Option<i64>,
    retries: Option<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let threads = crate::options::threads(Some(threads.unwrap_or(1)))?;
    let runner = paracrypt_core::Runner::new();
    let store = StoreKeywords {
        upload_concurrency,
        download_concurrency,
        retries,
    };
    // A task into or from a prefix opens it here, with this process's credentials (`AWS_*`).
    #[cfg(feature = "store")]
    let store = store.options()?;
    #[cfg(feature = "store")]
    let run = || Ok(paracrypt_store::run_task(&runner, task, store, None)?);
    #[cfg(not(feature = "store"))]
    let _ = store;
    #[cfg(not(feature = "store"))]
    let run = || Ok(tree::run_task(&runner, task)?);
    let result = crate::options::detached(py, threads, run)?;
    Ok(PyBytes::new(py, &result.to_bytes()))
}
