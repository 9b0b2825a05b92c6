//! Container application operations.

use reqwest::Method;

use super::client::{Api, EdgeClient};
use super::error::ApiError;
use super::models::apps::Application;
use super::operation::Operation;

/// The longest value that goes into one path segment.
pub(crate) const MAX_PATH_SEGMENT: usize = 256;

/// One path segment from `raw`: refused when it is empty, `.` or `..` (a URL resolves
/// them to another path), longer than [`MAX_PATH_SEGMENT`], or holds `/`, `?`, `#`,
/// `%`, a space or a control character; otherwise percent-encoded.
pub(crate) fn path_segment(what: &str, raw: &str) -> Result<String, ApiError> {
    let refused = |problem: &str| {
        Err(ApiError::InvalidInput(format!(
            "{what} {:?} {problem}",
            super::error::bounded_text(raw, 64)
        )))
    };
    if raw.is_empty() {
        return refused("is empty");
    }
    if raw == "." || raw == ".." {
        return refused("would name another path");
    }
    if raw.len() > MAX_PATH_SEGMENT {
        return refused(&format!("is longer than {MAX_PATH_SEGMENT} bytes"));
    }
    if raw
        .chars()
        .any(|c| matches!(c, '/' | '?' | '#' | '%' | ' ') || c.is_control())
    {
        return refused("may not hold '/', '?', '#', '%', spaces or control characters");
    }
    Ok(percent_encoding::utf8_percent_encode(raw, PATH_SEGMENT).to_string())
}

/// What a path segment percent-encodes: all but RFC 3986's unreserved characters.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

impl EdgeClient {
    /// `GET /mc/apps/{appId}`.
    pub async fn get_app(&self, app_id: &str) -> Result<Application, ApiError> {
        let path = format!("/mc/apps/{}", path_segment("the application id", app_id)?);
        self.send_json(Operation::GetApp, Api::Main, || {
            self.request(Method::GET, Api::Main, &path)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_segment_never_names_another_path() {
        for refused in ["", ".", "..", "a/b", "../x", "a?b=1", "a#b", "%2e%2e", "a b", "a\nb"] {
            let error = path_segment("the application id", refused).expect_err(refused);
            assert!(matches!(error, ApiError::InvalidInput(_)), "{refused:?}: {error}");
        }
        assert!(path_segment("the application id", &"a".repeat(MAX_PATH_SEGMENT + 1)).is_err());
        assert_eq!(
            path_segment("id", "app-shop_1.v2~x").ok().as_deref(),
            Some("app-shop_1.v2~x")
        );
        assert_eq!(path_segment("id", "café").ok().as_deref(), Some("caf%C3%A9"));
    }
}
