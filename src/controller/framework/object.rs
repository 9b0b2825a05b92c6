//! What the framework reads of any object: its annotations, and its key in per-object
//! bookkeeping.

use std::time::Duration;

use kube::{Resource, ResourceExt};

use super::status::time::parse_go_duration;
use crate::crd::{ANNOTATION_PAUSED, ANNOTATION_POLL_INTERVAL};

/// Whether the object carries `edgeplatform.io/paused: "true"`.
pub(crate) fn is_paused<K: ResourceExt>(object: &K) -> bool {
    object
        .annotations()
        .get(ANNOTATION_PAUSED)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The shortest poll interval an annotation or spec can ask for.
pub(crate) const MIN_POLL_INTERVAL: Duration = Duration::from_secs(5);

/// The object's re-read period: its poll-interval annotation, else `default`; never
/// shorter than [`MIN_POLL_INTERVAL`].
pub(crate) fn poll_interval<K: ResourceExt>(object: &K, default: Duration) -> Duration {
    object
        .annotations()
        .get(ANNOTATION_POLL_INTERVAL)
        .and_then(|v| parse_go_duration(v))
        .filter(|d| !d.is_zero())
        .unwrap_or(default)
        .max(MIN_POLL_INTERVAL)
}

/// The key of an object in per-object bookkeeping: `Kind/namespace/name`.
pub(crate) fn object_key<K: Resource<DynamicType = ()> + ResourceExt>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}
