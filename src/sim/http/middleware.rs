//! Middleware of the platform and logging routes.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::respond::{json, problem};
use crate::sim::emulator::{Fault, JournalEntry, Sim};

/// Answers with a programmed fault where one matches, dates every answer by the
/// emulator's clock, and records every exchange.
pub(crate) async fn journal_and_faults(State(sim): State<Arc<Sim>>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query = request.uri().query().map(str::to_string);
    let fault = sim.take_fault(method.as_str(), &path);
    if let Some(delay) = fault.as_ref().and_then(|f| f.delay_ms) {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut response = match fault.filter(|f| f.status.is_some()) {
        Some(fault) => fault_response(&fault),
        None => next.run(request).await,
    };
    let now = sim.clock.now();
    // The platform's answers carry its time; the emulator's is its clock.
    if let Ok(date) = HeaderValue::from_str(&now.format("%a, %d %b %Y %H:%M:%S GMT").to_string()) {
        response.headers_mut().insert(header::DATE, date);
    }
    sim.record(JournalEntry {
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

/// The account whose key a request carries.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub Arc<str>);

/// 401 unless the `AccessKey` header carries a known key: ProblemDetails, except on
/// the rate-limit list, whose published 401 is `{statusCode: 401}`. Hands the key's
/// account to the handler as a [`Caller`].
pub(crate) async fn require_access_key(State(sim): State<Arc<Sim>>, mut request: Request, next: Next) -> Response {
    let key = request.headers().get("AccessKey").and_then(|v| v.to_str().ok());
    let detail = match key.map(|key| sim.account_of(key)) {
        Some(Some(account)) => {
            request.extensions_mut().insert(Caller(account));
            return next.run(request).await;
        }
        Some(None) => "the AccessKey is not valid",
        None => "the AccessKey header is missing",
    };
    if request.uri().path().starts_with(RATE_LIMITS_PATH) {
        return json(StatusCode::UNAUTHORIZED, &serde_json::json!({ "statusCode": 401 }));
    }
    problem(StatusCode::UNAUTHORIZED, "Unauthorized", detail, None)
}

/// Path prefix of the rate-limit list.
pub(crate) const RATE_LIMITS_PATH: &str = "/shield/rate-limits/";

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
pub(crate) async fn require_json_body(request: Request, next: Next) -> Response {
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
pub(crate) fn negotiate_media_type(accept: Option<&str>) -> &'static str {
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
pub(crate) async fn negotiate(request: Request, next: Next) -> Response {
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

/// How much of an oversized body is read and discarded before the 413, so that a
/// client still sending sees the answer rather than a reset connection (as a
/// proxy's lingering close does). Larger bodies are refused at once.
const OVERSIZED_DRAIN_BYTES: u64 = 16 << 20;
/// How long a request body may take to arrive.
const BODY_READ_TIME: Duration = Duration::from_secs(10);

enum BodyRead {
    Complete(Vec<u8>),
    Oversized,
    Broken,
}

/// Reads a body of at most `limit` bytes; reads and discards the rest of a larger
/// one up to [`OVERSIZED_DRAIN_BYTES`].
async fn read_body(body: axum::body::Body, declared: Option<u64>, limit: usize) -> BodyRead {
    let mut frames = body.into_data_stream();
    let mut buffered = Vec::new();
    let mut seen = declared.unwrap_or(0);
    if seen > OVERSIZED_DRAIN_BYTES {
        return BodyRead::Oversized;
    }
    let mut received = 0u64;
    while let Some(chunk) = frames.next().await {
        let Ok(chunk) = chunk else { return BodyRead::Broken };
        received += chunk.len() as u64;
        seen = seen.max(received);
        if seen > OVERSIZED_DRAIN_BYTES {
            return BodyRead::Oversized;
        }
        if seen <= limit as u64 {
            buffered.extend_from_slice(&chunk);
        }
    }
    if seen > limit as u64 {
        BodyRead::Oversized
    } else {
        BodyRead::Complete(buffered)
    }
}

/// Buffers request bodies up to `limit` bytes and answers 413 to larger ones,
/// 408 to a body that does not arrive within [`BODY_READ_TIME`].
pub(crate) async fn limit_body(limit: usize, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let (parts, body) = request.into_parts();
    let (status, title, detail) = match tokio::time::timeout(BODY_READ_TIME, read_body(body, declared, limit)).await {
        Ok(BodyRead::Complete(bytes)) => {
            return next
                .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await;
        }
        Ok(BodyRead::Oversized) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large",
            format!("the request body exceeds {limit} bytes"),
        ),
        Ok(BodyRead::Broken) => (
            StatusCode::BAD_REQUEST,
            "Bad Request",
            "the request body could not be read".to_string(),
        ),
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            "Request Timeout",
            format!("the request body did not arrive within {} s", BODY_READ_TIME.as_secs()),
        ),
    };
    let mut response = problem(status, title, detail, None);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
