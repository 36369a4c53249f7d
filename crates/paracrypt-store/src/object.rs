//! One object: its URL, the store that holds it, and the runtime its requests run on.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::client::ClientOptions;
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, RetryConfig};

use crate::error::{Error, Kind};

/// The schemes this build opens. `http(s)` is read-only.
const SCHEMES: [&str; 8] = [
    "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "http",
];

/// Whether `text` names an object (`s3://bucket/key`, `gs://…`, `az://…`, `http(s)://…`)
/// rather than a local path. A local file whose name starts like a URL is reached as
/// `./s3://…`.
pub fn is_url(text: &str) -> bool {
    SCHEMES.iter().any(|scheme| {
        if *scheme == "http" {
            text.starts_with("http://") || text.starts_with("https://")
        } else {
            text.starts_with(scheme)
        }
    })
}

/// How objects are read and written: concurrency, retries, part sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Parts uploaded at once ([`DEFAULT_UPLOAD_CONCURRENCY`]).
    pub upload_concurrency: usize,
    /// Ranged GETs in flight when reading ([`DEFAULT_DOWNLOAD_CONCURRENCY`]).
    pub download_concurrency: usize,
    /// Retries of a failed request (connection errors, 5xx answers such as 503 SlowDown), with
    /// exponential backoff from 100 ms up to 15 s between tries, within 3 minutes.
    pub retries: usize,
}

/// [`Options::upload_concurrency`]'s default.
pub const DEFAULT_UPLOAD_CONCURRENCY: usize = 8;
/// [`Options::download_concurrency`]'s default.
pub const DEFAULT_DOWNLOAD_CONCURRENCY: usize = 8;
/// [`Options::retries`]'s default (object_store's).
pub const DEFAULT_RETRIES: usize = 10;
/// The most parts ([`Options::upload_concurrency`]) or ranged GETs
/// ([`Options::download_concurrency`]) a front end lets a run ask to have in flight at once
/// (each holds a buffer of 8 MiB or more: 2 GiB at this bound). The least is 1.
pub const MAX_CONCURRENCY: usize = 256;
/// The most retries of one request ([`Options::retries`]) a front end lets a run ask for
/// (each waits up to 15 s).
pub const MAX_RETRIES: usize = 100;

/// The longest one request may take (a part of hundreds of MiB on a slow link included) before
/// it counts as failed and is retried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for Options {
    fn default() -> Self {
        Options {
            upload_concurrency: DEFAULT_UPLOAD_CONCURRENCY,
            download_concurrency: DEFAULT_DOWNLOAD_CONCURRENCY,
            retries: DEFAULT_RETRIES,
        }
    }
}

/// An object in a store: `s3://bucket/key` (and `gs://`, `az://`, and `http(s)://` for reading).
///
/// Credentials and settings come from the environment as object_store reads them (for S3,
/// `AmazonS3Builder::from_env`: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL` for another server, `AWS_ALLOW_HTTP`
/// for one without TLS, the instance's or container's role otherwise). Requests run on a small
/// runtime of the object's own, so the methods block: call them from any thread.
#[derive(Clone)]
pub struct Object {
    pub(crate) url: String,
    pub(crate) path: Path,
    pub(crate) store: Arc<dyn ObjectStore>,
    /// The same store, for multipart uploads (not for `http(s)://`).
    pub(crate) multipart: Option<Arc<dyn MultipartStore>>,
    /// S3 only: a client that sends `If-None-Match: *` with every request, used for the one
    /// request that completes a multipart upload, so that an object created meanwhile is not
    /// replaced (object_store completes unconditionally; its default headers reach that
    /// request).
    pub(crate) create_only: Option<Arc<dyn MultipartStore>>,
    pub(crate) runtime: Arc<tokio::runtime::Runtime>,
    pub(crate) options: Options,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Object")
            .field("url", &self.url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// An object's store, as itself, for multipart uploads, and for conditional completes.
type Stores = (
    Arc<dyn ObjectStore>,
    Option<Arc<dyn MultipartStore>>,
    Option<Arc<dyn MultipartStore>>,
);

/// What a HEAD request says about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Its length in bytes.
    pub len: u64,
    /// Its ETag, which later reads require (`If-Match`) so that they all see one version.
    pub e_tag: Option<String>,
}

impl Object {
    /// Opens the object `url` names (no request is made yet).
    pub fn open(url: &str, options: Options) -> Result<Self, Error> {
        let invalid = |why: String| Error::new(Kind::InvalidUrl, format!("{url}: {why}"));
        if !is_url(url) {
            return Err(invalid(
                "not an object URL (s3://, gs://, az://, http(s)://)".into(),
            ));
        }
        let (scheme, rest) = url.split_once("://").expect("a URL has a scheme");
        let key = match rest.split_once('/') {
            Some((bucket, key)) if !bucket.is_empty() => key,
            _ => return Err(invalid("no bucket and key (s3://BUCKET/KEY)".into())),
        };
        let path = Path::parse(key).map_err(|e| invalid(format!("not a valid key: {e}")))?;
        if path.as_ref().is_empty() {
            return Err(invalid("no key after the bucket (s3://BUCKET/KEY)".into()));
        }
        let retry = RetryConfig {
            max_retries: options.retries,
            ..RetryConfig::default()
        };
        let built = |e: object_store::Error| invalid(e.to_string().replace('\n', " "));
        let (store, multipart, create_only): Stores = match scheme {
            "s3" | "s3a" => {
                let (builder, client) = s3_from_env()?;
                let base = builder.with_url(url).with_retry(retry.clone());
                let s3 = Arc::new(
                    base.clone()
                        .with_client_options(client.clone())
                        .build()
                        .map_err(built)?,
                );
                let mut headers = http::HeaderMap::new();
                headers.insert(
                    http::header::IF_NONE_MATCH,
                    http::HeaderValue::from_static("*"),
                );
                let create = base
                    .with_client_options(client.with_default_headers(headers))
                    .build()
                    .map_err(built)?;
                (s3.clone(), Some(s3), Some(Arc::new(create)))
            }
            "gs" => {
                settings_in_utf8("GOOGLE_", |key| {
                    key.parse::<object_store::gcp::GoogleConfigKey>().is_ok()
                })?;
                let gcs = Arc::new(
                    object_store::gcp::GoogleCloudStorageBuilder::from_env()
                        .with_url(url)
                        .with_retry(retry)
                        .build()
                        .map_err(built)?,
                );
                (gcs.clone(), Some(gcs), None)
            }
            "az" | "azure" | "abfs" | "abfss" => {
                settings_in_utf8("AZURE_", |key| {
                    key.parse::<object_store::azure::AzureConfigKey>().is_ok()
                })?;
                let azure = Arc::new(
                    object_store::azure::MicrosoftAzureBuilder::from_env()
                        .with_url(url)
                        .with_retry(retry)
                        .build()
                        .map_err(built)?,
                );
                (azure.clone(), Some(azure), None)
            }
            _ => {
                // http(s): the store is the server's root, the path the rest of the URL.
                let (root, _) =
                    url.split_at(scheme.len() + 3 + rest.find('/').unwrap_or(rest.len()));
                let http = object_store::http::HttpBuilder::new()
                    .with_url(root)
                    .with_retry(retry)
                    .build()
                    .map_err(built)?;
                (Arc::new(http), None, None)
            }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("paracrypt-store")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::new(
                    Kind::Request,
                    format!("{url}: cannot start the I/O runtime: {e}"),
                )
            })?;
        Ok(Object {
            url: url.to_string(),
            path,
            store,
            multipart,
            create_only,
            runtime: Arc::new(runtime),
            options,
        })
    }

    /// Whether the object can be written (not an `http(s)://` URL).
    pub fn writable(&self) -> bool {
        self.multipart.is_some()
    }

    /// The URL, as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The options it was opened with.
    pub fn options(&self) -> Options {
        self.options
    }

    /// Runs `future` on the object's runtime and waits for it.
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The object's length and ETag; `None` if it does not exist.
    pub fn head(&self) -> Result<Option<Meta>, Error> {
        match self.block_on(self.store.head(&self.path)) {
            Ok(meta) => Ok(Some(Meta {
                len: meta.size,
                e_tag: meta.e_tag,
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Error::from_store(&format!("cannot read {}", self.url), &e)),
        }
    }

    /// Whether the object exists, asked before writing it (errors say `cannot write`).
    pub fn exists(&self) -> Result<bool, Error> {
        match self.block_on(self.store.head(&self.path)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.write_error(&e)),
        }
    }

    /// The object's length and ETag; fails if it does not exist.
    pub fn meta(&self) -> Result<Meta, Error> {
        self.head()?.ok_or_else(|| {
            Error::new(
                Kind::NotFound,
                format!("cannot read {}: no such object (or bucket)", self.url),
            )
        })
    }

    /// Bytes `range` of the object, as the version with `e_tag` (when given) holds them.
    pub fn get_range(&self, range: Range<u64>, e_tag: Option<&str>) -> Result<Bytes, Error> {
        self.block_on(get_range(
            self.store.clone(),
            self.path.clone(),
            range,
            e_tag.map(str::to_string),
        ))
        .map_err(|e| self.read_error(&e))
    }

    pub(crate) fn read_error(&self, e: &object_store::Error) -> Error {
        Error::from_store(&format!("cannot read {}", self.url), e)
    }

    pub(crate) fn write_error(&self, e: &object_store::Error) -> Error {
        Error::from_store(&format!("cannot write {}", self.url), e)
    }

    /// Removes the object (an update's file gone from its tree, tests and tools: paracrypt
    /// never removes what it did not make).
    pub fn delete(&self) -> Result<(), Error> {
        self.block_on(self.store.delete(&self.path))
            .map_err(|e| self.write_error(&e))
    }

    /// Whether two objects are the same (URL, bucket and key).
    pub fn same_as(&self, other: &Object) -> bool {
        self.url.split_once("://").map(|(s, _)| s) == other.url.split_once("://").map(|(s, _)| s)
            && self.path == other.path
            && self.store.to_string() == other.store.to_string()
    }
}

/// A ranged GET, its bytes checked to be as many as asked.
pub(crate) async fn get_range(
    store: Arc<dyn ObjectStore>,
    path: Path,
    range: Range<u64>,
    e_tag: Option<String>,
) -> Result<Bytes, object_store::Error> {
    let want = range.end - range.start;
    let options = GetOptions {
        range: Some(GetRange::Bounded(range)),
        if_match: e_tag,
        ..GetOptions::default()
    };
    let bytes = store.get_opts(&path, options).await?.bytes().await?;
    if bytes.len() as u64 != want {
        return Err(object_store::Error::Generic {
            store: "paracrypt",
            source: format!(
                "a ranged GET gave {} bytes where {want} were asked",
                bytes.len()
            )
            .into(),
        });
    }
    Ok(bytes)
}

/// S3's builder and client options from the environment, as `AmazonS3Builder::from_env` reads
/// them, the client options apart so that a second client can add a header to them.
pub(crate) fn s3_from_env() -> Result<(object_store::aws::AmazonS3Builder, ClientOptions), Error> {
    use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
    settings_in_utf8("AWS_", |key| key.parse::<AmazonS3ConfigKey>().is_ok())?;
    let mut client = ClientOptions::new().with_timeout(REQUEST_TIMEOUT);
    // The variables of other programs may hold any bytes (`std::env::vars` would panic on
    // them): only those named like a setting are read, and those are UTF-8 (checked above).
    for (key, value) in std::env::vars_os() {
        if let (Some(key), Some(value)) = (key.to_str(), value.to_str())
            && let Some(name) = key.strip_prefix("AWS_")
            && let Ok(AmazonS3ConfigKey::Client(config)) =
                format!("aws_{}", name.to_ascii_lowercase()).parse()
        {
            client = client.with_config(config, value);
        }
    }
    Ok((AmazonS3Builder::from_env(), client))
}

/// Refuses a setting of the store (a variable starting with `prefix` whose lowercase name
/// `is_setting` accepts, as object_store's `from_env` reads them) that is not UTF-8:
/// object_store would skip it without a word and fall back to another credential or region.
/// Other variables, whatever their bytes, are none of the store's business.
fn settings_in_utf8(prefix: &str, is_setting: impl Fn(&str) -> bool) -> Result<(), Error> {
    for (key, value) in std::env::vars_os() {
        if let Some(key) = key.to_str()
            && key.starts_with(prefix)
            && value.to_str().is_none()
            && is_setting(&key.to_ascii_lowercase())
        {
            return Err(Error::new(
                Kind::Settings,
                format!("the environment variable {key} is not valid UTF-8"),
            ));
        }
    }
    Ok(())
}
