//! One authenticated read that changes nothing, sent once: what it tells of the URL,
//! the TLS, the key and the platform's clock.

use chrono::{DateTime, Utc};
use reqwest::Method;

use super::client::{Api, ERROR_BODY_BYTES, EdgeClient, read_body};
use super::error::ApiError;

/// An application id no account has: the probe's answer is 404 where the key works.
const PROBE_APP: &str = "edgectl-doctor-probe";

/// What the platform answered a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The HTTP status (404 for the probe's made-up id is the usual answer).
    pub status: u16,
    /// The platform's clock, from its `Date` header.
    pub server_time: Option<DateTime<Utc>>,
}

impl EdgeClient {
    /// Reads an application (or, of the logging API, a Pull Zone's logs) that no
    /// account has, once, without retries or quota: any answer but 401 (and, of the
    /// main API, 403) proves that the URL, the TLS and the credentials work.
    pub async fn probe(&self, logging: bool) -> Result<Probe, ApiError> {
        if self.config().credentials.is_none() {
            return Err(ApiError::InvalidInput(
                "no credentials to probe the platform with".into(),
            ));
        }
        let (api, path) = if logging {
            (
                Api::Logging { pull_zone_id: 0 },
                "/v2/pullzones/0/logs?limit=1".to_string(),
            )
        } else {
            (Api::Main, format!("/mc/apps/{PROBE_APP}"))
        };
        let response = self
            .request(Method::GET, api, &path)
            .send()
            .await
            .map_err(ApiError::from_transport)?;
        let status = response.status().as_u16();
        let server_time = response
            .headers()
            .get(reqwest::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| DateTime::parse_from_rfc2822(v).ok())
            .map(|t| t.with_timezone(&Utc));
        // A Pull Zone no account has may answer 403 where the key works.
        let refused = status == 401 || (status == 403 && !logging);
        if refused {
            let body = read_body(response, ERROR_BODY_BYTES).await.unwrap_or_default();
            return Err(ApiError::from_response(status, None, &body));
        }
        Ok(Probe { status, server_time })
    }
}
