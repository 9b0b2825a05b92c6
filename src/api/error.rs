//! One error type for every failure of a platform call. Each variant says whether it
//! is worth retrying; [`ApiError::reason`] names its kind ([`ApiFailure`]), which the
//! operator writes as condition reason and metric label.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

/// The platform's own words about a failed request, from whichever body shape it used
/// (ProblemDetails, `{ErrorKey, Field, Message}`, `{title, errors[], id}`,
/// `{error: {code, message}}`, `{statusCode}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlatformMessage {
    pub message: String,
    pub field: Option<String>,
    pub error_key: Option<String>,
}

/// The most bytes of each text the platform sends about a failure that are kept: its
/// words go into status conditions and Events, which must stay small.
pub const MAX_PLATFORM_TEXT: usize = 1024;

/// `text` cut to at most `limit` bytes, at a character boundary, marked when cut.
pub fn bounded_text(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Header-like pairs and credentials a proxy or server may echo back in an error
/// (`AccessKey: …`, `"Authorization":"Bearer …"`, cookies, `token=…`): their values
/// never reach a condition, an Event or a log.
static HEADER_LIKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(access-?key|authorization|cookie|api-?key|token|secret|password)("?\s*[:=]\s*"?)((?:bearer|basic)\s+)?[^\s",;}]+|\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"#,
    )
    .expect("a valid pattern")
});

/// `text` with the values of header-like pairs and bearer credentials replaced.
pub(crate) fn scrubbed(text: &str) -> String {
    HEADER_LIKE
        .replace_all(text, |found: &regex::Captures<'_>| match (found.get(1), found.get(4)) {
            (Some(name), _) => format!(
                "{}{}{}[redacted]",
                name.as_str(),
                found.get(2).map_or("", |m| m.as_str()),
                found.get(3).map_or("", |m| m.as_str())
            ),
            (None, Some(scheme)) => format!("{} [redacted]", scheme.as_str()),
            (None, None) => "[redacted]".to_string(),
        })
        .into_owned()
}

impl PlatformMessage {
    pub fn from_body(body: &[u8]) -> Self {
        let message = Self::unbounded(body);
        let bound = |text: &str| bounded_text(&scrubbed(text), MAX_PLATFORM_TEXT);
        Self {
            message: bound(&message.message),
            field: message.field.as_deref().map(bound),
            error_key: message.error_key.as_deref().map(bound),
        }
    }

    fn unbounded(body: &[u8]) -> Self {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body).trim().chars().take(300).collect();
            return Self {
                message: text,
                ..Self::default()
            };
        };
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let nested = value.get("error").filter(|e| e.is_object());
        let message = nested
            .and_then(|e| text(e, "message"))
            .or_else(|| text(&value, "detail"))
            .or_else(|| text(&value, "Message"))
            .or_else(|| text(&value, "message"))
            .or_else(|| text(&value, "title"))
            .or_else(|| {
                value
                    .get("errors")
                    .and_then(Value::as_array)
                    .and_then(|errors| errors.first())
                    .and_then(|e| text(e, "message"))
            })
            .unwrap_or_default();
        let field = text(&value, "Field").or_else(|| match value.get("errors") {
            Some(Value::Array(errors)) => errors.first().and_then(|e| text(e, "field")),
            Some(Value::Object(members)) => members.keys().next().cloned(),
            _ => None,
        });
        let error_key = nested
            .and_then(|e| text(e, "code"))
            .or_else(|| text(&value, "ErrorKey"))
            .or_else(|| text(&value, "errorKey"));
        Self {
            message,
            field,
            error_key,
        }
    }
}

impl std::fmt::Display for PlatformMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.field, &self.error_key) {
            (Some(field), _) if !self.message.contains(field.as_str()) => write!(f, "{field}: {}", self.message),
            _ => f.write_str(&self.message),
        }?;
        if let Some(key) = &self.error_key {
            write!(f, " ({key})")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("unauthorized: {0}")]
    Unauthorized(PlatformMessage),
    #[error("forbidden: {0}")]
    Forbidden(PlatformMessage),
    #[error("not found: {0}")]
    NotFound(PlatformMessage),
    #[error("rejected ({status}): {message}")]
    Validation { status: u16, message: PlatformMessage },
    #[error("rate limited{}", .retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        retry_after: Option<Duration>,
        message: PlatformMessage,
    },
    #[error("server error ({status}): {message}")]
    Server { status: u16, message: PlatformMessage },
    #[error("unexpected status {status}: {message}")]
    UnexpectedStatus { status: u16, message: PlatformMessage },
    #[error("request timed out")]
    Timeout,
    #[error("transport error: {0}")]
    Transport(String),
    #[error("TLS with {host}: {problem}")]
    Tls { host: String, problem: String },
    #[error("cannot decode the platform's answer: {0}")]
    Decode(String),
    #[error("invalid request: {0}")]
    InvalidInput(String),
    #[error("the write was withheld: this process may no longer change the platform")]
    WriteWithheld,
    #[error(
        "the platform answered {status} redirecting to {host}; redirects are not followed, so the credentials go to \
         the configured host only (check the API URL)"
    )]
    Redirected { status: u16, host: String },
}

impl ApiError {
    /// Classifies a non-2xx answer.
    pub fn from_response(status: u16, retry_after: Option<Duration>, body: &[u8]) -> Self {
        let message = PlatformMessage::from_body(body);
        match status {
            401 => ApiError::Unauthorized(message),
            403 => ApiError::Forbidden(message),
            404 => ApiError::NotFound(message),
            429 => ApiError::RateLimited { retry_after, message },
            400 | 405..=428 | 431..=499 => ApiError::Validation { status, message },
            500..=599 => ApiError::Server { status, message },
            _ => ApiError::UnexpectedStatus { status, message },
        }
    }

    pub(crate) fn from_transport(error: reqwest::Error) -> Self {
        if error.is_timeout() {
            return ApiError::Timeout;
        }
        if let Some(problem) = super::transport::tls_problem(&error) {
            let host = error
                .url()
                .and_then(|url| Some(format!("{}:{}", url.host_str()?, url.port_or_known_default()?)))
                .unwrap_or_else(|| "the platform".into());
            return ApiError::Tls { host, problem };
        }
        // The URL carries no credential (keys travel in headers), but keep the message
        // to the cause alone.
        let error = error.without_url();
        let mut cause = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(inner) = source {
            cause = format!("{cause}: {inner}");
            source = inner.source();
        }
        ApiError::Transport(cause)
    }

    /// Whether the same request may succeed later without any change.
    pub fn is_retryable(&self) -> bool {
        self.reason().is_retryable()
    }

    /// The platform's `Retry-After`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// HTTP status of the answer, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Unauthorized(_) => Some(401),
            ApiError::Forbidden(_) => Some(403),
            ApiError::NotFound(_) => Some(404),
            ApiError::RateLimited { .. } => Some(429),
            ApiError::Validation { status, .. }
            | ApiError::Server { status, .. }
            | ApiError::UnexpectedStatus { status, .. }
            | ApiError::Redirected { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The platform's message, when the failure came with one.
    pub fn platform_message(&self) -> Option<&PlatformMessage> {
        match self {
            ApiError::Unauthorized(m) | ApiError::Forbidden(m) | ApiError::NotFound(m) => Some(m),
            ApiError::Validation { message, .. }
            | ApiError::RateLimited { message, .. }
            | ApiError::Server { message, .. }
            | ApiError::UnexpectedStatus { message, .. } => Some(message),
            _ => None,
        }
    }

    /// What kind of failure this is: the one map from an error to its reason.
    pub fn reason(&self) -> ApiFailure {
        match self {
            ApiError::Unauthorized(_) => ApiFailure::Unauthorized,
            ApiError::Forbidden(_) => ApiFailure::Forbidden,
            ApiError::NotFound(_) => ApiFailure::NotFound,
            ApiError::Validation { .. } => ApiFailure::Rejected,
            ApiError::RateLimited { .. } => ApiFailure::RateLimited,
            ApiError::Server { .. } => ApiFailure::ServerError,
            ApiError::UnexpectedStatus { .. } | ApiError::Redirected { .. } => ApiFailure::UnexpectedStatus,
            ApiError::Timeout => ApiFailure::Timeout,
            ApiError::Transport(_) => ApiFailure::TransportError,
            ApiError::Tls { .. } => ApiFailure::TlsError,
            ApiError::Decode(_) => ApiFailure::DecodeError,
            ApiError::InvalidInput(_) => ApiFailure::InvalidInput,
            ApiError::WriteWithheld => ApiFailure::WriteWithheld,
        }
    }
}

/// The kinds of failure of a platform call, each named by a stable CamelCase word: a
/// Kubernetes condition reason, an Event reason and a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::Display)]
pub enum ApiFailure {
    Unauthorized,
    Forbidden,
    NotFound,
    /// The platform refused the request's content (400, 415, 422).
    Rejected,
    RateLimited,
    ServerError,
    /// An answer the client does not expect (a redirect, an unlisted status).
    UnexpectedStatus,
    Timeout,
    TransportError,
    /// The platform's TLS identity is not trusted, or not valid for its host.
    TlsError,
    DecodeError,
    InvalidInput,
    /// The client held a write back: this process may no longer act.
    WriteWithheld,
}

impl ApiFailure {
    /// Whether the same request may succeed later without any change: the platform was
    /// busy, down or unreachable. Every other failure waits for a change of the
    /// request, the key or the platform's configuration (or, for a withheld write, of
    /// the leader).
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ApiFailure::RateLimited | ApiFailure::ServerError | ApiFailure::Timeout | ApiFailure::TransportError
        )
    }

    /// Whether the platform refused the key: it is not valid (401), or may not touch
    /// what was asked (403).
    pub fn is_refused_key(self) -> bool {
        matches!(self, ApiFailure::Unauthorized | ApiFailure::Forbidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platforms_words_are_kept_to_a_kibibyte() {
        let huge = "é".repeat(5000);
        let body = serde_json::json!({"Message": huge, "Field": huge, "ErrorKey": huge}).to_string();
        let message = PlatformMessage::from_body(body.as_bytes());
        for text in [
            &message.message,
            message.field.as_ref().expect("field"),
            message.error_key.as_ref().expect("key"),
        ] {
            assert!(text.len() <= MAX_PLATFORM_TEXT && text.ends_with('…'), "{}", text.len());
        }
        let error = ApiError::from_response(500, None, body.as_bytes());
        assert!(error.to_string().len() < 4 * MAX_PLATFORM_TEXT);
    }

    #[test]
    fn every_error_body_shape_yields_its_message_field_and_key() {
        let cases: [(&str, &str, Option<&str>, Option<&str>); 5] = [
            (
                r#"{"title":"One or more validation errors occurred.","status":400,"detail":"to: must be after `from`","errors":{"to":["x"]}}"#,
                "to: must be after `from`",
                Some("to"),
                None,
            ),
            (
                r#"{"ErrorKey":"pullzone.hostname_not_found","Field":"Hostname","Message":"not registered"}"#,
                "not registered",
                Some("Hostname"),
                Some("pullzone.hostname_not_found"),
            ),
            (
                r#"{"title":"Bad","status":400,"detail":null,"instance":"/mc/apps/x","errors":[{"message":"name is required","field":"name"}],"id":"x"}"#,
                "Bad",
                Some("name"),
                None,
            ),
            (
                r#"{"error":{"code":"rate_limited","message":"slow down"}}"#,
                "slow down",
                None,
                Some("rate_limited"),
            ),
            (r#"{"statusCode":400}"#, "", None, None),
        ];
        for (body, message, field, key) in cases {
            let parsed = PlatformMessage::from_body(body.as_bytes());
            assert_eq!(parsed.message, message, "{body}");
            assert_eq!(parsed.field.as_deref(), field, "{body}");
            assert_eq!(parsed.error_key.as_deref(), key, "{body}");
        }
        assert_eq!(PlatformMessage::from_body(b"upstream down").message, "upstream down");
    }

    #[test]
    fn statuses_classify_with_retryability() {
        let classify = |status| ApiError::from_response(status, Some(Duration::from_secs(3)), b"{}");
        assert_eq!(classify(401).reason(), ApiFailure::Unauthorized);
        assert_eq!(classify(403).reason(), ApiFailure::Forbidden);
        assert_eq!(classify(404).reason(), ApiFailure::NotFound);
        assert_eq!(classify(400).reason(), ApiFailure::Rejected);
        assert_eq!(classify(415).reason(), ApiFailure::Rejected);
        assert_eq!(classify(503).reason(), ApiFailure::ServerError);
        assert!(classify(429).is_retryable() && classify(500).is_retryable());
        assert!(!classify(400).is_retryable() && !classify(401).is_retryable() && !classify(404).is_retryable());
        assert_eq!(classify(429).retry_after(), Some(Duration::from_secs(3)));
        assert!(ApiError::Timeout.is_retryable());
        assert!(!ApiError::Decode("x".into()).is_retryable());
    }

    #[test]
    fn header_like_values_a_proxy_echoes_never_reach_the_message() {
        let echoed = br#"{"Message":"bad request; headers: AccessKey: 5f1c-secret-key, Authorization: Bearer eyJhbGciOi.payload.sig, Cookie: session=abc123; token=t0k3n and Basic dXNlcjpwYXNzd29yZA=="}"#;
        let shown = PlatformMessage::from_body(echoed).to_string();
        for secret in ["5f1c-secret-key", "eyJhbGciOi", "abc123", "t0k3n", "dXNlcjpwYXNzd29yZA"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("AccessKey: [redacted]"), "{shown}");
        assert!(shown.contains("Authorization: Bearer [redacted]"), "{shown}");
        let page = b"<html>502 from proxy; request had authorization=Basic%20abc and accesskey:k1</html>";
        let shown = PlatformMessage::from_body(page).to_string();
        assert!(!shown.contains("k1<") && !shown.contains("Basic%20abc"), "{shown}");
        assert_eq!(
            PlatformMessage::from_body(br#"{"Message":"zone 12 not found"}"#).message,
            "zone 12 not found",
            "ordinary words stay"
        );
    }
}
