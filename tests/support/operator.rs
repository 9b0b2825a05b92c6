//! Running `edge-operator` as a process against the test cluster and an emulator.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::cluster::cluster;
use super::sim::ACCESS_KEY;

/// How long the support waits for what the operator is expected to do.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

const LOG: &str = "operator.log";

/// An operator process, killed when dropped; its key file and log live in a directory
/// of their own, removed with it (the log printed first when the test failed).
pub(crate) struct Operator {
    child: Child,
    files: tempfile::TempDir,
    /// Where its metrics are served, unless the test chose the address.
    metrics_port: Option<u16>,
}

impl Operator {
    /// Starts the operator watching `namespace` with the example access key.
    pub(crate) fn start(namespace: &str, api_url: &str, extra: &[&str]) -> Self {
        Self::start_with_kubeconfig(namespace, api_url, extra, &cluster().kubeconfig)
    }

    /// Starts the operator watching every namespace, with the example access key; give
    /// it `--watch-label-selector` so it leaves other tests' objects alone.
    pub(crate) fn start_across_namespaces(api_url: &str, extra: &[&str]) -> Self {
        Self::spawn(None, api_url, extra, &cluster().kubeconfig)
    }

    /// Starts the operator on the objects `selector` matches in every namespace, the
    /// operator's key allowed in `namespaces` (tenants sharing it), with a Lease of its
    /// own.
    pub(crate) fn start_for_tenants(api_url: &str, selector: &str, namespaces: &[&str]) -> Self {
        Self::start_for_tenants_of(cluster(), api_url, selector, namespaces, &[])
    }

    /// The same on `of`, with `extra` arguments.
    pub(crate) fn start_for_tenants_of(
        of: &super::cluster::Cluster,
        api_url: &str,
        selector: &str,
        namespaces: &[&str],
        extra: &[&str],
    ) -> Self {
        let lease = format!("edge-operator-{}", selector.replace(['=', '.', '/'], "-"));
        let default_key = namespaces.join(",");
        let mut arguments = vec![
            "--watch-label-selector",
            selector,
            "--default-key-namespaces",
            &default_key,
            "--lease-name",
            &lease,
        ];
        arguments.extend_from_slice(extra);
        Self::spawn(None, api_url, &arguments, &of.kubeconfig)
    }

    /// The same, authenticating with another kubeconfig (e.g. impersonating a ServiceAccount).
    pub(crate) fn start_with_kubeconfig(
        namespace: &str,
        api_url: &str,
        extra: &[&str],
        kubeconfig: &std::path::Path,
    ) -> Self {
        Self::spawn(Some(namespace), api_url, extra, kubeconfig)
    }

    fn spawn(namespace: Option<&str>, api_url: &str, extra: &[&str], kubeconfig: &std::path::Path) -> Self {
        let scope = namespace.unwrap_or("all-namespaces");
        let files = tempfile::Builder::new()
            .prefix(&format!("edge-operator-{scope}-"))
            .tempdir()
            .expect("a directory for the operator's files");
        let key_file = files.path().join("accessKey");
        std::fs::write(&key_file, ACCESS_KEY).expect("write the key file");
        let log = std::fs::File::create(files.path().join(LOG)).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_edge-operator"));
        command.arg("run").args(["--api-url", api_url]);
        if let Some(namespace) = namespace {
            command.args(["--namespace", namespace]);
        }
        let metrics_port = (!extra.contains(&"--metrics-addr")).then(free_port);
        if let Some(port) = metrics_port {
            command.args(["--metrics-addr", &format!("127.0.0.1:{port}")]);
        }
        if let Some(namespace) = namespace.filter(|_| !extra.contains(&"--default-key-namespaces")) {
            command.args(["--default-key-namespaces", namespace]);
        }
        let child = command
            .arg("--access-key-file")
            .arg(&key_file)
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,edge_operator=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("edge-operator starts");
        Self {
            child,
            files,
            metrics_port,
        }
    }

    /// The operator's metrics as it exposes them; `None` while it does not answer.
    pub(crate) async fn metrics(&self) -> Option<String> {
        let port = self
            .metrics_port
            .expect("the operator's metrics address is the support's");
        reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .ok()?
            .text()
            .await
            .ok()
    }

    /// A sample of the operator's metrics (0 when the series is absent); `None` while
    /// it does not answer.
    pub(crate) async fn sample(&self, series: &str) -> Option<f64> {
        let text = self.metrics().await?;
        Some(
            text.lines()
                .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or(0.0),
        )
    }

    /// The reconciles of `kind` the operator counted, failed ones included; `None`
    /// while it does not answer.
    pub(crate) async fn reconciles(&self, kind: &str) -> Option<u64> {
        let mut count = 0.0;
        for result in ["success", "error"] {
            let series = format!("edge_operator_reconciles_total{{kind=\"{kind}\",result=\"{result}\"}}");
            count += self.sample(&series).await?;
        }
        Some(count as u64)
    }

    /// Asks the operator to reconcile every object of `resource` in `namespace` now
    /// (`edgeplatform.io/reconcile-requested-at`, which a PullZoneCertificate takes as
    /// a request to complete again), and waits until it has reconciled `kind` `objects`
    /// more times: a "nothing happened" that follows is the operator's decision, not a
    /// look it did not take yet.
    pub(crate) async fn look_again(&self, namespace: &str, resource: &str, kind: &str, objects: u64) {
        let before = eventually("the operator's metrics", WAIT, || self.reconciles(kind)).await;
        let request = format!("edgeplatform.io/reconcile-requested-at=look-{before}");
        let (ok, _, stderr) = cluster().kubectl(
            &["annotate", "--overwrite", "-n", namespace, resource, "--all", &request],
            None,
        );
        assert!(ok, "{stderr}");
        self.await_reconciles(kind, before + objects).await;
    }

    /// Waits until the operator has reconciled `kind` at least `count` times.
    pub(crate) async fn await_reconciles(&self, kind: &str, count: u64) {
        eventually(&format!("{count} reconciles of {kind}"), WAIT, || async {
            (self.reconciles(kind).await? >= count).then_some(())
        })
        .await;
    }

    /// What the operator logged so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.files.path().join(LOG)).unwrap_or_default()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited.
    pub(crate) fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends SIGTERM once and waits (at most `limit`) for the process to exit; returns
    /// how long it took and its exit status, or `None` if it was still running.
    pub(crate) fn terminate(&mut self, limit: Duration) -> Option<(Duration, std::process::ExitStatus)> {
        let started = std::time::Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM sent");
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some((started.elapsed(), status));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let log = self.log();
            // kube_client's own lines repeat the errors the operator reports.
            let lines: Vec<&str> = log.lines().filter(|line| !line.contains(" kube_client::")).collect();
            let tail = lines[lines.len().saturating_sub(80)..].join("\n");
            eprintln!("--- the last lines of operator {}'s log\n{tail}", self.child.id());
        }
    }
}

/// A free port of 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Polls `check` every 200 ms until it returns `Some`, or panics after `timeout`.
pub(crate) async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match within(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out waiting for {what}"),
    }
}

/// Polls `check` every 200 ms until it returns `Some`; `None` after `timeout`.
pub(crate) async fn within<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Objects whose status may carry conditions: every kind, read from its JSON form.
pub(crate) trait HasConditions:
    kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug
{
    fn conditions(&self) -> Vec<edge_operator::resources::Condition> {
        serde_json::to_value(self)
            .ok()
            .and_then(|object| serde_json::from_value(object["status"]["conditions"].clone()).ok())
            .unwrap_or_default()
    }

    /// The condition of `type_`, if the status has one.
    fn condition(&self, type_: &str) -> Option<edge_operator::resources::Condition> {
        self.conditions().into_iter().find(|c| c.type_ == type_)
    }
}

impl<K> HasConditions for K where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug
{
}

/// Waits until the object's condition `type_` has `reason`, and `status` when given
/// ("True"/"False"); returns the object.
pub(crate) async fn wait_for_condition<K: HasConditions>(
    api: &kube::Api<K>,
    name: &str,
    type_: &str,
    status: Option<&str>,
    reason: &str,
    timeout: Duration,
) -> K {
    let found = within(timeout, || async {
        let object = api.get_opt(name).await.ok().flatten()?;
        let condition = object.condition(type_)?;
        let status_matches = status.is_none_or(|s| format!("{:?}", condition.status) == s);
        (status_matches && condition.reason == reason).then_some(object)
    })
    .await;
    match found {
        Some(object) => object,
        None => {
            let last_seen = api.get_opt(name).await.ok().flatten().map(|o| o.conditions());
            let events = events_about(api, name).await;
            panic!(
                "timed out waiting for {name} {type_}={status:?} {reason}; its conditions: {last_seen:#?}; its Events: {events:#?}"
            )
        }
    }
}

/// The reason and note of each Event about the object `name` of `api`'s namespace.
async fn events_about<K: HasConditions>(api: &kube::Api<K>, name: &str) -> Vec<String> {
    let namespace = api.namespace().unwrap_or("default").to_owned();
    let events: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(api.clone().into_client(), &namespace);
    let about = kube::api::ListParams::default().fields(&format!("regarding.name={name}"));
    match events.list(&about).await {
        Ok(list) => list
            .items
            .into_iter()
            .map(|e| format!("{}: {}", e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect(),
        Err(error) => vec![format!("the Events could not be listed: {error}")],
    }
}

/// The notes of the Events of `namespace` with `reason`.
pub(crate) async fn events_of(namespace: &str, reason: &str) -> Vec<String> {
    let api: kube::Api<k8s_openapi::api::events::v1::Event> =
        kube::Api::namespaced(cluster().client().await, namespace);
    api.list(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some(reason))
                .filter_map(|e| e.note)
                .collect()
        })
        .unwrap_or_default()
}
