//! Streams: a writer that encrypts into a Python file object (the core's `Write` adapter) and
//! a reader that decrypts from one (its `Read` adapter). `paracrypt/_streams.py` wraps them in
//! `io.RawIOBase` file objects.

use std::io::{Read, Write};

use paracrypt_core::request::{Driver, HEAD_LEN, Request, Writer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffer::Bytes;
use crate::drive::warn;
use crate::errors::Failure;
use crate::options::{Options, Progress, detached};

/// Writes to a Python file object (its `write`, with the GIL taken for each call); an exception
/// it raises travels inside the `io::Error` and is raised again as it was.
pub struct PyWriter(Py<PyAny>);

impl Write for PyWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Python::attach(|py| {
            let written = self.0.call_method1(py, "write", (PyBytes::new(py, buf),))?;
            // Buffered files return the length, raw ones may write less, some return None.
            match written.extract::<Option<usize>>(py)? {
                Some(n) if n <= buf.len() => Ok(n),
                Some(n) => Err(PyValueError::new_err(format!(
                    "write() returned {n} for {} bytes",
                    buf.len()
                ))),
                None => Ok(buf.len()),
            }
        })
        .map_err(std::io::Error::other)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Python::attach(|py| self.0.call_method0(py, "flush").map(drop))
            .map_err(std::io::Error::other)
    }
}

/// Reads from a Python file object (its `read`).
pub struct PyReader(Py<PyAny>);

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        Python::attach(|py| {
            let data = self.0.call_method1(py, "read", (buf.len(),))?;
            if data.is_none(py) {
                return Err(PyValueError::new_err(
                    "read() returned None: a non-blocking file object is not supported",
                ));
            }
            let data = Bytes::get(data.bind(py))?;
            let data = data.as_slice();
            if data.len() > buf.len() {
                return Err(PyValueError::new_err(format!(
                    "read({}) returned {} bytes",
                    buf.len(),
                    data.len()
                )));
            }
            buf[..data.len()].copy_from_slice(data);
            Ok(data.len())
        })
        .map_err(std::io::Error::other)
    }
}

/// Refuses a file object that is closed, as `io` does.
fn check_open(fileobj: &Bound<'_, PyAny>) -> PyResult<()> {
    if fileobj
        .getattr("closed")
        .and_then(|closed| closed.is_truthy())
        .unwrap_or(false)
    {
        return Err(PyValueError::new_err("I/O operation on closed file."));
    }
    Ok(())
}

/// The core's `Write` adapter into a Python file object.
type Sink = Writer<PyWriter>;

/// The compiled half of `paracrypt.encryptor`: see `paracrypt/_streams.py`.
#[pyclass(module = "paracrypt._paracrypt")]
pub struct StreamEncryptor {
    sink: Option<Sink>,
    threads: usize,
    /// `progress=`: told of the bytes written to the stream.
    progress: Option<Progress>,
    /// Why the stream is unusable, once it is.
    broken: Option<String>,
}

impl StreamEncryptor {
    /// Writes the job's header into `fileobj` and returns the writer of the rest.
    pub fn open(
        py: Python<'_>,
        request: &Request,
        fileobj: &Bound<'_, PyAny>,
        options: &Options,
    ) -> PyResult<Self> {
        check_open(fileobj)?;
        warn(py, request)?;
        let writer = PyWriter(fileobj.clone().unbind());
        let sink = options.run(py, || {
            let resolved = request.resolve(&[], Driver::Whole)?;
            Ok(resolved.writer(&options.runner(), writer)?)
        })?;
        Ok(StreamEncryptor {
            sink: Some(sink),
            threads: options.threads,
            progress: options.progress.clone(),
            broken: None,
        })
    }

    fn take(&mut self) -> PyResult<Sink> {
        if let Some(broken) = &self.broken {
            return Err(PyValueError::new_err(format!(
                "the stream failed: {broken}"
            )));
        }
        self.sink
            .take()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed file."))
    }
}

#[pymethods]
impl StreamEncryptor {
    /// Encrypts `data` (any bytes-like object); returns its length.
    fn write(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let data = Bytes::get(data)?;
        let mut sink = self.take()?;
        let slice = data.as_slice();
        let written = detached(py, self.threads, || {
            sink.write_all(slice)
                .map_err(|e| Failure::from_io("writing", e))
        });
        match written {
            Ok(()) => {
                self.sink = Some(sink);
                if let Some(progress) = &self.progress {
                    progress.add(slice.len() as u64);
                }
                Ok(slice.len())
            }
            Err(e) => {
                let e = PyErr::from(e);
                self.broken = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Writes the last chunk (and age's armor end): the file is complete only then.
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let sink = self.take()?;
        let finished = detached(py, self.threads, || {
            sink.finish().map_err(|e| Failure::from_io("writing", e))
        });
        if let Err(e) = finished {
            let e = PyErr::from(e);
            self.broken = Some(e.to_string());
            return Err(e);
        }
        match &self.progress {
            Some(progress) => Ok(progress.finish()?),
            None => Ok(()),
        }
    }

    /// Drops the stream without its last chunk: what was written reads as truncated.
    fn abort(&mut self) {
        self.sink = None;
    }
}

/// The compiled half of `paracrypt.decryptor`: see `paracrypt/_streams.py`.
#[pyclass(module = "paracrypt._paracrypt")]
pub struct StreamDecryptor {
    /// `progress=`: the runner reports the bytes read from the file object to it.
    progress: Option<Progress>,
    /// Behind a lock only to be `Sync`: the class's methods take `&mut self` already.
    source: std::sync::Mutex<Option<Box<dyn Read + Send>>>,
    threads: usize,
    broken: Option<String>,
}

impl StreamDecryptor {
    /// Reads (and checks) the header from `fileobj` and returns the reader of the rest.
    pub fn open(
        py: Python<'_>,
        request: &Request,
        fileobj: &Bound<'_, PyAny>,
        options: &Options,
    ) -> PyResult<Self> {
        check_open(fileobj)?;
        warn(py, request)?;
        let mut reader = PyReader(fileobj.clone().unbind());
        let source = options.run(py, || -> Result<Box<dyn Read + Send>, Failure> {
            let mut head = Vec::with_capacity(HEAD_LEN);
            (&mut reader)
                .take(HEAD_LEN as u64)
                .read_to_end(&mut head)
                .map_err(|e| Failure::from_io("reading the header", e))?;
            let resolved = request.resolve(&head, Driver::Whole)?;
            let input = std::io::Cursor::new(head).chain(reader);
            Ok(resolved.reader(&options.runner(), input)?)
        })?;
        Ok(StreamDecryptor {
            progress: options.progress.clone(),
            source: std::sync::Mutex::new(Some(source)),
            threads: options.threads,
            broken: None,
        })
    }
}

#[pymethods]
impl StreamDecryptor {
    /// Reads into `buffer` (any writable bytes-like object); returns the bytes read, 0 at the
    /// end.
    fn readinto(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let mut buffer = Bytes::get_mut(buffer)?;
        if let Some(broken) = &self.broken {
            return Err(PyValueError::new_err(format!(
                "the stream failed: {broken}"
            )));
        }
        let slot = self.source.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut source = slot
            .take()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed file."))?;
        let out = buffer.as_mut_slice();
        let read = detached(py, self.threads, || {
            source.read(out).map_err(|e| Failure::from_io("reading", e))
        });
        *self.source.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(source);
        let read = read.map_err(|e| {
            let e = PyErr::from(e);
            self.broken = Some(e.to_string());
            e
        })?;
        if let (0, Some(progress)) = (read, &self.progress) {
            progress.finish()?;
        }
        Ok(read)
    }

    /// Ends the stream.
    fn close(&mut self) {
        *self.source.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Makes the encrypting writer of `request` into `fileobj`.
pub fn encryptor(
    py: Python<'_>,
    request: &Request,
    fileobj: &Bound<'_, PyAny>,
    options: &Options,
) -> PyResult<StreamEncryptor> {
    StreamEncryptor::open(py, request, fileobj, options)
}

/// Makes the decrypting reader of `request` from `fileobj`.
pub fn decryptor(
    py: Python<'_>,
    request: &Request,
    fileobj: &Bound<'_, PyAny>,
    options: &Options,
) -> PyResult<StreamDecryptor> {
    StreamDecryptor::open(py, request, fileobj, options)
}
