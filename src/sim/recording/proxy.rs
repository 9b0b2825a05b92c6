//! `edge-sim record`: a proxy in front of a real account. It forwards only the
//! platform's reads, with the account's key added, to an https upstream (plain http to
//! loopback only) and never follows a redirect; stores each exchange without any
//! credential; and keeps the fixtures rebuilt from the answers current.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use super::exchange::{
    DATA_FILE, EXCHANGES_DIR, Exchange, FIXTURES_FILE, MAX_EXCHANGES, RecordedRequest, RecordedResponse,
    RecordingError, SentCredentials, Summarised, exchange_path, recorded_body,
};
use super::rebuild::{MAX_SUMMARY_EVENTS, SummaryEvents, numeric_segment, rebuild};
use crate::api::models::shield::EventLogsSearchResponse;
use crate::api::transport::{Transport, configure, tls_problem};
use crate::api::{Operation, PlainHttp, SecretFile};
use crate::sim::atomic_file;
use crate::sim::http::MAX_REQUEST_BYTES;
use crate::sim::http::admin::REDACTED;
use crate::sim::http::respond::problem;

/// Members whose values are credentials wherever they occur (compared in ASCII
/// lower case): the logging API's `authorizationHeader` echoes a request's header.
const CREDENTIAL_MEMBERS: [&str; 6] = [
    "accesskey",
    "authorization",
    "authorizationheader",
    "cookie",
    "set-cookie",
    "token",
];
/// How long an upstream request may take.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer recorded (a legacy log file is a whole day).
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// How long the fixtures wait for more answers before they are rebuilt.
const REBUILD_QUIET: Duration = Duration::from_millis(500);
/// The page size of the flat searches that read what a grouped search summarised (the
/// platform's largest).
const SUMMARY_PAGE_SIZE: usize = 500;

/// Where `edge-sim record` sends requests and keeps what it hears.
#[derive(Debug)]
pub struct Recorder {
    pub upstream: reqwest::Url,
    pub logging_upstream: reqwest::Url,
    pub key: SecretFile,
    pub out: PathBuf,
    pub transport: Transport,
}

struct Recording {
    recorder: Recorder,
    client: reqwest::Client,
    exchanges: Mutex<Vec<Exchange>>,
    summaries: Mutex<SummaryEvents>,
    changed: Arc<Notify>,
}

/// Records through `listener` until `stop` resolves; the fixtures are written after
/// each burst of answers and at the end.
pub async fn record(
    recorder: Recorder,
    listener: TcpListener,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), RecordingError> {
    let exchanges_dir = recorder.out.join(EXCHANGES_DIR);
    let occupied = std::fs::read_dir(&exchanges_dir).is_ok_and(|mut entries| entries.next().is_some());
    if occupied {
        return Err(RecordingError::invalid(
            &exchanges_dir,
            "already holds a recording; record into an empty folder",
        ));
    }
    for upstream in [&recorder.upstream, &recorder.logging_upstream] {
        PlainHttp::LoopbackOnly
            .check(upstream)
            .map_err(|why| RecordingError::invalid(&recorder.out, format!("upstream {upstream}: {why}")))?;
    }
    std::fs::create_dir_all(&exchanges_dir).map_err(RecordingError::io(&exchanges_dir))?;
    // The platform never redirects a read: an answer 3xx is recorded and passed on as
    // it came, never followed, so the key goes to the upstream named and nowhere else.
    let client = configure(reqwest::Client::builder(), &recorder.transport, |name| {
        std::env::var(name).ok()
    })
    .and_then(|builder| {
        builder
            .redirect(reqwest::redirect::Policy::none())
            .timeout(UPSTREAM_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())
    })
    .map_err(|e| RecordingError::invalid(&recorder.out, format!("cannot reach the upstream: {e}")))?;
    let recording = Arc::new(Recording {
        recorder,
        client,
        exchanges: Mutex::new(Vec::new()),
        summaries: Mutex::new(SummaryEvents::default()),
        changed: Arc::new(Notify::new()),
    });
    let (stopped, on_stop) = tokio::sync::watch::channel(false);
    let writer = tokio::spawn({
        let recording = recording.clone();
        let mut on_stop = on_stop.clone();
        async move {
            let changed = recording.changed.clone();
            let write: Arc<dyn Fn() + Send + Sync> = Arc::new(move || recording.write_fixtures());
            atomic_file::write_after_changes(
                changed,
                REBUILD_QUIET,
                async move {
                    let _ = on_stop.wait_for(|stopped| *stopped).await;
                },
                write,
            )
            .await;
        }
    });
    let router = Router::new().fallback(forward).with_state(recording);
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(stop)
        .await
        .map_err(RecordingError::io(&exchanges_dir));
    let _ = stopped.send(true);
    let _ = writer.await;
    served
}

impl Recording {
    fn write_fixtures(&self) {
        let exchanges = self.exchanges.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (document, data) = rebuild(&exchanges, &self.summaries.lock().unwrap_or_else(|e| e.into_inner()));
        let out = &self.recorder.out;
        let fixtures = serde_yaml::to_string(&document).map_err(|e| e.to_string());
        let data = serde_json::to_vec_pretty(&data).map_err(|e| e.to_string());
        for (name, bytes) in [(FIXTURES_FILE, fixtures.map(String::into_bytes)), (DATA_FILE, data)] {
            let path = out.join(name);
            let written = bytes
                .and_then(|bytes| self.scrubbed(bytes))
                .and_then(|bytes| atomic_file::write(&path, &bytes).map_err(|e| e.to_string()));
            if let Err(error) = written {
                tracing::error!(path = %path.display(), %error, "cannot write the rebuilt fixtures");
            }
        }
    }

    /// `bytes` with the account's key replaced wherever it occurs.
    fn scrubbed(&self, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
        let key = self.recorder.key.current()?;
        let text = String::from_utf8_lossy(&bytes);
        let escaped = serde_json::to_string(key.expose()).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        Ok(text
            .replace(key.expose(), REDACTED)
            .replace(escaped, REDACTED)
            .into_bytes())
    }

    /// Writes an exchange to its file, without the key; refused when the recording is full.
    fn keep(&self, exchange: Exchange) -> Result<(), String> {
        let bytes = serde_json::to_vec_pretty(&exchange).map_err(|e| e.to_string())?;
        let bytes = self.scrubbed(bytes)?;
        let number = {
            let mut exchanges = self.exchanges.lock().unwrap_or_else(|e| e.into_inner());
            if exchanges.len() >= MAX_EXCHANGES {
                return Err(RecordingError::Full.to_string());
            }
            exchanges.push(exchange);
            exchanges.len()
        };
        atomic_file::write(&exchange_path(&self.recorder.out, number), &bytes).map_err(|e| e.to_string())?;
        self.changed.notify_one();
        Ok(())
    }

    async fn send(
        &self,
        operation: Operation,
        path: &str,
        query: Option<&str>,
        content_type: Option<&str>,
        body: bytes::Bytes,
    ) -> Result<Answer, String> {
        let base = if operation.is_logging() {
            &self.recorder.logging_upstream
        } else {
            &self.recorder.upstream
        };
        let mut url = format!("{}{path}", base.as_str().trim_end_matches('/'));
        if let Some(query) = query {
            url = format!("{url}?{query}");
        }
        let key = self.recorder.key.current()?;
        let mut request = self
            .client
            .request(operation.method(), &url)
            .header("AccessKey", key.expose())
            .header(header::ACCEPT, "application/json");
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let unreachable = |e: reqwest::Error| {
            let why = tls_problem(&e).unwrap_or_else(|| e.without_url().to_string());
            format!(
                "{} {}: the upstream did not answer: {why}",
                operation.method(),
                operation.template()
            )
        };
        let mut response = request.body(body).send().await.map_err(unreachable)?;
        let headers = response.headers().clone();
        let mut answer = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("the upstream's answer is over {MAX_ANSWER_BYTES} bytes"));
            }
            answer.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status: response.status(),
            content_type: header_text(&headers, header::CONTENT_TYPE),
            retry_after: header_text(&headers, header::RETRY_AFTER),
            body: answer.into(),
        })
    }
}

impl Recording {
    /// Reads the flat pages of a grouped search's window and filters, so that the
    /// recording holds every event the grouped answer summarised; stops at the first
    /// answer that is not a page, or at [`MAX_SUMMARY_EVENTS`].
    async fn read_summarised(&self, path: &str, zone: i64, grouped: &Value) -> Summarised {
        let mut flat = grouped.as_object().cloned().unwrap_or_default();
        flat.remove("groupBy");
        flat.remove("buckets");
        flat.insert("pageSize".into(), SUMMARY_PAGE_SIZE.into());
        let mut summarised = Summarised { events: None, read: 0 };
        for page in 0..=MAX_SUMMARY_EVENTS / SUMMARY_PAGE_SIZE {
            flat.insert("page".into(), page.into());
            let body = Value::Object(flat.clone()).to_string();
            let answer = match self
                .send(
                    Operation::SearchEvents,
                    path,
                    None,
                    Some("application/json"),
                    body.into(),
                )
                .await
            {
                Ok(answer) if answer.status == StatusCode::OK => answer,
                Ok(answer) => {
                    tracing::warn!(status = %answer.status, page, "a flat page of a grouped search's window was refused; its replay compares by type");
                    break;
                }
                Err(error) => {
                    tracing::warn!(%error, page, "a flat page of a grouped search's window was not read; its replay compares by type");
                    break;
                }
            };
            let Ok(answer) = serde_json::from_slice::<EventLogsSearchResponse>(&answer.body) else {
                break;
            };
            summarised.events = Some(answer.total.max(0).unsigned_abs());
            let rows = answer.rows.unwrap_or_default();
            let (held, bounded) = self
                .summaries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(zone, &rows);
            summarised.read += held;
            if bounded || rows.is_empty() || summarised.is_complete() {
                break;
            }
        }
        summarised
    }
}

/// A grouped search's Shield Zone and request body, when `body` is one.
fn grouped_search(operation: Operation, path: &str, body: &[u8]) -> Option<(i64, Value)> {
    if operation != Operation::SearchEvents {
        return None;
    }
    let request: Value = serde_json::from_slice(body).ok()?;
    let grouped = request
        .get("groupBy")
        .and_then(Value::as_array)
        .is_some_and(|dimensions| !dimensions.is_empty());
    let zone = numeric_segment(path, 2)?;
    grouped.then_some((zone, request))
}

fn refused(status: StatusCode, detail: String) -> Response {
    tracing::warn!(%detail, "refused");
    problem(status, "Not forwarded by edge-sim record", detail, None)
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

async fn forward(State(recording): State<Arc<Recording>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query = request.uri().query().map(str::to_string);
    let Some(operation) = Operation::of(&method, &path) else {
        return refused(
            StatusCode::NOT_FOUND,
            format!("{method} {path} is not an operation of the platform's API"),
        );
    };
    if operation.is_write() {
        return refused(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "edge-sim record forwards only reads; {method} {} changes the account and was not sent",
                operation.template()
            ),
        );
    }
    let content_type = header_text(request.headers(), header::CONTENT_TYPE);
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_REQUEST_BYTES).await else {
        return refused(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over {MAX_REQUEST_BYTES} bytes"),
        );
    };
    let time = Utc::now();
    let answer = match recording
        .send(
            operation,
            &path,
            query.as_deref(),
            content_type.as_deref(),
            body.clone(),
        )
        .await
    {
        Ok(answer) => answer,
        Err(detail) => return refused(StatusCode::BAD_GATEWAY, detail),
    };
    let summarised = match grouped_search(operation, &path, &body) {
        Some((zone, request)) if answer.status == StatusCode::OK => {
            Some(recording.read_summarised(&path, zone, &request).await)
        }
        _ => None,
    };
    let (request_body, _) = recorded_body(&body);
    let (response_body, text) = recorded_body(&answer.body);
    let exchange = Exchange {
        time,
        request: RecordedRequest {
            method: method.to_string(),
            path,
            query,
            credentials: SentCredentials::AccountKey,
            content_type,
            body: request_body,
        },
        response: RecordedResponse {
            status: answer.status.as_u16(),
            content_type: answer.content_type.clone(),
            retry_after: answer.retry_after.clone(),
            body: response_body.map(without_credentials),
            text,
        },
        summarised,
    };
    if let Err(error) = recording.keep(exchange) {
        tracing::error!(%error, "the exchange was not recorded");
    }
    answer.into_response()
}

struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    retry_after: Option<String>,
    body: bytes::Bytes,
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        for (name, value) in [
            (header::CONTENT_TYPE, self.content_type),
            (header::RETRY_AFTER, self.retry_after),
        ] {
            if let Some(value) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                headers.insert(name, value);
            }
        }
        response
    }
}

/// `value` with the values of credential members replaced by [`REDACTED`].
fn without_credentials(value: Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .map(|(name, member)| {
                    let credential = CREDENTIAL_MEMBERS.contains(&name.to_ascii_lowercase().as_str());
                    match member {
                        Value::String(text) if credential && !text.is_empty() => (name, Value::from(REDACTED)),
                        other => (name, without_credentials(other)),
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_credentials).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credential_members_are_redacted_at_any_depth() {
        let answer = json!({"data": [{"authorizationHeader": "Bearer abc", "userAgent": "curl", "token": ""}], "AccessKey": "k"});
        assert_eq!(
            without_credentials(answer),
            json!({"data": [{"authorizationHeader": REDACTED, "userAgent": "curl", "token": ""}], "AccessKey": REDACTED})
        );
    }
}
