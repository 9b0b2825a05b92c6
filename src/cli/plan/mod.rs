//! `edgectl plan` and `edgectl export`: what the operator would do for a set of
//! manifests, with read-only platform calls and the reconciler's own planning code;
//! and manifests that adopt what a Shield Zone already has.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::api::models::shield::{AccessListAction, AccessListsResponse};
use crate::api::{ApiError, EdgeClient};
use crate::cli::CommandError;
use crate::controller::kinds::access_list::resource::{
    AccessListConfigSpec, AccessListConfigStatus, ManagementPolicy, Promotion, Rollout,
};
use crate::controller::kinds::access_list::vocabulary::AccessListReason;
use crate::controller::kinds::access_list::{plan as plan_access_list, resolve};
use crate::controller::kinds::{AccessListConfig, ContainerAppWatch, Kind};

mod export;
mod manifests;

pub(crate) use self::export::{export_access_lists, to_yaml_stream};
use self::manifests::documents;
pub(crate) use self::manifests::{Manifest, Problem, load, validate};

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlannedObject {
    pub source: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// `(namespace, name)` of a Secret → its data, decoded.
pub(crate) type SecretData = HashMap<(String, String), BTreeMap<String, String>>;

/// Where platform clients come from: the default key, or a Secret of `--secrets-from`.
pub(crate) struct Clients {
    /// A client of the platform; its key is the default one when `has_default_key`.
    pub base: EdgeClient,
    pub has_default_key: bool,
    pub secrets: SecretData,
}

impl Clients {
    fn for_object(&self, namespace: &str, reference: Option<&crate::crd::SecretKeyRef>) -> Result<EdgeClient, String> {
        let Some(reference) = reference else {
            return if self.has_default_key {
                Ok(self.base.clone())
            } else {
                Err("no access key: pass --access-key or set EDGE_ACCESS_KEY".to_string())
            };
        };
        let base = self.base.clone();
        let data = self
            .secrets
            .get(&(namespace.to_string(), reference.name.clone()))
            .ok_or_else(|| format!("Secret {namespace}/{} is not in --secrets-from", reference.name))?;
        let key = data
            .get(&reference.key)
            .ok_or_else(|| format!("Secret {namespace}/{} has no key {:?}", reference.name, reference.key))?;
        Ok(
            base.with_credentials(crate::api::Credentials::AccessKey(crate::api::SecretValue::new(
                key.trim(),
            ))),
        )
    }
}

/// Reads Secrets (`data` base64 or `stringData`) from a YAML stream.
pub(crate) fn secrets_from(text: &str, default_namespace: &str) -> Result<SecretData, CommandError> {
    let mut secrets = HashMap::new();
    for manifest in documents("--secrets-from", text)? {
        if manifest.kind() != "Secret" {
            continue;
        }
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(manifest.value.clone())
            .map_err(|e| CommandError::Usage(format!("{}: not a Secret: {e}", manifest.source)))?;
        let mut data = BTreeMap::new();
        for (key, value) in secret.data.into_iter().flatten() {
            let text = String::from_utf8(value.0)
                .map_err(|_| CommandError::Usage(format!("{}: data.{key} is not UTF-8", manifest.source)))?;
            data.insert(key, text);
        }
        data.extend(secret.string_data.into_iter().flatten());
        let namespace = manifest.namespace().unwrap_or(default_namespace).to_string();
        secrets.insert((namespace, manifest.name().to_string()), data);
    }
    Ok(secrets)
}

fn platform_error(error: &ApiError) -> Verdict {
    Verdict::Error {
        detail: format!("{}: {error}", error.reason()),
    }
}

/// Plans every manifest (all already valid), sharing one read per Shield Zone and key.
pub(crate) async fn plan(manifests: &[Manifest], clients: &Clients, default_namespace: &str) -> Vec<PlannedObject> {
    let mut zone_lists: HashMap<(String, i64), Result<AccessListsResponse, ApiError>> = HashMap::new();
    let mut planned = Vec::new();
    for manifest in manifests {
        let namespace = manifest.namespace().unwrap_or(default_namespace).to_string();
        let verdict = match Kind::of(manifest.kind()) {
            Some(Kind::AccessListConfig) => match serde_json::from_value::<AccessListConfig>(manifest.value.clone()) {
                Ok(object) => match clients.for_object(&namespace, object.spec.access_key_secret_ref.as_ref()) {
                    Ok(client) => {
                        let key = (client_id(&client), object.spec.shield_zone_id);
                        if !zone_lists.contains_key(&key) {
                            let read = client.access_lists(object.spec.shield_zone_id).await;
                            zone_lists.insert(key.clone(), read);
                        }
                        match &zone_lists[&key] {
                            Ok(lists) => access_list_verdict(&object.spec, lists),
                            Err(error) => platform_error(error),
                        }
                    }
                    Err(detail) => Verdict::Error { detail },
                },
                Err(error) => Verdict::Error {
                    detail: error.to_string(),
                },
            },
            Some(Kind::PullZoneCertificate) => {
                let hostname = manifest.value["spec"]["hostname"].as_str().unwrap_or_default();
                Verdict::Change {
                    detail: format!(
                        "unknown whether {hostname} is issued: the platform offers no read of a certificate; the operator would call completeExternalHttpCertificate"
                    ),
                    changes: Vec::new(),
                }
            }
            Some(Kind::ContainerAppWatch) => {
                match serde_json::from_value::<ContainerAppWatch>(manifest.value.clone()) {
                    Ok(object) => match clients.for_object(&namespace, object.spec.access_key_secret_ref.as_ref()) {
                        Ok(client) => match client.get_app(&object.spec.app_id).await {
                            Ok(app) => Verdict::NoChange {
                                detail: format!("observes app {} (status {}); never writes", app.id, app.status),
                            },
                            Err(error) => platform_error(&error),
                        },
                        Err(detail) => Verdict::Error { detail },
                    },
                    Err(error) => Verdict::Error {
                        detail: error.to_string(),
                    },
                }
            }
            None => Verdict::Error {
                detail: format!("`{}` is not a kind the operator reconciles", manifest.kind()),
            },
        };
        planned.push(PlannedObject {
            source: manifest.source.clone(),
            kind: manifest.kind().to_string(),
            namespace,
            name: manifest.name().to_string(),
            verdict,
        });
    }
    planned
}

fn client_id(client: &EdgeClient) -> String {
    crate::controller::framework::credentials::credential_id(client)
}

/// The reconciler's own decision for a new object of `spec`.
pub(crate) fn access_list_verdict(spec: &AccessListConfigSpec, lists: &AccessListsResponse) -> Verdict {
    let (item, _) = match resolve(spec, lists) {
        Ok(found) => found,
        Err(error) => {
            return Verdict::Error {
                detail: format!("{}: {error}", error.reason::<AccessListReason>()),
            };
        }
    };
    // A rollout starts with the list logging.
    let staged = spec.rollout.as_ref().map(|rollout| {
        let first = AccessListConfigSpec {
            action: Some(AccessListAction::Log),
            ..spec.clone()
        };
        (first, format!("; then {}", staged_steps(rollout)))
    });
    let (spec, then) = match &staged {
        Some((first, then)) => (first, then.as_str()),
        None => (spec, ""),
    };
    let planned = plan_access_list(spec, &AccessListConfigStatus::default(), Some(1), item, None);
    let target = format!("configuration {} ({:?})", item.configuration_id, item.name);
    let differences = crate::controller::kinds::access_list::diff(spec, item);
    let changes = |patch: &crate::api::models::shield::AccessListConfigurationPatch| {
        let mut changes = Vec::new();
        if let Some(enabled) = patch.is_enabled {
            changes.push(MemberChange {
                member: "isEnabled".into(),
                before: item.is_enabled.to_string(),
                after: enabled.to_string(),
            });
        }
        if let Some(action) = patch.action {
            changes.push(MemberChange {
                member: "action".into(),
                before: AccessListAction::describe(item.action),
                after: AccessListAction::describe(action),
            });
        }
        changes
    };
    match (&planned.patch, spec.management_policy) {
        (Some(patch), _) => Verdict::Change {
            detail: format!("PATCH {target}{then}"),
            changes: changes(patch),
        },
        (None, ManagementPolicy::Observe) if !differences.is_empty() => Verdict::NoChange {
            detail: format!("{target} differs, but managementPolicy is Observe: reported as drift, not changed"),
        },
        (None, _) => Verdict::NoChange {
            detail: format!("{target} already matches{then}"),
        },
    }
}

/// The steps of a rollout after the first write (action Log).
fn staged_steps(rollout: &Rollout) -> String {
    let gate = [
        rollout.max_matches.map(|n| format!("at most {n} matches")),
        rollout.max_distinct_ips.map(|n| format!("at most {n} IPs")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" from ");
    let promotion = match rollout.promotion {
        Promotion::Automatic => format!("once {} of Log showed {gate}", rollout.window),
        Promotion::Manual if gate.is_empty() => "once its evidence is approved".to_string(),
        Promotion::Manual => format!("once its evidence is approved, if it shows {gate}"),
    };
    let rollback = rollout
        .rollback_above_sources
        .map(|n| {
            format!(
                "; back to Log, once, if blocked from more than {n} sources in the {} after promotion",
                rollout.window
            )
        })
        .unwrap_or_default();
    format!("action {} {promotion}{rollback}", rollout.action.action().name())
}

/// The exit status of a plan: 1 on errors, 2 when something would change, else 0
/// (like `terraform plan -detailed-exitcode`).
pub(crate) fn exit_code(planned: &[PlannedObject]) -> u8 {
    if planned.iter().any(|p| matches!(p.verdict, Verdict::Error { .. })) {
        1
    } else if planned.iter().any(|p| matches!(p.verdict, Verdict::Change { .. })) {
        2
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::export::object_name;
    use super::*;

    fn manifest(yaml: &str) -> Manifest {
        documents("test.yaml", yaml).expect("YAML").remove(0)
    }

    #[test]
    fn names_are_dns_1123_and_unique() {
        assert_eq!(object_name("Known bad actors", 1), "known-bad-actors");
        assert_eq!(object_name("  Tor exit nodes!! ", 1), "tor-exit-nodes");
        assert_eq!(object_name("日本", 9101), "list-9101");
        assert_eq!(object_name(&"a".repeat(80), 1).len(), 63);
        let lists: AccessListsResponse = serde_json::from_value(serde_json::json!({
            "managedLists": [{"configurationId": 1, "name": "dup", "isEnabled": true, "action": 2}],
            "customLists": [{"configurationId": 2, "name": "dup", "isEnabled": false, "action": 9}]
        }))
        .expect("lists");
        let objects = export_access_lists(7, &lists, false, Some("team"));
        let names: Vec<String> = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["dup", "dup-2"]);
        assert_eq!(
            objects[1].spec.action, None,
            "an unknown action code is left to the platform"
        );
        assert_eq!(objects[0].spec.management_policy, ManagementPolicy::Observe);
    }

    #[test]
    fn manifests_are_checked_like_the_apiserver_with_paths() {
        let both = manifest(
            "apiVersion: edgeplatform.io/v1alpha1\nkind: AccessListConfig\nmetadata: {name: x}\nspec: {shieldZoneId: 1, configurationId: 2, listName: y, enabled: true}\n",
        );
        let problems = validate(&both);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("exactly one of"), "{problems:?}");
        let zero = manifest(
            "apiVersion: edgeplatform.io/v1alpha1\nkind: AccessListConfig\nmetadata: {name: x}\nspec: {shieldZoneId: 0, configurationId: 2, enabled: yes-please}\n",
        );
        let paths: Vec<String> = validate(&zero).into_iter().map(|p| p.path).collect();
        assert!(paths.contains(&"spec.shieldZoneId".to_string()), "{paths:?}");
        assert!(paths.contains(&"spec.enabled".to_string()), "{paths:?}");
        let watch = manifest(
            "apiVersion: edgeplatform.io/v1alpha1\nkind: ContainerAppWatch\nmetadata: {name: w}\nspec: {appId: a, interval: 5s}\n",
        );
        let problems = validate(&watch);
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("interval must be at least 10s")),
            "{problems:?}"
        );
        let fine = manifest(
            "apiVersion: edgeplatform.io/v1alpha1\nkind: PullZoneCertificate\nmetadata: {name: c}\nspec: {hostname: a.example.com}\n",
        );
        assert_eq!(validate(&fine), Vec::new());
    }
}
