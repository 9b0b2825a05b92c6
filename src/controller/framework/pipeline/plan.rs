//! What `edgectl plan` asks of a kind: its verdict on objects the operator does not
//! hold yet, from read-only platform calls and the kind's own planning code.

use futures::future::BoxFuture;
use serde::Serialize;

use crate::api::{ApiError, EdgeClient};
use crate::resources::SecretKeyRef;

/// One member that would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MemberChange {
    pub member: String,
    pub before: String,
    pub after: String,
}

/// What the operator would do for one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub(crate) enum Verdict {
    NoChange { detail: String },
    Change { detail: String, changes: Vec<MemberChange> },
    Error { detail: String },
}

impl Verdict {
    /// A platform call that failed, with its reason.
    pub(crate) fn platform_error(error: &ApiError) -> Self {
        Verdict::Error {
            detail: format!("{}: {error}", error.reason()),
        }
    }
}

/// Where the platform client of an object comes from: the key of the Secret it
/// references, or the default key; the error says why there is none.
pub(crate) trait ClientSource: Sync {
    fn client_for(&self, namespace: &str, reference: Option<&SecretKeyRef>) -> Result<EdgeClient, String>;
}

/// An object to plan: its manifest and namespace.
pub(crate) struct PlanRequest {
    pub manifest: serde_json::Value,
    pub namespace: String,
}

/// A kind's planning of manifests, one verdict per request in their order.
pub(crate) type PlanFn = for<'a> fn(Vec<PlanRequest>, &'a dyn ClientSource) -> BoxFuture<'a, Vec<Verdict>>;
