//! Page-aligned chunk buffers.
//!
//! The kernel copies page-cache data into and out of a page-aligned buffer markedly faster
//! than into an arbitrary `Vec<u8>` (about 3× on the VMs we measured), so every buffer that
//! meets `read`/`write` is one of these. Alignment comes from a `#[repr(align(4096))]` page
//! type viewed as bytes through `bytemuck`, without `unsafe`.

use std::ops::{Deref, DerefMut};

/// Alignment and granularity of [`AlignedBuf`].
pub const PAGE: usize = 4096;

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

/// A zero-initialised byte buffer whose start is page aligned.
pub struct AlignedBuf {
    pages: Vec<Page>,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` bytes (capacity rounded up to whole pages).
    pub fn new(len: usize) -> Self {
        AlignedBuf {
            pages: vec![Page([0; PAGE]); len.div_ceil(PAGE)],
            len,
        }
    }

    /// The buffer's capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.pages.len() * PAGE
    }

    /// Makes the buffer `len` bytes long, keeping its first bytes (up to the old length) and
    /// adding zeroed pages where the capacity is short.
    pub fn resize(&mut self, len: usize) {
        let pages = len.div_ceil(PAGE);
        if pages > self.pages.len() {
            self.pages.resize(pages, Page([0; PAGE]));
        }
        self.len = len;
    }
}

thread_local! {
    /// The calling thread's scratch buffer, kept between uses (see [`with_scratch`]).
    static SCRATCH: std::cell::Cell<Option<AlignedBuf>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with a page-aligned buffer of at least `len` bytes that belongs to the calling
/// thread and is kept for its next use.
///
/// A pool thread thus allocates its chunk buffer once, not once per piece of work: a fresh
/// 1 MiB buffer is a new `mmap` whose pages fault in one by one and whose `munmap` interrupts
/// every other thread of the process (TLB shootdown), which cost a third of the throughput of
/// two-thread AES-GCM in memory. The buffer is taken out while in use, so a nested call simply
/// allocates its own. Memory stays at one chunk per thread that ever ran chunk work.
pub fn with_scratch<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    let mut buf = match SCRATCH.take() {
        Some(buf) if buf.capacity() >= len => buf,
        _ => AlignedBuf::new(len),
    };
    buf.len = len;
    let out = f(&mut buf);
    SCRATCH.set(Some(buf));
    out
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.pages)[..self.len]
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.pages)[..self.len]
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_is_reused_and_sized() {
        let first = with_scratch(5000, |b| {
            assert_eq!(b.len(), 5000);
            b[4999] = 7;
            b.as_ptr() as usize
        });
        let again = with_scratch(100, |b| {
            assert_eq!(b.len(), 100);
            b.as_ptr() as usize
        });
        assert_eq!(first, again, "the same allocation is reused");
        let nested = with_scratch(10, |_| with_scratch(10, |b| b.as_ptr() as usize));
        assert_ne!(nested, first, "a nested use gets its own buffer");
        let bigger = with_scratch(1 << 20, |b| b.len());
        assert_eq!(bigger, 1 << 20);
    }

    #[test]
    fn resize_keeps_the_content_and_grows_zeroed() {
        let mut buf = AlignedBuf::new(0);
        assert_eq!(buf.capacity(), 0);
        buf.resize(10);
        buf.copy_from_slice(b"0123456789");
        buf.resize(3 * PAGE + 1);
        assert_eq!(&buf[..10], b"0123456789");
        assert!(buf[10..].iter().all(|&b| b == 0));
        assert_eq!(buf.capacity(), 4 * PAGE);
        assert_eq!(buf.as_ptr() as usize % PAGE, 0);
        buf.resize(5);
        assert_eq!((&buf[..], buf.capacity()), (&b"01234"[..], 4 * PAGE));
    }

    #[test]
    fn is_page_aligned() {
        for len in [1, 4096, 10_000] {
            let buf = AlignedBuf::new(len);
            assert_eq!(buf.as_ptr() as usize % PAGE, 0);
            assert_eq!(buf.len(), len);
            assert!(buf.iter().all(|&b| b == 0));
        }
    }
}
