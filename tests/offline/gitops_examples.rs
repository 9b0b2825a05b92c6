//! The GitOps examples install released charts, pinned: Flux's OCIRepository picks a
//! version of one range and verifies the release workflow's cosign signature, Argo CD's
//! Application names one version. Both examples' values render the chart with `helm
//! template` (which enforces values.schema.json), the same twice.

use serde::Deserialize;
use serde_yaml::Value;

use crate::support::cluster::repo_root;
use crate::support::helm::{chart, helm_offline};

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The first version of the minor series after Cargo's: outside the Flux example's range.
fn next_minor() -> String {
    let minor: u64 = env!("CARGO_PKG_VERSION_MINOR").parse().expect("a minor version");
    format!("{}.{}.0", env!("CARGO_PKG_VERSION_MAJOR"), minor + 1)
}

const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// The YAML documents of a file under examples/gitops.
fn documents(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join("examples/gitops").join(file))
        .unwrap_or_else(|e| panic!("examples/gitops/{file}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| Value::deserialize(document).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

/// The one document of `kind` in `file`.
fn the(file: &str, kind: &str) -> Value {
    let mut found: Vec<Value> = documents(file).into_iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "{file} has one {kind}");
    found.remove(0)
}

/// Where the release workflow pushes the chart (`oci://$REGISTRY/charts`), and the
/// workflow's text.
fn release_workflow() -> (String, String) {
    let workflow =
        std::fs::read_to_string(repo_root().join(".github/workflows/release.yaml")).expect("the release workflow");
    let registry = workflow
        .lines()
        .find_map(|line| line.trim().strip_prefix("REGISTRY: "))
        .expect("the workflow's REGISTRY")
        .trim()
        .to_string();
    assert!(
        workflow.contains(r#""oci://$REGISTRY/charts""#),
        "the workflow pushes the chart to $REGISTRY/charts"
    );
    assert!(
        workflow.contains(r#"cosign sign --yes "$REGISTRY/charts/edge-operator@"#),
        "the workflow signs the chart it pushed"
    );
    (format!("{registry}/charts"), workflow)
}

/// `helm template` of the working tree's chart as release `name` in `namespace` with
/// `values`: (success, manifests, errors). No cluster: helm reads none when it templates.
fn template(name: &str, namespace: &str, values: &Value) -> (bool, String, String) {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let file = scratch.path().join("values.yaml");
    std::fs::write(&file, serde_yaml::to_string(values).expect("values")).expect("write the values");
    let file = file.display().to_string();
    helm_offline(&["template", name, &chart(), "--namespace", namespace, "--values", &file])
}

/// The chart with an example's values: renders, as the chart's schema allows, the same
/// twice, with the CRDs and the Deployment; and the schema is what refuses a wrong value.
fn renders_stably(example: &str, name: &str, namespace: &str, values: &Value) {
    assert!(
        repo_root().join("charts/edge-operator/values.schema.json").exists(),
        "the chart has a values schema, which helm template enforces"
    );
    assert!(
        values["platform"]["apiUrl"].is_string(),
        "{example}: platform.apiUrl is required"
    );
    let (ok, first, err) = template(name, namespace, values);
    assert!(ok, "{example}: the values fit the chart: {err}");
    let (ok, second, err) = template(name, namespace, values);
    assert!(ok, "{err}");
    assert!(
        first == second,
        "{example}: two renders differ (an Argo CD render would never sync)"
    );
    let kinds: Vec<Value> = serde_yaml::Deserializer::from_str(&first)
        .filter_map(|document| Value::deserialize(document).ok())
        .map(|object| object["kind"].clone())
        .collect();
    let crds = kinds.iter().filter(|kind| *kind == "CustomResourceDefinition").count();
    assert_eq!(
        crds,
        edge_operator::controller::kinds::crds().len(),
        "{example}: the release carries the CRDs"
    );
    assert!(kinds.iter().any(|kind| kind == "Deployment"), "{example}");
    assert!(
        first.contains(&format!(
            "{}:{VERSION}",
            values["image"]["repository"].as_str().expect("image.repository")
        )),
        "{example}: the operator runs this version's image from the given repository"
    );

    let mut wrong = values.clone();
    wrong["replicas"] = Value::from("two");
    let (ok, _, err) = template(name, namespace, &wrong);
    assert!(
        !ok && err.contains("schema"),
        "values.schema.json refuses replicas: two: {err}"
    );
}

#[test]
fn the_flux_example_installs_the_signed_chart_of_one_minor_version() {
    let (charts, _) = release_workflow();
    let source = the("flux/operator/ocirepository.yaml", "OCIRepository");
    assert_eq!(source["apiVersion"], "source.toolkit.fluxcd.io/v1");
    let spec = &source["spec"];
    assert_eq!(
        spec["url"].as_str(),
        Some(format!("oci://{charts}/edge-operator").as_str())
    );
    let reference = spec["ref"].as_mapping().expect("spec.ref");
    assert_eq!(
        reference.keys().filter_map(Value::as_str).collect::<Vec<_>>(),
        ["semver"],
        "a version range: no tag, no digest"
    );
    assert_eq!(spec["layerSelector"]["mediaType"], HELM_CHART_LAYER);
    assert_eq!(
        spec["layerSelector"]["operation"], "copy",
        "the chart as Helm packaged it"
    );

    let verify = &spec["verify"];
    assert_eq!(verify["provider"], "cosign");
    assert!(
        verify["secretRef"].is_null(),
        "keyless: the workflow's identity, no key"
    );
    let identities = verify["matchOIDCIdentity"].as_sequence().expect("matchOIDCIdentity");
    assert_eq!(identities.len(), 1, "one identity: the release workflow's");
    let pattern =
        |field: &str| regex::Regex::new(identities[0][field].as_str().expect("a regexp")).expect("a valid regexp");
    let (issuer, subject) = (pattern("issuer"), pattern("subject"));
    assert!(issuer.is_match("https://token.actions.githubusercontent.com"));
    assert!(!issuer.is_match("https://token.actions.githubusercontent.com.example.net"));
    // The certificate of a keyless signature from a GitHub workflow names the workflow
    // file and the ref it ran for.
    let repository = "https://github.com/edge-operator/edge-operator";
    assert!(subject.is_match(&format!(
        "{repository}/.github/workflows/release.yaml@refs/tags/v{VERSION}"
    )));
    for other in [
        format!("{repository}/.github/workflows/release.yaml@refs/heads/main"),
        format!("{repository}/.github/workflows/ci.yaml@refs/tags/v{VERSION}"),
        format!("https://github.com/someone/edge-operator/.github/workflows/release.yaml@refs/tags/v{VERSION}"),
        format!("{repository}/.github/workflows/release.yaml@refs/tags/v{VERSION}.evil"),
        // A release of another minor, which the range does not take, re-tagged into it.
        format!(
            "{repository}/.github/workflows/release.yaml@refs/tags/v{}",
            next_minor()
        ),
    ] {
        assert!(!subject.is_match(&other), "a signature of {other} is refused");
    }

    let release = the("flux/operator/helmrelease.yaml", "HelmRelease");
    assert_eq!(release["apiVersion"], "helm.toolkit.fluxcd.io/v2");
    assert!(
        release["spec"]["chart"].is_null(),
        "the chart comes from chartRef alone"
    );
    assert_eq!(release["spec"]["chartRef"]["kind"], "OCIRepository");
    assert_eq!(release["spec"]["chartRef"]["name"], source["metadata"]["name"]);
    assert_eq!(
        release["metadata"]["namespace"], source["metadata"]["namespace"],
        "the same namespace: no cross-namespace reference"
    );
    let resources = the("flux/operator/kustomization.yaml", "Kustomization")["resources"].clone();
    for file in ["namespace.yaml", "ocirepository.yaml", "helmrelease.yaml"] {
        assert!(
            resources.as_sequence().expect("resources").iter().any(|r| r == file),
            "operator/ applies {file}"
        );
    }

    let flux_system = documents("flux/flux-system.yaml");
    let platform = flux_system
        .iter()
        .find(|d| d["metadata"]["name"] == "edge-platform")
        .expect("the edge-platform Kustomization");
    assert_eq!(platform["spec"]["wait"], true, "health-checks the objects");
    assert_eq!(platform["spec"]["dependsOn"][0]["name"], "edge-operator");
    assert!(platform["spec"]["timeout"].is_string());
    assert!(
        !flux_system
            .iter()
            .any(|d| d["kind"] == "HelmRelease" || d["spec"]["path"].as_str() == Some("./charts/edge-operator")),
        "the chart comes from the OCIRepository, never from a branch"
    );

    let namespace = release["metadata"]["namespace"].as_str().expect("a namespace");
    let name = release["spec"]["releaseName"].as_str().expect("a releaseName");
    renders_stably("the HelmRelease", name, namespace, &release["spec"]["values"]);
}

#[test]
fn the_argo_cd_example_installs_one_released_version_of_the_chart() {
    let (charts, _) = release_workflow();
    let application = the("argocd/application.yaml", "Application");
    let source = &application["spec"]["source"];
    assert_eq!(
        source["repoURL"].as_str(),
        Some(charts.as_str()),
        "Argo CD's Helm OCI form: the registry path, no oci://, no chart"
    );
    assert_eq!(source["chart"], "edge-operator");
    let revision = source["targetRevision"].as_str().expect("a targetRevision");
    let numbers: Vec<&str> = revision.split('.').collect();
    assert!(
        numbers.len() == 3
            && numbers
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        "one version, not a range, a branch or HEAD: {revision}"
    );
    let repository = the("argocd/application.yaml", "Secret");
    assert_eq!(
        repository["metadata"]["labels"]["argocd.argoproj.io/secret-type"],
        "repository"
    );
    assert_eq!(repository["stringData"]["url"], source["repoURL"]);
    assert_eq!(repository["stringData"]["type"], "helm");
    assert_eq!(repository["stringData"]["enableOCI"], "true");
    let options = &application["spec"]["syncPolicy"]["syncOptions"];
    assert!(
        options
            .as_sequence()
            .expect("syncOptions")
            .iter()
            .any(|o| o == "ServerSideApply=true"),
        "the CRDs are applied server-side"
    );

    let namespace = application["spec"]["destination"]["namespace"]
        .as_str()
        .expect("a destination namespace");
    let name = source["helm"]["releaseName"].as_str().expect("a releaseName");
    renders_stably("the Application", name, namespace, &source["helm"]["valuesObject"]);
}
