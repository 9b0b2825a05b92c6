//! The manifests `edgectl plan` reads: files, folders or standard input, split into
//! documents of the operator's kinds, each checked against its CRD schema.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::api::contract::{BodyValidator, openapi_to_json_schema};
use crate::cli::CommandError;
use crate::controller::kinds::Kind;

/// One YAML or JSON document of the input, with where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Manifest {
    /// `file.yaml` or `file.yaml#2` (the 1-based document of a stream).
    pub source: String,
    pub value: Value,
}

impl Manifest {
    pub(crate) fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    pub(crate) fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    pub(crate) fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }
}

/// Reads every document of `paths`: files, folders (their `.yaml`, `.yml` and `.json`
/// files, recursively, in name order) and `-` (standard input). Only documents of the
/// `edgeplatform.io` kinds are kept: a kustomization's Namespaces, Secrets and other
/// objects are left out (Secrets come from `--secrets-from` instead).
pub(crate) fn load(
    paths: &[String],
    stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Vec<Manifest>, CommandError> {
    let mut stdin = Some(stdin);
    let mut manifests = Vec::new();
    for path in paths {
        if path == "-" {
            let read = stdin
                .take()
                .ok_or_else(|| CommandError::Usage("`-` may be given once".into()))?;
            let text = read().map_err(|e| CommandError::Usage(format!("reading standard input: {e}")))?;
            manifests.extend(documents("-", &text)?);
            continue;
        }
        for file in files(Path::new(path))? {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| CommandError::Usage(format!("reading {}: {e}", file.display())))?;
            manifests.extend(documents(&file.display().to_string(), &text)?);
        }
    }
    Ok(manifests
        .into_iter()
        .filter(|m| m.value["apiVersion"].as_str() == Some("edgeplatform.io/v1alpha1") || Kind::of(m.kind()).is_some())
        .collect())
}

fn files(path: &Path) -> Result<Vec<PathBuf>, CommandError> {
    let metadata = std::fs::metadata(path).map_err(|e| CommandError::Usage(format!("{}: {e}", path.display())))?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| CommandError::Usage(format!("{}: {e}", path.display())))?
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

pub(super) fn documents(source: &str, text: &str) -> Result<Vec<Manifest>, CommandError> {
    let mut manifests = Vec::new();
    for (i, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = <Value as serde::Deserialize>::deserialize(document)
            .map_err(|e| CommandError::Usage(format!("{source}#{}: not YAML: {e}", i + 1)))?;
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
pub(crate) struct Problem {
    pub source: String,
    /// The offending member, as a JSON path (`spec.shieldZoneId`).
    pub path: String,
    pub message: String,
}

/// Checks a manifest as the apiserver would: the CRD's structural schema (types,
/// enums, bounds, required members) and its CEL rules, evaluated offline.
pub(crate) fn validate(manifest: &Manifest) -> Vec<Problem> {
    let crd = match Kind::of(manifest.kind()) {
        Some(kind) => kind.crd(),
        None => {
            let other = manifest.kind();
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
