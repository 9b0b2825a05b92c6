//! The committed CRDs (`crds/`, and the chart's templates of them) are exactly what the
//! Rust types generate.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::support::cluster::repo_root;

fn assert_committed(dir: &Path, generate: fn(&CustomResourceDefinition) -> Result<String, serde_yaml::Error>) {
    let crds = edge_operator::controller::kinds::crds();
    for crd in &crds {
        let path = dir.join(edge_operator::resources::file_name(crd));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        let generated = generate(crd).expect("serialisable");
        assert!(
            committed == generated,
            "{} is out of date with the Rust types; regenerate with `make crds`",
            path.display()
        );
    }
    let files = std::fs::read_dir(dir).expect("a folder of CRDs").count();
    assert_eq!(files, crds.len(), "{} holds exactly one file per CRD", dir.display());
}

#[test]
fn committed_crds_match_the_rust_types() {
    assert_committed(&repo_root().join("crds"), edge_operator::resources::to_yaml);
}

#[test]
fn the_charts_crd_templates_match_the_rust_types() {
    assert_committed(
        &repo_root().join("charts/edge-operator/templates/crds"),
        edge_operator::resources::to_chart_template,
    );
    assert!(
        !repo_root().join("charts/edge-operator/crds").exists(),
        "the chart renders its CRDs from templates/crds; a crds/ folder would install them a second way"
    );
}

#[test]
fn the_charts_list_of_kinds_is_the_registrys() {
    let path = repo_root().join("charts/edge-operator/templates/_kinds.tpl");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == edge_operator::controller::kinds::chart_kinds_template(),
        "{} is out of date with the registry of kinds; regenerate with `make crds`",
        path.display()
    );
    assert!(
        committed.contains(r#""ContainerAppWatch" "containerappwatches""#),
        "{committed}"
    );
}

#[test]
fn every_schema_property_has_a_description() {
    fn walk(path: &str, schema: &serde_json::Value, missing: &mut Vec<String>) {
        if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
            for (name, property) in properties {
                let here = format!("{path}.{name}");
                let documented = property
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| !d.is_empty());
                if !documented && !matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                    missing.push(here.clone());
                }
                walk(&here, property, missing);
            }
        }
        if let Some(items) = schema.get("items") {
            walk(&format!("{path}[]"), items, missing);
        }
    }
    let mut missing = Vec::new();
    for crd in edge_operator::controller::kinds::crds() {
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema");
        walk(&crd.spec.names.kind, &schema["openAPIV3Schema"], &mut missing);
    }
    assert!(
        missing.is_empty(),
        "properties without a description (kubectl explain shows nothing):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_format_is_one_the_apiserver_knows() {
    fn walk(node: &serde_json::Value, unknown: &mut Vec<String>) {
        match node {
            serde_json::Value::Object(members) => {
                if let Some(format) = members.get("format").and_then(|f| f.as_str())
                    && !matches!(
                        format,
                        "int32" | "int64" | "float" | "double" | "byte" | "date" | "date-time"
                    )
                {
                    unknown.push(format.to_string());
                }
                members.values().for_each(|v| walk(v, unknown));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, unknown)),
            _ => {}
        }
    }
    let mut unknown = Vec::new();
    for crd in edge_operator::controller::kinds::crds() {
        walk(&serde_json::to_value(&crd.spec).expect("spec"), &mut unknown);
    }
    assert!(unknown.is_empty(), "formats the apiserver warns about: {unknown:?}");
}

#[test]
fn every_text_list_and_map_of_a_status_is_bounded() {
    fn walk(path: &str, node: &serde_json::Value, unbounded: &mut Vec<String>) {
        let bound = match node.get("type").and_then(|t| t.as_str()) {
            Some("string") if node.get("enum").is_none() => Some("maxLength"),
            Some("array") => Some("maxItems"),
            Some("object") if node.get("additionalProperties").is_some() => Some("maxProperties"),
            _ => None,
        };
        if let Some(bound) = bound
            && node.get(bound).is_none()
        {
            unbounded.push(format!("{path} ({bound})"));
        }
        if let Some(properties) = node.get("properties").and_then(|p| p.as_object()) {
            for (name, property) in properties {
                walk(&format!("{path}.{name}"), property, unbounded);
            }
        }
        for child in ["items", "additionalProperties"] {
            if let Some(schema) = node.get(child).filter(|s| s.is_object()) {
                walk(&format!("{path}.{child}"), schema, unbounded);
            }
        }
    }
    let mut unbounded = Vec::new();
    for crd in edge_operator::controller::kinds::Kind::all()
        .iter()
        .map(|kind| kind.crd())
    {
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema");
        let status = &schema["openAPIV3Schema"]["properties"]["status"];
        assert!(status.is_object(), "{} has a status schema", crd.spec.names.kind);
        walk(&format!("{}.status", crd.spec.names.kind), status, &mut unbounded);
    }
    assert!(
        unbounded.is_empty(),
        "status members a status writer could grow without bound:\n{}",
        unbounded.join("\n")
    );
}

/// A number the apiserver stores that the operator cannot decode would fail its watch
/// of the kind for every tenant: every 32-bit integer is bounded to what it holds, and
/// so is an unsigned one (`status.attempts` of a PullZoneCertificate, a `u32`).
#[test]
fn every_integer_is_bounded_to_what_the_operator_decodes() {
    fn walk(path: &str, node: &serde_json::Value, checked: &mut Vec<String>, unbounded: &mut Vec<String>) {
        match node {
            serde_json::Value::Object(members) => {
                let bounds = (
                    members.get("minimum").and_then(|m| m.as_f64()),
                    members.get("maximum").and_then(|m| m.as_f64()),
                );
                let range = match members.get("format").and_then(|f| f.as_str()) {
                    _ if path.ends_with("status.properties.attempts") => Some((0.0, f64::from(u32::MAX))),
                    Some("int32") => Some((f64::from(i32::MIN), f64::from(i32::MAX))),
                    _ => None,
                };
                if let Some((least, most)) = range {
                    checked.push(path.to_string());
                    if !matches!(bounds, (Some(min), Some(max)) if min >= least && max <= most) {
                        unbounded.push(format!("{path}: {bounds:?}"));
                    }
                }
                for (name, child) in members {
                    walk(&format!("{path}.{name}"), child, checked, unbounded);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(path, v, checked, unbounded)),
            _ => {}
        }
    }
    let (mut checked, mut unbounded) = (Vec::new(), Vec::new());
    for crd in edge_operator::controller::kinds::crds() {
        let spec = serde_json::to_value(&crd.spec).expect("spec");
        walk(&crd.spec.names.kind, &spec, &mut checked, &mut unbounded);
    }
    assert!(
        checked.iter().any(|path| path.ends_with("attempts")) && checked.len() > 1,
        "{checked:?}"
    );
    assert!(
        unbounded.is_empty(),
        "integers a writer could set past what the operator decodes:\n{}",
        unbounded.join("\n")
    );
}
