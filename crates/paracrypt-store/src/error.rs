//! What went wrong with an object, in one line that names it and says what to do.

use paracrypt_core::ErrorKind;

/// An object storage failure: what was being done, to which URL, and why.
///
/// The message is one line for the user (`cannot write s3://b/k: no such bucket \`b\``); the
/// [`Error::kind`] says whether the command was wrong (a usage error) or the storage failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: Kind,
    message: String,
}

/// The kinds of object storage failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// Not a URL this build can open (unknown scheme, no bucket, an invalid key).
    InvalidUrl,
    /// A setting of the store in the environment cannot be read (an `AWS_*` variable that is
    /// not UTF-8).
    Settings,
    /// The operation is not offered for this URL (writing to `http://`).
    Unsupported,
    /// The object (or its bucket) does not exist.
    NotFound,
    /// The output object exists and `--force` was not given (or it was created meanwhile: the
    /// conditional complete failed).
    AlreadyExists,
    /// The server refused the credentials, or they are missing.
    Denied,
    /// The object changed while it was being read (its ETag no longer matches).
    Changed,
    /// The request failed: the server is unreachable, busy after every retry, or answered
    /// with an error.
    Request,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The core's kind, for exit codes: a usage error for a bad URL or setting, an unsupported
    /// operation or an output that exists; an I/O error otherwise.
    pub fn core_kind(&self) -> ErrorKind {
        match self.kind {
            Kind::InvalidUrl | Kind::Settings | Kind::Unsupported | Kind::AlreadyExists => {
                ErrorKind::Usage
            }
            _ => ErrorKind::Io,
        }
    }

    /// The failure of `doing` (`cannot read s3://b/k`, `cannot write s3://b/k`) from
    /// object_store's error, translated into one line: what happened and what to check.
    pub(crate) fn from_store(doing: &str, error: &object_store::Error) -> Self {
        use object_store::Error as E;
        let text = error.to_string();
        let (kind, why) = match error {
            E::NotFound { .. } if text.contains("NoSuchBucket") => {
                (Kind::NotFound, "no such bucket".to_string())
            }
            E::NotFound { .. } => (Kind::NotFound, "no such object (or bucket)".to_string()),
            E::AlreadyExists { .. } => (
                Kind::AlreadyExists,
                "it already exists (use --force to overwrite; Python: overwrite=True)".to_string(),
            ),
            E::Precondition { .. } if doing.starts_with("cannot read") => (
                Kind::Changed,
                "the object changed while it was being read".to_string(),
            ),
            E::Precondition { .. } => (
                Kind::AlreadyExists,
                "it was created by someone else meanwhile (use --force to overwrite)".to_string(),
            ),
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => (Kind::Denied, denied(&text)),
            E::NotImplemented { .. } | E::NotSupported { .. } => (
                Kind::Unsupported,
                format!("not supported by this store: {}", short(&text)),
            ),
            _ => classify(&text),
        };
        Error::new(kind, format!("{doing}: {why}"))
    }
}

/// A request error object_store reports as generic, sorted by what the server or the network
/// said.
fn classify(text: &str) -> (Kind, String) {
    let has = |s: &str| text.contains(s);
    if has("NoSuchBucket") {
        (Kind::NotFound, "no such bucket".into())
    } else if has("NoSuchKey") || has("404 Not Found") {
        (Kind::NotFound, "no such object (or bucket)".into())
    } else if has("SignatureDoesNotMatch")
        || has("InvalidAccessKeyId")
        || has("AccessDenied")
        || has("403 Forbidden")
        || has("401 Unauthorized")
    {
        (Kind::Denied, denied(text))
    } else if has("PreconditionFailed") || has("412 Precondition Failed") {
        (
            Kind::AlreadyExists,
            "it was created by someone else meanwhile (use --force to overwrite)".into(),
        )
    } else if has("SlowDown") || has("503 Service Unavailable") {
        (
            Kind::Request,
            format!(
                "the server is busy (503 SlowDown) even after retrying: {}",
                retries(text)
            ),
        )
    } else if has("error sending request") || has("connect") || has("Connection refused") {
        (
            Kind::Request,
            format!("the server cannot be reached: {}", retries(text)),
        )
    } else {
        (Kind::Request, short(text))
    }
}

/// What to say when the server refused the credentials.
fn denied(text: &str) -> String {
    let code = [
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "AccessDenied",
    ]
    .into_iter()
    .find(|code| text.contains(code))
    .map(|code| format!(" ({code})"))
    .unwrap_or_default();
    format!(
        "access denied{code}: check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
         or the instance's role) and the bucket's policy"
    )
}

/// object_store's count of retries, from its message (`after 3 retries`), or the message.
fn retries(text: &str) -> String {
    match text.find("after ") {
        Some(at) => {
            let rest = &text[at..];
            let end = rest
                .find(" retries")
                .map_or(rest.len(), |e| e + " retries".len());
            format!("gave up {}", &rest[..end])
        }
        None => short(text),
    }
}

/// A message on one line, without object_store's nesting of sources.
fn short(text: &str) -> String {
    text.replace('\n', " ")
}
