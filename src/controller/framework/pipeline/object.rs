//! What the watch caches keep of any object.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::controller::framework::pipeline::kind::Reconcilable;
use crate::controller::framework::pipeline::status::conditions::own_conditions;
use crate::resources::{
    ANNOTATION_PAUSED, ANNOTATION_POLL_INTERVAL, ANNOTATION_PROMOTE, ANNOTATION_RECONCILE_REQUESTED_AT,
    DECIDED_STATUS_BYTES, StatusConditions, is_paused, serialized_len,
};

/// The most status a watch cache keeps of an object: a decided status with the
/// conditions the driver adds (Reconciling, Stalled: each under 3 KiB) still fits.
const CACHED_STATUS_BYTES: usize = DECIDED_STATUS_BYTES + (16 << 10);

/// What the watch cache of a kind keeps of an object: its metadata as
/// [`keep_what_is_read`] leaves it, and of its status's conditions those the operator
/// writes ([`own_conditions`]). A status larger than the operator writes was not
/// written by it: the cache keeps none of it, so the object's next reconcile writes
/// the operator's own. Every other member of a status is read by the kind's decisions,
/// and only while the object is not paused: of a paused object (which the driver
/// answers from its conditions alone) the cache keeps the conditions and
/// observedGeneration, so what paused objects hold does not grow with the status they
/// carry. Resuming is a change of the object, which the watch brings whole.
pub(crate) fn keep_what_is_read_of<K: Reconcilable>(object: &mut K) {
    keep_what_is_read(object.meta_mut(), K::FINALIZER.as_slice());
    let paused = is_paused(object);
    if let Some(status) = object.status_mut() {
        let kept = own_conditions(status.conditions(), K::OWN_CONDITION_TYPES);
        status.set_conditions(kept);
        if serialized_len(status) > CACHED_STATUS_BYTES {
            *status = K::Status::default();
        } else if paused {
            let mut held = K::Status::default();
            held.set_observed_generation(status.observed_generation());
            held.set_conditions(status.conditions().to_vec());
            *status = held;
        }
    }
}

/// The annotations the operator reads; the watch caches keep only these.
const READ_ANNOTATIONS: [&str; 4] = [
    ANNOTATION_PAUSED,
    ANNOTATION_POLL_INTERVAL,
    ANNOTATION_RECONCILE_REQUESTED_AT,
    ANNOTATION_PROMOTE,
];
/// The longest value of a read annotation kept (a duration, a time, "true", a digest).
const ANNOTATION_VALUE_BYTES: usize = 128;

/// Drops from an object's metadata what the operator never reads (labels, managed
/// fields, owner references, other annotations, over-long values, finalizers other
/// than `own_finalizer`), before the watch caches hold it: what a cached object takes
/// must not depend on what a tenant writes. Tenants may put 256 KiB of annotations or
/// ~1.4 MiB of finalizers on each object, and `kubectl apply` copies a whole Secret
/// into an annotation. A write of the finalizer list reads the object from the
/// apiserver first, never from the cache.
pub(crate) fn keep_what_is_read(meta: &mut ObjectMeta, own_finalizers: &[impl AsRef<str>]) {
    meta.managed_fields = None;
    meta.labels = None;
    meta.owner_references = None;
    if let Some(finalizers) = &mut meta.finalizers {
        finalizers.retain(|finalizer| own_finalizers.iter().any(|own| own.as_ref() == finalizer));
        finalizers.shrink_to_fit();
    }
    if let Some(annotations) = &mut meta.annotations {
        annotations
            .retain(|name, value| READ_ANNOTATIONS.contains(&name.as_str()) && value.len() <= ANNOTATION_VALUE_BYTES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caches_keep_only_what_is_read_and_nothing_long() {
        let own = "edgeplatform.io/restore";
        let flood: Vec<String> = (0..12_000).map(|i| format!("tenant.example/f{i}")).collect();
        let mut meta = ObjectMeta {
            finalizers: Some(flood.iter().cloned().chain([own.to_string()]).collect()),
            owner_references: Some(vec![Default::default(); 100]),
            labels: Some([("team".to_string(), "a".to_string())].into()),
            annotations: Some(
                [
                    (ANNOTATION_PAUSED, "true".to_string()),
                    (ANNOTATION_POLL_INTERVAL, "x".repeat(ANNOTATION_VALUE_BYTES + 1)),
                    ("kubectl.kubernetes.io/last-applied-configuration", "x".repeat(200_000)),
                ]
                .map(|(k, v)| (k.to_string(), v))
                .into(),
            ),
            managed_fields: Some(Vec::new()),
            name: Some("kept".into()),
            ..ObjectMeta::default()
        };
        keep_what_is_read(&mut meta, &[own]);
        assert_eq!(meta.finalizers, Some(vec![own.to_string()]));
        assert_eq!(meta.owner_references, None);
        assert_eq!(meta.labels, None);
        assert_eq!(meta.managed_fields, None);
        assert_eq!(
            meta.annotations,
            Some([(ANNOTATION_PAUSED.to_string(), "true".to_string())].into())
        );
        assert_eq!(meta.name.as_deref(), Some("kept"));

        let mut foreign_only = ObjectMeta {
            finalizers: Some(flood),
            ..ObjectMeta::default()
        };
        keep_what_is_read(&mut foreign_only, &[] as &[&str]);
        assert_eq!(foreign_only.finalizers.map(|f| f.capacity()), Some(0), "nothing held");
    }

    #[test]
    fn a_cached_object_keeps_of_its_status_the_conditions_the_operator_writes() {
        use crate::controller::kinds::app_watch::resource::ContainerAppWatch;
        let condition = |type_: &str| {
            serde_json::json!({"type": type_, "status": "True", "reason": "Forged",
                               "message": "x".repeat(2048), "lastTransitionTime": "2026-11-28T00:00:00Z"})
        };
        let mut forged: Vec<serde_json::Value> = (0..12).map(|i| condition(&format!("Tenant{i}"))).collect();
        forged.extend(["Ready", "Synced", "AppReady", "CdnLogsSynced"].map(condition));
        let mut watch: ContainerAppWatch = serde_json::from_value(serde_json::json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
            "metadata": {"name": "w", "namespace": "ns", "finalizers": ["tenant.example/f"]},
            "spec": {"appId": "app"},
            "status": {"conditions": forged, "observedGeneration": 1},
        }))
        .expect("a ContainerAppWatch");
        keep_what_is_read_of(&mut watch);
        let status = watch.status.expect("status");
        let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Synced", "AppReady", "CdnLogsSynced"]);
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(watch.metadata.finalizers, Some(Vec::new()));
    }

    #[test]
    fn a_status_larger_than_the_operator_writes_is_not_cached() {
        use crate::controller::kinds::app_watch::resource::ContainerAppWatch;
        let text = "x".repeat(2048);
        let rules: Vec<serde_json::Value> = (0..200)
            .map(|i| serde_json::json!({"id": i, "name": text, "action": text}))
            .collect();
        let mut watch: ContainerAppWatch = serde_json::from_value(serde_json::json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"appId": "app"},
            "status": {"observedGeneration": 1, "rateLimits": rules},
        }))
        .expect("a ContainerAppWatch");
        assert!(serialized_len(&watch.status) > 800_000, "as large as the schema admits");
        keep_what_is_read_of(&mut watch);
        assert_eq!(watch.status, Some(Default::default()));
    }

    #[test]
    fn a_paused_object_is_cached_with_its_conditions_and_generation_only() {
        use crate::controller::kinds::app_watch::resource::ContainerAppWatch;
        let text = "x".repeat(256);
        let rules: Vec<serde_json::Value> = (0..150)
            .map(|i| serde_json::json!({"id": i, "name": text, "action": text}))
            .collect();
        let watch = |paused: &str| -> ContainerAppWatch {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
                "metadata": {"name": "w", "namespace": "ns", "annotations": {ANNOTATION_PAUSED: paused}},
                "spec": {"appId": "app"},
                "status": {"observedGeneration": 3, "rateLimits": rules, "conditions": [
                    {"type": "Ready", "status": "False", "reason": "Paused", "message": "",
                     "lastTransitionTime": "2026-11-28T00:00:00Z"}]},
            }))
            .expect("a ContainerAppWatch")
        };
        let mut paused = watch("true");
        assert!(
            serialized_len(&paused.status) > 70_000,
            "about what the operator caches"
        );
        keep_what_is_read_of(&mut paused);
        let kept = paused.status.expect("status");
        assert_eq!(kept.rate_limits, None);
        assert_eq!(kept.observed_generation, Some(3));
        assert_eq!(kept.conditions.len(), 1);
        assert!(serialized_len(&kept) < 512, "{} bytes", serialized_len(&kept));

        let mut flooded = watch("true");
        if let Some(status) = flooded.status.as_mut() {
            status.truncated = vec!["x".repeat(2048); 200];
        }
        keep_what_is_read_of(&mut flooded);
        assert_eq!(
            flooded.status,
            Some(Default::default()),
            "larger than the operator writes"
        );

        let mut resumed = watch("false");
        keep_what_is_read_of(&mut resumed);
        assert_eq!(resumed.status.and_then(|s| s.rate_limits).map(|r| r.len()), Some(150));
    }

    #[test]
    fn the_serialized_length_is_that_of_the_text() {
        let value = serde_json::json!({"a": ["é", 1, null], "b": {"c": "x".repeat(100)}});
        assert_eq!(serialized_len(&value), serde_json::to_vec(&value).expect("JSON").len());
    }
}
