//! `keygen`, `info` and `rekey`: the CLI's commands of the same names, on the core's functions.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use age::secrecy::SecretString;
use paracrypt_core::recipient::{Identities, Recipients};
use paracrypt_core::rekey::rekey_header;
use paracrypt_core::request::Secret;
use pyo3::prelude::*;

use crate::buffer::Bytes;
use crate::drive::open_input;
use crate::errors::Failure;
use crate::options::{self, detached};
use crate::output::Staged;
use crate::secrets;

/// keygen(
///     path: str | os.PathLike[str],
///     *,
///     kind: 'key' | 'x25519' | 'pq' | 'ed25519' | 'ml-dsa-65' = 'key',
///     public_out: str | os.PathLike[str] | None = None,
/// ) -> str | None
///
/// Writes a new key or identity file at ``path`` (mode 0600, never over an existing file), as
/// ``paracrypt keygen``: ``kind="key"`` a 256-bit key file for ``key=``, ``"x25519"`` an age
/// identity, ``"pq"`` a post-quantum age identity (ML-KEM-768 + X25519), ``"ed25519"`` an
/// Ed25519 signing key and ``"ml-dsa-65"`` an ML-DSA-65 signing key (FIPS 204; both PKCS#8 PEM,
/// for ``sign=``). Returns what ``paracrypt keygen`` prints as the public key: the recipient
/// (``age1…``, ``age1pq1…``) others encrypt to, for ``"ed25519"`` its ``ssh-ed25519 …`` line,
/// for ``"ml-dsa-65"`` its fingerprint (``info()["signer"]["fingerprint"]``), or ``None`` for a
/// key file. ``public_out=`` (signing keys only, as ``--public-out``) also writes the public
/// key there as SPKI PEM, the file ``verify_with=`` and ``paracrypt decrypt --verify-with``
/// take; it too is never written over an existing file, and when either file cannot be
/// written neither is left. An existing file at either path, or ``public_out=`` for another
/// kind, is a :class:`UsageError` (as the CLI's exit status 2); a file that cannot be written
/// an :class:`IoError`. The rules are the core's ``keygen``, the CLI's too.
#[pyfunction]
#[pyo3(signature = (path, *, kind = "key", public_out = None))]
pub fn keygen(path: PathBuf, kind: &str, public_out: Option<PathBuf>) -> PyResult<Option<String>> {
    let kind: paracrypt_core::keygen::Kind = kind.parse().map_err(Failure::from)?;
    Ok(
        paracrypt_core::keygen::generate(&path, kind, public_out.as_deref())
            .map_err(Failure::from)?,
    )
}

/// info(
///     src: str | os.PathLike[str] | Buffer,
///     *,
///     provider: 'fastest' | 'aws-lc' | 'openssl' | 'rustcrypto' | None = None,
/// ) -> dict[str, Any]
///
/// What a file says about itself, without a key, as ``paracrypt info --json`` prints it (one
/// dict, schema 1; docs/guide/files.md lists its fields): ``format`` (``"paracrypt"``, ``"age"`` or
/// ``"openssl-salted"``), for a container its version, suite, chunk size, ``secret`` (its kind:
/// a key, a password with its Argon2id parameters, recipients), salt, ``signer`` (``None``, or
/// for a signed container the scheme and fingerprint the header names: :func:`decrypt` with
/// ``verify_with=`` checks it), ``header_len``, ``chunks`` and ``plaintext``; for an age file
/// its stanzas, whether it is post-quantum or a passphrase file (and its scrypt work factor);
/// for an ``openssl enc`` file its salt. ``size`` is ``None`` for a pipe or a device, and
/// ``damage`` names what a length no writer makes says is wrong (the CLI then exits 1).
/// ``src`` is a path or a bytes-like object (``file`` is then ``"<bytes>"``); a file is opened
/// and read without the GIL (other threads run while a pipe waits for its writer).
/// ``provider=`` names who would compute a container's suite. A file none of the formats is a
/// :class:`FormatError`.
#[pyfunction]
#[pyo3(signature = (src, *, provider = None))]
pub fn info<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    provider: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = options::provider(provider)?;
    let json = if let Ok(path) = src.extract::<PathBuf>() {
        py.detach(|| {
            let file = open_input(&path)?;
            let meta = file
                .metadata()
                .map_err(|e| Failure::Io(format!("cannot read {}", path.display()), e))?;
            let len = meta.is_file().then_some(meta.len());
            let about = paracrypt_core::info::read(&mut BufReader::new(&file), len, true)?;
            Ok::<_, Failure>(about.json(&path.display().to_string(), len, provider))
        })?
    } else {
        let bytes = Bytes::get(src)?;
        let bytes = bytes.as_slice();
        let len = Some(bytes.len() as u64);
        let about =
            paracrypt_core::info::read(&mut &bytes[..], len, true).map_err(Failure::from)?;
        about.json("<bytes>", len, provider)
    };
    py.import("json")?
        .call_method1("loads", (json.to_string(),))
}

/// rekey(
///     src: str | os.PathLike[str],
///     dst: str | os.PathLike[str] | None = None,
///     *,
///     identities: Identities | str | os.PathLike[str] | Sequence[Identities | str |
///         os.PathLike[str]] | None = None,
///     password: str | None = None,
///     recipients: Recipients | str | Iterable[str] | None = None,
///     new_password: str | None = None,
///     overwrite: bool = False,
/// ) -> None
///
/// Gives the file ``src`` a new header for the same file key, opened with ``identities=`` or
/// the old ``password=`` and wrapped for exactly the new ``recipients=`` (every recipient the
/// file should keep; one left out is removed) or ``new_password=`` (age files only), as
/// ``paracrypt rekey``: the rest of the file is copied as it is. ``dst`` defaults to ``src``,
/// replaced atomically once the new file is complete. Containers encrypted to recipients
/// (version 2) and binary age files; a wrong credential or a damaged header changes nothing.
/// Rekeying is not revocation: whoever had the file key can still read the data.
#[pyfunction]
#[pyo3(signature = (src, dst = None, *, identities = None, password = None, recipients = None, new_password = None, overwrite = false))]
#[allow(clippy::too_many_arguments)]
pub fn rekey(
    py: Python<'_>,
    src: PathBuf,
    dst: Option<PathBuf>,
    identities: Option<&Bound<'_, PyAny>>,
    password: Option<&Bound<'_, PyAny>>,
    recipients: Option<&Bound<'_, PyAny>>,
    new_password: Option<&Bound<'_, PyAny>>,
    overwrite: bool,
) -> PyResult<()> {
    let old = match secrets::to_decrypt(None, password, identities)? {
        Secret::Identities(identities) => identities,
        Secret::Password(password, _) => Arc::new(Identities::passphrase(
            SecretString::from(password.to_string()),
            None,
        )),
        // `to_decrypt` without `key=` gives identities or a password.
        Secret::Key(_) | Secret::Recipients(_) => unreachable!("no key= was passed"),
    };
    let new = match secrets::to_encrypt(None, new_password, recipients)? {
        Secret::Recipients(recipients) => recipients,
        Secret::Password(password, _) => Arc::new(Recipients::passphrase(
            SecretString::from(password.to_string()),
            None,
        )),
        // `to_encrypt` without `key=` gives recipients or a password.
        Secret::Key(_) | Secret::Identities(_) => unreachable!("no key= was passed"),
    };
    let in_place = dst.is_none();
    let dst = dst.unwrap_or_else(|| src.clone());
    detached(py, 1, || {
        let input = open_input(&src)?;
        let output = if in_place {
            Staged::replacing(&dst)?
        } else {
            Staged::create(&dst, overwrite, Some(&src))?
        };
        copy_rekeyed(&input, &output, old, new, &dst)?;
        output.commit()
    })?;
    Ok(())
}

/// Writes the new header, then the rest of `input` as it is.
fn copy_rekeyed(
    input: &std::fs::File,
    output: &Staged,
    old: Arc<Identities>,
    new: Arc<Recipients>,
    dst: &Path,
) -> Result<(), Failure> {
    let mut reader = BufReader::new(input);
    let header = rekey_header(&mut reader, old, new)?;
    let mut file = output.file();
    file.write_all(&header)
        .and_then(|()| std::io::copy(&mut reader, &mut file).map(drop))
        .map_err(|e| Failure::Io(format!("writing {}", dst.display()), e))
}
