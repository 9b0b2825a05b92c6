//! Pull Zone operations.

use reqwest::Method;

use super::client::{Api, EdgeClient};
use super::error::ApiError;
use super::models::pullzone::CompleteCertificateRequest;
use super::operation::Operation;

impl EdgeClient {
    /// `POST /pullzone/completeExternalHttpCertificate`: `Ok` once the certificate is
    /// issued; `Validation` while domain verification fails; `NotFound` for a hostname
    /// on no Pull Zone.
    pub async fn complete_external_http_certificate(&self, hostname: &str) -> Result<(), ApiError> {
        let body = CompleteCertificateRequest {
            hostname: hostname.to_string(),
        };
        self.send(Operation::CompleteCertificate, Api::Main, || {
            self.request(Method::POST, Api::Main, "/pullzone/completeExternalHttpCertificate")
                .json(&body)
        })
        .await
        .map(drop)
    }
}
