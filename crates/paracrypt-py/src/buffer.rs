//! Any Python object that exports a buffer (bytes, bytearray, memoryview, array.array, numpy
//! arrays, mmap) read in place: the one module of the extension with `unsafe`.
//!
//! PyO3 offers the buffer protocol only to extensions built for Python 3.11 or later under the
//! stable ABI, when `Py_buffer` joined it; this extension is one abi3 build for CPython 3.9
//! and later. `Py_buffer`'s layout and `PyObject_GetBuffer`/`PyBuffer_Release` have not changed
//! since Python 3.3 (3.11 made them stable ABI as they were), so they are declared here as
//! CPython defines them, and the extension calls them on every supported version. The export
//! pins the memory: a `bytearray` cannot be resized while it is held. As with `hashlib` and
//! `blake3`, the caller must not write to a mutable buffer while paracrypt reads it.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

/// `Py_buffer`, as CPython declares it (Include/pybuffer.h).
#[repr(C)]
struct PyBufferView {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: ffi::Py_ssize_t,
    itemsize: ffi::Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut ffi::Py_ssize_t,
    strides: *mut ffi::Py_ssize_t,
    suboffsets: *mut ffi::Py_ssize_t,
    internal: *mut c_void,
}

/// `PyBUF_SIMPLE`: one C-contiguous run of bytes, read only; an exporter that cannot give
/// that (a strided numpy view) raises `BufferError`.
const PYBUF_SIMPLE: c_int = 0;
/// `PyBUF_WRITABLE`: the same, writable (a `bytes` object refuses with `BufferError`).
const PYBUF_WRITABLE: c_int = 1;

unsafe extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut PyBufferView, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut PyBufferView);
}

/// The bytes of an object's buffer, exported until this is dropped.
pub struct Bytes {
    /// Boxed: the view stays at one address from export to release.
    view: Box<PyBufferView>,
}

// SAFETY: the view is only read (its `buf` and `len`) until it is released, and releasing it
// takes the interpreter (`Drop`); the bytes it points to stay exported for as long.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`: shared access only reads the pointer and length.
unsafe impl Sync for Bytes {}

impl Bytes {
    /// Exports `obj`'s buffer: a `TypeError` for an object without one (a `str`, say), the
    /// exporter's own error (`BufferError`) for one that is not contiguous.
    pub fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        Self::export(obj, PYBUF_SIMPLE)
    }

    /// Exports `obj`'s buffer for writing (what `readinto` fills).
    pub fn get_mut(obj: &Bound<'_, PyAny>) -> PyResult<BytesMut> {
        Ok(BytesMut(Self::export(obj, PYBUF_WRITABLE)?))
    }

    fn export(obj: &Bound<'_, PyAny>, flags: c_int) -> PyResult<Self> {
        let mut view = Box::new(PyBufferView {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        // SAFETY: `obj` is a live object (a `Bound` while the interpreter is held), `view` a
        // valid, exclusively owned `Py_buffer` to fill.
        let status = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if status != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(Bytes { view })
    }

    /// The exported bytes.
    pub fn as_slice(&self) -> &[u8] {
        let len = usize::try_from(self.view.len).unwrap_or(0);
        if len == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: a successful `PyBuffer_SIMPLE` export is `len` contiguous bytes at `buf`,
        // valid until `PyBuffer_Release`, which only `Drop` calls.
        unsafe { std::slice::from_raw_parts(self.view.buf.cast::<u8>(), len) }
    }
}

/// The bytes of an object's writable buffer, exported until this is dropped.
pub struct BytesMut(Bytes);

impl BytesMut {
    /// The exported bytes, to write into.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let view = &self.0.view;
        let len = usize::try_from(view.len).unwrap_or(0);
        if len == 0 || view.buf.is_null() {
            return &mut [];
        }
        // SAFETY: a successful `PyBUF_WRITABLE` export is `len` contiguous writable bytes at
        // `buf`, valid until `PyBuffer_Release`; `&mut self` makes this the only slice of them
        // this extension holds.
        unsafe { std::slice::from_raw_parts_mut(view.buf.cast::<u8>(), len) }
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        Python::attach(|_| {
            // SAFETY: the view was filled by a successful `PyObject_GetBuffer` and is released
            // exactly once, with the interpreter held.
            unsafe { PyBuffer_Release(&mut *self.view) }
        });
    }
}
