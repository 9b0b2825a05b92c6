//! The client core: one request pipeline (limiters, authentication, error
//! classification, retries, metrics) under every operation.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::Stream;
use reqwest::header::{HeaderValue, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;

use super::config::{ClientConfig, Credentials, MAX_RETRY_AFTER};
use super::error::{ApiError, bounded_text};
use super::limiter::{DirectLimiter, KeyedLimiter, Lane};
use super::operation::Operation;
use super::transport;

/// Outcome class of one HTTP exchange: `2xx`..`5xx`, or `error` when no answer came.
pub fn status_class(status: Option<u16>) -> &'static str {
    match status.map(|s| s / 100) {
        Some(1) => "1xx",
        Some(2) => "2xx",
        Some(3) => "3xx",
        Some(4) => "4xx",
        Some(5) => "5xx",
        _ => "error",
    }
}

/// Sees every HTTP exchange (retries included): the metrics hook.
pub trait RequestObserver: Send + Sync {
    /// One exchange, timed from sending to the answer's headers.
    fn record(&self, operation: Operation, status_class: &'static str, elapsed: Duration);

    /// A request starts (`true`) or stops (`false`) waiting for the shared quota.
    fn quota_wait(&self, _lane: Lane, _waiting: bool) {}
}

/// Reports a request waiting for the shared quota until dropped, so a request
/// cancelled while it waits stops counting too.
struct QuotaWait<'a> {
    observer: Option<&'a dyn RequestObserver>,
    lane: Lane,
}

impl<'a> QuotaWait<'a> {
    fn start(observer: Option<&'a dyn RequestObserver>, lane: Lane) -> Self {
        if let Some(observer) = observer {
            observer.quota_wait(lane, true);
        }
        Self { observer, lane }
    }
}

impl Drop for QuotaWait<'_> {
    fn drop(&mut self) {
        if let Some(observer) = self.observer {
            observer.quota_wait(self.lane, false);
        }
    }
}

/// How far the `Date` of an answer is ahead of `now`, in milliseconds, within
/// [`MAX_CLOCK_OFFSET_MS`]; `None` without a valid `Date`. A `Date` counts whole
/// seconds: one up to a second behind `now` says the clocks agree (0), else a platform
/// time taken from it would lag by up to a second and miss its newest events.
fn clock_offset(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> Option<i64> {
    let date = headers.get(reqwest::header::DATE)?.to_str().ok()?;
    let platform = DateTime::parse_from_rfc2822(date).ok()?;
    let offset = platform.timestamp_millis() - now.timestamp_millis();
    if offset > -1000 && offset <= 0 {
        return Some(0);
    }
    Some(offset.clamp(-MAX_CLOCK_OFFSET_MS, MAX_CLOCK_OFFSET_MS))
}

/// How long `Retry-After` asks to wait, at most [`MAX_RETRY_AFTER`]: delay-seconds, or
/// an HTTP date measured from the answer's own `Date` (else `now`); a date passed asks
/// for no wait. `None` without a valid value.
fn retry_after(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let at = DateTime::parse_from_rfc2822(value).ok()?;
            let answered = headers
                .get(reqwest::header::DATE)
                .and_then(|date| date.to_str().ok())
                .and_then(|date| DateTime::parse_from_rfc2822(date).ok())
                .map_or(now, |date| date.with_timezone(&Utc));
            (at.with_timezone(&Utc) - answered).to_std().unwrap_or_default()
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The most a platform's clock is taken to differ from this process's: the event
/// search's reach (72 hours).
const MAX_CLOCK_OFFSET_MS: i64 = 72 * 3_600_000;

/// Decides, immediately before each write is sent, whether this process may still
/// change the platform (the operator's leadership).
pub trait WriteGate: Send + Sync {
    fn may_write(&self) -> bool;
}

/// What a client reports to and asks of its owner.
#[derive(Default, Clone)]
pub struct Hooks {
    pub observer: Option<Arc<dyn RequestObserver>>,
    pub write_gate: Option<Arc<dyn WriteGate>>,
}

/// What every client derived from one configuration shares.
struct Shared {
    http: reqwest::Client,
    logging_limiter: KeyedLimiter,
    global_limiter: Option<DirectLimiter>,
    hooks: Hooks,
    /// Room for answers being read and decoded, in KiB.
    answers: Arc<tokio::sync::Semaphore>,
    /// All of that room: no answer reserves more, so none waits for room that cannot be.
    answers_kib: u32,
    /// How far the platform's clock is ahead of this process's, in milliseconds, by the
    /// `Date` of its latest answer.
    clock_offset_ms: AtomicI64,
}

/// An answer's body, holding its share of the answer budget until dropped.
pub(crate) struct Answer {
    pub bytes: Vec<u8>,
    _room: tokio::sync::OwnedSemaphorePermit,
}

/// Typed async client of the Edge Platform API. Cheap to clone; clones, and clients
/// made with [`EdgeClient::with_credentials`], share the connection pool and limiters.
#[derive(Clone)]
pub struct EdgeClient {
    config: Arc<ClientConfig>,
    shared: Arc<Shared>,
    /// Whose observe-only polls these are: the quota's poll line serves parties in turn.
    party: Arc<str>,
}

impl std::fmt::Debug for EdgeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeClient").field("config", &self.config).finish()
    }
}

/// Which API a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Main,
    /// The logging API, rate-limited per Pull Zone.
    Logging {
        pull_zone_id: i64,
    },
}

impl EdgeClient {
    pub fn new(config: ClientConfig) -> Result<Self, ApiError> {
        Self::with_hooks(config, Hooks::default())
    }

    pub fn with_hooks(config: ClientConfig, hooks: Hooks) -> Result<Self, ApiError> {
        for (name, url) in [("base URL", &config.base_url), ("logging URL", &config.logging_url)] {
            let invalid = |problem: String| ApiError::InvalidInput(format!("{name} `{url}`: {problem}"));
            let parsed = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
            config.plain_http.check(&parsed).map_err(invalid)?;
        }
        // The platform never redirects an API call: a redirect is an error, so the
        // credentials (custom headers, which reqwest keeps across hosts) stay put.
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .user_agent(config.user_agent.clone());
        let http = transport::configure(builder, &config.transport, |name| std::env::var(name).ok())
            .map_err(ApiError::InvalidInput)?
            .build()
            .map_err(|e| ApiError::InvalidInput(format!("HTTP client: {e}")))?;
        let budget_kib = u32::try_from(config.answer_budget_bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .max(1);
        Ok(Self {
            shared: Arc::new(Shared {
                http,
                logging_limiter: KeyedLimiter::new(config.logging_quota),
                global_limiter: config.global_quota.map(DirectLimiter::new),
                hooks,
                answers: Arc::new(tokio::sync::Semaphore::new(budget_kib as usize)),
                answers_kib: budget_kib,
                clock_offset_ms: AtomicI64::new(0),
            }),
            config: Arc::new(config),
            party: Arc::from(""),
        })
    }

    /// The same client acting with other credentials (same pool, limiters and hook).
    pub fn with_credentials(&self, credentials: Credentials) -> Self {
        Self {
            config: Arc::new(ClientConfig {
                credentials: Some(credentials),
                ..(*self.config).clone()
            }),
            shared: self.shared.clone(),
            party: self.party.clone(),
        }
    }

    /// The same client, its requests waiting their turn as `party`'s (a namespace): the
    /// shared quota serves the parties in turn, in each lane.
    pub fn acting_for(&self, party: &str) -> Self {
        Self {
            party: party.into(),
            ..self.clone()
        }
    }

    /// A stable identity of the client's credentials that does not reveal them.
    pub fn credential_id(&self) -> String {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        match &self.config().credentials {
            Some(Credentials::AccessKey(key) | Credentials::Bearer(key)) => key.expose().hash(&mut hasher),
            None => "none".hash(&mut hasher),
        }
        format!("{:016x}", hasher.finish())
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The platform's time now, by the `Date` of its latest answer to any client of
    /// this configuration (this process's time before the first): what the platform's
    /// event timestamps are measured in.
    pub fn platform_now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::milliseconds(self.shared.clock_offset_ms.load(Ordering::Relaxed))
    }

    pub(crate) fn url(&self, api: Api, path: &str) -> String {
        match api {
            Api::Main => format!("{}{path}", self.config.base_url),
            Api::Logging { .. } => format!("{}{path}", self.config.logging_url),
        }
    }

    pub(crate) fn request(&self, method: Method, api: Api, path: &str) -> RequestBuilder {
        let request = self.shared.http.request(method, self.url(api, path));
        match &self.config.credentials {
            Some(Credentials::AccessKey(key)) => request.header("AccessKey", sensitive(key.expose())),
            Some(Credentials::Bearer(token)) => request.header(
                reqwest::header::AUTHORIZATION,
                sensitive(&format!("Bearer {}", token.expose())),
            ),
            None => request,
        }
    }

    /// Sends a request (rebuilt for every attempt), retrying retryable failures with
    /// backoff that honours `Retry-After`. Returns the successful response.
    pub(crate) async fn send(
        &self,
        operation: Operation,
        api: Api,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, ApiError> {
        if self.config.credentials.is_none() {
            return Err(ApiError::InvalidInput(format!(
                "{}: no credentials to call the platform with",
                operation.as_str()
            )));
        }
        let policy = &self.config.retry;
        let mut retry = 0;
        loop {
            let error = match self.attempt(operation, api, build()).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if !error.is_retryable() || retry >= policy.max_retries {
                return Err(error);
            }
            let asked = error.retry_after().unwrap_or_default();
            if asked > policy.max_wait {
                return Err(error);
            }
            let delay = policy.backoff(retry).max(asked);
            tracing::debug!(
                operation = operation.as_str(),
                reason = %error.reason(),
                ?delay,
                "retrying"
            );
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    async fn attempt(&self, operation: Operation, api: Api, request: RequestBuilder) -> Result<Response, ApiError> {
        if let Some(global) = &self.shared.global_limiter {
            let lane = operation.lane();
            let _waiting = QuotaWait::start(self.shared.hooks.observer.as_deref(), lane);
            global.until_ready(lane, &self.party).await;
        }
        if let Api::Logging { pull_zone_id } = api {
            self.shared.logging_limiter.until_ready(pull_zone_id, &self.party).await;
        }
        let gate = self.shared.hooks.write_gate.as_ref();
        if operation.is_write() && gate.is_some_and(|gate| !gate.may_write()) {
            return Err(ApiError::WriteWithheld);
        }
        let started = tokio::time::Instant::now();
        let result = request.send().await;
        let status = result.as_ref().ok().map(|r| r.status().as_u16());
        if let Some(observer) = &self.shared.hooks.observer {
            observer.record(operation, status_class(status), started.elapsed());
        }
        let response = result.map_err(ApiError::from_transport)?;
        if let Some(offset) = clock_offset(response.headers(), Utc::now()) {
            self.shared.clock_offset_ms.store(offset, Ordering::Relaxed);
        }
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            let target = response.headers().get(reqwest::header::LOCATION);
            let host = target
                .and_then(|v| v.to_str().ok())
                .and_then(|v| response.url().join(v).ok())
                .and_then(|url| url.host_str().map(|h| bounded_text(h, 253)))
                .unwrap_or_else(|| "no valid Location".into());
            return Err(ApiError::Redirected { status, host });
        }
        let retry_after = retry_after(response.headers(), Utc::now());
        // Within the answer budget like any body: error answers come in bursts too.
        let body = self.body(response, ERROR_BODY_BYTES).await;
        let bytes = body.as_ref().map(|answer| answer.bytes.as_slice()).unwrap_or_default();
        Err(ApiError::from_response(
            status,
            retry_after,
            &self.without_credentials(bytes),
        ))
    }

    /// `body` with every copy of this client's credential replaced: an answer that
    /// echoes the request (a proxy's error page, a debugging server) shows it to no one.
    fn without_credentials(&self, body: &[u8]) -> Vec<u8> {
        let secret = match &self.config.credentials {
            Some(Credentials::AccessKey(value) | Credentials::Bearer(value)) => value.expose(),
            None => "",
        };
        let text = String::from_utf8_lossy(body);
        match secret.is_empty() || !text.contains(secret) {
            true => body.to_vec(),
            false => text.replace(secret, "[redacted]").into_bytes(),
        }
    }

    /// The body of a successful answer: at most `limit` bytes (and
    /// [`ClientConfig::max_body_bytes`]), read once the answer budget has room for it.
    pub(crate) async fn body(&self, response: Response, limit: usize) -> Result<Answer, ApiError> {
        let limit = limit.min(self.config.max_body_bytes);
        let expected = response
            .content_length()
            .map_or(limit, |n| usize::try_from(n).unwrap_or(usize::MAX));
        if expected > limit {
            return Err(too_long(limit));
        }
        let kib = u32::try_from(expected.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.shared.answers_kib);
        let answers = self.shared.answers.clone();
        let room = tokio::time::timeout(self.config.timeout, answers.acquire_many_owned(kib))
            .await
            .map_err(|_| {
                ApiError::Transport(format!(
                    "no room to read the answer within {:?}: {} bytes of answers are read at once at most",
                    self.config.timeout, self.config.answer_budget_bytes
                ))
            })?
            .map_err(|_| ApiError::Transport("the client is shutting down".into()))?;
        let bytes = read_body(response, limit).await?;
        Ok(Answer { bytes, _room: room })
    }

    /// Sends and decodes a JSON answer of at most `operation`'s default answer limit.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        operation: Operation,
        api: Api,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<T, ApiError> {
        self.send_json_sized(operation, api, None, build)
            .await
            .map(|(value, _)| value)
    }

    /// Sends and decodes a JSON answer of a page of `page_size` entries; returns it with
    /// its size in bytes.
    pub(crate) async fn send_json_sized<T: DeserializeOwned>(
        &self,
        operation: Operation,
        api: Api,
        page_size: Option<u64>,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<(T, usize), ApiError> {
        let response = self.send(operation, api, build).await?;
        let answer = self.body(response, operation.answer_limit(page_size)).await?;
        let bytes = &answer.bytes;
        if let Some(check) = self.config.answer_check {
            check(operation, bytes).map_err(ApiError::Decode)?;
        }
        let most = operation.most_containers(page_size);
        if json_containers(bytes) > most {
            return Err(ApiError::Decode(format!(
                "{} answer holds more than {most} objects and arrays",
                operation.as_str()
            )));
        }
        let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
        serde_path_to_error::deserialize(deserializer)
            .map(|value| (value, bytes.len()))
            .map_err(|e| {
                let problem = bounded_text(&e.inner().to_string(), 300);
                ApiError::Decode(format!("{} answer at {}: {problem}", operation.as_str(), e.path()))
            })
    }
}

/// The JSON objects and arrays in `text`, counted without decoding it (brackets inside
/// strings do not count).
fn json_containers(text: &[u8]) -> usize {
    let (mut count, mut in_string, mut escaped) = (0, false, false);
    for &byte in text {
        match (in_string, escaped, byte) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'{' | b'[') => count += 1,
            (false, _, _) => {}
        }
    }
    count
}

fn too_long(limit: usize) -> ApiError {
    ApiError::Decode(format!("the answer is longer than {limit} bytes"))
}

/// Error bodies are read only this far: the platform's message fits many times over.
pub(super) const ERROR_BODY_BYTES: usize = 64 << 10;

/// Reads a body chunk by chunk, refusing one longer than `limit` before holding it.
pub(super) async fn read_body(mut response: Response, limit: usize) -> Result<Vec<u8>, ApiError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_long(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ApiError::from_transport)? {
        if body.len() + chunk.len() > limit {
            return Err(too_long(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How far one page walk may go: a platform that keeps answering "more" can neither
/// keep a caller forever nor fill its memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalkLimits {
    pub pages: usize,
    /// The answers' bytes, all pages together.
    pub bytes: usize,
}

/// A header value marked sensitive, so HTTP-level debug output never shows it.
fn sensitive(value: &str) -> HeaderValue {
    let mut header = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    header.set_sensitive(true);
    header
}

/// One page of a walk: its items, the next cursor, and the answer's size in bytes.
pub(crate) type Page<T, C> = (Vec<T>, Option<C>, usize);

/// A stream of items over pages: `fetch(cursor)` returns a page and the next cursor,
/// which must move forward. The walk fails past `limits`.
pub(crate) fn paginate<'a, C, T, F, Fut>(
    fetch: F,
    first: C,
    limits: WalkLimits,
) -> impl Stream<Item = Result<T, ApiError>> + Send + 'a
where
    C: PartialOrd + Copy + Send + 'a,
    T: Send + 'a,
    F: Fn(C) -> Fut + Send + 'a,
    Fut: std::future::Future<Output = Result<Page<T, C>, ApiError>> + Send + 'a,
{
    use futures::{StreamExt, TryStreamExt, stream};
    stream::try_unfold(
        (Some(first), fetch, 0usize, 0usize),
        move |(cursor, fetch, pages, bytes)| async move {
            let Some(cursor) = cursor else {
                return Ok(None);
            };
            if pages >= limits.pages {
                return Err(ApiError::Decode(format!(
                    "the listing goes on past {} pages",
                    limits.pages
                )));
            }
            let (items, next, size) = fetch(cursor).await?;
            let bytes = bytes.saturating_add(size);
            if bytes > limits.bytes {
                return Err(ApiError::Decode(format!(
                    "the listing's pages are longer than {} bytes together",
                    limits.bytes
                )));
            }
            if next.is_some_and(|next| next <= cursor) {
                return Err(ApiError::Decode("the next page does not move past this one".into()));
            }
            Ok(Some((
                stream::iter(items.into_iter().map(Ok)),
                (next, fetch, pages + 1, bytes),
            )))
        },
    )
    .try_flatten()
    .boxed()
}

#[cfg(test)]
mod tests;
