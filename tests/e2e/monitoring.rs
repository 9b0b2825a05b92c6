//! The chart's monitoring: its alerts checked and unit-tested by promtool, and every
//! metric its alerts and dashboard query declared by a running operator.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::support::cluster::{TestNamespace, cluster, repo_root, test_tool};
use crate::support::helm::{chart, helm};
use crate::support::manifest::Manifest;
use crate::support::operator::{Operator, free_port};
use crate::support::sim::{example_fixtures, start};

/// An AccessListConfig whose Secret does not exist: a problem the metrics show.
fn no_key(namespace: &str) -> Manifest {
    Manifest::access_list(
        namespace,
        "no-key",
        serde_json::json!({
            "shieldZoneId": 1001,
            "configurationId": 9102,
            "enabled": true,
            "accessKeySecretRef": {"name": "missing", "key": "accessKey"},
        }),
    )
}

/// Where the alerts' unit tests expect their runbooks.
const RUNBOOKS: &str = "https://runbooks.example.net/troubleshooting.md";

/// The chart rendered for release `alerts` in namespace `monitoring`, in the monitoring
/// mode (`ci/monitoring-values.yaml`: the alerts and the dashboard), with `more` values.
fn monitoring_manifests(more: &[&str]) -> Vec<serde_yaml::Value> {
    let chart = chart();
    let values = repo_root().join("charts/edge-operator/ci/monitoring-values.yaml");
    let values = values.display().to_string();
    let mut args = vec![
        "template",
        "alerts",
        chart.as_str(),
        "--namespace=monitoring",
        "-f",
        values.as_str(),
    ];
    args.extend_from_slice(more);
    let (ok, manifests, err) = helm(&args);
    assert!(ok, "{err}");
    serde_yaml::Deserializer::from_str(&manifests)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .collect()
}

fn of_kind<'a>(manifests: &'a [serde_yaml::Value], kind: &str) -> &'a serde_yaml::Value {
    manifests
        .iter()
        .find(|object| object["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

fn promtool(args: &[&str], dir: &std::path::Path) -> (bool, String) {
    let output = std::process::Command::new(test_tool("promtool"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool runs (hack/k8s/build.sh --tools builds it)");
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[test]
fn the_alerts_pass_promtool_and_fire_as_their_unit_tests_say() {
    let runbooks = format!("--set=monitoring.prometheusRule.runbookUrl={RUNBOOKS}");
    let manifests = monitoring_manifests(&[&runbooks]);
    let rule = of_kind(&manifests, "PrometheusRule");
    let temporary = tempfile::tempdir().expect("a directory for promtool");
    let dir = temporary.path();
    let mut groups = serde_yaml::Mapping::new();
    groups.insert("groups".into(), rule["spec"]["groups"].clone());
    std::fs::write(dir.join("rules.yaml"), serde_yaml::to_string(&groups).expect("rules")).expect("rules.yaml");
    std::fs::copy(
        repo_root().join("tests/monitoring/alerts-test.yaml"),
        dir.join("alerts-test.yaml"),
    )
    .expect("the unit tests of the alerts");

    let (ok, out) = promtool(&["check", "rules", "rules.yaml"], dir);
    assert!(ok && out.contains("6 rules found"), "{out}");
    let (ok, out) = promtool(&["test", "rules", "alerts-test.yaml"], dir);
    assert!(ok, "{out}");
}

/// A Markdown heading's anchor as GitHub makes it.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_alert_links_its_runbook_in_the_troubleshooting_page_of_this_version() {
    let manifests = monitoring_manifests(&[]);
    let rule = of_kind(&manifests, "PrometheusRule");
    let page = std::fs::read_to_string(repo_root().join("docs/troubleshooting.md")).expect("troubleshooting page");
    let anchors: BTreeSet<String> = page
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .map(anchor_of)
        .collect();
    let version = env!("CARGO_PKG_VERSION");
    let base = format!("https://github.com/edge-operator/edge-operator/blob/v{version}/docs/troubleshooting.md#");
    let rules = rule["spec"]["groups"][0]["rules"].as_sequence().expect("rules");
    for alert in rules {
        let name = alert["alert"].as_str().expect("an alert");
        let url = alert["annotations"]["runbook_url"].as_str().unwrap_or_default();
        let anchor = url
            .strip_prefix(&base)
            .unwrap_or_else(|| panic!("{name}: {url} is not under {base}"));
        assert!(
            anchors.contains(anchor),
            "{name}: no `### {name}` in docs/troubleshooting.md ({anchor})"
        );
    }
    assert!(rules.len() >= 6, "{rules:?}");
}

/// Names of the metrics a PromQL expression reads: those of the operator and the
/// standard process metrics.
fn metric_names(expression: &str) -> BTreeSet<String> {
    expression
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|token| token.starts_with("edge_operator_") || token.starts_with("process_"))
        .map(str::to_string)
        .collect()
}

/// The series names an OpenMetrics exposition declares, from its `# TYPE` lines.
fn declared_series(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|line| line.split_once(' '))
        .flat_map(|(name, kind)| {
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_count", "_sum"],
                _ => &[""],
            };
            suffixes.iter().map(move |suffix| format!("{name}{suffix}"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_and_the_alerts_query_only_metrics_the_operator_exposes() {
    let manifests = monitoring_manifests(&[]);
    let rule = of_kind(&manifests, "PrometheusRule");
    let dashboard: serde_json::Value = serde_json::from_str(
        of_kind(&manifests, "ConfigMap")["data"]["edge-operator.json"]
            .as_str()
            .expect("the dashboard JSON"),
    )
    .expect("the dashboard is JSON");
    let mut queried = BTreeSet::new();
    for rule in rule["spec"]["groups"][0]["rules"].as_sequence().expect("rules") {
        queried.extend(metric_names(rule["expr"].as_str().expect("expr")));
    }
    let panels = dashboard["panels"].as_array().expect("panels");
    for panel in panels {
        for target in panel["targets"].as_array().expect("targets") {
            queried.extend(metric_names(target["expr"].as_str().expect("expr")));
        }
    }
    assert!(queried.len() >= 10, "{queried:?}");

    // An operator with a quota, an object that converges, one whose Secret is missing
    // (a failing reconcile) and a ContainerAppWatch (polls): every family has samples.
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("dashboard");
    let addr = format!("127.0.0.1:{}", free_port());
    let _operator = Operator::start(
        &namespace.name,
        &sim.base_url(),
        &["--metrics-addr", &addr, "--platform-rate", "10"],
    );
    let examples = repo_root().join("examples");
    for file in ["access-list-config.yaml", "container-app-watch.yaml"] {
        let path = examples.join(file).display().to_string();
        let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace.name, "-f", &path], None);
        assert!(ok, "{file}: {err}");
    }
    cluster().apply(no_key(&namespace.name));

    let url = format!("http://{addr}/metrics");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let scraped = match reqwest::get(&url).await {
            Ok(response) => {
                let media_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                assert!(media_type.starts_with("application/openmetrics-text"), "{media_type}");
                response.text().await.ok()
            }
            Err(_) => None,
        };
        let declared = scraped.as_deref().map(declared_series).unwrap_or_default();
        let missing: Vec<&String> = queried.difference(&declared).collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "queried but not exposed after 90 s: {missing:?}\nexposed: {declared:?}"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// A kube-state-metrics process, killed when dropped.
struct KubeStateMetrics(std::process::Child);

impl Drop for KubeStateMetrics {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The samples of `metric` whose labels include every one of `labels`.
fn samples(text: &str, metric: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(metric)?.strip_prefix('{')?;
            let (set, value) = rest.split_once("} ")?;
            labels
                .iter()
                .all(|(name, value)| set.contains(&format!("{name}=\"{value}\"")))
                .then(|| value.trim().parse().ok())?
        })
        .collect()
}

/// Per-object series the way Flux recommends: the operator counts its objects by
/// condition, and kube-state-metrics (built from its Go module), run with the chart's
/// custom-resource-state configuration under the chart's ClusterRole, gives each
/// object's conditions from its status.
#[tokio::test]
async fn kube_state_metrics_with_the_shipped_configuration_gives_each_objects_conditions() {
    let namespace = TestNamespace::create("ksm");
    let ns = namespace.name.as_str();
    let account = "kube-state-metrics";
    let account_value = format!("--set=kubeStateMetrics.serviceAccount.name={account}");
    let namespace_value = format!("--set=kubeStateMetrics.serviceAccount.namespace={ns}");
    let release = format!("ksm-{ns}");
    let (ok, rendered, err) = helm(&[
        "template",
        &release,
        &chart(),
        "--namespace",
        ns,
        "--set=platform.apiUrl=https://api.example.net",
        "--set=kubeStateMetrics.customResourceState.enabled=true",
        &account_value,
        &namespace_value,
        "--show-only=templates/kube-state-metrics.yaml",
    ]);
    assert!(ok, "{err}");
    let manifests: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&rendered)
        .filter_map(|document| serde_yaml::Value::deserialize(document).ok())
        .collect();
    let config = of_kind(&manifests, "ConfigMap")["data"]["config.yaml"]
        .as_str()
        .expect("config.yaml")
        .to_string();
    let config_file = tempfile::NamedTempFile::new().expect("a config file");
    std::fs::write(config_file.path(), &config).expect("write the configuration");
    let rbac: String = manifests
        .iter()
        .filter(|object| object["kind"] != "ConfigMap")
        .map(|object| format!("---\n{}", serde_yaml::to_string(object).expect("yaml")))
        .collect();
    let service_account =
        format!("---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {account}, namespace: {ns}}}\n");
    cluster().apply(format!("{rbac}{service_account}"));

    let sim = start(example_fixtures()).await;
    let operator_metrics = format!("127.0.0.1:{}", free_port());
    let _operator = Operator::start(ns, &sim.base_url(), &["--metrics-addr", &operator_metrics]);
    let example = repo_root()
        .join("examples/access-list-config.yaml")
        .display()
        .to_string();
    let (ok, _, err) = cluster().kubectl(&["apply", "-n", ns, "-f", &example], None);
    assert!(ok, "{err}");
    cluster().apply(no_key(ns));
    let (_, name, _) = cluster().kubectl(
        &["get", "-f", &example, "-n", ns, "-o", "jsonpath={.metadata.name}"],
        None,
    );

    let as_account = cluster().kubeconfig_as(&format!("system:serviceaccount:{ns}:{account}"));
    let (port, telemetry) = (free_port(), free_port());
    let ksm_log = tempfile::NamedTempFile::new().expect("a log file");
    let _ksm = KubeStateMetrics(
        std::process::Command::new(test_tool("kube-state-metrics"))
            .arg(format!("--kubeconfig={}", as_account.path().display()))
            .arg("--custom-resource-state-only")
            .arg(format!(
                "--custom-resource-state-config-file={}",
                config_file.path().display()
            ))
            .args(["--host=127.0.0.1", "--telemetry-host=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--telemetry-port={telemetry}"))
            .arg(format!("--namespaces={ns}"))
            .stdout(std::process::Stdio::null())
            .stderr(ksm_log.reopen().expect("the log file"))
            .spawn()
            .expect("kube-state-metrics runs (hack/k8s/build.sh --tools builds it)"),
    );

    let kind = ("customresource_kind", "AccessListConfig");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let ksm = match reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await {
            Ok(response) => response.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let ready = samples(
            &ksm,
            "edgeplatform_condition",
            &[
                kind,
                ("namespace", ns),
                ("name", &name),
                ("condition", "Ready"),
                ("reason", "InSync"),
            ],
        );
        let stalled = samples(
            &ksm,
            "edgeplatform_condition",
            &[
                kind,
                ("name", "no-key"),
                ("condition", "Stalled"),
                ("reason", "CredentialsUnavailable"),
            ],
        );
        let not_ready = samples(
            &ksm,
            "edgeplatform_condition",
            &[kind, ("name", "no-key"), ("condition", "Ready")],
        );
        if ready == [1.0] && stalled == [1.0] && not_ready == [0.0] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "kube-state-metrics after 90 s: Ready {ready:?}, Stalled {stalled:?}, no-key Ready {not_ready:?}\n{ksm}\n{}",
            std::fs::read_to_string(ksm_log.path()).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }

    // The operator itself counts the objects and names none of them.
    let own = reqwest::get(format!("http://{operator_metrics}/metrics"))
        .await
        .expect("the operator's metrics")
        .text()
        .await
        .expect("text");
    let counted = |condition: &str, status: &str, reason: &str| {
        let labels = [
            ("kind", "AccessListConfig"),
            ("condition", condition),
            ("status", status),
            ("reason", reason),
        ];
        samples(&own, "edge_operator_objects", &labels)
    };
    assert_eq!(counted("Ready", "True", "InSync"), [1.0], "{own}");
    assert_eq!(counted("Stalled", "True", "CredentialsUnavailable"), [1.0], "{own}");
    assert!(!own.contains("edge_operator_condition"), "{own}");
    let (ok, _, err) = cluster().kubectl(&["delete", "-f", "-"], Some(&rbac));
    assert!(ok, "{err}");
}
