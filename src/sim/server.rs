//! The emulator's shared state, router and cross-cutting middleware: journal and
//! faults, AccessKey authentication, request and response media types.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::clock::SimClock;
use super::ratelimit::PullZoneLimiter;
use super::state::{SimDocument, World};
use super::{admin, logging, platform};
use crate::api::models::ProblemDetails;

/// One non-admin request, as recorded in the journal (`GET /_sim/requests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub status: u16,
    /// Emulator time of the request, Unix milliseconds.
    pub time_ms: i64,
    /// Emulator time of the request, RFC 3339.
    pub time: String,
}

/// A programmed answer for the next `count` matching requests (`POST /_sim/faults`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Only requests with this method (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only requests whose path starts with this.
    pub path_prefix: String,
    /// The status to answer with; absent means "delay, then answer normally".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How many matching requests the fault applies to.
    pub count: u32,
    /// `Retry-After` header value, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// Delay before answering, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// JSON body of the answer (empty when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// The emulator: everything its handlers share.
#[derive(Debug, Default)]
pub struct Sim {
    world: RwLock<World>,
    pub clock: SimClock,
    pub limiter: PullZoneLimiter,
    journal: Mutex<Vec<JournalEntry>>,
    faults: Mutex<Vec<Fault>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sim {
    pub fn new(document: SimDocument) -> Arc<Self> {
        let sim = Arc::new(Sim::default());
        sim.replace(document);
        sim
    }

    /// Replaces all state (document, events, logs, rate-limit history) with `document`.
    pub fn replace(&self, document: SimDocument) {
        self.clock.set(document.clock);
        self.limiter.clear();
        *self.world_mut() = World::new(document);
    }

    pub fn world(&self) -> RwLockReadGuard<'_, World> {
        self.world.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn world_mut(&self) -> RwLockWriteGuard<'_, World> {
        self.world.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn journal(&self) -> Vec<JournalEntry> {
        lock(&self.journal).clone()
    }

    pub fn clear_journal(&self) {
        lock(&self.journal).clear();
    }

    pub fn add_fault(&self, fault: Fault) {
        lock(&self.faults).push(fault);
    }

    pub fn faults(&self) -> Vec<Fault> {
        lock(&self.faults).clone()
    }

    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    fn take_fault(&self, method: &Method, path: &str) -> Option<Fault> {
        let mut faults = lock(&self.faults);
        let index = faults.iter().position(|f| {
            f.count > 0
                && path.starts_with(&f.path_prefix)
                && f.method
                    .as_ref()
                    .is_none_or(|m| m.eq_ignore_ascii_case(method.as_str()))
        })?;
        faults[index].count -= 1;
        let fault = faults[index].clone();
        if faults[index].count == 0 {
            faults.remove(index);
        }
        Some(fault)
    }

    pub fn is_access_key(&self, key: &str) -> bool {
        self.world().document.access_keys.iter().any(|k| k == key)
    }

    /// The whole HTTP surface: platform API, logging API, admin API.
    pub fn router(self: &Arc<Self>) -> Router {
        let observed = Router::new()
            .merge(platform::router(self))
            .merge(logging::router())
            .fallback(not_found)
            .layer(middleware::from_fn_with_state(self.clone(), journal_and_faults));
        Router::new()
            .nest("/_sim", admin::router())
            .merge(observed)
            .with_state(self.clone())
    }
}

async fn not_found(request: Request) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Not Found",
        format!("no route for {} {}", request.method(), request.uri().path()),
        None,
    )
}

/// A ProblemDetails answer; `member` also goes into an ASP.NET-style `errors` map.
pub fn problem(status: StatusCode, title: &str, detail: impl Into<String>, member: Option<&str>) -> Response {
    let detail = detail.into();
    let mut extensions = serde_json::Map::new();
    if let Some(member) = member {
        extensions.insert("errors".into(), serde_json::json!({ member: [detail.clone()] }));
    }
    let body = ProblemDetails {
        kind: None,
        title: Some(title.to_string()),
        status: Some(i32::from(status.as_u16())),
        detail: Some(detail),
        instance: None,
        extensions,
    };
    (status, axum::Json(body)).into_response()
}

pub fn bad_request(detail: impl Into<String>, member: Option<&str>) -> Response {
    problem(
        StatusCode::BAD_REQUEST,
        "One or more validation errors occurred.",
        detail,
        member,
    )
}

/// Parses a JSON body, naming the member at fault on error.
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Response> {
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let member = member_at_fault(&e.path().to_string(), &e.inner().to_string());
        bad_request(format!("{member}: {}", e.inner()), Some(&member))
    })
}

/// The JSON path of the member a serde error is about. serde reports a missing field
/// at its parent's path, so the field's name is appended to it.
pub fn member_at_fault(path: &str, message: &str) -> String {
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match (path, missing) {
        (".", Some(field)) => field.to_string(),
        (".", None) => "$".to_string(),
        (path, Some(field)) => format!("{path}.{field}"),
        (path, None) => path.to_string(),
    }
}

async fn journal_and_faults(State(sim): State<Arc<Sim>>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query = request.uri().query().map(str::to_string);
    let fault = sim.take_fault(&method, &path);
    if let Some(delay) = fault.as_ref().and_then(|f| f.delay_ms) {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let response = match fault.filter(|f| f.status.is_some()) {
        Some(fault) => fault_response(&fault),
        None => next.run(request).await,
    };
    let now = sim.clock.now();
    lock(&sim.journal).push(JournalEntry {
        method: method.to_string(),
        path,
        query,
        status: response.status().as_u16(),
        time_ms: now.timestamp_millis(),
        time: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    response
}

fn fault_response(fault: &Fault) -> Response {
    let status = fault
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match &fault.body {
        Some(body) => (status, axum::Json(body.clone())).into_response(),
        None => status.into_response(),
    };
    if let Some(seconds) = fault.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// 401 unless the `AccessKey` header carries a known key: ProblemDetails, except on
/// the rate-limit list, whose published 401 is `{statusCode: 401}`.
pub async fn require_access_key(State(sim): State<Arc<Sim>>, request: Request, next: Next) -> Response {
    let key = request.headers().get("AccessKey").and_then(|v| v.to_str().ok());
    let detail = match key {
        Some(key) if sim.is_access_key(key) => return next.run(request).await,
        Some(_) => "the AccessKey is not valid",
        None => "the AccessKey header is missing",
    };
    if request.uri().path().starts_with(RATE_LIMITS_PATH) {
        return json(StatusCode::UNAUTHORIZED, &serde_json::json!({ "statusCode": 401 }));
    }
    problem(StatusCode::UNAUTHORIZED, "Unauthorized", detail, None)
}

/// Path prefix of the rate-limit list.
pub const RATE_LIMITS_PATH: &str = "/shield/rate-limits/";

fn is_json_media_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence == "text/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// 415 unless a request with a body declares a JSON media type.
pub async fn require_json_body(request: Request, next: Next) -> Response {
    let has_body_method = matches!(*request.method(), Method::POST | Method::PATCH | Method::PUT);
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if has_body_method && !is_json_media_type(content_type) {
        let detail = if content_type.is_empty() {
            "the request has no Content-Type; send application/json, text/json or application/*+json".to_string()
        } else {
            format!(
                "media type `{content_type}` is not supported; send application/json, text/json or application/*+json"
            )
        };
        return problem(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type",
            detail,
            None,
        );
    }
    next.run(request).await
}

/// The response media type for an `Accept` header: the most preferred of
/// `application/json`, `text/json`, `text/plain`; `application/json` when none fits.
pub fn negotiate_media_type(accept: Option<&str>) -> &'static str {
    const SUPPORTED: [&str; 3] = ["application/json", "text/json", "text/plain"];
    let mut ranges: Vec<(f32, usize, String)> = accept
        .unwrap_or_default()
        .split(',')
        .enumerate()
        .filter_map(|(position, range)| {
            let mut parts = range.split(';');
            let essence = parts.next()?.trim().to_ascii_lowercase();
            let quality = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (!essence.is_empty() && quality > 0.0).then_some((quality, position, essence))
        })
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges
        .iter()
        .find_map(|(_, _, range)| match range.as_str() {
            "*/*" | "application/*" => Some(SUPPORTED[0]),
            "text/*" => Some(SUPPORTED[1]),
            exact => SUPPORTED.iter().find(|s| **s == exact).copied(),
        })
        .unwrap_or(SUPPORTED[0])
}

/// Labels JSON answers with the media type negotiated from `Accept`.
pub async fn negotiate(request: Request, next: Next) -> Response {
    let chosen = negotiate_media_type(request.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let mut response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media_type);
    if is_json {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(chosen));
    }
    response
}

/// A running emulator on a local port; stops when dropped.
#[derive(Debug)]
pub struct RunningSim {
    pub addr: SocketAddr,
    pub sim: Arc<Sim>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl RunningSim {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Serves `sim` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    sim: Arc<Sim>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, sim.router())
        .with_graceful_shutdown(shutdown)
        .await
}

/// Starts an emulator on a free port of 127.0.0.1 (for tests and embedding).
pub async fn spawn(document: SimDocument) -> std::io::Result<RunningSim> {
    spawn_sim(Sim::new(document)).await
}

/// Starts an existing emulator on a free port of 127.0.0.1.
pub async fn spawn_sim(sim: Arc<Sim>) -> std::io::Result<RunningSim> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = oneshot::channel();
    let served = sim.clone();
    tokio::spawn(async move {
        if let Err(error) = serve(listener, served, async {
            let _ = rx.await;
        })
        .await
        {
            tracing::error!(%error, "edge-sim stopped");
        }
    });
    Ok(RunningSim {
        addr,
        sim,
        shutdown: Some(tx),
    })
}

/// Headers as a lookup helper for handlers.
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A JSON answer with an explicit status.
pub fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    (status, axum::Json(body)).into_response()
}

/// An empty body with a status.
pub fn empty(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| status.into_response())
}

/// What [`Sim::generate`] added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Generated {
    pub events: usize,
    pub logs: usize,
}

/// Why synthetic data could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("cannot generate events: the fixtures define no Shield Zone")]
    NoShieldZone,
    #[error("cannot generate logs: the fixtures define no Pull Zone with logging enabled")]
    NoLoggingPullZone,
}

impl Sim {
    /// Adds synthetic events (spread over all Shield Zones) and CDN logs (spread over
    /// Pull Zones with logging enabled), deterministic for a given seed.
    pub fn generate(&self, events: usize, logs: usize, seed: u64) -> Result<Generated, GenerateError> {
        let now = self.clock.now();
        let mut world = self.world_mut();
        let zones: Vec<i64> = world.document.shield_zones.iter().map(|z| z.id).collect();
        if events > 0 && zones.is_empty() {
            return Err(GenerateError::NoShieldZone);
        }
        let pull_zones: Vec<i64> = world
            .document
            .pull_zones
            .iter()
            .filter(|z| z.logging_enabled)
            .map(|z| z.id)
            .collect();
        if logs > 0 && pull_zones.is_empty() {
            return Err(GenerateError::NoLoggingPullZone);
        }
        for (i, zone) in zones.iter().enumerate() {
            let share = share_of(events, zones.len(), i);
            let batch = super::generator::events(share, seed.wrapping_add(*zone as u64), now);
            world.events.entry(*zone).or_default().insert(batch);
        }
        for (i, zone) in pull_zones.iter().enumerate() {
            let share = share_of(logs, pull_zones.len(), i);
            let batch = super::generator::logs(share, seed, *zone, now);
            world.logs.entry(*zone).or_default().extend(batch);
        }
        Ok(Generated { events, logs })
    }
}

/// The `index`-th of `parts` near-equal shares of `total`.
fn share_of(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}
