//! `edgectl plan` and `edgectl export`: what the operator would do for a set of
//! manifests, with read-only platform calls and the reconciler's own planning code;
//! and manifests that adopt what a Shield Zone already has.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::api::EdgeClient;
use crate::cli::CommandError;
pub(crate) use crate::controller::framework::pipeline::plan::Verdict;
use crate::controller::framework::pipeline::plan::{ClientSource, PlanRequest};
use crate::controller::kinds::Kind;
use crate::resources::SecretKeyRef;

mod manifests;

use self::manifests::documents;
pub(crate) use self::manifests::{Manifest, Problem, load, validate};

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

impl ClientSource for Clients {
    fn client_for(&self, namespace: &str, reference: Option<&SecretKeyRef>) -> Result<EdgeClient, String> {
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

/// Plans every manifest (all already valid), each kind its own, in their order.
pub(crate) async fn plan(manifests: &[Manifest], clients: &Clients, default_namespace: &str) -> Vec<PlannedObject> {
    let namespace_of = |manifest: &Manifest| manifest.namespace().unwrap_or(default_namespace).to_string();
    let mut verdicts: Vec<Option<Verdict>> = vec![None; manifests.len()];
    for kind in Kind::all() {
        let (positions, requests): (Vec<usize>, Vec<PlanRequest>) = manifests
            .iter()
            .enumerate()
            .filter(|(_, manifest)| manifest.kind() == kind.name())
            .map(|(position, manifest)| {
                let request = PlanRequest {
                    manifest: manifest.value.clone(),
                    namespace: namespace_of(manifest),
                };
                (position, request)
            })
            .unzip();
        if positions.is_empty() {
            continue;
        }
        for (position, verdict) in positions.into_iter().zip(kind.plan(requests, clients).await) {
            verdicts[position] = Some(verdict);
        }
    }
    manifests
        .iter()
        .zip(verdicts)
        .map(|(manifest, verdict)| PlannedObject {
            source: manifest.source.clone(),
            kind: manifest.kind().to_string(),
            namespace: namespace_of(manifest),
            name: manifest.name().to_string(),
            verdict: verdict.unwrap_or_else(|| Verdict::Error {
                detail: format!("`{}` is not a kind the operator reconciles", manifest.kind()),
            }),
        })
        .collect()
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
    use super::*;

    fn manifest(yaml: &str) -> Manifest {
        documents("test.yaml", yaml).expect("YAML").remove(0)
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
