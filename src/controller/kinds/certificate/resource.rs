//! `PullZoneCertificate`: completion of the external HTTP certificate of a hostname.

// Distinct printcolumns read as duplicates; KubeSchema re-declares each spec privately.
#![allow(clippy::duplicated_attributes, unreachable_pub)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resources::time::GoDuration;
use crate::resources::{Condition, SecretKeyRef};

/// Desired certificate of one Pull Zone hostname.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "edgeplatform.io",
    version = "v1alpha1",
    kind = "PullZoneCertificate",
    namespaced,
    status = "PullZoneCertificateStatus",
    shortname = "pzc",
    category = "edgeplatform",
    doc = "Completes the external HTTP certificate of a Pull Zone hostname and keeps it issued.",
    printcolumn(name = "Hostname", type_ = "string", json_path = ".spec.hostname"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(name = "Issued", type_ = "date", json_path = ".status.issuedTime"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PullZoneCertificateSpec {
    /// Hostname registered on a Pull Zone, e.g. shop.example.com.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
    )]
    pub hostname: String,
    /// Complete the certificate again this long after it was issued (a Go duration of at
    /// least 1h, e.g. 720h). Absent: complete once per generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1h')").message("renewEvery must be a duration of at least 1h, e.g. 720h"))]
    #[schemars(length(max = 32))]
    pub renew_every: Option<GoDuration>,
    /// Secret key holding the platform access key; the operator's own key when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret_ref: Option<SecretKeyRef>,
}

/// The last failure of a completion attempt, in the platform's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// HTTP status of the answer, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The platform's error key, e.g. pullzone.domain_verification_failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_key: Option<String>,
    /// The request field the platform blamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The platform's message.
    pub message: String,
}

/// Observed state of a PullZoneCertificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct PullZoneCertificateStatus {
    /// The metadata.generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready: True with reason Issued; False with VerificationFailed, HostnameNotFound,
    /// Unauthorized, RateLimited, ServerError...; Reconciling or Stalled while not
    /// Ready.
    #[serde(default)]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The metadata.generation of the last call to the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted_generation: Option<i64>,
    /// When the certificate was last issued (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_time: Option<String>,
    /// Failed attempts since the last success or spec change.
    #[serde(default)]
    pub attempts: u32,
    /// When the next attempt is due (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_time: Option<String>,
    /// The platform's answer to the last failed attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    /// The last edgeplatform.io/reconcile-requested-at value acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
}

crate::resources::edge_object!(PullZoneCertificate => PullZoneCertificateStatus);
