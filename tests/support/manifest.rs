//! Manifests of the operator's kinds and of key Secrets, built as values and applied as
//! YAML, as a user's `kubectl apply` sends them.

use std::fmt;

use serde_json::{Value, json};

const GROUP_VERSION: &str = "edgeplatform.io/v1alpha1";

/// One object as `kubectl apply` takes it.
#[derive(Debug, Clone)]
pub(crate) struct Manifest(Value);

impl Manifest {
    fn object(api_version: &str, kind: &str, namespace: &str, name: &str) -> Self {
        Self(json!({
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
        }))
    }

    pub(crate) fn access_list(namespace: &str, name: &str, spec: Value) -> Self {
        Self::object(GROUP_VERSION, "AccessListConfig", namespace, name).with("spec", spec)
    }

    pub(crate) fn certificate(namespace: &str, name: &str, spec: Value) -> Self {
        Self::object(GROUP_VERSION, "PullZoneCertificate", namespace, name).with("spec", spec)
    }

    pub(crate) fn app_watch(namespace: &str, name: &str, spec: Value) -> Self {
        Self::object(GROUP_VERSION, "ContainerAppWatch", namespace, name).with("spec", spec)
    }

    /// A Secret holding an access key under `accessKey`.
    pub(crate) fn key_secret(namespace: &str, name: &str, key: &str) -> Self {
        Self::object("v1", "Secret", namespace, name).with("stringData", json!({ "accessKey": key }))
    }

    /// `fields` set in its spec, beside those it has.
    pub(crate) fn with_spec(mut self, fields: Value) -> Self {
        if let (Some(spec), Value::Object(fields)) = (self.0["spec"].as_object_mut(), fields) {
            spec.extend(fields);
        }
        self
    }

    pub(crate) fn annotated(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["annotations"][key] = value.into();
        self
    }

    pub(crate) fn labelled(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = value.into();
        self
    }

    fn with(mut self, field: &str, value: Value) -> Self {
        self.0[field] = value;
        self
    }
}

impl fmt::Display for Manifest {
    /// The manifest as YAML.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yaml = serde_yaml::to_string(&self.0).map_err(|_| fmt::Error)?;
        f.write_str(&yaml)
    }
}

/// Several manifests as one YAML stream, applied in one request.
pub(crate) fn stream(manifests: impl IntoIterator<Item = Manifest>) -> String {
    manifests
        .into_iter()
        .map(|manifest| manifest.to_string())
        .collect::<Vec<_>>()
        .join("---\n")
}
