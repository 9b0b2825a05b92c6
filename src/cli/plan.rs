//! `edgectl plan` and `edgectl export`: what the operator would do for a set of
//! manifests, with read-only platform calls and the reconciler's own planning code;
//! and manifests that adopt what a Shield Zone already has.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use kube::CustomResourceExt;
use serde::Serialize;
use serde_json::Value;

use super::Failure;
use crate::api::contract::{BodyValidator, openapi_to_json_schema};
use crate::api::models::shield::{AccessListAction, AccessListsResponse};
use crate::api::{ApiError, EdgeClient};
use crate::controller::kinds::access_list::{plan as plan_access_list, resolve};
use crate::crd::access_list_config::{AccessListConfigSpec, AccessListConfigStatus, ManagementPolicy};
use crate::crd::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

/// One YAML or JSON document of the input, with where it came from.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// `file.yaml` or `file.yaml#2` (the 1-based document of a stream).
    pub source: String,
    pub value: Value,
}

impl Manifest {
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }
}

/// The kinds the operator reconciles.
const KINDS: [&str; 3] = ["AccessListConfig", "PullZoneCertificate", "ContainerAppWatch"];

/// Reads every document of `paths`: files, folders (their `.yaml`, `.yml` and `.json`
/// files, recursively, in name order) and `-` (standard input). Only documents of the
/// `edgeplatform.io` kinds are kept: a kustomization's Namespaces, Secrets and other
/// objects are left out (Secrets come from `--secrets-from` instead).
pub fn load(paths: &[String], stdin: impl FnOnce() -> std::io::Result<String>) -> Result<Vec<Manifest>, Failure> {
    let mut stdin = Some(stdin);
    let mut manifests = Vec::new();
    for path in paths {
        if path == "-" {
            let read = stdin
                .take()
                .ok_or_else(|| Failure::Usage("`-` may be given once".into()))?;
            let text = read().map_err(|e| Failure::Usage(format!("reading standard input: {e}")))?;
            manifests.extend(documents("-", &text)?);
            continue;
        }
        for file in files(Path::new(path))? {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| Failure::Usage(format!("reading {}: {e}", file.display())))?;
            manifests.extend(documents(&file.display().to_string(), &text)?);
        }
    }
    Ok(manifests
        .into_iter()
        .filter(|m| m.value["apiVersion"].as_str() == Some("edgeplatform.io/v1alpha1") || KINDS.contains(&m.kind()))
        .collect())
}

fn files(path: &Path) -> Result<Vec<PathBuf>, Failure> {
    let metadata = std::fs::metadata(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut found = Vec::new();
    for entry in entries {
        if entry.is_dir() {
            found.extend(files(&entry)?);
        } else if entry
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| matches!(x, "yaml" | "yml" | "json"))
        {
            found.push(entry);
        }
    }
    Ok(found)
}

fn documents(source: &str, text: &str) -> Result<Vec<Manifest>, Failure> {
    let mut manifests = Vec::new();
    for (i, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = <Value as serde::Deserialize>::deserialize(document)
            .map_err(|e| Failure::Usage(format!("{source}#{}: not YAML: {e}", i + 1)))?;
        if value.is_null() {
            continue;
        }
        manifests.push(Manifest {
            source: format!("{source}#{}", i + 1),
            value,
        });
    }
    Ok(manifests)
}

/// A manifest the apiserver would refuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub source: String,
    /// The offending member, as a JSON path (`spec.shieldZoneId`).
    pub path: String,
    pub message: String,
}

/// Checks a manifest as the apiserver would: the CRD's structural schema (types,
/// enums, bounds, required members) and its CEL rules, evaluated offline.
pub fn validate(manifest: &Manifest) -> Vec<Problem> {
    let crd = match manifest.kind() {
        "AccessListConfig" => AccessListConfig::crd(),
        "PullZoneCertificate" => PullZoneCertificate::crd(),
        "ContainerAppWatch" => ContainerAppWatch::crd(),
        other => {
            return vec![Problem {
                source: manifest.source.clone(),
                path: "kind".into(),
                message: format!("`{other}` is not a kind the operator reconciles"),
            }];
        }
    };
    let problem = |path: String, message: String| Problem {
        source: manifest.source.clone(),
        path,
        message,
    };
    let Some(schema) = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
    else {
        return vec![problem("".into(), "the CRD has no schema".into())];
    };
    if manifest.name().is_empty() {
        return vec![problem("metadata.name".into(), "is required".into())];
    }
    let mut checked = manifest.value.clone();
    // metadata is the apiserver's to check, not the CRD schema's.
    checked["metadata"] = serde_json::json!({});
    let structural = BodyValidator::from_json_schema(&openapi_to_json_schema(&strict(schema.clone())))
        .map(|v| v.violations(&checked))
        .unwrap_or_else(|e| vec![format!("(schema): {e}")]);
    let mut problems: Vec<Problem> = structural
        .into_iter()
        .map(|v| {
            let (pointer, message) = v.split_once(": ").unwrap_or(("", &v));
            problem(dotted(pointer), message.to_string())
        })
        .collect();
    if problems.is_empty()
        && let Err(errors) = kube::core::cel::Validator::new().validate(&schema, &checked, None)
    {
        problems.extend(errors.into_vec().into_iter().map(|e| problem(e.field_path, e.message)));
    }
    problems
}

/// The schema with unknown members refused where the apiserver would prune them (and
/// `kubectl apply`, validating strictly, refuse them).
fn strict(mut schema: Value) -> Value {
    fn walk(node: &mut Value) {
        let Value::Object(members) = node else {
            return;
        };
        let closed = members.contains_key("properties")
            && !members.contains_key("additionalProperties")
            && members.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true));
        if closed {
            members.insert("additionalProperties".into(), Value::Bool(false));
        }
        for (key, child) in members.iter_mut() {
            match key.as_str() {
                "properties" => child.as_object_mut().into_iter().flatten().for_each(|(_, c)| walk(c)),
                "items" | "additionalProperties" => walk(child),
                _ => {}
            }
        }
    }
    walk(&mut schema);
    // The root's apiVersion, kind and metadata are the apiserver's, not the schema's.
    if let Some(root) = schema.as_object_mut() {
        root.remove("additionalProperties");
    }
    schema
}

/// `/spec/filters/0/op` as `spec.filters[0].op`.
fn dotted(pointer: &str) -> String {
    let mut path = String::new();
    for part in pointer.split('/').filter(|p| !p.is_empty() && *p != "(body)") {
        match part.parse::<usize>() {
            Ok(index) => path.push_str(&format!("[{index}]")),
            Err(_) if path.is_empty() => path.push_str(part),
            Err(_) => {
                path.push('.');
                path.push_str(part);
            }
        }
    }
    path
}

/// One member that would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberChange {
    pub member: String,
    pub before: String,
    pub after: String,
}

/// What the operator would do for one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Verdict {
    NoChange { detail: String },
    Change { detail: String, changes: Vec<MemberChange> },
    Error { detail: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedObject {
    pub source: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// `(namespace, name)` of a Secret → its data, decoded.
pub type SecretData = HashMap<(String, String), BTreeMap<String, String>>;

/// Where platform clients come from: the default key, or a Secret of `--secrets-from`.
pub struct Clients {
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
        Ok(base.with_credentials(crate::api::Credentials::AccessKey(crate::api::Secret::new(key.trim()))))
    }
}

/// Reads Secrets (`data` base64 or `stringData`) from a YAML stream.
pub fn secrets_from(text: &str, default_namespace: &str) -> Result<SecretData, Failure> {
    let mut secrets = HashMap::new();
    for manifest in documents("--secrets-from", text)? {
        if manifest.kind() != "Secret" {
            continue;
        }
        let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(manifest.value.clone())
            .map_err(|e| Failure::Usage(format!("{}: not a Secret: {e}", manifest.source)))?;
        let mut data = BTreeMap::new();
        for (key, value) in secret.data.into_iter().flatten() {
            let text = String::from_utf8(value.0)
                .map_err(|_| Failure::Usage(format!("{}: data.{key} is not UTF-8", manifest.source)))?;
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
pub async fn plan(manifests: &[Manifest], clients: &Clients, default_namespace: &str) -> Vec<PlannedObject> {
    let mut zone_lists: HashMap<(String, i64), Result<AccessListsResponse, ApiError>> = HashMap::new();
    let mut planned = Vec::new();
    for manifest in manifests {
        let namespace = manifest.namespace().unwrap_or(default_namespace).to_string();
        let verdict = match manifest.kind() {
            "AccessListConfig" => match serde_json::from_value::<AccessListConfig>(manifest.value.clone()) {
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
            "PullZoneCertificate" => {
                let hostname = manifest.value["spec"]["hostname"].as_str().unwrap_or_default();
                Verdict::Change {
                    detail: format!(
                        "unknown whether {hostname} is issued: the platform offers no read of a certificate; the operator would call completeExternalHttpCertificate"
                    ),
                    changes: Vec::new(),
                }
            }
            "ContainerAppWatch" => match serde_json::from_value::<ContainerAppWatch>(manifest.value.clone()) {
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
            },
            other => Verdict::Error {
                detail: format!("`{other}` is not a kind the operator reconciles"),
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
pub fn access_list_verdict(spec: &AccessListConfigSpec, lists: &AccessListsResponse) -> Verdict {
    let (item, _) = match resolve(spec, lists) {
        Ok(found) => found,
        Err(error) => {
            return Verdict::Error {
                detail: format!("{}: {error}", error.reason()),
            };
        }
    };
    let planned = plan_access_list(spec, &AccessListConfigStatus::default(), Some(1), item);
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
            detail: format!("PATCH {target}"),
            changes: changes(patch),
        },
        (None, ManagementPolicy::Observe) if !differences.is_empty() => Verdict::NoChange {
            detail: format!("{target} differs, but managementPolicy is Observe: reported as drift, not changed"),
        },
        (None, _) => Verdict::NoChange {
            detail: format!("{target} already matches"),
        },
    }
}

/// The exit status of a plan: 1 on errors, 2 when something would change, else 0
/// (like `terraform plan -detailed-exitcode`).
pub fn exit_code(planned: &[PlannedObject]) -> u8 {
    if planned.iter().any(|p| matches!(p.verdict, Verdict::Error { .. })) {
        1
    } else if planned.iter().any(|p| matches!(p.verdict, Verdict::Change { .. })) {
        2
    } else {
        0
    }
}

/// A DNS-1123 name from a list name: lower case, runs of other characters as `-`, at
/// most 63 characters; `list-<configurationId>` when nothing is left.
pub fn object_name(list_name: &str, configuration_id: i64) -> String {
    let mut name = String::new();
    for c in list_name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name: String = name.trim_matches('-').chars().take(63).collect();
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        format!("list-{configuration_id}")
    } else {
        name
    }
}

/// One AccessListConfig per list of the zone, holding its current values as the desired
/// state: `Observe` unless `manage`. Names are unique (a repeated name gets the
/// configuration id appended).
pub fn export_access_lists(
    zone: i64,
    lists: &AccessListsResponse,
    manage: bool,
    namespace: Option<&str>,
) -> Vec<AccessListConfig> {
    let mut seen = std::collections::HashSet::new();
    lists
        .all_lists()
        .map(|item| {
            let mut name = object_name(&item.name, item.configuration_id);
            if !seen.insert(name.clone()) {
                name = format!(
                    "{}-{}",
                    name.chars().take(50).collect::<String>(),
                    item.configuration_id
                );
                seen.insert(name.clone());
            }
            let spec = AccessListConfigSpec {
                shield_zone_id: zone,
                configuration_id: Some(item.configuration_id),
                list_name: None,
                enabled: item.is_enabled,
                action: AccessListAction::from_code(item.action),
                management_policy: if manage {
                    ManagementPolicy::Manage
                } else {
                    ManagementPolicy::Observe
                },
                deletion_policy: Default::default(),
                access_key_secret_ref: None,
            };
            let mut object = AccessListConfig::new(&name, spec);
            object.metadata.namespace = namespace.map(str::to_string);
            object
        })
        .collect()
}

/// The objects as a multi-document YAML stream, with a header naming the zone.
pub fn to_yaml_stream(zone: i64, objects: &[AccessListConfig]) -> Result<String, serde_yaml::Error> {
    let mut out = format!(
        "# Access lists of Shield Zone {zone}, exported by edgectl: their current values as the desired state.\n"
    );
    for object in objects {
        let mut value = serde_json::to_value(object).map_err(<serde_yaml::Error as serde::ser::Error>::custom)?;
        if let Some(members) = value.as_object_mut() {
            members.remove("status");
        }
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&value)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
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
