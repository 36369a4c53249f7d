//! `DistributedJob`: one file's job, cut into runs of chunks that other processes compute (Dask
//! tasks in `paracrypt.dask`, or any scheduler's). It is the core's one mechanism for "a run of
//! chunks computed elsewhere", the one `paracrypt-mpi` runs on: the job is made once with
//! [`Recipe::first_job`] (the header is made or read there), cut with [`ChunkPlan::block`], made
//! again in each process with [`Recipe::job_from_header`] from the header and its
//! [shared key](paracrypt_core::engine::Job::shared_key), and each run of chunks is written
//! by [`engine::run`] at its offsets in one shared file, which is committed only once every
//! run succeeded.

use std::fs::{File, OpenOptions};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use paracrypt_core::container::Suite;
use paracrypt_core::engine::{self, Job};
use paracrypt_core::plan::ChunkSize;
use paracrypt_core::provider::Provider;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use zeroize::Zeroizing;

use crate::api::{decrypt_spec, encrypt_spec};
use crate::drive::open_input;
use crate::errors::{Failure, usage};
use crate::options::{detached, provider, threads};
use crate::output::Staged;
use crate::recipes::{Format, Spec};
use crate::secrets::{Credential, Identities, Key, read_sign_file, signing_key};

/// One file's encryption or decryption, planned once and run in parts by other processes, with
/// the same bytes as one process (``paracrypt encrypt -j1`` with the same header).
///
/// ``DistributedJob.encrypt(src, …)`` or ``DistributedJob.decrypt(src, …)`` makes the header
/// (or reads and checks it) once, on the coordinating process. ``job.parts(n)`` cuts the chunks
/// into ``n`` runs; ``job.stage(dst)`` creates the output as a temporary file beside ``dst``
/// with the header in place; each process runs its parts with ``job.run(src, staged.path,
/// part)``, writing them at their offsets (the job pickles: the pickle holds the header and
/// what rebuilds the job: the key, the password, or the file key, so treat it as a secret); and
/// ``staged.commit(end)`` puts the file at ``dst`` once every part succeeded (``end``: what the
/// part with the last chunk returned). ``staged.discard()`` (or dropping it) removes the
/// temporary file. :mod:`paracrypt.dask` does all of this with Dask; Ray, Spark or a script of
/// one's own can do the same. ``src`` and the staged file must be on a filesystem every process
/// sees. Armored age files are read and written in order, never in parts.
#[pyclass(module = "paracrypt", frozen)]
pub struct DistributedJob {
    /// What makes the job again in another process (its secret as little as suffices).
    worker: Spec,
    src: PathBuf,
    header: Vec<u8>,
    shared_key: Option<Zeroizing<Vec<u8>>>,
    input_len: u64,
    provider: Provider,
    job: Job,
    /// `sign=`: the signing key file's contents, which another process signs its chunks with.
    signer_file: Option<Zeroizing<Vec<u8>>>,
}

/// The secret another process needs: the shared key alone when the first job has one (a
/// fresh file key, or one a passphrase unwrapped), else the call's own key, password or
/// identities (never recipients: encrypting to them always shares the file key).
fn worker_credential(credential: &Credential, shared: bool) -> Credential {
    if shared {
        // With the file key given, the header needs no identities to open (nor recipients
        // to make again): empty identities stand for "the shared key".
        return Credential::Identities(Identities::empty());
    }
    credential.clone()
}

impl DistributedJob {
    fn first(
        py: Python<'_>,
        spec: Spec,
        src: PathBuf,
        provider_name: Option<&str>,
        signer_file: Option<Zeroizing<Vec<u8>>>,
    ) -> PyResult<Self> {
        spec.warn(py)?;
        let provider = provider(provider_name)?;
        let built = spec.build()?;
        let (job, input_len) = detached(py, 1, || {
            let input = open_input(&src)?;
            let len = input
                .metadata()
                .map_err(|e| Failure::Io(format!("cannot read {}", src.display()), e))?
                .len();
            let head = {
                let mut head = vec![0u8; paracrypt_core::agefile::DETECT_LEN];
                let n = std::os::unix::fs::FileExt::read_at(&input, &mut head, 0)
                    .map_err(|e| Failure::Io(format!("cannot read {}", src.display()), e))?;
                head.truncate(n);
                head
            };
            if built.in_order(&head) {
                return usage(
                    "armored age files are read and written in order: a distributed job \
                     takes the container or binary age files",
                );
            }
            let job = built
                .recipe()
                .first_job(&mut BufReader::new(&input), Some(len), provider)?;
            Ok((job, len))
        })?;
        let shared = job.shared_key().is_some();
        let worker = match &spec {
            Spec::Encrypt {
                credential,
                format,
                suite,
                chunk_size,
                signer,
                ..
            } => Spec::Encrypt {
                credential: worker_credential(credential, shared),
                format: *format,
                suite: *suite,
                chunk_size: *chunk_size,
                // The header carries the salt: workers draw none.
                salt: None,
                // The header names the signer: each process signs its chunks with its key.
                signer: signer.clone(),
            },
            // `verify_with=` was checked here on the header, which every process reuses: each
            // verifies its chunks against the signer that header names.
            Spec::Decrypt { credential, .. } => Spec::Decrypt {
                credential: worker_credential(credential, shared),
                expected: None,
            },
            Spec::Raw { .. } | Spec::RawPassword { .. } => {
                return Ok(usage(
                    "a distributed job encrypts or decrypts paracrypt and age files",
                )?);
            }
        };
        Ok(DistributedJob {
            worker,
            src,
            header: job.header().to_vec(),
            shared_key: job.shared_key().map(|key| Zeroizing::new(key.to_vec())),
            input_len,
            provider,
            job,
            signer_file,
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
    #[pyo3(signature = (src, *, key = None, password = None, recipients = None, format = "paracrypt", cipher = "aes-256-gcm", chunk_size = None, provider = None, sign = None, _fixed_salt = None))]
    #[allow(clippy::too_many_arguments)]
    fn encrypt(
        py: Python<'_>,
        src: PathBuf,
        key: Option<&Bound<'_, PyAny>>,
        password: Option<&Bound<'_, PyAny>>,
        recipients: Option<&Bound<'_, PyAny>>,
        format: &str,
        cipher: &str,
        chunk_size: Option<&Bound<'_, PyAny>>,
        provider: Option<&str>,
        sign: Option<PathBuf>,
        _fixed_salt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let signer_file = sign
            .as_deref()
            .map(read_sign_file)
            .transpose()?
            .map(Zeroizing::new);
        let spec = encrypt_spec(
            key,
            password,
            recipients,
            format,
            false,
            cipher,
            chunk_size,
            _fixed_salt,
            sign,
        )?;
        Self::first(py, spec, src, provider, signer_file)
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
        Self::first(
            py,
            decrypt_spec(key, password, identities, verify_with)?,
            src,
            provider,
            None,
        )
    }

    /// How many chunks the job has.
    #[getter]
    fn chunks(&self) -> u64 {
        self.plan().len()
    }

    /// The input's length in bytes.
    #[getter]
    fn input_len(&self) -> u64 {
        self.input_len
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
    /// replaced only with ``overwrite=True``.
    #[pyo3(signature = (dst, *, overwrite = false))]
    fn stage(&self, py: Python<'_>, dst: PathBuf, overwrite: bool) -> PyResult<StagedOutput> {
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
        })
    }

    /// Runs the chunks ``part`` (a ``(first, end)`` from :meth:`parts`) from ``src`` into the
    /// staged output ``dst`` (which must exist: it is never created here), at their offsets,
    /// with ``threads`` threads (default 1), without the GIL. Returns where the output ends when
    /// ``part`` holds the last chunk, else ``None``. A damaged chunk raises (the lowest one in
    /// the run); the staged file is then the caller's to discard. ``sync=True`` makes what this
    /// part wrote durable (``fdatasync``) before returning, as every MPI rank does with
    /// ``--sync``: on a network filesystem that is when the writes of one machine are on the
    /// server and their errors known; pair it with :meth:`StagedOutput.commit`'s ``sync=``.
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
            let output = open_staged(&dst)?;
            let ends = engine::run(&self.job, first..end, &input, &output)
                .map_err(paracrypt_core::Error::from)?;
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
        let (encrypting, credential, format, suite, chunk) = match &self.worker {
            Spec::Encrypt {
                credential,
                format,
                suite,
                chunk_size,
                ..
            } => {
                let format = match format {
                    Format::Container => "paracrypt",
                    Format::Age { .. } => "age",
                };
                (true, credential, format, suite.as_str(), chunk_size.get())
            }
            Spec::Decrypt { credential, .. } => (false, credential, "", "", 0),
            Spec::Raw { .. } | Spec::RawPassword { .. } => unreachable!("refused by `first`"),
        };
        let credential: Bound<'py, PyAny> = match credential {
            Credential::Key(key) => Bound::new(py, Key(key.clone()))?.into_any(),
            Credential::Password(password) => password.as_str().into_pyobject(py)?.into_any(),
            Credential::Identities(identities) => Bound::new(py, identities.clone())?.into_any(),
            Credential::Recipients(_) => unreachable!("recipients always share the file key"),
        };
        let args = (
            encrypting,
            credential,
            format,
            suite,
            chunk,
            PyBytes::new(py, &self.header),
            self.shared_key.as_ref().map(|key| PyBytes::new(py, key)),
            self.input_len,
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
        credential: &Bound<'_, PyAny>,
        format: &str,
        suite: &str,
        chunk_size: usize,
        header: Vec<u8>,
        shared_key: Option<Vec<u8>>,
        input_len: u64,
        provider: &str,
        src: PathBuf,
        signer_file: Option<Vec<u8>>,
    ) -> PyResult<Self> {
        let signer_file = signer_file.map(Zeroizing::new);
        let signer = signer_file
            .as_deref()
            .map(|file| signing_key(file, Path::new("sign=")))
            .transpose()?;
        let credential = if let Ok(key) = credential.cast::<Key>() {
            Credential::Key(key.get().0.clone())
        } else if let Ok(identities) = credential.cast::<Identities>() {
            Credential::Identities(identities.get().clone())
        } else {
            Credential::Password(Zeroizing::new(credential.extract::<String>()?))
        };
        let worker = if encrypting {
            Spec::Encrypt {
                credential,
                format: Format::new(format, false)?,
                suite: suite.parse::<Suite>().map_err(Failure::from)?,
                chunk_size: ChunkSize::new(chunk_size).map_err(Failure::from)?,
                salt: None,
                signer,
            }
        } else {
            Spec::Decrypt {
                credential,
                expected: None,
            }
        };
        let provider = self::provider(Some(provider))?;
        let shared_key = shared_key.map(Zeroizing::new);
        let built = worker.build()?;
        let job = detached(py, 1, || {
            Ok(built.recipe().job_from_header(
                &header,
                shared_key.as_deref().map(|key| &key[..]),
                Some(input_len),
                provider,
            )?)
        })?;
        Ok(DistributedJob {
            worker,
            src,
            header,
            shared_key,
            input_len,
            provider,
            job,
            signer_file,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "DistributedJob({} chunks, {} input bytes)",
            self.plan().len(),
            self.input_len
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
    /// puts it at the destination. Returns ``end``. As the CLI and :func:`paracrypt.encrypt_file`,
    /// the file is not flushed to disk unless ``sync=True`` (``fsync`` before the rename, as
    /// ``paracrypt encrypt --sync``: for jobs that delete the input afterwards).
    #[pyo3(signature = (end, *, sync = false))]
    fn commit(&self, py: Python<'_>, end: u64, sync: bool) -> PyResult<u64> {
        let Some(staged) = self.take() else {
            return Ok(usage("the output was already committed or discarded")?);
        };
        Ok(detached(py, 1, || {
            let file = staged.file();
            file.set_len(end)
                .and_then(|()| if sync { file.sync_all() } else { Ok(()) })
                .map_err(|e| Failure::Io("finishing the output".into(), e))?;
            staged.commit()?;
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
