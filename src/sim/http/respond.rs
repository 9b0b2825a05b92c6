//! Answers every handler shares: JSON, empty bodies, ProblemDetails, parse errors.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::api::models::ProblemDetails;

/// A ProblemDetails answer; `member` also goes into an ASP.NET-style `errors` map.
pub(crate) fn problem(status: StatusCode, title: &str, detail: impl Into<String>, member: Option<&str>) -> Response {
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

pub(crate) fn bad_request(detail: impl Into<String>, member: Option<&str>) -> Response {
    problem(
        StatusCode::BAD_REQUEST,
        "One or more validation errors occurred.",
        detail,
        member,
    )
}

/// Parses a JSON body, naming the member at fault on error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Response> {
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let member = member_at_fault(&e.path().to_string(), &e.inner().to_string());
        bad_request(format!("{member}: {}", e.inner()), Some(&member))
    })
}

/// The JSON path of the member a serde error is about. serde reports a missing field
/// at its parent's path, so the field's name is appended to it.
pub(crate) fn member_at_fault(path: &str, message: &str) -> String {
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

/// Headers as a lookup helper for handlers.
pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A JSON answer with an explicit status.
pub(crate) fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    (status, axum::Json(body)).into_response()
}

/// An empty body with a status.
pub(crate) fn empty(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| status.into_response())
}

/// Runs `work` (a search, a bulk insert) on the blocking pool, off the async workers;
/// 500 when it panics.
pub(crate) async fn off_the_runtime(work: impl FnOnce() -> Response + Send + 'static) -> Response {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| empty(StatusCode::INTERNAL_SERVER_ERROR))
}
