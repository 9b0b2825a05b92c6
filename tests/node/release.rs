//! A Helm release of the chart in a namespace of its own, under the `restricted` Pod
//! Security Standard, with the in-cluster emulator; and what the tests read of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use edge_operator::sim::ADMIN_TOKEN_HEADER;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Api;
use kube::api::ListParams;

use crate::support::cluster::{TestNamespace, cluster, repo_root};
use crate::support::helm::{CRDS_APPLIED_APART, chart, helm};

pub(crate) struct Release {
    pub name: String,
    pub namespace: TestNamespace,
    /// From `helm install` to the release's Pods Ready (`--wait`).
    pub ready_after: Duration,
    /// How the in-cluster emulator serves: `https` (the chart's default) or `http`.
    emulator_scheme: &'static str,
    uninstalled: bool,
}

impl Release {
    /// Installs the chart with the `ci/<mode>-values.yaml` file, the example fixtures in
    /// the emulator, the locally loaded images (never pulled), watching only its own
    /// namespace; waits until its Pods are Ready.
    pub(crate) fn install(prefix: &str, mode: &str, extra: &[&str]) -> Self {
        Self::install_chart(&chart(), prefix, mode, extra)
    }

    /// [`Release::install`] of `chart`: a chart directory or a packaged chart.
    pub(crate) fn install_chart(chart: &str, prefix: &str, mode: &str, extra: &[&str]) -> Self {
        assert!(
            std::env::var_os("EDGE_TEST_KUBECONFIG").is_some(),
            "the node suite needs a cluster with a node and the images loaded, in EDGE_TEST_KUBECONFIG \
             (make e2e-kind, or kind create cluster and kind load image-archive)"
        );
        let (namespace, name) = Self::namespace_and_name(prefix);
        let values = repo_root().join(format!("charts/edge-operator/ci/{mode}-values.yaml"));
        let fixtures = repo_root().join("examples/edge-sim-fixtures.yaml");
        let watch = format!("--set=watchNamespace={}", namespace.name);
        let default_key = format!("--set=credentials.defaultKeyNamespaces={{{}}}", namespace.name);
        let fixtures = format!("--set-file=emulator.fixtures={}", fixtures.display());
        let mut args = vec![
            "install",
            &name,
            chart,
            "--namespace",
            &namespace.name,
            "-f",
            values.to_str().expect("UTF-8 path"),
            &watch,
            &default_key,
            &fixtures,
            "--set=image.pullPolicy=Never",
            "--set=emulator.image.pullPolicy=Never",
            CRDS_APPLIED_APART,
            "--wait",
            "--timeout=120s",
        ];
        args.extend(extra);
        let started = Instant::now();
        let (ok, _, err) = helm(&args);
        let ready_after = started.elapsed();
        if !ok {
            panic!(
                "helm install failed: {err}\n{}",
                cluster().why_not_ready(&namespace.name)
            );
        }
        Self::installed(name, namespace, ready_after, "https")
    }

    /// A namespace of its own under the `restricted` Pod Security Standard, and the name
    /// of a release in it.
    pub(crate) fn namespace_and_name(prefix: &str) -> (TestNamespace, String) {
        let namespace = TestNamespace::create(prefix);
        let (ok, _, err) = cluster().kubectl(
            &[
                "label",
                "namespace",
                &namespace.name,
                "pod-security.kubernetes.io/enforce=restricted",
            ],
            None,
        );
        assert!(ok, "{err}");
        let name = format!("r{}", &namespace.name[namespace.name.len() - 6..]);
        (namespace, name)
    }

    /// A release the caller installed (`name` in `namespace`), uninstalled when dropped.
    /// A release installed otherwise, whose emulator serves `emulator_scheme`.
    pub(crate) fn installed(
        name: String,
        namespace: TestNamespace,
        ready_after: Duration,
        emulator_scheme: &'static str,
    ) -> Self {
        Self {
            name,
            namespace,
            ready_after,
            emulator_scheme,
            uninstalled: false,
        }
    }

    pub(crate) fn fullname(&self) -> String {
        format!("{}-edge-operator", self.name)
    }

    pub(crate) fn helm(&self, command: &str, extra: &[&str]) -> (bool, String, String) {
        let chart = chart();
        let mut args = vec![command, &self.name];
        if command == "upgrade" {
            args.push(&chart);
        }
        args.extend(["--namespace", &self.namespace.name]);
        args.extend(extra);
        helm(&args)
    }

    pub(crate) fn uninstall(&mut self) {
        let (ok, _, err) = self.helm("uninstall", &["--wait", "--timeout=60s"]);
        assert!(ok, "{err}");
        self.uninstalled = true;
    }

    pub(crate) fn kubectl(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["-n", &self.namespace.name]);
        let (ok, out, err) = cluster().kubectl(&all, None);
        assert!(ok, "kubectl {args:?}: {err}");
        out
    }

    pub(crate) async fn pods(&self) -> Api<Pod> {
        Api::namespaced(cluster().client().await, &self.namespace.name)
    }

    /// The label selector of the operator's Pods (not the emulator's).
    pub(crate) fn operator_selector(&self) -> String {
        format!(
            "app.kubernetes.io/name=edge-operator,app.kubernetes.io/instance={}",
            self.name
        )
    }

    /// The operator's Pods (not the emulator's).
    pub(crate) async fn operator_pods(&self) -> Vec<Pod> {
        self.pods()
            .await
            .list(&ListParams::default().labels(&self.operator_selector()))
            .await
            .map(|list| list.items)
            .unwrap_or_default()
    }

    /// The holder of the leader Lease.
    pub(crate) async fn leader(&self) -> Option<String> {
        let leases: Api<Lease> = Api::namespaced(cluster().client().await, &self.namespace.name);
        leases.get(&self.fullname()).await.ok()?.spec?.holder_identity
    }

    /// A GET of one of the release's plain-http Services through the apiserver's Service
    /// proxy (works wherever the test runs, without routes to Pod addresses).
    pub(crate) fn service_get(&self, service: &str, port: &str, path: &str) -> String {
        let (ok, out, err) = self.try_service_get("http", service, port, path);
        assert!(ok, "GET {path} of {service}: {err}");
        out
    }

    /// [`Release::service_get`] with `scheme` (`http` or `https`), that may fail:
    /// (success, body, error).
    pub(crate) fn try_service_get(
        &self,
        scheme: &str,
        service: &str,
        port: &str,
        path: &str,
    ) -> (bool, String, String) {
        let url = format!(
            "/api/v1/namespaces/{}/services/{scheme}:{service}:{port}/proxy{path}",
            self.namespace.name
        );
        cluster().kubectl(&["get", "--raw", &url], None)
    }

    /// A GET of the in-cluster emulator's admin API through the apiserver's Service
    /// proxy, with the token of the chart's Secret in the header the proxy forwards.
    pub(crate) async fn emulator_admin_get(&self, path: &str) -> String {
        let client = cluster().client().await;
        let emulator = format!("{}-emulator", self.fullname());
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &self.namespace.name);
        let secret = secrets
            .get(&format!("{emulator}-admin"))
            .await
            .expect("the admin token Secret");
        let token = secret
            .data
            .and_then(|mut data| data.remove("token"))
            .expect("the Secret holds a token");
        let request = http::Request::get(format!(
            "/api/v1/namespaces/{}/services/{}:{emulator}:http/proxy{path}",
            self.namespace.name, self.emulator_scheme
        ))
        .header(ADMIN_TOKEN_HEADER, String::from_utf8(token.0).expect("a text token"))
        .body(Vec::new())
        .expect("a request");
        client.request_text(request).await.expect("the admin API answers")
    }

    /// The requests the emulator journaled, oldest first.
    pub(crate) async fn journal(&self) -> Vec<serde_json::Value> {
        let journal: serde_json::Value =
            serde_json::from_str(&self.emulator_admin_get("/_sim/requests").await).expect("the journal is JSON");
        match journal {
            serde_json::Value::Array(entries) => entries,
            other => panic!("the journal is a list: {other}"),
        }
    }

    /// Requests the emulator journaled with `method` on a path containing `path_part`.
    pub(crate) async fn journal_count(&self, method: &str, path_part: &str) -> usize {
        self.journal()
            .await
            .iter()
            .filter(|entry| entry["method"] == method && entry["path"].as_str().is_some_and(|p| p.contains(path_part)))
            .count()
    }
}

/// What [`Release::sample_rollout`] saw of the operator Pods and the Lease.
#[derive(Debug, Default)]
pub(crate) struct Rollout {
    pub samples: usize,
    /// The most operator Pods running at once.
    pub most_running: usize,
    /// When `old_pod` was last seen running.
    pub last_old_running: Option<Instant>,
    /// When the Lease was first seen held by another than `old_pod`.
    pub first_new_leader: Option<Instant>,
}

impl Release {
    /// Samples the operator Pods and the leader Lease every 50 ms until `stop`.
    pub(crate) fn sample_rollout(&self, old_pod: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Rollout> {
        let selector = self.operator_selector();
        let namespace = self.namespace.name.clone();
        let lease_name = self.fullname();
        tokio::spawn(async move {
            let client = cluster().client().await;
            let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            let leases: Api<Lease> = Api::namespaced(client, &namespace);
            let mut rollout = Rollout::default();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
                    let running: Vec<_> = list.items.iter().filter(|p| is_running(p)).collect();
                    rollout.most_running = rollout.most_running.max(running.len());
                    if running
                        .iter()
                        .any(|p| p.metadata.name.as_deref() == Some(old_pod.as_str()))
                    {
                        rollout.last_old_running = Some(Instant::now());
                    }
                    rollout.samples += 1;
                }
                if rollout.first_new_leader.is_none() {
                    let holder = leases
                        .get_opt(&lease_name)
                        .await
                        .ok()
                        .flatten()
                        .and_then(|l| l.spec?.holder_identity);
                    if holder.is_some_and(|holder| holder != old_pod) {
                        rollout.first_new_leader = Some(Instant::now());
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            rollout
        })
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.report();
        }
        if !self.uninstalled {
            let _ = self.helm("uninstall", &["--wait=false"]);
        }
    }
}

impl Release {
    /// Prints what explains a failed test: the Pods, the Lease, the objects, the Events
    /// and every container's log, current and previous.
    fn report(&self) {
        let namespace = self.namespace.name.as_str();
        let objects = "accesslistconfigs,pullzonecertificates,containerappwatches";
        let logs = |which: &[&'static str]| {
            let every_container = [
                "logs",
                "--all-containers",
                "--prefix",
                "-l",
                "app.kubernetes.io/instance",
            ];
            [&every_container[..], which, &["-n", namespace]].concat()
        };
        for args in [
            vec!["get", "pods,leases", "-o", "wide", "-n", namespace],
            vec!["get", "leases", "-o", "yaml", "-n", namespace],
            vec!["get", objects, "-o", "yaml", "-n", namespace],
            vec!["get", "events", "--sort-by=.lastTimestamp", "-n", namespace],
            logs(&["--timestamps", "--tail=300"]),
            logs(&["--previous", "--tail=100"]),
        ] {
            let (_, out, err) = cluster().kubectl(&args, None);
            eprintln!("--- kubectl {}\n{out}{err}", args.join(" "));
        }
    }
}

/// Whether a Pod's containers are all running (whatever its readiness).
fn is_running(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .is_some_and(|statuses| {
            !statuses.is_empty()
                && statuses
                    .iter()
                    .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        })
}

pub(crate) fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
