//! The JSON-over-HTTP client every model client shares: one HTTP/1.1 connection per request
//! (hyper), HTTPS through rustls, a timeout per request, retries with backoff on 429, 5xx,
//! timeouts and refused connections, and a bound on requests in flight.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, RETRY_AFTER};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use memory_core::{MemoryError, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// The largest response body read (16 MiB): embeddings of a large batch fit.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The longest wait before a retry: the backoff's, however large it is set, and the one a
/// `Retry-After` header asks for.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// Where a model service is and how to talk to it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HttpConfig {
    /// The API's base URL, up to the version: `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` (Ollama), `http://localhost:8080` (text-embeddings-inference).
    /// Paths such as `/chat/completions` are appended to it.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set. Never logged, shown by `Debug` or
    /// serialized: a configuration written out leaves it out (and read back has none), one
    /// read in takes it.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// How long one request may take, connection included (default 30 s).
    #[serde(with = "memory_retrieve::serde_millis")]
    pub timeout: Duration,
    /// Requests per call at most, the first included (default 3): 429, 5xx, timeouts and
    /// refused connections are retried, other errors are not.
    pub max_attempts: u32,
    /// The wait before the first retry (default 500 ms), doubled before each further one;
    /// no wait is longer than 60 s, so a backoff above 60 s waits 60 s from the first
    /// retry on. Zero retries at once, every time. A `Retry-After` header on the failed
    /// answer, in seconds or as an HTTP date, replaces the wait of that retry (also at most
    /// 60 s); the doubling goes on beneath it.
    #[serde(with = "memory_retrieve::serde_millis")]
    pub backoff: Duration,
    /// Requests in flight at most, per client (default 4).
    pub max_concurrency: usize,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("max_concurrency", &self.max_concurrency)
            .finish()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key: None,
            timeout: Duration::from_secs(30),
            max_attempts: 3,
            backoff: Duration::from_millis(500),
            max_concurrency: 4,
        }
    }
}

impl HttpConfig {
    /// Defaults for the service at `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            ..Self::default()
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the timeout per request.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the attempts per call ([`max_attempts`](Self::max_attempts)) and the wait
    /// before the first retry ([`backoff`](Self::backoff), which says how it grows and
    /// where it stops).
    pub fn with_retries(mut self, max_attempts: u32, backoff: Duration) -> Self {
        self.max_attempts = max_attempts;
        self.backoff = backoff;
        self
    }

    /// Sets the bound on requests in flight.
    pub fn with_max_concurrency(mut self, requests: usize) -> Self {
        self.max_concurrency = requests;
        self
    }

    /// `base_url` from the environment variable `url_var`, else `default_url`; the key
    /// from the first of `key_vars` that is set and not empty.
    pub fn from_env(url_var: &str, default_url: &str, key_vars: &[&str]) -> Self {
        let base_url = std::env::var(url_var)
            .ok()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| default_url.to_owned());
        // Trimmed: a key read from a file of `KEY=value` lines often keeps its line break.
        let api_key = key_vars
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .map(|key| key.trim().to_owned())
            .find(|key| !key.is_empty());
        Self {
            base_url,
            api_key,
            ..Self::default()
        }
    }
}

/// The parsed base URL.
#[derive(Clone, Debug)]
struct Endpoint {
    https: bool,
    host: String,
    port: u16,
    /// The path prefix, without a trailing `/`.
    path: String,
}

impl Endpoint {
    fn parse(base_url: &str) -> Result<Self> {
        // Credentials in the URL would be neither sent (the key goes in `api_key`) nor kept
        // out of errors and `Debug`: refused, without repeating the URL.
        if base_url
            .split_once("://")
            .map_or(base_url, |(_, rest)| rest)
            .split(['/', '?', '#'])
            .next()
            .is_some_and(|authority| authority.contains('@'))
        {
            return Err(MemoryError::invalid(
                "base_url",
                "the URL holds credentials (user:password@): give the key as api_key instead",
            ));
        }
        // A query string would not be kept (paths are appended to the base URL) and may
        // carry a key (`?api-key=...`): refused, without repeating the URL.
        if base_url.contains('?') {
            return Err(MemoryError::invalid(
                "base_url",
                "the URL has a query string (?...), which is not sent: give the base URL up \
                 to the version, and a key as api_key",
            ));
        }
        let uri: Uri = base_url
            .trim()
            .parse()
            .map_err(|error| MemoryError::invalid("base_url", format!("{base_url:?}: {error}")))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(MemoryError::invalid(
                    "base_url",
                    format!("{base_url:?} is not an http:// or https:// URL"),
                ));
            }
        };
        let host = uri
            .host()
            .filter(|host| !host.is_empty())
            .ok_or_else(|| MemoryError::invalid("base_url", format!("{base_url:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Self {
            https,
            host,
            port,
            path: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    fn url(&self, path: &str) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!(
            "{scheme}://{}:{}{}{path}",
            self.bracketed(),
            self.port,
            self.path
        )
    }

    /// The host as a URL and a `Host` header write it: an IPv6 address in brackets.
    fn bracketed(&self) -> std::borrow::Cow<'_, str> {
        if self.host.contains(':') {
            std::borrow::Cow::Owned(format!("[{}]", self.host))
        } else {
            std::borrow::Cow::Borrowed(&self.host)
        }
    }
}

/// The wait before the first retry: the configured backoff, at most [`MAX_WAIT`] as every
/// later wait is (a backoff of an hour would otherwise wait an hour once).
fn first_wait(backoff: Duration) -> Duration {
    backoff.min(MAX_WAIT)
}

/// The wait before the next retry: doubled, up to [`MAX_WAIT`] (twenty attempts from 500 ms would otherwise wait 36 hours before the last).
fn doubled(wait: Duration) -> Duration {
    wait.saturating_mul(2).min(MAX_WAIT)
}

/// A failed attempt, and whether another may succeed.
struct Failure {
    error: MemoryError,
    retry: bool,
    retry_after: Option<Duration>,
}

/// The shared client (see the module docs).
#[derive(Clone)]
pub(crate) struct HttpClient {
    endpoint: Endpoint,
    config: HttpConfig,
    permits: Arc<Semaphore>,
    /// The TLS connector of an https:// endpoint, or why there is none; `None` for
    /// http://. Built in [`new`](Self::new): the system's roots are read from files, which
    /// would block a runtime worker in the first request.
    tls: Option<&'static TlsSetup>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client for `config`. For an https:// URL the first such client of the process
    /// reads the system's root certificates here (file I/O, once per process). Finding none
    /// does not fail the constructor: each request reports it.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `base_url`, `timeout`, `max_attempts` or
    /// `max_concurrency`.
    pub(crate) fn new(config: HttpConfig) -> Result<Self> {
        let endpoint = Endpoint::parse(&config.base_url)?;
        if config.timeout.is_zero() {
            return Err(MemoryError::invalid("timeout", "must be positive"));
        }
        if config.max_attempts == 0 || config.max_attempts > 20 {
            return Err(MemoryError::invalid(
                "max_attempts",
                "must be between 1 and 20",
            ));
        }
        if config.max_concurrency == 0 || config.max_concurrency > 1024 {
            return Err(MemoryError::invalid(
                "max_concurrency",
                "must be between 1 and 1024",
            ));
        }
        let tls = endpoint.https.then(tls_setup);
        Ok(Self {
            permits: Arc::new(Semaphore::new(config.max_concurrency)),
            endpoint,
            config,
            tls,
        })
    }

    /// Posts `body` as JSON to `path` (appended to the base URL) and decodes the answer.
    /// `what` names the call in errors (`chat completion`, `embeddings`, `rerank`).
    ///
    /// # Errors
    /// [`MemoryError::Timeout`] when no attempt answered in time;
    /// [`MemoryError::Unavailable`] when the service could not be reached or kept answering
    /// 429 or 5xx; [`MemoryError::InvalidInput`] naming `api_key` for 401 and 403, `base_url`
    /// for 404, `request` for other 4xx; [`MemoryError::Serialization`] for an answer that
    /// is not the expected JSON. Every message names the URL and the HTTP status.
    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
        what: &str,
    ) -> Result<T> {
        let url = self.endpoint.url(path);
        let payload =
            Bytes::from(
                serde_json::to_vec(body).map_err(|error| MemoryError::Serialization {
                    message: format!("{what}: encoding the request"),
                    source: Some(Box::new(error)),
                })?,
            );
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| MemoryError::invalid("client", "closed"))?;
        let mut wait = first_wait(self.config.backoff);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = tokio::time::timeout(
                self.config.timeout,
                self.send(path, payload.clone(), &url, what),
            )
            .await;
            let failure = match outcome {
                Ok(Ok(bytes)) => {
                    return serde_json::from_slice(&bytes).map_err(|error| {
                        MemoryError::Serialization {
                            message: format!(
                                "{what}: {url} answered with unexpected JSON: {error}; body starts {:?}",
                                snippet(&bytes)
                            ),
                            source: Some(Box::new(error)),
                        }
                    });
                }
                Ok(Err(failure)) => failure,
                Err(_elapsed) => Failure {
                    error: MemoryError::Timeout(format!(
                        "{what}: no answer from {url} within {} ms",
                        self.config.timeout.as_millis()
                    )),
                    retry: true,
                    retry_after: None,
                },
            };
            if !failure.retry || attempt >= self.config.max_attempts {
                if attempt > 1 {
                    tracing::warn!(error = %failure.error, attempts = attempt, "{what} failed");
                }
                return Err(failure.error);
            }
            let pause = failure.retry_after.unwrap_or(wait);
            tracing::debug!(error = %failure.error, attempt, pause_ms = pause.as_millis() as u64, "{what}: retrying");
            tokio::time::sleep(pause).await;
            wait = doubled(wait);
        }
    }

    /// One request: connect, send, read the whole answer.
    async fn send(
        &self,
        path: &str,
        payload: Bytes,
        url: &str,
        what: &str,
    ) -> std::result::Result<Bytes, Failure> {
        let endpoint = &self.endpoint;
        let unreachable = |error: Box<dyn std::error::Error + Send + Sync>| Failure {
            error: MemoryError::Unavailable {
                message: format!("{what}: cannot reach {url}: {error}"),
                source: Some(error),
            },
            retry: true,
            retry_after: None,
        };
        let stream = TcpStream::connect((endpoint.host.as_str(), endpoint.port))
            .await
            .map_err(|error| unreachable(Box::new(error)))?;
        let _ = stream.set_nodelay(true);
        let uri = format!("{}{path}", endpoint.path);
        let authority = if (endpoint.https && endpoint.port == 443)
            || (!endpoint.https && endpoint.port == 80)
        {
            endpoint.bracketed().into_owned()
        } else {
            format!("{}:{}", endpoint.bracketed(), endpoint.port)
        };
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(HOST, authority)
            .header(CONTENT_TYPE, "application/json")
            .header(CONTENT_LENGTH, payload.len());
        if let Some(key) = &self.config.api_key {
            let value = hyper::header::HeaderValue::from_str(&format!("Bearer {}", key.trim()))
                .map_err(|_| Failure {
                    error: MemoryError::invalid(
                        "api_key",
                        "the key holds a character a header cannot carry (a line break?)",
                    ),
                    retry: false,
                    retry_after: None,
                })?;
            request = request.header(AUTHORIZATION, value);
        }
        let request = request.body(Full::new(payload)).map_err(|error| Failure {
            error: MemoryError::invalid("base_url", format!("{url}: {error}")),
            retry: false,
            retry_after: None,
        })?;
        let response = if let Some(tls) = self.tls {
            let connector = tls.as_ref().map_err(|problem| Failure {
                error: MemoryError::invalid("base_url", format!("https: {problem}")),
                retry: false,
                retry_after: None,
            })?;
            let name = rustls::pki_types::ServerName::try_from(endpoint.host.clone()).map_err(
                |error| Failure {
                    error: MemoryError::invalid("base_url", format!("{url}: {error}")),
                    retry: false,
                    retry_after: None,
                },
            )?;
            let tls = connector
                .connect(name, stream)
                .await
                .map_err(|error| unreachable(Box::new(error)))?;
            exchange(TokioIo::new(tls), request).await
        } else {
            exchange(TokioIo::new(stream), request).await
        }
        .map_err(unreachable)?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| retry_after(value, chrono::Utc::now()));
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|error| {
                if error.is::<http_body_util::LengthLimitError>() {
                    // The same request would get the same answer: not retried.
                    Failure {
                        error: MemoryError::LimitExceeded(format!(
                            "{what}: {url} answered more than {} MiB; ask for less at once \
                             (fewer texts per request: batch_size)",
                            MAX_RESPONSE_BYTES >> 20
                        )),
                        retry: false,
                        retry_after: None,
                    }
                } else {
                    unreachable(error)
                }
            })?
            .to_bytes();
        if status.is_success() {
            return Ok(body);
        }
        let message = format!(
            "{what}: {url} answered HTTP {}: {:?}",
            status.as_u16(),
            snippet(&body)
        );
        let (error, retry) = match status {
            StatusCode::TOO_MANY_REQUESTS => (
                MemoryError::Unavailable {
                    message,
                    source: None,
                },
                true,
            ),
            status if status.is_server_error() => (
                MemoryError::Unavailable {
                    message,
                    source: None,
                },
                true,
            ),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                (MemoryError::invalid("api_key", message), false)
            }
            StatusCode::NOT_FOUND => (MemoryError::invalid("base_url", message), false),
            _ => (MemoryError::invalid("request", message), false),
        };
        Err(Failure {
            error,
            retry,
            retry_after,
        })
    }
}

/// Sends `request` over `io` with hyper's HTTP/1 client connection.
async fn exchange<I>(
    io: I,
    request: Request<Full<Bytes>>,
) -> std::result::Result<
    hyper::Response<hyper::body::Incoming>,
    Box<dyn std::error::Error + Send + Sync>,
>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    // The connection is driven beside the request; it ends when the answer is read.
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "model service connection closed with an error");
        }
    });
    Ok(sender.send_request(request).await?)
}

/// The first 200 characters of a body, for error messages.
fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(200).collect()
}

/// The TLS connector (the operating system's roots, rustls with ring), or why there is none.
type TlsSetup = std::result::Result<tokio_rustls::TlsConnector, String>;

/// The process's [`TlsSetup`], built by the first https:// client.
static TLS: OnceLock<TlsSetup> = OnceLock::new();

/// The [`TlsSetup`], built on the first call: reads the system's root certificates
/// (blocking file I/O), so it is called where blocking is allowed ([`HttpClient::new`]).
fn tls_setup() -> &'static TlsSetup {
    TLS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for certificate in found.certs {
            // A certificate the store refuses is skipped; the others still serve.
            let _ = roots.add(certificate);
        }
        if roots.is_empty() {
            return Err("no trusted root certificate found in the system store".to_owned());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
    })
}

/// Truncates `text` to at most `max_chars` characters (at a character boundary).
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The wait a `Retry-After` header value asks for, at most [`MAX_WAIT`]: a number of
/// seconds, or an HTTP date (RFC 9110: `Sun, 06 Nov 1994 08:49:37 GMT`), counted from `now`
/// (a date already past asks for no wait). `None` for a value that is neither, which leaves
/// the backoff's own wait.
fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds).min(MAX_WAIT));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = (at.with_timezone(&chrono::Utc) - now)
        .to_std()
        .unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_WAIT))
}

#[cfg(test)]
mod tests;
