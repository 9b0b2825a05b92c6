//! The Helm chart on the real control plane: lint, server-side dry run, values schema,
//! the notes, Secret grants, the disruption budget, the CRDs and the Flux example.

use crate::support::cluster::{TestNamespace, cluster, repo_root};
use crate::support::helm::{CRDS_APPLIED_APART, chart, helm};
use serde::Deserialize;

pub(crate) const API_URL: &str = "--set=platform.apiUrl=https://api.example.net";

/// The chart-testing value files of the modes the suites install (`charts/*/ci/`).
fn ci_value_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(repo_root().join("charts/edge-operator/ci"))
        .expect("charts/edge-operator/ci")
        .flatten()
        .map(|entry| entry.path().display().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    files
}

#[test]
fn lint_passes_on_the_defaults_and_every_mode_renders_and_validates_server_side() {
    let (ok, out, err) = helm(&["lint", &chart()]);
    assert!(ok, "the chart as shipped lints: {out}{err}");
    cluster().apply_monitoring_crds();
    let namespace = TestNamespace::create("chart-dry");
    let namespaced_mode = format!("--set=watchNamespace={}", namespace.name);
    let files = ci_value_files();
    let mut modes: Vec<Vec<&str>> = files.iter().map(|file| vec!["-f", file.as_str()]).collect();
    modes.push(vec![
        API_URL,
        "--set=replicas=2",
        "--set=credentials.create=true",
        "--set=credentials.accessKey=k",
        "--set=podDisruptionBudget.enabled=true",
        "--set=networkPolicy.enabled=true",
    ]);
    modes.push(vec![API_URL, namespaced_mode.as_str()]);
    modes.push(vec![
        "--set=emulator.enabled=true",
        "--set=emulator.persistence.enabled=true",
    ]);
    for values in modes {
        let chart = chart();
        let mut args = vec!["lint", &chart];
        args.extend(values.iter().copied());
        let (ok, out, err) = helm(&args);
        assert!(ok, "{values:?}: {out}{err}");
        let mut args = vec!["template", "dry", &chart, "--namespace", &namespace.name];
        args.extend(values.iter().copied());
        let (ok, manifests, err) = helm(&args);
        assert!(ok, "{err}");
        let (ok, _, err) = cluster().kubectl(
            &["apply", "--dry-run=server", "-n", &namespace.name, "-f", "-"],
            Some(&manifests),
        );
        assert!(ok, "{values:?}: {err}");
    }
}

#[test]
fn an_install_without_a_platform_url_fails_saying_which_value_is_missing() {
    let (ok, _, err) = helm(&["template", "missing", &chart()]);
    assert!(!ok);
    assert!(
        err.contains("platform.apiUrl is required") && err.contains("emulator.enabled"),
        "{err}"
    );
}

#[test]
fn values_schema_rejects_bad_values_and_typos_at_every_level() {
    for (bad, named) in [
        (vec![], "apiUrl"),
        (vec!["--set=platform.apiUrl=ftp://nope"], "apiUrl"),
        (vec![API_URL, "--set=replicas=0"], "replicas"),
        (vec![API_URL, "--set=logFormat=xml"], "logFormat"),
        (vec![API_URL, "--set=resync=soon"], "resync"),
        (vec![API_URL, "--set=metrics.port=70000"], "port"),
        (vec![API_URL, "--set=replica=2"], "replica"),
        (vec![API_URL, "--set=leaderElection.enable=false"], "enable"),
        (vec![API_URL, "--set=emulator.networkPolicy.enable=false"], "enable"),
        (vec![API_URL, "--set=metrics.serviceMonitor.enable=true"], "enable"),
        (vec![API_URL, "--set=image.digest=latest"], "digest"),
        (vec![API_URL, "--set=extraArgs={status-refresh=30m}"], "extraArgs"),
        (vec![API_URL, "--set=imagePullSecrets[0].nam=reg"], "imagePullSecrets"),
    ] {
        let chart = chart();
        let mut args = vec!["template", "bad", &chart];
        args.extend(bad.iter().copied());
        let (ok, _, err) = helm(&args);
        assert!(!ok, "{bad:?} should fail");
        assert!(err.contains(named), "{bad:?}: the error names {named}: {err}");
    }
}

#[test]
fn the_production_knobs_reach_the_pods() {
    let digest = format!("sha256:{}", "a".repeat(64));
    let digest_value = format!("--set=image.digest={digest}");
    let chart = chart();
    let (ok, manifests, err) = helm(&[
        "template",
        "knobs",
        &chart,
        API_URL,
        &digest_value,
        "--set=emulator.enabled=true",
        "--set=emulator.image.tag=9.9.9",
        "--set=imagePullSecrets[0].name=registry",
        "--set=priorityClassName=edge-critical",
        "--set=topologySpreadConstraints[0].maxSkew=1",
        "--set=topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
        "--set=topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
        "--set=podLabels.team=edge",
        "--set=podAnnotations.owner=platform",
        "--set=extraArgs={--status-refresh=30m}",
        "--set=watchLabelSelector=sharding.edgeplatform.io/key=a",
        "--set=leaderElection.enabled=false",
        "--set=extraEnv[0].name=RUST_LOG",
        "--set=extraEnv[0].value=debug",
    ]);
    assert!(ok, "{err}");
    let deployments = objects_of_kind(&manifests, "Deployment");
    let pod_of = |name: &str| {
        deployments
            .iter()
            .find(|d| d["metadata"]["name"] == name)
            .map(|d| d["spec"]["template"].clone())
            .unwrap_or_else(|| panic!("Deployment {name}"))
    };
    let operator = pod_of("knobs-edge-operator");
    let container = &operator["spec"]["containers"][0];
    assert_eq!(
        container["image"].as_str(),
        Some(format!("ghcr.io/edge-operator/edge-operator@{digest}").as_str()),
        "a digest wins over the tag"
    );
    assert_eq!(operator["spec"]["imagePullSecrets"][0]["name"], "registry");
    assert_eq!(operator["spec"]["priorityClassName"], "edge-critical");
    assert_eq!(operator["spec"]["topologySpreadConstraints"][0]["maxSkew"], 1);
    assert_eq!(operator["metadata"]["labels"]["team"], "edge");
    assert_eq!(
        operator["metadata"]["labels"]["app.kubernetes.io/instance"], "knobs",
        "the selector labels stay"
    );
    assert_eq!(operator["metadata"]["annotations"]["owner"], "platform");
    let args = container["args"].as_sequence().expect("args");
    assert!(args.iter().any(|a| a == "--status-refresh=30m"), "{args:?}");
    for shard in [
        "--watch-label-selector=sharding.edgeplatform.io/key=a",
        "--lease-name=knobs-edge-operator",
    ] {
        assert!(
            args.iter().any(|a| a == shard),
            "a shard has its own Lease name: {args:?}"
        );
    }
    assert!(
        container["env"]
            .as_sequence()
            .expect("env")
            .iter()
            .any(|e| e["name"] == "RUST_LOG" && e["value"] == "debug")
    );
    let emulator = pod_of("knobs-edge-operator-emulator");
    assert_eq!(
        emulator["spec"]["containers"][0]["image"],
        "ghcr.io/edge-operator/edge-sim:9.9.9"
    );
    assert_eq!(emulator["spec"]["imagePullSecrets"][0]["name"], "registry");

    let (ok, _, err) = helm(&["template", "old", &chart, API_URL, "--kube-version=1.29.9"]);
    assert!(
        !ok && err.contains("kubeVersion"),
        "clusters without v1 ValidatingAdmissionPolicy (older than 1.30) are refused: {err}"
    );
}

#[test]
fn the_notes_say_how_to_check_the_release_and_who_may_use_which_credentials() {
    let chart = chart();
    let (ok, out, err) = helm(&[
        "install",
        "notes",
        &chart,
        "--dry-run=client",
        "--namespace=edge",
        "--set=emulator.enabled=true",
        "--set=credentials.defaultKeyNamespaces={edge}",
        "--set=watchNamespace=edge",
        CRDS_APPLIED_APART,
    ]);
    assert!(ok, "{err}");
    let notes = out.split("NOTES:").nth(1).expect("NOTES");
    for expected in [
        "rollout status deployment/notes-edge-operator",
        "It reconciles the objects of namespace edge.",
        "Objects in edge may use the operator's default key.",
        "The operator reads Secrets of: edge.",
        "get secret notes-edge-operator-emulator-admin",
        "get lease notes-edge-operator",
    ] {
        assert!(notes.contains(expected), "NOTES lack {expected:?}:\n{notes}");
    }
    let (ok, out, err) = helm(&[
        "install",
        "plain",
        &chart,
        "--dry-run=client",
        API_URL,
        CRDS_APPLIED_APART,
    ]);
    assert!(ok, "{err}");
    let notes = out.split("NOTES:").nth(1).expect("NOTES");
    assert!(
        notes.contains("No namespace may use the operator's default key"),
        "{notes}"
    );
    assert!(!notes.contains("emulator"), "{notes}");
}

/// The Secret rules of each rendered Role or ClusterRole, by kind and namespace.
fn secret_grants(manifests: &str) -> Vec<(String, String, Vec<String>)> {
    serde_yaml::Deserializer::from_str(manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .filter(|object| matches!(object["kind"].as_str(), Some("Role" | "ClusterRole")))
        .flat_map(|object| {
            let kind = object["kind"].as_str().unwrap_or_default().to_string();
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or("*").to_string();
            let rules = object["rules"].as_sequence().cloned().unwrap_or_default();
            rules
                .into_iter()
                .filter(|rule| {
                    rule["resources"]
                        .as_sequence()
                        .is_some_and(|r| r.iter().any(|r| r.as_str() == Some("secrets")))
                })
                .map(move |rule| {
                    let verbs = rule["verbs"].as_sequence().cloned().unwrap_or_default();
                    let verbs = verbs.iter().filter_map(|v| v.as_str().map(String::from)).collect();
                    (kind.clone(), namespace.clone(), verbs)
                })
        })
        .collect()
}

#[test]
fn secrets_are_granted_per_namespace_served_and_cluster_wide_only_when_asked() {
    let render = |extra: &[&str]| {
        let chart = chart();
        let mut args = vec!["template", "sec", &chart, API_URL];
        args.extend(extra);
        let (ok, manifests, err) = helm(&args);
        assert!(ok, "{extra:?}: {err}");
        manifests
    };
    assert_eq!(secret_grants(&render(&[])), [], "no Secret access by default");
    let full = ["get", "list", "watch", "patch"].map(String::from).to_vec();
    assert_eq!(
        secret_grants(&render(&["--set=secretAccess.namespaces={team-a,team-b}"])),
        [
            ("Role".to_string(), "team-a".to_string(), full.clone()),
            ("Role".to_string(), "team-b".to_string(), full.clone()),
        ]
    );
    assert_eq!(
        secret_grants(&render(&[
            "--set=watchNamespace=team-a",
            "--set=secretAccess.inUseProtection=false"
        ])),
        [(
            "Role".to_string(),
            "team-a".to_string(),
            ["get", "list", "watch"].map(String::from).to_vec()
        )],
        "the watched namespace, and no patch without the in-use protection"
    );
    let everywhere = render(&["--set=secretAccess.allNamespaces=true"]);
    assert_eq!(
        secret_grants(&everywhere),
        [("ClusterRole".to_string(), "*".to_string(), full)]
    );
    assert!(everywhere.contains("--secret-namespaces=*"));
    let (ok, _, err) = helm(&["template", "sa", &chart(), API_URL, "--set=serviceAccount.create=false"]);
    assert!(!ok && err.contains("serviceAccount.name"), "{err}");
}

/// The rendered objects of `kind`.
pub(crate) fn objects_of_kind(manifests: &str, kind: &str) -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .filter(|object| object["kind"].as_str() == Some(kind))
        .collect()
}

#[test]
fn a_disruption_budget_is_made_only_where_it_lets_a_node_drain() {
    let render = |values: &[&str]| {
        let chart = chart();
        let mut args = vec![
            "template",
            "pdb",
            &chart,
            API_URL,
            "--set=podDisruptionBudget.enabled=true",
        ];
        args.extend(values);
        let (ok, manifests, err) = helm(&args);
        (ok, objects_of_kind(&manifests, "PodDisruptionBudget"), err)
    };
    let (ok, single, err) = render(&[]);
    assert!(
        ok && single.is_empty(),
        "one replica: no budget, it would block drains: {err}"
    );
    let (ok, two, err) = render(&["--set=replicas=2"]);
    assert!(ok, "{err}");
    assert_eq!(two.len(), 1);
    assert_eq!(two[0]["spec"]["minAvailable"], serde_yaml::Value::from(1));
    let (ok, _, err) = render(&["--set=replicas=2", "--set=podDisruptionBudget.minAvailable=2"]);
    assert!(!ok && err.contains("must be below replicas (2)"), "{err}");
    let (ok, _, err) = render(&["--set=replicas=3", "--set-string=podDisruptionBudget.minAvailable=100%"]);
    assert!(!ok && err.contains("100%"), "{err}");
    let (ok, half, err) = render(&["--set=replicas=3", "--set-string=podDisruptionBudget.minAvailable=50%"]);
    assert!(ok, "{err}");
    assert_eq!(half[0]["spec"]["minAvailable"], serde_yaml::Value::from("50%"));
}

#[test]
fn the_chart_renders_the_crds_of_crds_folder_kept_on_uninstall_unless_told() {
    let render = |values: &[&str]| {
        let chart = chart();
        let mut args = vec!["template", "crds", &chart, API_URL];
        args.extend(values);
        let (ok, manifests, err) = helm(&args);
        assert!(ok, "{values:?}: {err}");
        objects_of_kind(&manifests, "CustomResourceDefinition")
    };
    let rendered = render(&[]);
    let crds = edge_operator::controller::kinds::crds();
    assert_eq!(rendered.len(), crds.len(), "every CRD, by default");
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let path = repo_root().join("crds").join(edge_operator::resources::file_name(crd));
        let committed: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&path).expect("crds/")).expect("YAML");
        let chart = rendered
            .iter()
            .find(|c| c["metadata"]["name"].as_str() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name} is not rendered"));
        assert!(
            chart["spec"] == committed["spec"],
            "{name}: the chart's spec differs from crds/"
        );
        assert_eq!(
            chart["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
            "{name}"
        );
        assert_eq!(
            chart["metadata"]["labels"]["app.kubernetes.io/managed-by"], "Helm",
            "{name}"
        );
    }
    let unkept = render(&["--set=crds.keep=false"]);
    assert!(
        unkept
            .iter()
            .all(|c| c["metadata"]["annotations"]["helm.sh/resource-policy"].is_null()),
        "crds.keep=false: an uninstall removes them"
    );
    assert!(render(&[CRDS_APPLIED_APART]).is_empty(), "crds.enabled=false: none");
}
