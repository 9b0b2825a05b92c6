//! The Helm chart on the real control plane: lint, server-side dry run, install, values
//! schema, and the operator working with exactly the RBAC the chart grants.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster, repo_root};
use crate::support::helm::{CRDS_APPLIED_APART, chart, helm};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, eventually, free_port};
use crate::support::sim::{example_fixtures, start};
use edge_operator::crd::access_list_config::AccessListConfig;
use kube::Api;
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
fn objects_of_kind(manifests: &str, kind: &str) -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .filter(|object| object["kind"].as_str() == Some(kind))
        .collect()
}

/// The chart rendered as release `sim` with the emulator and `extra` values.
fn render_with_emulator(extra: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["template", "sim", &chart, "--set=emulator.enabled=true"];
    args.extend(extra);
    let (ok, manifests, err) = helm(&args);
    assert!(ok, "{extra:?}: {err}");
    manifests
}

fn emulator_deployment(manifests: &str) -> serde_yaml::Value {
    objects_of_kind(manifests, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "sim-edge-operator-emulator")
        .expect("the emulator Deployment")
}

fn emulator_secret_token(namespace: &str, name: &str) -> String {
    let (ok, token, err) = cluster().kubectl(
        &["get", "secret", name, "-n", namespace, "-o", "jsonpath={.data.token}"],
        None,
    );
    assert!(ok, "{err}");
    token
}

#[test]
fn the_emulator_admin_api_needs_a_token_the_chart_keeps_and_only_release_pods_get_through() {
    let namespace = TestNamespace::create("chart-sim");

    let manifests = render_with_emulator(&[]);
    let secrets = objects_of_kind(&manifests, "Secret");
    let token = secrets
        .iter()
        .find(|s| s["metadata"]["name"] == "sim-edge-operator-emulator-admin")
        .and_then(|s| s["data"]["token"].as_str())
        .expect("a generated admin token");
    assert!(
        token.len() >= 40,
        "a long random token: {} base64 characters",
        token.len()
    );
    let policies = objects_of_kind(&manifests, "NetworkPolicy");
    let [policy] = policies.as_slice() else {
        panic!("one NetworkPolicy, the emulator's: {policies:?}");
    };
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "edge-sim"
    );
    let ingress = &policy["spec"]["ingress"];
    assert_eq!(ingress.as_sequence().map(Vec::len), Some(1));
    assert_eq!(
        ingress[0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"], "sim",
        "the release's Pods"
    );
    assert_eq!(
        ingress[0]["from"].as_sequence().map(Vec::len),
        Some(1),
        "and no one else"
    );
    let emulator = emulator_deployment(&manifests);
    let container = &emulator["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        args.contains(&"--admin-token-file=/etc/edge-sim-admin/token"),
        "{args:?}"
    );
    assert!(
        container["readinessProbe"]["tcpSocket"].is_mapping(),
        "readiness needs no admin request"
    );
    assert_eq!(
        emulator["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "sim-edge-operator-emulator-admin"
    );

    let mine = render_with_emulator(&[
        "--set=emulator.admin.existingSecret=my-token",
        "--set=emulator.networkPolicy.enabled=false",
    ]);
    assert!(
        !objects_of_kind(&mine, "Secret")
            .iter()
            .any(|s| s["metadata"]["name"] == "sim-edge-operator-emulator-admin"),
        "no generated token beside the user's"
    );
    assert!(objects_of_kind(&mine, "NetworkPolicy").is_empty());
    assert_eq!(
        emulator_deployment(&mine)["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "my-token"
    );

    // On the apiserver: an upgrade keeps the installed token.
    let install = |verb: &str| {
        let chart = chart();
        let (ok, _, err) = helm(&[
            verb,
            "sim",
            &chart,
            "--namespace",
            &namespace.name,
            "--set=emulator.enabled=true",
            CRDS_APPLIED_APART,
        ]);
        assert!(ok, "{verb}: {err}");
    };
    install("install");
    let installed = emulator_secret_token(&namespace.name, "sim-edge-operator-emulator-admin");
    let ca_of = || {
        let (ok, ca, err) = cluster().kubectl(
            &[
                "get",
                "secret",
                "sim-edge-operator-emulator-tls",
                "-n",
                &namespace.name,
                "-o",
                "jsonpath={.data.ca\\.crt}",
            ],
            None,
        );
        assert!(ok && !ca.is_empty(), "{err}");
        ca
    };
    let installed_ca = ca_of();
    install("upgrade");
    assert_eq!(
        emulator_secret_token(&namespace.name, "sim-edge-operator-emulator-admin"),
        installed,
        "the token survives an upgrade"
    );
    assert_eq!(
        ca_of(),
        installed_ca,
        "the emulator's CA, which the operator trusts, survives an upgrade"
    );
    let (ok, _, err) = helm(&["uninstall", "sim", "--namespace", &namespace.name, "--wait=false"]);
    assert!(ok, "{err}");
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
    let crds = edge_operator::crd::all();
    assert_eq!(rendered.len(), crds.len(), "every CRD, by default");
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let path = repo_root().join("crds").join(edge_operator::crd::file_name(crd));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_creates_every_object_and_its_rbac_is_enough_and_no_more() {
    let namespace = TestNamespace::create("chart");
    let release = format!("r{}", &namespace.name[namespace.name.len() - 6..]);
    let secret_access = format!("--set=secretAccess.namespaces={{{}}}", namespace.name);
    let default_key = format!("--set=credentials.defaultKeyNamespaces={{{}}}", namespace.name);
    let (ok, _, err) = helm(&[
        "install",
        &release,
        &chart(),
        "--namespace",
        &namespace.name,
        API_URL,
        "--set=replicas=2",
        "--set=credentials.create=true",
        "--set=credentials.accessKey=demo-access-key",
        "--set=podDisruptionBudget.enabled=true",
        "--set=networkPolicy.enabled=true",
        &secret_access,
        &default_key,
        CRDS_APPLIED_APART,
    ]);
    assert!(ok, "{err}");
    let fullname = format!("{release}-edge-operator");
    for (kind, name, namespaced) in [
        ("deployment", fullname.clone(), true),
        ("serviceaccount", fullname.clone(), true),
        ("secret", format!("{fullname}-credentials"), true),
        ("service", format!("{fullname}-metrics"), true),
        ("poddisruptionbudget", fullname.clone(), true),
        ("networkpolicy", fullname.clone(), true),
        ("role", format!("{fullname}-leader-election"), true),
        ("role", format!("{fullname}-secrets"), true),
        ("rolebinding", format!("{fullname}-secrets"), true),
        ("rolebinding", format!("{fullname}-leader-election"), true),
        ("clusterrole", fullname.clone(), false),
        ("clusterrolebinding", fullname.clone(), false),
        (
            "validatingadmissionpolicy",
            format!("{fullname}-secret-finalizers-only"),
            false,
        ),
        (
            "validatingadmissionpolicybinding",
            format!("{fullname}-secret-finalizers-only"),
            false,
        ),
    ] {
        let mut args = vec!["get", kind, name.as_str()];
        if namespaced {
            args.extend(["-n", namespace.name.as_str()]);
        }
        let (ok, _, err) = cluster().kubectl(&args, None);
        assert!(ok, "{kind}/{name}: {err}");
    }
    let (_, args, _) = cluster().kubectl(
        &[
            "get",
            "deployment",
            &fullname,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
        ],
        None,
    );
    assert!(
        args.contains("--leader-elect"),
        "replicas > 1 turns leader election on: {args}"
    );
    let (_, security, _) = cluster().kubectl(
        &[
            "get",
            "deployment",
            &fullname,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].securityContext}",
        ],
        None,
    );
    assert!(
        security.contains("\"readOnlyRootFilesystem\":true") && security.contains("ALL"),
        "{security}"
    );

    // The operator, authenticated as the chart's ServiceAccount, does its job.
    let service_account = format!("system:serviceaccount:{}:{fullname}", namespace.name);
    let kubeconfig = cluster().kubeconfig_as(&service_account);
    let sim = start(example_fixtures()).await;
    let _operator = Operator::start_with_kubeconfig(
        &namespace.name,
        &sim.base_url(),
        &[
            "--leader-elect",
            "--lease-namespace",
            &namespace.name,
            "--lease-name",
            &fullname,
        ],
        kubeconfig.path(),
    );
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "rbac",
        serde_json::json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "deletionPolicy": "Restore"}),
    ));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    eventually("Ready as the ServiceAccount", Duration::from_secs(45), || async {
        let object = api.get("rbac").await.ok()?;
        object
            .condition("Ready")
            .is_some_and(|c| c.reason == "InSync")
            .then_some(())
    })
    .await;
    let (ok, _, err) = cluster().kubectl(
        &[
            "delete",
            "accesslistconfig",
            "rbac",
            "-n",
            &namespace.name,
            "--timeout=45s",
        ],
        None,
    );
    assert!(ok, "the finalizer is removed with the granted verbs: {err}");

    let as_operator = format!("--as={service_account}");
    let can_i = |verb: &str, resource: &str, scope: &str| cluster().can_i(&service_account, verb, resource, scope);
    let served = namespace.name.as_str();
    let own_lease = format!("leases.coordination.k8s.io/{fullname}");
    for (verb, resource, scope, granted) in [
        ("update", own_lease.as_str(), served, true),
        ("get", own_lease.as_str(), served, true),
        ("create", "leases.coordination.k8s.io", served, false),
        ("update", "leases.coordination.k8s.io/another-release", served, false),
        ("get", "leases.coordination.k8s.io/another-release", served, false),
        ("get", "secrets", served, true),
        ("watch", "secrets", served, true),
        ("patch", "secrets", served, true),
        ("get", "secrets", "default", false),
        ("get", "secrets", "kube-system", false),
        ("list", "secrets", "*", false),
        ("patch", "secrets", "default", false),
        ("delete", "accesslistconfigs.edgeplatform.io", served, false),
        ("update", "secrets", served, false),
        ("create", "deployments.apps", served, false),
        ("delete", "secrets", served, false),
    ] {
        assert_eq!(
            can_i(verb, resource, scope),
            granted,
            "{verb} {resource} in {scope}: granted should be {granted}"
        );
    }
    let (refused, _, err) = cluster().kubectl(
        &[
            "delete",
            "secret",
            &format!("{fullname}-credentials"),
            "-n",
            &namespace.name,
            &as_operator,
        ],
        None,
    );
    assert!(!refused && err.contains("forbidden"), "{err}");

    // RBAC grants patch on Secrets; the admission policy admits only finalizer changes.
    let secret = format!("{fullname}-credentials");
    let patch_secret_with = |patch: &str, extra: &[&str]| {
        let mut args = vec![
            "patch",
            "secret",
            &secret,
            "-n",
            &namespace.name,
            "--type=merge",
            "-p",
            patch,
        ];
        args.extend(extra);
        cluster().kubectl(&args, None)
    };
    let patch_secret = |patch: &str, dry_run: &str| patch_secret_with(patch, &[&as_operator, dry_run]);
    let stolen = r#"{"data":{"accessKey":"c3RvbGVu"}}"#;
    // The policy is served a moment after its creation: wait for it without writing.
    eventually("the policy to refuse the operator", Duration::from_secs(30), || async {
        let (ok, _, _) = patch_secret(stolen, "--dry-run=server");
        (!ok).then_some(())
    })
    .await;
    for patch in [
        stolen,
        r#"{"stringData":{"accessKey":"stolen"}}"#,
        r#"{"metadata":{"labels":{"stolen":"yes"}}}"#,
        r#"{"metadata":{"annotations":{"stolen":"yes"}}}"#,
    ] {
        let (ok, _, err) = patch_secret(patch, "--dry-run=none");
        let refusal = "may change only its own finalizer (edgeplatform.io/credentials-in-use)";
        assert!(!ok && err.contains(refusal), "{patch}: {err}");
    }
    let (ok, _, err) = patch_secret(
        r#"{"metadata":{"finalizers":["edgeplatform.io/credentials-in-use"]}}"#,
        "--dry-run=none",
    );
    assert!(ok, "its own finalizer is admitted: {err}");
    let (ok, _, err) = patch_secret(r#"{"metadata":{"finalizers":null}}"#, "--dry-run=none");
    assert!(ok, "and its removal: {err}");
    let (ok, _, err) = patch_secret(
        r#"{"metadata":{"finalizers":["example.com/another-controller"]}}"#,
        "--dry-run=none",
    );
    assert!(
        !ok && err.contains("its own finalizer"),
        "another finalizer is refused: {err}"
    );
    let admin_patch = |patch: &str| {
        let (ok, _, err) = patch_secret_with(patch, &[]);
        assert!(ok, "{err}");
    };
    admin_patch(r#"{"metadata":{"finalizers":["example.com/another-controller"]}}"#);
    let (ok, _, err) = patch_secret(r#"{"metadata":{"finalizers":null}}"#, "--dry-run=none");
    assert!(
        !ok && err.contains("its own finalizer"),
        "another controller's finalizer stays: {err}"
    );
    admin_patch(r#"{"metadata":{"finalizers":null}}"#);
    let (_, data, _) = cluster().kubectl(
        &[
            "get",
            "secret",
            &secret,
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.data.accessKey}",
        ],
        None,
    );
    assert_eq!(data, "ZGVtby1hY2Nlc3Mta2V5", "the key is unchanged");
    let (_, _, _) = helm(&["uninstall", &release, "--namespace", &namespace.name]);
}

#[test]
fn the_flux_example_installs_the_chart_with_valid_values() {
    let dir = repo_root().join("examples/gitops/flux");
    let text = std::fs::read_to_string(dir.join("flux-system.yaml")).expect("flux-system.yaml");
    let documents: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_yaml::Value::deserialize(d).expect("YAML"))
        .collect();
    let platform = documents
        .iter()
        .find(|d| d["metadata"]["name"] == "edge-platform")
        .expect("the edge-platform Kustomization");
    assert_eq!(platform["spec"]["wait"], true, "health-checks the objects");
    assert_eq!(platform["spec"]["dependsOn"][0]["name"], "edge-operator");
    assert!(platform["spec"]["timeout"].is_string());
    let release: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("operator/helmrelease.yaml")).expect("HelmRelease"))
            .expect("YAML");
    assert_eq!(release["spec"]["chart"]["spec"]["chart"], "./charts/edge-operator");
    let values_file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("a values file");
    std::fs::write(
        values_file.path(),
        serde_yaml::to_string(&release["spec"]["values"]).expect("values"),
    )
    .expect("write");
    let values = values_file.path().display().to_string();
    let (ok, manifests, err) = helm(&["template", "edge-operator", &chart(), "-f", &values]);
    assert!(ok, "the HelmRelease's values fit the chart: {err}");
    assert!(manifests.contains("kind: Deployment"));
    assert_eq!(
        objects_of_kind(&manifests, "CustomResourceDefinition").len(),
        edge_operator::crd::all().len(),
        "the release carries the CRDs"
    );
}

/// Runs `edge-operator check` (the chart's `helm test`) against the test cluster.
fn installation_check(health_url: &str, namespace: &str, ready_within: &str) -> (bool, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_edge-operator"))
        .args([
            "check",
            "--health-url",
            health_url,
            "--namespace",
            namespace,
            "--ready-within",
            ready_within,
        ])
        .env("KUBECONFIG", &cluster().kubeconfig)
        .output()
        .expect("edge-operator check runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installation_check_passes_on_a_ready_operator_and_says_what_is_wrong_otherwise() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("check");
    let addr = format!("127.0.0.1:{}", free_port());
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--metrics-addr", &addr]);
    // The examples exist already: the dry runs must not collide with them.
    for file in [
        "access-list-config.yaml",
        "pull-zone-certificate.yaml",
        "container-app-watch.yaml",
    ] {
        let path = repo_root().join("examples").join(file).display().to_string();
        let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace.name, "-f", &path], None);
        assert!(ok, "{file}: {err}");
    }
    let health_url = format!("http://{addr}");
    let (ok, out, err) = tokio::task::spawn_blocking(move || installation_check(&health_url, &namespace.name, "60s"))
        .await
        .expect("check");
    assert!(ok, "{out}{err}");
    for passed in [
        "the operator is ready",
        "AccessListConfig edge-operator-check-",
        "PullZoneCertificate edge-operator-check-",
        "ContainerAppWatch edge-operator-check-",
        "naming both a configurationId and a listName is refused",
    ] {
        assert!(out.contains(passed), "{passed:?} in:\n{out}");
    }

    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let (ok, _, err) = installation_check(&nowhere, "default", "1s");
    assert!(!ok && err.contains("did not answer ready"), "{err}");
}

/// The operator's container of the rendered `manifests`.
fn operator_container(manifests: &str, release: &str) -> serde_yaml::Value {
    objects_of_kind(manifests, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == format!("{release}-edge-operator"))
        .map(|d| d["spec"]["template"]["spec"]["containers"][0].clone())
        .expect("the operator Deployment")
}

fn args_of(container: &serde_yaml::Value) -> Vec<String> {
    container["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_emulator_keeps_its_state_on_a_claim_only_when_asked() {
    let plain = render_with_emulator(&[]);
    assert!(objects_of_kind(&plain, "PersistentVolumeClaim").is_empty());
    let deployment = emulator_deployment(&plain);
    assert!(
        !args_of(&deployment["spec"]["template"]["spec"]["containers"][0])
            .iter()
            .any(|a| a.starts_with("--state-file"))
    );

    let kept = render_with_emulator(&[
        "--set=emulator.persistence.enabled=true",
        "--set=emulator.persistence.storageClassName=fast",
    ]);
    let claims = objects_of_kind(&kept, "PersistentVolumeClaim");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["metadata"]["name"], "sim-edge-operator-emulator-state");
    assert_eq!(claims[0]["spec"]["storageClassName"], "fast");
    assert_eq!(claims[0]["spec"]["resources"]["requests"]["storage"], "16Mi");
    let deployment = emulator_deployment(&kept);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        deployment["spec"]["strategy"]["type"], "Recreate",
        "one writer of the volume at a time"
    );
    assert_eq!(
        pod["securityContext"]["fsGroup"], 65532,
        "the non-root emulator can write the volume"
    );
    let container = &pod["containers"][0];
    assert!(args_of(container).contains(&"--state-file=/var/lib/edge-sim/state.json".to_string()));
    let mounted = container["volumeMounts"]
        .as_sequence()
        .expect("mounts")
        .iter()
        .any(|m| m["name"] == "state" && m["mountPath"] == "/var/lib/edge-sim");
    assert!(mounted, "{container:?}");
    let (refused, _, err) = helm(&[
        "template",
        "sim",
        &chart(),
        "--set=emulator.enabled=true",
        "--set=emulator.persistence.size=lots",
    ]);
    assert!(!refused && err.contains("size"), "{err}");
}

#[test]
fn the_operator_trusts_the_emulators_ca_or_the_bundle_given_and_takes_the_proxy_given() {
    let render = |extra: &[&str]| {
        let chart = chart();
        let mut args = vec!["template", "tls", &chart, "--namespace", "team"];
        args.extend(extra);
        let (ok, manifests, err) = helm(&args);
        assert!(ok, "{extra:?}: {err}");
        manifests
    };
    let ca_file = "--ca-file=/etc/edge-operator/ca/ca.crt".to_string();

    let emulated = render(&["--set=emulator.enabled=true"]);
    let args = args_of(&operator_container(&emulated, "tls"));
    assert!(
        args.contains(&"--api-url=https://tls-edge-operator-emulator.team.svc:8080".to_string()),
        "{args:?}"
    );
    assert!(args.contains(&ca_file), "{args:?}");
    assert!(!args.iter().any(|a| a == "--allow-http-in-cluster"), "{args:?}");
    let emulator = objects_of_kind(&emulated, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "tls-edge-operator-emulator")
        .expect("the emulator");
    let emulator_args = args_of(&emulator["spec"]["template"]["spec"]["containers"][0]);
    assert!(
        emulator_args.contains(&"--tls-cert=/etc/edge-sim-tls/tls.crt".to_string()),
        "{emulator_args:?}"
    );
    let tls = objects_of_kind(&emulated, "Secret")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "tls-edge-operator-emulator-tls")
        .expect("the emulator's TLS Secret");
    for key in ["ca.crt", "tls.crt", "tls.key"] {
        assert!(tls["data"][key].as_str().is_some_and(|v| !v.is_empty()), "{key}");
    }

    let plain = render(&["--set=emulator.enabled=true", "--set=emulator.tls.enabled=false"]);
    let args = args_of(&operator_container(&plain, "tls"));
    assert!(
        args.iter().any(|a| a == "--allow-http-in-cluster") && !args.contains(&ca_file),
        "{args:?}"
    );
    assert!(args.iter().any(|a| a.starts_with("--api-url=http://$(")), "{args:?}");

    let bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
    let bundled = render(&[
        API_URL,
        &format!("--set=platform.tls.caBundle={bundle}"),
        "--set=platform.tls.caBundleOnly=true",
        "--set=platform.proxy=none",
    ]);
    let container = operator_container(&bundled, "tls");
    let args = args_of(&container);
    for expected in [ca_file.as_str(), "--ca-file-only"] {
        assert!(args.iter().any(|a| a == expected), "{expected}: {args:?}");
    }
    assert_eq!(proxy_env(&container), serde_yaml::Value::from("none"));
    let config_map = objects_of_kind(&bundled, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["name"] == "tls-edge-operator-ca")
        .expect("the CA bundle's ConfigMap");
    assert!(
        config_map["data"]["ca.crt"]
            .as_str()
            .is_some_and(|pem| pem.contains("MIIB"))
    );

    let from_secret = render(&[
        API_URL,
        "--set=platform.tls.existingSecret=corporate-ca",
        "--set=platform.tls.key=bundle.pem",
        "--set=platform.proxy=http://proxy.corp:3128",
    ]);
    let deployment = objects_of_kind(&from_secret, "Deployment")
        .into_iter()
        .find(|d| d["metadata"]["name"] == "tls-edge-operator")
        .expect("the operator");
    let volume = deployment["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .and_then(|volumes| volumes.iter().find(|v| v["name"] == "trusted-ca").cloned())
        .expect("the trusted-ca volume");
    assert_eq!(volume["secret"]["secretName"], "corporate-ca");
    assert_eq!(volume["secret"]["items"][0]["key"], "bundle.pem");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(
        !args_of(container).iter().any(|a| a.contains("proxy")),
        "never on the command line"
    );
    assert_eq!(proxy_env(container), serde_yaml::Value::from("http://proxy.corp:3128"));

    let with_password = render(&[API_URL, "--set=platform.proxySecret.name=corporate-proxy"]);
    let container = operator_container(&with_password, "tls");
    assert_eq!(
        proxy_env(&container)["secretKeyRef"],
        serde_yaml::from_str::<serde_yaml::Value>("{name: corporate-proxy, key: proxy}").expect("YAML")
    );

    let chart = chart();
    for (value, refusal) in [
        ("--set=platform.proxy=proxy.corp", "a proxy that is no URL is refused"),
        (
            "--set=platform.proxy=http://user:secret@proxy.corp:3128",
            "a password goes in platform.proxySecret, never in values",
        ),
    ] {
        let (accepted, _, err) = helm(&["template", "tls", &chart, API_URL, value]);
        assert!(!accepted && err.contains("proxy"), "{refusal}: {err}");
    }
}

/// The value of the operator container's EDGE_PROXY: its `value`, or its `valueFrom`.
fn proxy_env(container: &serde_yaml::Value) -> serde_yaml::Value {
    let env = container["env"].as_sequence().cloned().unwrap_or_default();
    let proxy = env
        .iter()
        .find(|e| e["name"] == "EDGE_PROXY")
        .expect("EDGE_PROXY is set");
    if proxy["value"].is_null() {
        proxy["valueFrom"].clone()
    } else {
        proxy["value"].clone()
    }
}
