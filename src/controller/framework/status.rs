//! Reading an object's annotations and writing its status.

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::ReconcileError;
use crate::crd::{ANNOTATION_PAUSED, ANNOTATION_POLL_INTERVAL};

/// Field manager and Event reporter name.
pub const MANAGER: &str = "edge-operator";

/// Whether the object carries `edgeplatform.io/paused: "true"`.
pub fn is_paused<K: ResourceExt>(object: &K) -> bool {
    object
        .annotations()
        .get(ANNOTATION_PAUSED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The shortest poll interval an annotation or spec can ask for.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// The object's re-read period: its poll-interval annotation, else `default`; never
/// shorter than [`MIN_POLL_INTERVAL`].
pub fn poll_interval<K: ResourceExt>(object: &K, default: Duration) -> Duration {
    object
        .annotations()
        .get(ANNOTATION_POLL_INTERVAL)
        .and_then(|v| parse_go_duration(v))
        .filter(|d| !d.is_zero())
        .unwrap_or(default)
        .max(MIN_POLL_INTERVAL)
}

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

/// RFC 3339 with seconds precision, as conditions and status times carry it.
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Parses a Go-style duration of the specs and annotations (`720h`, `90m`, `10s`).
pub fn parse_go_duration(raw: &str) -> Option<Duration> {
    humantime::parse_duration(raw.trim()).ok()
}

/// The key of an object in per-object bookkeeping: `Kind/namespace/name`.
pub fn object_key<K: Resource<DynamicType = ()> + ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}
