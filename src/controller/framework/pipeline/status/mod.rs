//! An object's status: its conditions' merge (`conditions`), the contract GitOps
//! tools read (`kstatus`), and writing it.

pub(crate) mod conditions;
pub(crate) mod kstatus;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;

use crate::controller::framework::reasons::error::ReconcileError;

/// Field manager and Event reporter name.
pub const MANAGER: &str = "edge-operator";

/// What a status write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StatusWrite {
    /// The status was already so: nothing was sent.
    Unchanged,
    /// Written; the object's new resourceVersion.
    Written(Option<String>),
    /// The object changed since `resource_version` (the reconcile saw a stale copy, or
    /// someone wrote meanwhile): nothing was written.
    Stale,
}

/// What of a status a write replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusScope {
    /// The whole status: fields the operator stops setting are removed.
    Whole,
    /// Its conditions and observedGeneration, the rest left as it is (the status of a
    /// paused object, whose cached copy holds no more).
    Conditions,
}

/// The members of a status that [`StatusScope::Conditions`] writes.
const CONDITION_MEMBERS: [&str; 2] = ["conditions", "observedGeneration"];

/// Writes `status` (the part `scope` names) unless it equals `current` (no status
/// noise), and only if the object is still at `resource_version`: a status computed
/// from a stale copy never overwrites a newer one (a restore point recorded meanwhile,
/// for one). A JSON Patch `test` of the resourceVersion then `add` of `/status` (or of
/// its members) does that without a merge of managed fields.
pub(crate) async fn write_status<K, S, E>(
    api: &Api<K>,
    object: &K,
    resource_version: Option<&str>,
    current: Option<&S>,
    (status, scope): (&S, StatusScope),
) -> Result<StatusWrite, ReconcileError<E>>
where
    K: Resource<DynamicType = ()> + Clone,
    S: Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(StatusWrite::Unchanged);
    }
    let mut ops = Vec::new();
    if let Some(version) = resource_version {
        ops.push(serde_json::json!({ "op": "test", "path": "/metadata/resourceVersion", "value": version }));
    }
    match (scope, current) {
        (StatusScope::Conditions, Some(_)) => {
            let written = serde_json::to_value(status).map_err(|e| ReconcileError::Encoding(e.to_string()))?;
            for member in CONDITION_MEMBERS {
                if let Some(value) = written.get(member) {
                    ops.push(serde_json::json!({ "op": "add", "path": format!("/status/{member}"), "value": value }));
                }
            }
        }
        // An object without a status has nothing else to keep.
        (StatusScope::Whole, _) | (StatusScope::Conditions, None) => {
            ops.push(serde_json::json!({ "op": "add", "path": "/status", "value": status }));
        }
    }
    let patch: json_patch::Patch =
        serde_json::from_value(serde_json::Value::Array(ops)).map_err(|e| ReconcileError::Encoding(e.to_string()))?;
    let params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    let request = kube::core::Request::new(api.resource_url())
        .patch_subresource("status", &object.name_any(), &params, &Patch::<()>::Json(patch))
        .map_err(|e| ReconcileError::Encoding(e.to_string()))?;
    // Of the answer, the whole object, only the resourceVersion is decoded: the
    // object's watch brings the rest.
    let written = api.clone().into_client().request_text(request).await;
    match written {
        Ok(answer) => Ok(StatusWrite::Written(resource_version_of(&answer))),
        // A failed `test` is 422; a conflict on the way is 409.
        Err(kube::Error::Api(response)) if resource_version.is_some() && matches!(response.code, 409 | 422) => {
            Ok(StatusWrite::Stale)
        }
        Err(error) => Err(error.into()),
    }
}

/// The resourceVersion of an object as the apiserver answered it.
fn resource_version_of(answer: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        metadata: Metadata,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Metadata {
        resource_version: Option<String>,
    }
    serde_json::from_str::<Answer>(answer)
        .ok()
        .and_then(|answer| answer.metadata.resource_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::kinds::access_list::resource::{AccessListConfig, AccessListConfigStatus};

    #[tokio::test]
    async fn a_status_decided_from_a_stale_copy_is_not_written() {
        // The apiserver holds version 8; a test of another version fails with 422.
        let client = crate::controller::framework::mock_apiserver::client(|_, body| {
            match body[0]["op"] == "test" && body[0]["value"] != "8" {
                true => (
                    422,
                    serde_json::json!({"kind": "Status", "code": 422, "message": "testing value failed"}),
                ),
                false => (
                    200,
                    serde_json::json!({"apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
                        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "9"},
                        "spec": {"shieldZoneId": 1, "configurationId": 5, "enabled": true}}),
                ),
            }
        });
        let api: Api<AccessListConfig> = Api::namespaced(client, "ns");
        let object: AccessListConfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"shieldZoneId": 1, "configurationId": 5, "enabled": true}
        }))
        .expect("object");
        let status = AccessListConfigStatus {
            drift_corrections: 1,
            ..AccessListConfigStatus::default()
        };
        let write = |version: &'static str| {
            write_status::<_, _, std::convert::Infallible>(
                &api,
                &object,
                Some(version),
                None,
                (&status, StatusScope::Whole),
            )
        };
        assert_eq!(write("7").await.expect("answered"), StatusWrite::Stale);
        assert_eq!(
            write("8").await.expect("answered"),
            StatusWrite::Written(Some("9".into())),
            "the new resourceVersion is handed back"
        );
        let same = write_status::<_, _, std::convert::Infallible>(
            &api,
            &object,
            Some("7"),
            Some(&status),
            (&status, StatusScope::Whole),
        )
        .await;
        assert_eq!(same.expect("nothing sent"), StatusWrite::Unchanged);
    }
}
