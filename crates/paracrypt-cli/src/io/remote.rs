//! Objects as inputs and outputs: `s3://bucket/key` (and `gs://`, `az://`; `http(s)://` to
//! read), wherever a command takes INPUT or OUTPUT, through `paracrypt-store` (the `s3`
//! feature, on by default).
//!
//! An input object is read with ranged GETs (positional, reading ahead: see
//! `paracrypt_store::ObjectSource`); an output object is one multipart upload that only the
//! final complete request makes visible. It is aborted on any failure, and on SIGINT, SIGTERM
//! and SIGHUP through [`crate::interrupt`], so that neither an object nor a dangling upload is
//! left. Outputs keep the local rules: an existing object is refused without `--force`, and an
//! output that is the input object is refused.

use std::sync::OnceLock;

use clap::Args;

/// The options of object storage, global to every command. Their defaults and bounds are the
/// store's (`paracrypt_store::DEFAULT_*`, `MAX_*`, which Python's keywords take too); a build
/// without object storage has none of them.
#[derive(Clone, Copy, Debug, Args)]
pub struct StoreFlags {
    /// Parts of an output object uploaded at once, among all its files for a tree (each part
    /// is at least 8 MiB: memory is about (N + 1) × 8 MiB).
    #[cfg(feature = "s3")]
    #[arg(long, global = true, value_name = "N", help_heading = crate::flags::heading::STORAGE, hide_short_help = true, default_value_t = paracrypt_store::DEFAULT_UPLOAD_CONCURRENCY as u32, value_parser = clap::value_parser!(u32).range(1..=paracrypt_store::MAX_CONCURRENCY as i64))]
    pub upload_concurrency: u32,
    /// Ranged GETs of an input object in flight (8 MiB each).
    #[cfg(feature = "s3")]
    #[arg(long, global = true, value_name = "N", help_heading = crate::flags::heading::STORAGE, hide_short_help = true, default_value_t = paracrypt_store::DEFAULT_DOWNLOAD_CONCURRENCY as u32, value_parser = clap::value_parser!(u32).range(1..=paracrypt_store::MAX_CONCURRENCY as i64))]
    pub download_concurrency: u32,
    /// Retries of a failed request (unreachable server, 5xx answers such as 503 SlowDown),
    /// with exponential backoff from 0.1 s up to 15 s between tries.
    #[cfg(feature = "s3")]
    #[arg(long, global = true, value_name = "N", help_heading = crate::flags::heading::STORAGE, hide_short_help = true, default_value_t = paracrypt_store::DEFAULT_RETRIES as u32, value_parser = clap::value_parser!(u32).range(0..=paracrypt_store::MAX_RETRIES as i64))]
    pub retries: u32,
}

static FLAGS: OnceLock<StoreFlags> = OnceLock::new();

/// Sets the options every object is opened with (once, from `main`).
pub fn configure(flags: StoreFlags) {
    let _ = FLAGS.set(flags);
}

/// The schemes an object URL may have. `http(s)` is read-only.
const SCHEMES: [&str; 9] = [
    "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http://", "https://",
];

/// Whether `path` names an object rather than a local file (`./s3://x` is a local file).
pub fn is_url(path: &std::path::Path) -> bool {
    path.to_str()
        .is_some_and(|text| SCHEMES.iter().any(|scheme| text.starts_with(scheme)))
}

#[cfg(feature = "s3")]
pub use imp::*;

#[cfg(not(feature = "s3"))]
pub use stub::*;

#[cfg(feature = "s3")]
mod imp {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::path::{Path, PathBuf};

    use anyhow::Result;
    pub use paracrypt_store::PrefixRun;
    use paracrypt_store::{Object, ObjectReader, ObjectSource, Options, PartWriter, Upload};

    use super::FLAGS;
    use crate::exit::usage;
    use crate::interrupt::pending;
    use crate::io::OutputPolicy;

    /// What [`RemoteInput::front`] fetches at once: the whole header of nearly every file in
    /// one GET.
    const FRONT: u64 = 16 << 10;

    fn options() -> Options {
        let flags = FLAGS.get().copied();
        let mut options = Options::default();
        if let Some(flags) = flags {
            options.upload_concurrency = flags.upload_concurrency as usize;
            options.download_concurrency = flags.download_concurrency as usize;
            options.retries = flags.retries as usize;
        }
        options
    }

    /// Opens the object `path` names with the command's options (no request yet).
    pub fn open_object(path: &Path) -> Result<Object> {
        let url = path.to_str().expect("a URL is UTF-8");
        match Object::open(url, options()) {
            Ok(object) => Ok(object),
            Err(e) => usage(e.to_string()),
        }
    }

    /// Told of a tree's multipart uploads: each is aborted if the process is interrupted.
    struct TreeUploads;

    impl paracrypt_store::UploadWatch for TreeUploads {
        fn start(
            &self,
            start: &mut dyn FnMut() -> Option<paracrypt_store::Aborter>,
        ) -> Option<u64> {
            crate::interrupt::making(|| {
                let aborter = start()?;
                Some(pending().add_abort(Box::new(move || {
                    let _ = aborter.abort();
                })))
            })
        }

        fn ended(&self, id: u64) {
            pending().forget_abort(id);
        }
    }

    /// The tree run from `input` to `output` when either is a prefix, checked and opened by
    /// `paracrypt_store::prefix_run` (what a prefix may do is decided there, for every front
    /// end) with the command's options, its uploads aborted on an interrupt.
    pub fn prefix_run(
        encrypting: bool,
        input: &Path,
        output: &Path,
        tree_options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<Option<paracrypt_store::PrefixRun>> {
        paracrypt_store::prefix_run(
            encrypting,
            input,
            output,
            tree_options,
            options(),
            Some(std::sync::Arc::new(TreeUploads)),
        )
    }

    /// The rekey from `input` to `output` when either is a prefix, checked and opened by
    /// `paracrypt_store::prefix_rekey` (the refusals that need no credential, for every front
    /// end) with the command's options, its uploads aborted on an interrupt.
    pub fn prefix_rekey(
        input: &Path,
        output: &Path,
        tree_options: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<Option<paracrypt_store::Rekeying>> {
        paracrypt_store::prefix_rekey(
            input,
            output,
            tree_options,
            options(),
            Some(std::sync::Arc::new(TreeUploads)),
        )
    }

    /// A task of a tree's encryption with a prefix on either side, run on this process (an MPI
    /// rank): its files read from the prefix with the command's options at the versions rank 0
    /// listed, or uploaded into the prefix (each upload aborted on an interrupt), telling
    /// `guard` of the temporary files of a local output. `None` when the prefix cannot be
    /// opened (rank 0 reports the task's files as lost).
    #[cfg(feature = "mpi")]
    pub fn seal_task_from(
        runner: &paracrypt_core::Runner,
        task: &paracrypt_core::tree::Task,
        guard: std::sync::Arc<dyn paracrypt_core::tree::Guard>,
    ) -> Option<paracrypt_core::tree::TaskResult> {
        paracrypt_store::seal_task_from(
            runner,
            task,
            options(),
            guard,
            Some(std::sync::Arc::new(TreeUploads)),
        )
        .ok()
    }

    /// A task of a tree's decryption with a prefix on either side, run on this process (an
    /// MPI rank): its files read from the prefix with the command's options at the versions
    /// rank 0 listed, telling `guard` of its temporary files, or uploaded into the prefix, each
    /// upload aborted on an interrupt. `None` when the prefix cannot be opened (rank 0 reports
    /// the task's files as lost).
    #[cfg(feature = "mpi")]
    pub fn open_task_from(
        runner: &paracrypt_core::Runner,
        task: &paracrypt_core::tree::OpenTask,
        guard: std::sync::Arc<dyn paracrypt_core::tree::Guard>,
    ) -> Option<paracrypt_core::tree::TaskResult> {
        paracrypt_store::open_task_from(
            runner,
            task,
            options(),
            guard,
            Some(std::sync::Arc::new(TreeUploads)),
        )
        .ok()
    }

    /// The prefix `path` names as a plaintext tree (to sign or check), listed now.
    pub fn plain_input(path: &Path) -> Result<Box<dyn paracrypt_core::tree::PlainInput>> {
        let url = path.to_str().expect("a URL is UTF-8");
        Ok(Box::new(paracrypt_store::plain_input(url, options())?))
    }

    /// The prefix `path` names as an encrypted tree's input, listed now.
    pub fn tree_input(path: &Path) -> Result<std::sync::Arc<dyn paracrypt_core::tree::TreeInput>> {
        let url = path.to_str().expect("a URL is UTF-8");
        Ok(std::sync::Arc::new(paracrypt_store::prefix_input(
            url,
            options(),
        )?))
    }

    /// An input object: its length and ETag from a HEAD request, read with ranged GETs.
    pub struct RemoteInput {
        source: ObjectSource,
        path: PathBuf,
        front: Vec<u8>,
    }

    impl std::fmt::Debug for RemoteInput {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("RemoteInput")
                .field("path", &self.path)
                .finish()
        }
    }

    impl RemoteInput {
        /// Opens the object `path` names: a HEAD request (a missing object fails here).
        pub fn open(path: &Path) -> Result<Self> {
            let object = open_object(path)?;
            let meta = object.meta()?;
            Ok(RemoteInput {
                source: ObjectSource::new(&object, meta),
                path: path.to_path_buf(),
                front: Vec::new(),
            })
        }

        /// The URL, as a path (for messages and the input-is-output check).
        pub fn path(&self) -> &Path {
            &self.path
        }

        /// The object's length.
        pub fn len(&self) -> u64 {
            self.source.len()
        }

        /// The positional source.
        pub fn source(&self) -> &ObjectSource {
            &self.source
        }

        /// The object's first `len` bytes (fewer if it is shorter), from one GET of up to
        /// 16 KiB kept for [`RemoteInput::header`].
        pub fn front(&mut self, len: usize) -> Result<Vec<u8>> {
            if self.front.is_empty() && self.len() > 0 {
                let want = FRONT.min(self.len());
                self.front = vec![0; want as usize];
                self.source
                    .head_reader()
                    .read_exact(&mut self.front)
                    .map_err(anyhow::Error::from)?;
            }
            Ok(self.front[..len.min(self.front.len())].to_vec())
        }

        /// A reader from the start for a recipe's header: the bytes [`RemoteInput::front`]
        /// fetched, then one GET per 16 KiB as far as the header goes.
        pub fn header(&self) -> impl BufRead + '_ {
            let rest = self.source.head_reader_at(self.front.len() as u64);
            BufReader::with_capacity(FRONT as usize, (&self.front[..]).chain(rest))
        }

        /// A sequential reader over the whole object, reading ahead.
        pub fn reader(&self) -> ObjectReader<'_> {
            self.source.reader(0)
        }
    }

    /// An output object, checked but not created.
    #[derive(Debug)]
    pub struct RemoteTarget {
        object: Object,
        force: bool,
    }

    impl RemoteTarget {
        /// Checks the output object `path` against the input and the policy: the input object
        /// itself is refused (unless `in_place`), and so is an existing object without
        /// `--force`.
        pub fn new(
            path: &Path,
            input: &Path,
            policy: OutputPolicy,
            in_place: bool,
        ) -> Result<Self> {
            let object = open_object(path)?;
            if !object.writable() {
                return usage(format!(
                    "cannot write {}: http(s):// URLs are read-only",
                    path.display()
                ));
            }
            let same = input == path;
            if same && !in_place {
                return usage(format!(
                    "output {} is the input object; choose another output",
                    path.display()
                ));
            }
            let force = policy.force || same;
            if !force && object.exists()? {
                return Err(paracrypt_core::Error::OutputExists(path.display().to_string()).into());
            }
            Ok(RemoteTarget { object, force })
        }

        /// Starts the multipart upload, aborted if the process is interrupted.
        pub fn create(self) -> Result<RemoteOutput> {
            // One step to the interrupt handler: an upload it does not abort is never started.
            let (upload, registration) = crate::interrupt::making(|| {
                let upload = Upload::create(&self.object, self.force)?;
                let aborter = upload.aborter();
                let registration = pending().add_abort(Box::new(move || {
                    let _ = aborter.abort();
                }));
                Ok::<_, paracrypt_store::Error>((upload, registration))
            })?;
            Ok(RemoteOutput {
                writer: Some(PartWriter::new(upload)),
                parts: None,
                registration,
            })
        }
    }

    /// An output object being uploaded. Dropped without [`RemoteOutput::commit`], the upload
    /// is aborted: no object, no parts left.
    #[derive(Debug)]
    pub struct RemoteOutput {
        writer: Option<PartWriter>,
        /// Set when the parts were uploaded from a plan ([`RemoteOutput::planned`]).
        parts: Option<usize>,
        registration: u64,
    }

    impl RemoteOutput {
        /// The upload, for parts computed from a plan; `count` parts make the object.
        pub fn planned(&mut self, count: usize) -> &Upload {
            self.parts = Some(count);
            self.writer.as_ref().expect("not committed").upload()
        }

        /// The upload, for parts computed from a plan here or elsewhere (an MPI rank);
        /// [`RemoteOutput::commit_parts`] completes it.
        #[cfg(feature = "mpi")]
        pub fn upload(&self) -> &Upload {
            self.writer.as_ref().expect("not committed").upload()
        }

        /// Completes the upload: the object appears now, or never.
        pub fn commit(self) -> Result<()> {
            self.commit_with(&[])
        }

        /// Completes the upload of `count` parts, those another process uploaded given by
        /// index in `others` (their ids): the object appears now, or never.
        #[cfg(feature = "mpi")]
        pub fn commit_parts(mut self, count: usize, others: &[Option<String>]) -> Result<()> {
            self.parts = Some(count);
            self.commit_with(others)
        }

        fn commit_with(mut self, others: &[Option<String>]) -> Result<()> {
            let writer = self.writer.take().expect("committed once");
            // Parts still in flight are waited for outside the cleanup lock, so that an
            // interrupt meanwhile still aborts at once; the complete request runs under it.
            writer.upload().wait()?;
            let mut pending = pending();
            let result = match self.parts {
                Some(count) => writer.into_upload().complete(count, others),
                None => writer.finish(),
            };
            pending.forget_abort(self.registration);
            Ok(result?)
        }
    }

    impl Write for RemoteOutput {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.writer.as_mut().expect("not committed").write(data)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Drop for RemoteOutput {
        fn drop(&mut self) {
            if let Some(writer) = self.writer.take() {
                // Aborts the upload (after its parts in flight), then stops watching it.
                let upload = writer.into_upload();
                let (url, id) = (upload.object().url().to_string(), upload.id().to_string());
                if let Err(e) = upload.abort() {
                    crate::exit::warn(format!(
                        "the multipart upload of {url} (upload id {id}) could not be aborted \
                         ({e}): its parts stay stored until it is aborted or a lifecycle rule \
                         (AbortIncompleteMultipartUpload) removes them"
                    ));
                }
                pending().forget_abort(self.registration);
            }
        }
    }
}

#[cfg(not(feature = "s3"))]
mod stub {
    use std::io::{BufRead, Read, Write};
    use std::path::Path;

    use anyhow::Result;

    use crate::exit::usage;
    use crate::io::OutputPolicy;

    const NOT_BUILT: &str = "object storage URLs (s3://, gs://, az://, http(s)://) need \
        paracrypt built with its default `s3` feature";

    /// A prefix run this build cannot make: no object storage.
    #[allow(dead_code)] // never made: the callers match it as they match the store's
    pub enum PrefixRun {
        Encrypt(Encryption),
        Decrypt(Decryption),
    }

    /// An encryption with a prefix on one side, which this build cannot make.
    #[derive(Debug)]
    pub struct Encryption(());

    impl Encryption {
        /// Never called: never made.
        #[cfg(feature = "mpi")]
        pub fn output(&self) -> Option<std::sync::Arc<dyn paracrypt_core::tree::TreeOutput>> {
            unreachable!("this build makes no prefix run")
        }

        /// Never called: never made.
        #[cfg(feature = "mpi")]
        pub fn reads_prefix(&self) -> bool {
            unreachable!("this build makes no prefix run")
        }

        /// Never called: never made.
        #[cfg(feature = "mpi")]
        pub fn plan(
            &self,
            _: &paracrypt_core::Runner,
            _: &paracrypt_core::request::Request,
            _: &Path,
            _: &Path,
            _: &paracrypt_core::tree::Options,
        ) -> paracrypt_core::Result<paracrypt_core::tree::Plan> {
            unreachable!("this build makes no prefix run")
        }

        /// Never called: never made.
        pub fn run(
            &self,
            _: &paracrypt_core::Runner,
            _: &paracrypt_core::request::Request,
            _: &Path,
            _: &Path,
            _: &paracrypt_core::tree::Options,
        ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
            unreachable!("this build makes no prefix run")
        }
    }

    /// A decryption with a prefix on one side, which this build cannot make.
    #[derive(Debug)]
    pub struct Decryption(());

    impl Decryption {
        /// Never called: never made.
        #[cfg(feature = "mpi")]
        pub fn plan(
            &self,
            _: &paracrypt_core::Runner,
            _: &paracrypt_core::request::Request,
            _: &Path,
            _: &paracrypt_core::tree::Options,
            _: paracrypt_core::request::Driver,
        ) -> paracrypt_core::Result<paracrypt_core::tree::OpenPlan> {
            unreachable!("this build makes no prefix run")
        }

        /// Never called: never made.
        pub fn run(
            &self,
            _: &paracrypt_core::Runner,
            _: &paracrypt_core::request::Request,
            _: &Path,
            _: &paracrypt_core::tree::Options,
        ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
            unreachable!("this build makes no prefix run")
        }
    }

    /// A rekey with a prefix on one side, which this build cannot make.
    #[derive(Debug)]
    pub struct Rekeying(());

    impl Rekeying {
        /// Never called: never made.
        pub fn run(
            &self,
            _: &paracrypt_core::Runner,
            _: &paracrypt_core::request::Request,
            _: &paracrypt_core::tree::RekeyTo,
            _: &Path,
            _: &paracrypt_core::tree::Options,
        ) -> paracrypt_core::Result<paracrypt_core::tree::Summary> {
            unreachable!("this build makes no prefix run")
        }
    }

    /// Refuses any prefix: this build has no object storage.
    pub fn prefix_rekey(
        input: &Path,
        output: &Path,
        _: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<Option<Rekeying>> {
        if super::is_url(input) || super::is_url(output) {
            return Err(paracrypt_core::Error::Request(NOT_BUILT.into()));
        }
        Ok(None)
    }

    /// Refuses any prefix: this build has no object storage.
    pub fn prefix_run(
        _: bool,
        input: &Path,
        output: &Path,
        _: &paracrypt_core::tree::Options,
    ) -> paracrypt_core::Result<Option<PrefixRun>> {
        if super::is_url(input) || super::is_url(output) {
            return Err(paracrypt_core::Error::Request(NOT_BUILT.into()));
        }
        Ok(None)
    }

    /// Never run: this build makes no task into a prefix.
    #[cfg(feature = "mpi")]
    pub fn seal_task_from(
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::tree::Task,
        _: std::sync::Arc<dyn paracrypt_core::tree::Guard>,
    ) -> Option<paracrypt_core::tree::TaskResult> {
        None
    }

    /// Never run: this build makes no task from a prefix.
    #[cfg(feature = "mpi")]
    pub fn open_task_from(
        _: &paracrypt_core::Runner,
        _: &paracrypt_core::tree::OpenTask,
        _: std::sync::Arc<dyn paracrypt_core::tree::Guard>,
    ) -> Option<paracrypt_core::tree::TaskResult> {
        None
    }

    /// Never called: this build has no object storage.
    pub fn plain_input(_: &Path) -> Result<Box<dyn paracrypt_core::tree::PlainInput>> {
        usage(NOT_BUILT)
    }

    /// Never called: this build has no object storage.
    pub fn tree_input(_: &Path) -> Result<std::sync::Arc<dyn paracrypt_core::tree::TreeInput>> {
        usage(NOT_BUILT)
    }

    /// Never made: this build has no object storage.
    #[derive(Debug)]
    pub enum RemoteInput {}

    impl RemoteInput {
        pub fn open(_: &Path) -> Result<Self> {
            usage(NOT_BUILT)
        }
        pub fn path(&self) -> &Path {
            match *self {}
        }
        pub fn len(&self) -> u64 {
            match *self {}
        }
        pub fn front(&mut self, _: usize) -> Result<Vec<u8>> {
            match *self {}
        }
        pub fn source(&self) -> &dyn paracrypt_core::engine::Source {
            match *self {}
        }
        pub fn header(&self) -> std::io::Empty {
            match *self {}
        }
        pub fn reader(&self) -> std::io::Empty {
            match *self {}
        }
    }

    /// Never made: this build has no object storage.
    #[derive(Debug)]
    pub enum RemoteTarget {}

    impl RemoteTarget {
        pub fn new(_: &Path, _: &Path, _: OutputPolicy, _: bool) -> Result<Self> {
            usage(NOT_BUILT)
        }
        pub fn create(self) -> Result<RemoteOutput> {
            match self {}
        }
    }

    /// Never made: this build has no object storage.
    #[derive(Debug)]
    pub enum RemoteOutput {}

    impl RemoteOutput {
        pub fn commit(self) -> Result<()> {
            match self {}
        }
    }

    impl Write for RemoteOutput {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            match *self {}
        }
        fn flush(&mut self) -> std::io::Result<()> {
            match *self {}
        }
    }

    #[allow(dead_code)]
    fn _unused(_: &dyn BufRead, _: &dyn Read) {}
}
