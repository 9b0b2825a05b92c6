//! The chart's monitoring: its alerts checked and unit-tested by promtool, and every
//! metric its alerts and dashboard query declared by a running operator.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::support::cluster::{TestNamespace, cluster, k8s_bin_dir, repo_root};
use crate::support::helm::{chart, helm};
use crate::support::operator::{Operator, free_port};
use crate::support::sim::{example_fixtures, start};

/// The chart rendered for release `alerts` in namespace `monitoring`, in the monitoring
/// mode (`ci/monitoring-values.yaml`: the alerts and the dashboard).
fn monitoring_manifests() -> Vec<serde_yaml::Value> {
    let chart = chart();
    let values = repo_root().join("charts/edge-operator/ci/monitoring-values.yaml");
    let (ok, manifests, err) = helm(&[
        "template",
        "alerts",
        &chart,
        "--namespace=monitoring",
        "-f",
        &values.display().to_string(),
    ]);
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
    let output = std::process::Command::new(k8s_bin_dir().join("promtool"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool runs (hack/k8s/build.sh builds it)");
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
    let manifests = monitoring_manifests();
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
    assert!(ok && out.contains("5 rules found"), "{out}");
    let (ok, out) = promtool(&["test", "rules", "alerts-test.yaml"], dir);
    assert!(ok, "{out}");
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
    let manifests = monitoring_manifests();
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
    let no_key = "apiVersion: edgeplatform.io/v1alpha1\nkind: AccessListConfig\nmetadata: {name: no-key}\nspec: {shieldZoneId: 1001, configurationId: 9102, enabled: true, accessKeySecretRef: {name: missing, key: accessKey}}\n";
    let examples = repo_root().join("examples");
    for file in ["access-list-config.yaml", "container-app-watch.yaml"] {
        let path = examples.join(file).display().to_string();
        let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace.name, "-f", &path], None);
        assert!(ok, "{file}: {err}");
    }
    let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace.name, "-f", "-"], Some(no_key));
    assert!(ok, "{err}");

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
