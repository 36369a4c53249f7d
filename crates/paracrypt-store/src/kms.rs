//! AWS KMS, as the core's [`Kms`](paracrypt_core::recipient::kms::Kms): `Encrypt` and
//! `Decrypt` of the JSON API (`TrentService`), signed with SigV4 by object_store's
//! [`AwsAuthorizer`] and sent by its HTTP client, so KMS costs no crate that `s3://` does not
//! already build.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, AwsAuthorizer};
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpRequest, ReqwestConnector,
};
use paracrypt_core::recipient::kms::{self, KeyArn};
use serde_json::{Map, Value, json};
use zeroize::Zeroizing;

use crate::error::{Error, Kind};

/// An AWS KMS client with the same settings as `s3://`: credentials from
/// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (or the instance's or
/// container's role, as object_store finds them), the region from `AWS_REGION` or
/// `AWS_DEFAULT_REGION` (a key ARN's own region wins), the server from `AWS_ENDPOINT_URL_KMS`
/// or else `AWS_ENDPOINT_URL` (else the region's, [`kms::endpoint`]), `AWS_ALLOW_HTTP` for one
/// without TLS. A key that starts with `arn:` and is not a KMS key ARN ([`KeyArn`]) is refused
/// before anything is sent.
///
/// Nothing is read or started until the first request: making one is free, so front ends make
/// one whenever they may need it. Requests run on a small runtime of the client's own; the
/// methods block.
#[derive(Debug, Default)]
pub struct Kms {
    client: OnceLock<Result<Client, String>>,
}

#[derive(Debug)]
struct Client {
    runtime: tokio::runtime::Runtime,
    http: HttpClient,
    credentials: object_store::aws::AwsCredentialProvider,
    region: String,
    endpoint: Option<String>,
}

impl Kms {
    /// A client that reads its settings from the environment when first used.
    pub fn from_env() -> Arc<Self> {
        Arc::new(Kms::default())
    }

    fn client(&self) -> Result<&Client, String> {
        self.client
            .get_or_init(|| Client::from_env().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Calls `action` (`Encrypt`, `Decrypt`) with `body`; the answer, or why not, in one line.
    fn call(&self, key: &str, action: &str, body: Value) -> Result<Value, String> {
        // A key from a file picks the server only through an ARN's region, checked to AWS's
        // grammar before anything is read or sent; a server the user set wins.
        let arn = KeyArn::parse(key)?;
        let client = self.client()?;
        let region = arn.map_or(client.region.as_str(), |arn| arn.region);
        let endpoint = match &client.endpoint {
            Some(endpoint) => endpoint.clone(),
            None => kms::endpoint(region).ok_or_else(|| {
                format!(
                    "the AWS region {region} is not a region name (lowercase letters, digits \
                     and dashes, as us-east-1)"
                )
            })?,
        };
        client.runtime.block_on(async {
            let credential = client
                .credentials
                .get_credential()
                .await
                .map_err(|e| format!("no AWS credentials: {}", one_line(&e.to_string())))?;
            let body = body.to_string();
            let mut retry = 0;
            loop {
                let mut request: HttpRequest = http::Request::builder()
                    .method(http::Method::POST)
                    .uri(format!("{}/", endpoint.trim_end_matches('/')))
                    .header(http::header::CONTENT_TYPE, "application/x-amz-json-1.1")
                    .header("x-amz-target", format!("TrentService.{action}"))
                    .body(body.clone().into())
                    .map_err(|e| format!("KMS endpoint {endpoint}: {e}"))?;
                AwsAuthorizer::new(&credential, "kms", region)
                    .try_authorize(&mut request, None)
                    .map_err(|e| {
                        format!("cannot sign the request: {}", one_line(&e.to_string()))
                    })?;
                let response = client.http.execute(request).await.map_err(|e| {
                    format!(
                        "cannot reach KMS at {endpoint}: {}",
                        one_line(&error_chain(&e))
                    )
                })?;
                let status = response.status();
                let error_type = response
                    .headers()
                    .get("x-amzn-errortype")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let bytes = response.into_body().bytes().await.map_err(|e| {
                    format!(
                        "KMS at {endpoint} broke off its answer: {}",
                        one_line(&e.to_string())
                    )
                })?;
                if status.is_success() {
                    return serde_json::from_slice(&bytes)
                        .map_err(|_| format!("KMS at {endpoint} answered with no JSON"));
                }
                let kind = error_kind(error_type.as_deref(), &bytes);
                if retry + 1 < ATTEMPTS && transient(status, &kind) {
                    tokio::time::sleep(backoff(retry, rand::random())).await;
                    retry += 1;
                    continue;
                }
                return Err(refusal(status, error_type.as_deref(), &bytes, region));
            }
        })
    }
}

impl paracrypt_core::recipient::kms::Kms for Kms {
    fn encrypt(
        &self,
        key: &str,
        plaintext: &[u8],
        context: &[(&str, &str)],
    ) -> Result<Vec<u8>, String> {
        let answer = self.call(
            key,
            "Encrypt",
            json!({
                "KeyId": key,
                "Plaintext": BASE64_STANDARD.encode(plaintext),
                "EncryptionContext": context_of(context),
            }),
        )?;
        blob(&answer, "CiphertextBlob")
    }

    fn decrypt(
        &self,
        key: &str,
        ciphertext: &[u8],
        context: &[(&str, &str)],
    ) -> Result<Zeroizing<Vec<u8>>, String> {
        let answer = self.call(
            key,
            "Decrypt",
            json!({
                "KeyId": key,
                "CiphertextBlob": BASE64_STANDARD.encode(ciphertext),
                "EncryptionContext": context_of(context),
            }),
        )?;
        blob(&answer, "Plaintext").map(Zeroizing::new)
    }
}

impl Client {
    fn from_env() -> Result<Self, Error> {
        let (builder, options): (AmazonS3Builder, ClientOptions) = crate::object::s3_from_env()?;
        let setting = |key: AmazonS3ConfigKey| builder.get_config_value(&key);
        let region = setting(AmazonS3ConfigKey::Region)
            .or_else(|| setting(AmazonS3ConfigKey::DefaultRegion))
            .unwrap_or_else(|| "us-east-1".to_owned());
        let endpoint = std::env::var("AWS_ENDPOINT_URL_KMS")
            .ok()
            .or_else(|| setting(AmazonS3ConfigKey::Endpoint));
        let settings = |e: object_store::Error| {
            Error::new(
                Kind::Settings,
                format!("KMS settings: {}", one_line(&e.to_string())),
            )
        };
        // A bucket is needed to build the store; only its credential provider and its HTTP
        // client are used. The client is the one the store makes for these very options (the
        // last one it asks the connector for: credential providers ask first, with options of
        // their own): making a second would load the system's TLS roots again, a few
        // milliseconds per run.
        let connector = Keep::default();
        let store = builder
            .with_bucket_name("paracrypt-kms")
            .with_client_options(options)
            .with_http_connector(connector.clone())
            .build()
            .map_err(settings)?;
        let http = connector.last().ok_or_else(|| {
            Error::new(
                Kind::Settings,
                "KMS settings: no HTTP client was made".to_owned(),
            )
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .thread_name("paracrypt-kms")
            .enable_all()
            .build()
            .map_err(|e| Error::new(Kind::Request, format!("cannot start KMS's runtime: {e}")))?;
        Ok(Client {
            runtime,
            http,
            credentials: store.credentials().clone(),
            region,
            endpoint,
        })
    }
}

/// object_store's own connector, keeping the last client it made.
#[derive(Debug, Default, Clone)]
struct Keep {
    last: Arc<Mutex<Option<HttpClient>>>,
}

impl Keep {
    fn last(&self) -> Option<HttpClient> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl HttpConnector for Keep {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = ReqwestConnector::default().connect(options)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(client.clone());
        Ok(client)
    }
}

fn context_of(context: &[(&str, &str)]) -> Map<String, Value> {
    context
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect()
}

/// A base64 field of KMS's answer, decoded.
fn blob(answer: &Value, field: &str) -> Result<Vec<u8>, String> {
    answer
        .get(field)
        .and_then(Value::as_str)
        .and_then(|text| BASE64_STANDARD.decode(text).ok())
        .ok_or_else(|| format!("KMS's answer has no {field}"))
}

/// How many times a request is sent at most, when KMS throttles it or fails on its side.
const ATTEMPTS: u32 = 4;
/// The most the first retry waits, doubled for each next one up to [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Whether an answer is worth asking again: KMS throttled the caller (429, or its
/// `ThrottlingException`, which comes as a 400) or failed on its side (5xx). Any other refusal
/// would be the same again.
fn transient(status: http::StatusCode, kind: &str) -> bool {
    status == http::StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
        || kind == "ThrottlingException"
}

/// The wait before retry `retry` (0 for the first): a random share `jitter` (from 0 to 1) of
/// the exponential delay, capped ("full jitter", as AWS's SDKs wait), so that clients throttled
/// together do not come back together.
fn backoff(retry: u32, jitter: f64) -> Duration {
    BACKOFF
        .saturating_mul(1 << retry.min(16))
        .min(MAX_BACKOFF)
        .mul_f64(jitter.clamp(0.0, 1.0))
}

/// KMS's error type (`AccessDeniedException`, …) of a refusal: JSON's `__type` (without its
/// namespace), else the `x-amzn-ErrorType` header, else AWS's XML `Code`; empty if none.
fn error_kind(header: Option<&str>, body: &[u8]) -> String {
    let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = answer
        .get("__type")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| header.map(|h| h.split(':').next().unwrap_or(h).to_owned()))
        .or_else(|| xml(&String::from_utf8_lossy(body), "Code"))
        .unwrap_or_default();
    kind.rsplit('#').next().unwrap_or("").to_owned()
}

/// The text of the first `<tag>` of an XML answer.
fn xml(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find('<')? + start;
    Some(text[start..end].to_owned())
}

/// Why KMS refused, in one line: its error type, said in words for the ones a user can act on.
/// KMS answers JSON (`__type`, `message`); a refusal before KMS proper (the signature, IAM)
/// may come as AWS's XML error, whose type the `x-amzn-ErrorType` header also gives.
fn refusal(status: http::StatusCode, header: Option<&str>, body: &[u8], region: &str) -> String {
    let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let kind = error_kind(header, body);
    let kind = kind.as_str();
    let message = answer
        .get("message")
        .or_else(|| answer.get("Message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| xml(&String::from_utf8_lossy(body), "Message"))
        .map(|m| one_line(&m))
        .unwrap_or_default();
    let said = |words: &str| {
        if message.is_empty() {
            format!("{words} ({kind})")
        } else {
            format!("{words} ({kind}: {message})")
        }
    };
    match kind {
        "AccessDeniedException" | "AccessDenied" => said("access denied"),
        "DisabledException" => said("the key is disabled"),
        "KMSInvalidStateException" => said("the key cannot be used in its state"),
        "NotFoundException" => said(&format!(
            "no such key in region {region} (a wrong region, or an unknown key)"
        )),
        "InvalidCiphertextException" => said(
            "KMS refused the wrapped key: it belongs to another file (its header differs) or \
             is damaged",
        ),
        "IncorrectKeyException" => said("the key did not wrap this file key"),
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "SignatureDoesNotMatch"
        | "InvalidClientTokenId" => said("the AWS credentials were refused"),
        "" => format!("KMS answered {status}"),
        _ => said("KMS refused"),
    }
}

/// An error and its causes, joined (a connection refused is only said in the causes).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = e.source();
    }
    text
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key that starts with `arn:` and is not a KMS key ARN is refused before the client
    /// reads its settings, let alone picks a server or sends the credentials anywhere.
    #[test]
    fn a_hostile_key_arn_is_refused_before_the_client_is_made() {
        use paracrypt_core::recipient::kms::Kms as _;
        let kms = Kms::default();
        for key in [
            "arn:aws:kms:x@attacker.example/:123456789012:key/1",
            "arn:aws:kms:us-east-1:12345678901:key/1",
        ] {
            let e = kms.decrypt(key, b"blob", &[]).unwrap_err();
            assert!(e.starts_with("not an AWS KMS key ARN: "), "{key}: {e}");
            let e = kms.encrypt(key, b"file key", &[]).unwrap_err();
            assert!(e.starts_with("not an AWS KMS key ARN: "), "{key}: {e}");
        }
        assert!(kms.client.get().is_none(), "no client was made");
    }

    /// Throttling (KMS's `ThrottlingException`, a 429) and KMS's own failures (5xx) are asked
    /// again, after a random wait under a doubling, capped bound; a refusal is not.
    #[test]
    fn throttling_and_server_errors_are_retried_with_a_capped_random_backoff() {
        use http::StatusCode as S;
        let throttled = br#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#;
        let kind = error_kind(None, throttled);
        assert!(transient(S::BAD_REQUEST, &kind));
        assert!(transient(
            S::BAD_REQUEST,
            &error_kind(Some("ThrottlingException:x"), b"")
        ));
        assert!(transient(S::TOO_MANY_REQUESTS, ""));
        assert!(transient(S::INTERNAL_SERVER_ERROR, "KMSInternalException"));
        assert!(transient(S::SERVICE_UNAVAILABLE, ""));
        for (status, kind) in [
            (S::BAD_REQUEST, "AccessDeniedException"),
            (S::BAD_REQUEST, "InvalidCiphertextException"),
            (S::BAD_REQUEST, "NotFoundException"),
            (S::FORBIDDEN, ""),
        ] {
            assert!(!transient(status, kind), "{status} {kind}");
        }
        let ms = |retry, jitter| backoff(retry, jitter).as_millis();
        assert_eq!(
            (0..ATTEMPTS).map(|r| ms(r, 1.0)).collect::<Vec<_>>(),
            [200, 400, 800, 1600]
        );
        assert_eq!(ms(10, 1.0), 2000, "capped");
        assert_eq!(ms(u32::MAX, 1.0), 2000, "capped");
        assert_eq!(ms(2, 0.5), 400);
        assert_eq!(ms(2, 0.0), 0);
    }

    /// A disabled key or one pending deletion: moto (the suite's KMS server) encrypts and
    /// decrypts with such keys, so these answers are checked here as AWS sends them (the
    /// JSON protocol's `__type` with its namespace, and `message`).
    #[test]
    fn a_disabled_key_and_a_key_pending_deletion_are_said_in_words() {
        let status = http::StatusCode::BAD_REQUEST;
        let disabled = br#"{"__type":"com.amazonaws.kms#DisabledException","message":"arn:aws:kms:us-east-1:111122223333:key/1234abcd is disabled."}"#;
        assert_eq!(
            refusal(status, None, disabled, "us-east-1"),
            "the key is disabled (DisabledException: arn:aws:kms:us-east-1:111122223333:key/1234abcd \
             is disabled.)"
        );
        let pending = br#"{"__type":"KMSInvalidStateException","message":"arn:aws:kms:us-east-1:111122223333:key/1234abcd is pending deletion."}"#;
        assert_eq!(
            refusal(status, None, pending, "us-east-1"),
            "the key cannot be used in its state (KMSInvalidStateException: \
             arn:aws:kms:us-east-1:111122223333:key/1234abcd is pending deletion.)"
        );
        // Only the header says the type (an answer without a body).
        assert_eq!(
            refusal(
                status,
                Some("DisabledException:http://internal.amazon.com/"),
                b"{}",
                "r"
            ),
            "the key is disabled (DisabledException)"
        );
    }
}
