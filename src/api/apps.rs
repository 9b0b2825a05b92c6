//! Container application operations.

use reqwest::Method;

use super::client::{Api, EdgeClient, Operation};
use super::error::ApiError;
use super::models::apps::Application;

/// Percent-encodes one path segment.
pub(crate) fn path_segment(raw: &str) -> String {
    raw.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl EdgeClient {
    /// `GET /mc/apps/{appId}`.
    pub async fn get_app(&self, app_id: &str) -> Result<Application, ApiError> {
        if app_id.is_empty() {
            return Err(ApiError::InvalidInput("the application id is empty".into()));
        }
        let path = format!("/mc/apps/{}", path_segment(app_id));
        self.send_json(Operation::GetApp, Api::Main, || {
            self.request(Method::GET, Api::Main, &path)
        })
        .await
    }
}
