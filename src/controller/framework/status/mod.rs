//! An object's status: its conditions, the contract GitOps tools read (`kstatus`),
//! the time formats in it, and writing it.

pub(crate) mod conditions;
pub(crate) mod kstatus;
pub mod time;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::ReconcileError;

/// Field manager and Event reporter name.
pub const MANAGER: &str = "edge-operator";

/// Writes `status` unless it equals `current` (no status noise). The status is
/// replaced whole, so fields the operator stops setting are removed. A JSON Patch
/// `add` of `/status` does that without a resourceVersion precondition and, unlike a
/// server-side apply, without a merge of managed fields.
pub async fn write_status<K, S>(
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
) -> Result<bool, ReconcileError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(false);
    }
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "add", "path": "/status", "value": status },
    ]))
    .map_err(|e| ReconcileError::Encoding(e.to_string()))?;
    api.patch_status(
        &object.name_any(),
        &PatchParams {
            field_manager: Some(MANAGER.to_string()),
            ..PatchParams::default()
        },
        &Patch::<()>::Json(patch),
    )
    .await?;
    Ok(true)
}
