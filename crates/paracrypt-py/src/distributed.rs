//! `DistributedJob`: one file's job, cut into runs of chunks that other processes compute (Dask
//! tasks in `paracrypt.dask`, or any scheduler's). The request is resolved once, for
//! [`Driver::Distributed`], and its job made with
//! [`Recipe::first_job`](paracrypt_core::Recipe::first_job) (the header is made or read there);
//! each process makes the job again with [`share::job`] from the header and its
//! [shared key](paracrypt_core::engine::Job::shared_key) (the keys derived for this one file),
//! checks that its input is the one the job was made for ([`InputId`]), and writes its run of
//! chunks with [`engine::run`] at its offsets in one shared file, which is committed only once
//! every run succeeded.

use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use paracrypt_core::engine::{self, Job};
use paracrypt_core::provider::Provider;
use paracrypt_core::request::share::{self, InputId};
use paracrypt_core::request::{self, Driver, Request};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use zeroize::Zeroizing;

use crate::api::{decrypt_request, encrypt_request};
use crate::drive::{open_input, warn};
use crate::errors::{Failure, usage};
use crate::options::{detached, provider, threads};
use crate::output::Staged;
use crate::secrets::{read_sign_file, signing_key};

/// One file's encryption or decryption, planned once and run in parts by other processes, with
/// the same bytes as one process (``paracrypt encrypt -j1`` with the same header).
///
/// ``DistributedJob.encrypt(src, …)`` or ``DistributedJob.decrypt(src, …)`` makes the header
/// (or reads and checks it) once, on the coordinating process, for that one input: the job
/// records which file ``src`` is (its inode, length, modification and change times).
/// ``job.parts(n)`` cuts the chunks into ``n`` runs; ``job.stage(dst)`` creates the output as
/// a temporary file beside ``dst`` with the header in place; each process runs its parts with
/// ``job.run(src, staged.path, part)``, writing them at their offsets; and
/// ``staged.commit(end)`` puts the file at ``dst`` once every part succeeded (``end``: what
/// the part with the last chunk returned). ``staged.discard()`` (or dropping it) removes the
/// temporary file. :mod:`paracrypt.dask` does all of this with Dask; Ray, Spark or a script of
/// one's own can do the same. ``src`` and the staged file must be on a filesystem every
/// process sees.
///
/// A job seals one input: ``run`` refuses another file (:class:`UsageError`), and an input
/// that grew, shrank or was rewritten since the job was made (:class:`DataError`), before and
/// after it reads its part; ``commit`` checks once more. Running a part again on the same input
/// is fine (it writes the same bytes). An encryption is committed once: ``stage`` refuses a job
/// whose output was committed (:class:`UsageError`; make a new job to encrypt the file again).
/// The job pickles as its header and the keys derived for this one file — never the key file,
/// password or identities it was made with — plus, with ``sign=``, the signing key (each
/// process signs the chunks it seals): treat a pickle as a secret, and send it over an
/// encrypted connection (Dask's TLS: ``security=``). Armored age files are read and written in
/// order, never in parts.
#[pyclass(module = "paracrypt", frozen)]
pub struct DistributedJob {
    /// Whether the job seals (else it opens).
    encrypting: bool,
    src: PathBuf,
    /// The input the job was made for.
    input: InputId,
    header: Vec<u8>,
    /// The keys derived for this one file: what another process makes the job with.
    shared_key: Zeroizing<Vec<u8>>,
    provider: Provider,
    job: Job,
    /// `sign=`: the signing key file's contents, which another process signs its chunks with.
    signer_file: Option<Zeroizing<Vec<u8>>>,
    /// Whether an output of this job was committed (set by [`StagedOutput::commit`]).
    committed: Arc<AtomicBool>,
}

impl DistributedJob {
    fn first(
        py: Python<'_>,
        request: Request,
        src: PathBuf,
        provider_name: Option<&str>,
        signer_file: Option<Zeroizing<Vec<u8>>>,
    ) -> PyResult<Self> {
        warn(py, &request)?;
        let provider = provider(provider_name)?;
        let (job, input) = detached(py, 1, || {
            let file = open_input(&src)?;
            let input = InputId::of(&file)?;
            let resolved = request.resolve(&request::head_of(&file)?, Driver::Distributed)?;
            let job = resolved.recipe().first_job(
                &mut BufReader::new(&file),
                Some(input.len()),
                provider,
            )?;
            // The job was made from what was read: the same file, unchanged since.
            input.check(&file)?;
            Ok((job, input))
        })?;
        let shared_key = Zeroizing::new(
            job.shared_key()
                .expect("container and age jobs share their derived keys")
                .to_vec(),
        );
        Ok(DistributedJob {
            encrypting: request.encrypts(),
            src,
            input,
            header: job.header().to_vec(),
            shared_key,
            provider,
            job,
            signer_file,
            committed: Arc::default(),
        })
    }

    fn plan(&self) -> &paracrypt_core::plan::ChunkPlan {
        self.job.plan().expect("made with the input's length")
    }
}

#[pymethods]
impl DistributedJob {
    /// The encryption of the file ``src``, its header made here (a fresh salt, or file key).
    /// Arguments as :func:`paracrypt.encrypt_file` (``armor=True`` is not distributed). With
    /// ``sign=`` the pickle holds the signing key file's contents too.
    #[staticmethod]
    #[pyo3(signature = (src, *, key = None, password = None, recipients = None, format = "paracrypt", cipher = None, chunk_size = None, provider = None, sign = None))]
    #[allow(clippy::too_many_arguments)]
    fn encrypt(
        py: Python<'_>,
        src: PathBuf,
        key: Option<&Bound<'_, PyAny>>,
        password: Option<&Bound<'_, PyAny>>,
        recipients: Option<&Bound<'_, PyAny>>,
        format: &str,
        cipher: Option<&str>,
        chunk_size: Option<&Bound<'_, PyAny>>,
        provider: Option<&str>,
        sign: Option<PathBuf>,
    ) -> PyResult<Self> {
        let signer_file = sign.as_deref().map(read_sign_file).transpose()?;
        let request = encrypt_request(
            key, password, recipients, format, false, cipher, chunk_size, sign,
        )?;
        Self::first(py, request, src, provider, signer_file)
    }

    /// The decryption of the file ``src`` (a container or a binary age file), its header read
    /// and checked here: a wrong key fails now, before any output, and so does a signer other
    /// than ``verify_with=`` (:class:`paracrypt.SignatureError`).
    #[staticmethod]
    #[pyo3(signature = (src, *, key = None, password = None, identities = None, verify_with = None, provider = None))]
    #[allow(clippy::too_many_arguments)]
    fn decrypt(
        py: Python<'_>,
        src: PathBuf,
        key: Option<&Bound<'_, PyAny>>,
        password: Option<&Bound<'_, PyAny>>,
        identities: Option<&Bound<'_, PyAny>>,
        verify_with: Option<PathBuf>,
        provider: Option<&str>,
    ) -> PyResult<Self> {
        let request = decrypt_request(key, password, identities, verify_with)?;
        Self::first(py, request, src, provider, None)
    }

    /// How many chunks the job has.
    #[getter]
    fn chunks(&self) -> u64 {
        self.plan().len()
    }

    /// The input's length in bytes.
    #[getter]
    fn input_len(&self) -> u64 {
        self.input.len()
    }

    /// The header the job was made with (written at the front of the output when encrypting).
    #[getter]
    fn header<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.header)
    }

    /// The chunks cut into ``n`` contiguous runs ``(first, end)`` whose lengths differ by at
    /// most one chunk (fewer runs when there are fewer chunks): every chunk in exactly one.
    fn parts(&self, n: usize) -> PyResult<Vec<(u64, u64)>> {
        if n == 0 {
            return Ok(usage("parts(n) needs n >= 1")?);
        }
        let plan = self.plan();
        Ok((0..n)
            .map(|part| plan.block(part, n))
            .filter(|block| !block.is_empty())
            .map(|block| (block.start, block.end))
            .collect())
    }

    /// Creates the output: a temporary file beside ``dst`` with the output's header written
    /// (``dst`` itself is untouched until :meth:`StagedOutput.commit`). An existing ``dst`` is
    /// replaced only with ``overwrite=True``. An encryption whose output was committed is
    /// refused: its header's keystream has sealed the input once.
    #[pyo3(signature = (dst, *, overwrite = false))]
    fn stage(&self, py: Python<'_>, dst: PathBuf, overwrite: bool) -> PyResult<StagedOutput> {
        // A file rewritten within one tick of its clock keeps every time the job recorded:
        // a second encryption with this job could seal it under the first one's keystream.
        if self.encrypting && self.committed.load(Ordering::Acquire) {
            return Ok(usage(
                "this job's encryption was committed already: make a new job to encrypt the \
                 file again",
            )?);
        }
        let staged = detached(py, 1, || {
            let staged = Staged::create(&dst, overwrite, Some(&self.src))?;
            std::os::unix::fs::FileExt::write_all_at(staged.file(), self.job.output_header(), 0)
                .map_err(|e| Failure::Io(format!("writing {}", dst.display()), e))?;
            Ok(staged)
        })?;
        let path = staged.path().to_path_buf();
        Ok(StagedOutput {
            staged: Mutex::new(Some(staged)),
            path,
            src: self.src.clone(),
            input: self.input,
            committed: Arc::clone(&self.committed),
        })
    }

    /// Runs the chunks ``part`` (a ``(first, end)`` from :meth:`parts`) from ``src`` into the
    /// staged output ``dst`` (which must exist: it is never created here), at their offsets,
    /// with ``threads`` threads (default 1), without the GIL. ``src`` must be the file the job
    /// was made for, unchanged (checked before and after the part is read). Returns where the
    /// output ends when ``part`` holds the last chunk, else ``None``. A damaged chunk raises
    /// (the lowest one in the run); the staged file is then the caller's to discard.
    /// ``sync=True`` makes what this part wrote durable (``fdatasync``) before returning, as
    /// every MPI rank does with ``--sync``: on a network filesystem that is when the writes of
    /// one machine are on the server and their errors known; pair it with
    /// :meth:`StagedOutput.commit`'s ``sync=``.
    #[pyo3(signature = (src, dst, part, *, threads = None, sync = false))]
    fn run(
        &self,
        py: Python<'_>,
        src: PathBuf,
        dst: PathBuf,
        part: (u64, u64),
        threads: Option<i64>,
        sync: bool,
    ) -> PyResult<Option<u64>> {
        let (first, end) = part;
        if first >= end || end > self.plan().len() {
            return Ok(usage(format!(
                "part ({first}, {end}) is not a run of the job's {} chunks",
                self.plan().len()
            ))?);
        }
        let threads = self::threads(Some(threads.unwrap_or(1)))?;
        Ok(detached(py, threads, || {
            let input = open_input(&src)?;
            self.input.check(&input)?;
            let output = open_staged(&dst)?;
            let ends = engine::run(&self.job, first..end, &input, &output)
                .map_err(paracrypt_core::Error::from)?;
            // What was read is what the job was made for: nothing grew or changed meanwhile.
            self.input.check(&input)?;
            if sync {
                output
                    .sync_data()
                    .map_err(|e| Failure::Io(format!("syncing {}", dst.display()), e))?;
            }
            Ok(ends)
        })?)
    }

    /// Pickles as what makes the job again from its header (see the class's note on secrets).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let rebuild = py.get_type::<DistributedJob>().getattr("_from_pickle")?;
        let args = (
            self.encrypting,
            PyBytes::new(py, &self.header),
            PyBytes::new(py, &self.shared_key),
            PyBytes::new(py, &self.input.to_bytes()),
            self.provider.as_str(),
            self.src.clone(),
            self.signer_file.as_ref().map(|file| PyBytes::new(py, file)),
        );
        PyTuple::new(py, [rebuild, args.into_pyobject(py)?.into_any()])
    }

    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn _from_pickle(
        py: Python<'_>,
        encrypting: bool,
        header: Vec<u8>,
        shared_key: Vec<u8>,
        input: Vec<u8>,
        provider: &str,
        src: PathBuf,
        signer_file: Option<Vec<u8>>,
    ) -> PyResult<Self> {
        let shared_key = Zeroizing::new(shared_key);
        let signer_file = signer_file.map(Zeroizing::new);
        let signer = signer_file
            .as_deref()
            .map(|file| signing_key(file, Path::new("sign=")))
            .transpose()?;
        let input = InputId::from_bytes(&input)
            .ok_or_else(|| Failure::Usage("not a pickled DistributedJob".into()))?;
        let provider = self::provider(Some(provider))?;
        let job = detached(py, 1, || {
            Ok(share::job(
                encrypting,
                &header,
                &shared_key,
                signer.as_ref(),
                input.len(),
                provider,
            )?)
        })?;
        Ok(DistributedJob {
            encrypting,
            src,
            input,
            header,
            shared_key,
            provider,
            job,
            signer_file,
            committed: Arc::default(),
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "DistributedJob({} chunks, {} input bytes)",
            self.plan().len(),
            self.input.len()
        )
    }
}

/// The staged output, opened for positional writes (never created: a discarded one stays gone).
fn open_staged(dst: &Path) -> Result<File, Failure> {
    OpenOptions::new()
        .write(true)
        .open(dst)
        .map_err(|e| Failure::Io(format!("cannot write {}", dst.display()), e))
}

/// The output of a :class:`DistributedJob` while its parts run: a temporary file beside the
/// destination (``path``), which :meth:`commit` puts in its place and :meth:`discard` (or
/// garbage collection) removes.
#[pyclass(module = "paracrypt", frozen)]
pub struct StagedOutput {
    staged: Mutex<Option<Staged>>,
    path: PathBuf,
    /// The job's input, checked once more before the commit.
    src: PathBuf,
    input: InputId,
    /// The job's mark, set once this output is committed.
    committed: Arc<AtomicBool>,
}

impl StagedOutput {
    fn take(&self) -> Option<Staged> {
        self.staged.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

#[pymethods]
impl StagedOutput {
    /// The temporary file the parts write into.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Sets the output's length to ``end`` (what the part with the last chunk returned) and
    /// puts it at the destination, once the input is checked to be the one the job was made
    /// for, unchanged. Returns ``end``. As the CLI and :func:`paracrypt.encrypt_file`,
    /// the file is not flushed to disk unless ``sync=True`` (``fsync`` before the rename, as
    /// ``paracrypt encrypt --sync``: for jobs that delete the input afterwards).
    #[pyo3(signature = (end, *, sync = false))]
    fn commit(&self, py: Python<'_>, end: u64, sync: bool) -> PyResult<u64> {
        let Some(staged) = self.take() else {
            return Ok(usage("the output was already committed or discarded")?);
        };
        Ok(detached(py, 1, || {
            // The input is still the one every part read.
            self.input.check(&open_input(&self.src)?)?;
            let file = staged.file();
            file.set_len(end)
                .and_then(|()| if sync { file.sync_all() } else { Ok(()) })
                .map_err(|e| Failure::Io("finishing the output".into(), e))?;
            staged.commit()?;
            self.committed.store(true, Ordering::Release);
            Ok(end)
        })?)
    }

    /// Removes the temporary file (nothing is left at the destination). Does nothing once
    /// committed or discarded.
    fn discard(&self) {
        drop(self.take());
    }

    fn __repr__(&self) -> String {
        format!("StagedOutput({})", self.path.display())
    }
}
