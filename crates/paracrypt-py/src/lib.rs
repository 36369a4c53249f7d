//! `paracrypt._paracrypt`: the extension module behind the `paracrypt` Python package.
//!
//! It holds no format, cipher or refusal logic of its own: a call's keyword arguments become
//! the core's [`Request`](paracrypt_core::request::Request) (the front door every front end
//! calls, which decides what may be encrypted, decrypted or refused, and in which words), and a
//! driver ([`drive`], `streams`, `distributed`) resolves it with the input's first bytes and
//! runs it without the GIL in a Rayon pool. Errors become the exceptions of `paracrypt/_errors.py`; a panic is
//! caught and raised as `paracrypt.Error`, never unwound into Python.
// `unsafe` only in `buffer`, the buffer protocol's FFI (each block has a `// SAFETY:` note).
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod api;
mod buffer;
mod distributed;
mod drive;
mod errors;
mod options;
mod output;
mod secrets;
mod streams;
mod tools;
mod tree;

use pyo3::prelude::*;

/// Parallel, authenticated, random-access encryption (the compiled part of `paracrypt`).
#[pymodule]
fn _paracrypt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<secrets::Key>()?;
    m.add_class::<secrets::Recipients>()?;
    m.add_class::<secrets::Identities>()?;
    m.add_function(wrap_pyfunction!(api::encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(api::decrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(api::encrypt, m)?)?;
    m.add_function(wrap_pyfunction!(api::decrypt, m)?)?;
    m.add_function(wrap_pyfunction!(api::encrypt_into, m)?)?;
    m.add_function(wrap_pyfunction!(api::decrypt_into, m)?)?;
    m.add_function(wrap_pyfunction!(api::decrypt_range, m)?)?;
    m.add_function(wrap_pyfunction!(api::verify_file, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_encrypt, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_decrypt, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_encrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_decrypt_file, m)?)?;
    m.add_function(wrap_pyfunction!(api::encryptor, m)?)?;
    m.add_function(wrap_pyfunction!(api::decryptor, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_encryptor, m)?)?;
    m.add_function(wrap_pyfunction!(api::raw_decryptor, m)?)?;
    m.add_function(wrap_pyfunction!(tools::keygen, m)?)?;
    m.add_function(wrap_pyfunction!(tools::info, m)?)?;
    m.add_function(wrap_pyfunction!(tools::rekey, m)?)?;
    m.add_function(wrap_pyfunction!(tree::encrypt_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::decrypt_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::rekey_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::sign_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::verify_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::info_tree, m)?)?;
    m.add_function(wrap_pyfunction!(tree::run_tree_task, m)?)?;
    m.add_class::<tree::TreeJob>()?;
    m.add_class::<distributed::DistributedJob>()?;
    m.add_class::<distributed::StagedOutput>()?;
    m.add_class::<streams::StreamEncryptor>()?;
    m.add_class::<streams::StreamDecryptor>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_build_info, m)?)?;
    Ok(())
}

/// How this extension was built, for benchmarks (scripts/py-bench.py): ``profile``
/// (``"release"`` or ``"debug"``), ``providers`` (the compiled ones) and ``fastest`` (which
/// provider the default, ``provider=None``, uses for each primitive on this CPU).
#[pyfunction]
fn _build_info(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    use paracrypt_core::provider::Provider;
    let info = pyo3::types::PyDict::new(py);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    info.set_item("profile", profile)?;
    let compiled: Vec<String> = Provider::ALL.iter().map(ToString::to_string).collect();
    info.set_item("providers", compiled)?;
    let fastest = pyo3::types::PyDict::new(py);
    for (primitive, by) in Provider::Fastest.primitives() {
        fastest.set_item(primitive, by.to_string())?;
    }
    info.set_item("fastest", fastest)?;
    Ok(info)
}
