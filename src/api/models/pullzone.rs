//! Pull Zone: external HTTP certificate completion.

use serde::{Deserialize, Serialize};

/// Body of `POST /pullzone/completeExternalHttpCertificate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CompleteCertificateRequest {
    #[serde(rename = "Hostname")]
    pub hostname: String,
}
