//! The RC4 keystream.

use aws_lc_sys as sys;
use zeroize::Zeroize;

/// An RC4 keystream (its state moves with every byte).
pub(crate) struct Rc4Key(Box<sys::RC4_KEY>);

impl Rc4Key {
    /// A key of 1 to 256 bytes (`None` outside).
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        if !(1..=256).contains(&key.len()) {
            return None;
        }
        let mut state = Box::new(sys::RC4_KEY {
            x: 0,
            y: 0,
            data: [0; 256],
        });
        let len = u32::try_from(key.len()).expect("at most 256");
        // SAFETY: `state` is a live, owned `RC4_KEY`; `key` is valid for `len` bytes.
        unsafe { sys::RC4_set_key(&mut *state, len, key.as_ptr()) };
        Some(Rc4Key(state))
    }

    /// XORs the next `data.len()` keystream bytes into `data`.
    pub(crate) fn apply(&mut self, data: &mut [u8]) {
        let buf = data.as_mut_ptr();
        // SAFETY: `buf` is valid for `data.len()` bytes; RC4 reads each byte before writing
        // it, so in place is allowed; the state is live and exclusively borrowed.
        unsafe { sys::RC4(&mut *self.0, data.len(), buf, buf) };
    }

    /// XORs the next `input.len()` keystream bytes into `input`, written to `output`.
    ///
    /// # Panics
    /// If the two lengths differ.
    pub(crate) fn apply_to(&mut self, input: &[u8], output: &mut [u8]) {
        assert_eq!(input.len(), output.len(), "RC4 input and output lengths");
        // SAFETY: `input` is valid for reads and `output` (a distinct, exclusive borrow) for
        // writes of `input.len()` bytes; the state is live and exclusively borrowed.
        unsafe {
            sys::RC4(
                &mut *self.0,
                input.len(),
                input.as_ptr(),
                output.as_mut_ptr(),
            )
        };
    }
}

impl Drop for Rc4Key {
    fn drop(&mut self) {
        self.0.data.zeroize();
        self.0.x = 0;
        self.0.y = 0;
    }
}
