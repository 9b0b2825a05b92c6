//! The client core: one request pipeline (limiters, authentication, error
//! classification, retries, metrics) under every operation.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use reqwest::header::{HeaderValue, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;

use super::config::{ClientConfig, Credentials, MAX_RETRY_AFTER};
use super::contract;
use super::error::ApiError;
use super::limiter::{DirectLimiter, KeyedLimiter, Lane};

/// Every platform operation, named for metrics and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    SearchEvents,
    ListAccessLists,
    UpdateAccessList,
    ListRateLimits,
    CompleteCertificate,
    GetApp,
    QueryLogs,
    GetLogFile,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::SearchEvents => "search_events",
            Operation::ListAccessLists => "list_access_lists",
            Operation::UpdateAccessList => "update_access_list",
            Operation::ListRateLimits => "list_rate_limits",
            Operation::CompleteCertificate => "complete_certificate",
            Operation::GetApp => "get_app",
            Operation::QueryLogs => "query_logs",
            Operation::GetLogFile => "get_log_file",
        }
    }

    /// Whether the operation changes the platform.
    pub fn is_write(self) -> bool {
        matches!(self, Operation::UpdateAccessList | Operation::CompleteCertificate)
    }

    /// The quota line of the operation: the access-list reads that precede a PATCH or
    /// a restore go with the writes, ahead of the observe-only polls.
    pub fn lane(self) -> Lane {
        match self {
            Operation::ListAccessLists | Operation::UpdateAccessList | Operation::CompleteCertificate => Lane::Change,
            Operation::SearchEvents
            | Operation::ListRateLimits
            | Operation::GetApp
            | Operation::QueryLogs
            | Operation::GetLogFile => Lane::Poll,
        }
    }
}

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
}

/// Typed async client of the Edge Platform API. Cheap to clone; clones, and clients
/// made with [`EdgeClient::with_credentials`], share the connection pool and limiters.
#[derive(Clone)]
pub struct EdgeClient {
    config: Arc<ClientConfig>,
    shared: Arc<Shared>,
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
            reqwest::Url::parse(url).map_err(|e| ApiError::InvalidInput(format!("{name} `{url}`: {e}")))?;
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(|e| ApiError::InvalidInput(format!("HTTP client: {e}")))?;
        Ok(Self {
            shared: Arc::new(Shared {
                http,
                logging_limiter: KeyedLimiter::new(config.logging_quota),
                global_limiter: config.global_quota.map(DirectLimiter::new),
                hooks,
            }),
            config: Arc::new(config),
        })
    }

    /// The same client acting with other credentials (same pool, limiters and hook).
    pub fn with_credentials(&self, credentials: Credentials) -> Self {
        Self {
            config: Arc::new(ClientConfig {
                credentials,
                ..(*self.config).clone()
            }),
            shared: self.shared.clone(),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
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
            Credentials::AccessKey(key) => request.header("AccessKey", sensitive(key.expose())),
            Credentials::Bearer(token) => request.header(
                reqwest::header::AUTHORIZATION,
                sensitive(&format!("Bearer {}", token.expose())),
            ),
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
                reason = error.reason(),
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
            global.until_ready(lane).await;
        }
        if let Api::Logging { pull_zone_id } = api {
            self.shared.logging_limiter.until_ready(pull_zone_id).await;
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
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|seconds| Duration::from_secs(seconds).min(MAX_RETRY_AFTER));
        let body = read_body(response, ERROR_BODY_BYTES).await.unwrap_or_default();
        Err(ApiError::from_response(status, retry_after, &body))
    }

    /// The body of a successful answer, at most [`ClientConfig::max_body_bytes`].
    pub(crate) async fn body(&self, response: Response) -> Result<Vec<u8>, ApiError> {
        read_body(response, self.config.max_body_bytes).await
    }

    /// Sends and decodes a JSON answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        operation: Operation,
        api: Api,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<T, ApiError> {
        let response = self.send(operation, api, build).await?;
        let bytes = self.body(response).await?;
        if self.config.strict_contract {
            contract::check_answer(operation, &bytes).map_err(ApiError::Decode)?;
        }
        let deserializer = &mut serde_json::Deserializer::from_slice(&bytes);
        serde_path_to_error::deserialize(deserializer)
            .map_err(|e| ApiError::Decode(format!("{} answer at {}: {}", operation.as_str(), e.path(), e.inner())))
    }
}

/// Error bodies are read only this far: the platform's message fits many times over.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// Reads a body chunk by chunk, refusing one longer than `limit` before holding it.
async fn read_body(mut response: Response, limit: usize) -> Result<Vec<u8>, ApiError> {
    let too_long = || ApiError::Decode(format!("the answer is longer than {limit} bytes"));
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_long());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ApiError::from_transport)? {
        if body.len() + chunk.len() > limit {
            return Err(too_long());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The most pages one walk reads: far beyond any real listing, so a platform that
/// keeps answering "more" cannot keep a caller forever.
pub const MAX_PAGES: usize = 10_000;

/// A header value marked sensitive, so HTTP-level debug output never shows it.
fn sensitive(value: &str) -> HeaderValue {
    let mut header = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    header.set_sensitive(true);
    header
}

/// A stream of items over pages: `fetch(cursor)` returns a page and the next cursor,
/// which must move forward. At most [`MAX_PAGES`] pages are read.
pub(crate) fn paginate<'a, C, T, F, Fut>(fetch: F, first: C) -> impl Stream<Item = Result<T, ApiError>> + Send + 'a
where
    C: PartialOrd + Copy + Send + 'a,
    T: Send + 'a,
    F: Fn(C) -> Fut + Send + 'a,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<C>), ApiError>> + Send + 'a,
{
    use futures::{StreamExt, TryStreamExt, stream};
    stream::try_unfold((Some(first), fetch, 0usize), |(cursor, fetch, pages)| async move {
        let Some(cursor) = cursor else {
            return Ok(None);
        };
        if pages >= MAX_PAGES {
            return Err(ApiError::Decode(format!("the listing goes on past {MAX_PAGES} pages")));
        }
        let (items, next) = fetch(cursor).await?;
        if next.is_some_and(|next| next <= cursor) {
            return Err(ApiError::Decode("the next page does not move past this one".into()));
        }
        Ok(Some((
            stream::iter(items.into_iter().map(Ok)),
            (next, fetch, pages + 1),
        )))
    })
    .try_flatten()
    .boxed()
}
