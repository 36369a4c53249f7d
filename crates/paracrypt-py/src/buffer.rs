//! Any Python object that exports a buffer (bytes, bytearray, memoryview, array.array, numpy
//! arrays, mmap) read in place, and the new `bytes` objects that results are written into: the
//! one module of the extension with `unsafe`.
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

use std::marker::PhantomData;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

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

/// A new `bytes` object of `len` bytes that `fill` writes, given its memory as [`Unfilled`].
///
/// Not [`PyBytes::new_with`]: that zeroes the whole object on the calling thread with the GIL
/// held before anything runs, and for a large result that one `memset`, which takes every page
/// fault of a fresh allocation (CPython's allocator maps anything above a few MiB anew from the
/// kernel and unmaps it when freed), cost more than the encryption on every core (perf: 70% of
/// a 64 MiB `encrypt`'s samples, against 13% in AES-GCM). Here `fill` runs the zeroing where it
/// runs the work, on the pool's threads without the GIL ([`Unfilled::zeroed`]), with the
/// memory advised to transparent huge pages, so the faults are few and spread over the cores.
/// If `fill` fails the object is released unseen.
pub fn new_bytes<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(Unfilled<'_>) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = ffi::Py_ssize_t::try_from(len).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err("the output does not fit in memory")
    })?;
    // SAFETY: `PyBytes_FromStringAndSize(NULL, n)` returns a new reference to a `bytes` object
    // of `n` bytes whose contents are not initialised yet (or NULL with an exception set,
    // which `from_owned_ptr_or_err` turns into the error), the GIL being held.
    let bytes = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))?
            .cast_into_unchecked::<PyBytes>()
    };
    // SAFETY: the object is a `bytes` object (just made), so `PyBytes_AsString` returns its
    // buffer of `len` bytes (plus the trailing NUL CPython keeps), which lives as long as it.
    let ptr = unsafe { ffi::PyBytes_AsString(bytes.as_ptr()) }.cast::<u8>();
    fill(Unfilled {
        ptr,
        len,
        _bytes: PhantomData,
    })?;
    Ok(bytes)
}

/// The memory of a `bytes` object made by [`new_bytes`], not yet initialised: only
/// [`Unfilled::zeroed`] turns it into a slice.
pub struct Unfilled<'a> {
    ptr: *mut u8,
    len: usize,
    /// Borrowed from the `bytes` object for the duration of [`new_bytes`]'s `fill`.
    _bytes: PhantomData<&'a mut [u8]>,
}

// SAFETY: the `bytes` object is new and not yet visible to any Python code (its only reference
// is held by `new_bytes` until `fill` returns), so its memory is this value's alone; moving
// that exclusive access to another thread is as sound as moving a `&mut [u8]`.
unsafe impl Send for Unfilled<'_> {}

impl<'a> Unfilled<'a> {
    /// Bytes zeroed per piece, one piece per task.
    const PIECE: usize = 1 << 20;

    /// Zeroes the memory on the threads of the current Rayon pool (call it inside the pool,
    /// without the GIL: each thread takes the page faults of its own pieces) and returns it.
    /// From 4 MiB up the memory is first advised to transparent huge pages
    /// (`MADV_HUGEPAGE`, what glibc's `glibc.malloc.hugetlb=1` does for its mapped chunks): one
    /// fault per 2 MiB instead of one per 4 KiB, where the system allows them; a no-op
    /// otherwise.
    pub fn zeroed(self) -> &'a mut [u8] {
        advise_huge_pages(self.ptr, self.len);
        let base = self.ptr as usize;
        let len = self.len;
        (0..len.div_ceil(Self::PIECE))
            .into_par_iter()
            .for_each(|piece| {
                let start = piece * Self::PIECE;
                let n = Self::PIECE.min(len - start);
                // SAFETY: `start..start + n` lies inside the object's `len` bytes, and the pieces
                // are disjoint, so every task writes memory no other task touches.
                unsafe { std::ptr::write_bytes((base + start) as *mut u8, 0, n) };
            });
        if len == 0 {
            return &mut [];
        }
        // SAFETY: the `len` bytes at `ptr` belong to the `bytes` object (alive for `'a`), are
        // now initialised, and `self` (consumed) was the only access to them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

/// `madvise(MADV_HUGEPAGE)` over the whole 2 MiB pages inside `len` bytes at `ptr`, for a
/// buffer of 4 MiB or more; its failure (no transparent huge pages here) is ignored, the
/// advice changing only how the memory is mapped.
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < 2 * HUGE {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: `start..end` lies inside the object's memory (rounded inwards to whole
            // pages), which this process mapped; the advice does not change its contents.
            unsafe {
                libc::madvise(start as *mut c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}
