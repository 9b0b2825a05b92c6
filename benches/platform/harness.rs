//! What the operator scenarios share: the operator as a process, namespaces, readiness
//! by watch, status writes and the operator's requests from the apiserver's audit log.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use edge_operator::api::USER_AGENT;
use edge_operator::sim::document::PullZone;
use edge_operator::sim::{Sim, SimDocument};
use serde_json::json;

use crate::report::Report;

pub(crate) const ACCESS_KEY: &str = "bench-access-key";
/// The logging API's limit per Pull Zone.
const LOGGING_LIMIT_PER_10S: usize = 30;

/// Emulator fixtures: one Pull Zone with logging enabled, and the apps `app_ids`.
pub(crate) fn logging_pull_zone(pull_zone_id: i64, app_ids: impl IntoIterator<Item = String>) -> SimDocument {
    SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        pull_zones: vec![PullZone {
            id: pull_zone_id,
            logging_enabled: true,
            suspended: false,
            hostnames: Vec::new(),
        }],
        apps: app_ids
            .into_iter()
            .map(|id| json!({"id": id, "name": id, "status": "Active"}))
            .collect(),
        ..SimDocument::default()
    }
}

/// The row of the most logging requests the emulator answered in any 10 s, against
/// the platform's limit.
pub(crate) fn check_logging_quota(report: &mut Report, suite: &'static str, label: &str, sim: &Sim) {
    let busiest = busiest_10s_of_logging(sim);
    report.check(
        suite,
        &format!("{label}: most logging requests in 10 s"),
        busiest.to_string(),
        &format!("<= {LOGGING_LIMIT_PER_10S}"),
        busiest <= LOGGING_LIMIT_PER_10S,
    );
}

fn busiest_10s_of_logging(sim: &Sim) -> usize {
    let mut times: Vec<i64> = sim
        .journal()
        .iter()
        .filter(|e| e.path.starts_with("/v2/pullzones/"))
        .map(|e| e.time_ms)
        .collect();
    times.sort_unstable();
    let mut start = 0;
    (0..times.len())
        .map(|end| {
            while times[end] - times[start] >= 10_000 {
                start += 1;
            }
            end + 1 - start
        })
        .max()
        .unwrap_or(0)
}

/// Where the scenarios run: the cluster, the operator binary (built with the benchmark,
/// in the same profile) and the apiserver's audit log.
pub(crate) struct Cluster {
    pub client: Client,
    pub operator_bin: PathBuf,
    /// A command the operator runs under (EDGE_BENCH_OPERATOR_WRAPPER, split on spaces),
    /// which must exec it so that its pid stays the operator's: `env LD_PRELOAD=…` takes
    /// a heap profile (docs/benchmark.md).
    operator_wrapper: Vec<String>,
    pub audit_log: PathBuf,
    /// etcd's client URL (EDGE_BENCH_ETCD), compacted and defragmented before each
    /// timed measurement.
    etcd: String,
    /// Distinguishes this run's namespaces and files.
    pub run_id: String,
}

impl Cluster {
    pub(crate) async fn from_env() -> anyhow::Result<Self> {
        let audit_log = std::env::var_os("EDGE_BENCH_AUDIT_LOG")
            .context("EDGE_BENCH_AUDIT_LOG (the apiserver's audit log) is not set; run hack/bench/run.sh")?;
        Ok(Self {
            client: Client::try_default().await.context("no cluster in KUBECONFIG")?,
            operator_bin: env!("CARGO_BIN_EXE_edge-operator").into(),
            operator_wrapper: std::env::var("EDGE_BENCH_OPERATOR_WRAPPER")
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            audit_log: audit_log.into(),
            etcd: std::env::var("EDGE_BENCH_ETCD")
                .context("EDGE_BENCH_ETCD (etcd's client URL) is not set; run hack/bench/run.sh")?,
            run_id: format!("{:x}", std::process::id()),
        })
    }

    /// Creates a namespace of this run and answers the API of `K` in it.
    pub(crate) async fn namespace<K>(&self, purpose: &str) -> anyhow::Result<(String, Api<K>)>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        let name = format!("bench-{purpose}-{}", self.run_id);
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(name.clone());
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        Ok((name.clone(), Api::namespaced(self.client.clone(), &name)))
    }

    /// Compacts etcd to its current revision and defragments it, so that each timed
    /// measurement starts from the same store, whatever the measurements before it
    /// wrote and deleted (the apiserver's own compaction, every 5 minutes, would land
    /// inside some measurements and not others). Uses etcd's JSON gateway.
    pub(crate) async fn settle_etcd(&self) -> anyhow::Result<()> {
        let http = reqwest::Client::new();
        let call =
            |path: &str, body: serde_json::Value| http.post(format!("{}/v3/{path}", self.etcd)).json(&body).send();
        let range: serde_json::Value = call("kv/range", json!({ "key": "AA==" }))
            .await
            .context("reading etcd's revision")?
            .error_for_status()?
            .json()
            .await?;
        let revision = range["header"]["revision"]
            .as_str()
            .context("etcd answered no revision")?
            .to_string();
        let compaction = call("kv/compaction", json!({ "revision": revision, "physical": true }))
            .await
            .context("compacting etcd")?;
        // Already compacted to this revision (nothing was written since): code 11.
        if !compaction.status().is_success() && !compaction.text().await?.contains("compacted") {
            bail!("etcd refused the compaction to revision {revision}");
        }
        call("maintenance/defragment", json!({}))
            .await
            .context("defragmenting etcd")?
            .error_for_status()?;
        Ok(())
    }

    /// Deletes a namespace of this run and waits until it is gone, its objects with it,
    /// so that the next measurement finds the apiserver as the previous one did.
    pub(crate) async fn delete_namespace(&self, name: &str, within: Duration) -> anyhow::Result<()> {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        let Some(namespace) = namespaces.get_opt(name).await? else {
            return Ok(());
        };
        let uid = namespace.uid().unwrap_or_default();
        let gone = await_condition(namespaces.clone(), name, conditions::is_deleted(&uid));
        namespaces
            .delete(name, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting namespace {name}"))?;
        tokio::time::timeout(within, gone)
            .await
            .with_context(|| format!("namespace {name} was not gone within {within:?}"))??;
        Ok(())
    }

    /// Deletes the AccessListClaims of the platform at `platform` (those of a round's
    /// objects, whose namespace is gone), so that every round starts without them.
    pub(crate) async fn delete_claims(&self, platform: &str) -> anyhow::Result<()> {
        use edge_operator::controller::kinds::access_list::claim_resource::{
            AccessListClaim, PLATFORM_LABEL, platform_tag,
        };
        let claims = Api::<AccessListClaim>::all(self.client.clone());
        let of_platform =
            kube::api::ListParams::default().labels(&format!("{PLATFORM_LABEL}={}", platform_tag(platform)));
        claims
            .delete_collection(&DeleteParams::default(), &of_platform)
            .await
            .with_context(|| format!("deleting the claims of {platform}"))?;
        Ok(())
    }

    /// Status writes to objects of `namespace` the apiserver completed so far.
    pub(crate) fn status_writes(&self, namespace: &str) -> anyhow::Result<usize> {
        Ok(self.status_write_times(namespace)?.values().map(Vec::len).sum())
    }

    /// Completed requests of the audit log whose line contains `marker`.
    fn completed_requests(&self, marker: &str) -> anyhow::Result<Vec<serde_json::Value>> {
        let log = std::fs::read_to_string(&self.audit_log)
            .with_context(|| format!("reading the audit log {}", self.audit_log.display()))?;
        Ok(log
            .lines()
            .filter(|line| line.contains(marker))
            // The apiserver may be writing the last line as it is read.
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|event| event["stage"] == "ResponseComplete")
            .collect())
    }

    /// The status writes to objects of `namespace` the apiserver completed so far.
    fn status_write_requests(&self, namespace: &str) -> anyhow::Result<Vec<serde_json::Value>> {
        let mut requests = self.completed_requests("\"subresource\":\"status\"")?;
        requests.retain(|event| {
            matches!(event["verb"].as_str(), Some("patch" | "update")) && event["objectRef"]["namespace"] == namespace
        });
        Ok(requests)
    }

    /// Status writes to objects of `namespace` that the apiserver refused as stale (a
    /// fenced write whose object had changed since it was read): they changed nothing.
    pub(crate) fn refused_status_writes(&self, namespace: &str) -> anyhow::Result<usize> {
        let requests = self.status_write_requests(namespace)?;
        Ok(requests
            .iter()
            .filter(|event| matches!(event["responseStatus"]["code"].as_u64(), Some(409 | 422)))
            .count())
    }

    /// When the apiserver completed each status write to an object of `namespace`, by
    /// object name, in order.
    pub(crate) fn status_write_times(
        &self,
        namespace: &str,
    ) -> anyhow::Result<std::collections::HashMap<String, Vec<chrono::DateTime<chrono::Utc>>>> {
        let mut writes: std::collections::HashMap<String, Vec<chrono::DateTime<chrono::Utc>>> = Default::default();
        for event in self.status_write_requests(namespace)? {
            let object = &event["objectRef"];
            let (Some(name), Some(at)) = (object["name"].as_str(), event["stageTimestamp"].as_str()) else {
                continue;
            };
            let at = at.parse().with_context(|| format!("audit time {at}"))?;
            writes.entry(name.to_string()).or_default().push(at);
        }
        writes.values_mut().for_each(|times| times.sort_unstable());
        Ok(writes)
    }

    /// The operator's completed requests to the apiserver, across the run.
    fn operator_completed_requests(&self) -> anyhow::Result<Vec<serde_json::Value>> {
        let mut requests = self.completed_requests(USER_AGENT)?;
        requests.retain(|event| event["userAgent"] == USER_AGENT);
        Ok(requests)
    }

    /// The request URIs of the operator's requests of `verb` (`list`, `watch`) on
    /// `resource` (a plural name), across the run.
    pub(crate) fn operator_request_uris(&self, verb: &str, resource: &str) -> anyhow::Result<Vec<String>> {
        Ok(self
            .operator_completed_requests()?
            .iter()
            .filter(|event| event["verb"] == verb && event["objectRef"]["resource"] == resource)
            .filter_map(|event| event["requestURI"].as_str().map(str::to_string))
            .collect())
    }

    /// The operator's requests to the apiserver received within `[from, to)`, as
    /// `verb resource` (watches included: a re-established watch is a request).
    pub(crate) fn operator_requests(
        &self,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<Vec<String>> {
        let mut requests = Vec::new();
        for event in self.operator_completed_requests()? {
            let Some(received) = event["requestReceivedTimestamp"].as_str() else {
                continue;
            };
            let received: chrono::DateTime<chrono::Utc> =
                received.parse().with_context(|| format!("audit time {received}"))?;
            if received >= from && received < to {
                let object = &event["objectRef"];
                let resource = match object["subresource"].as_str() {
                    Some(sub) => format!("{}/{sub}", object["resource"].as_str().unwrap_or("?")),
                    None => object["resource"].as_str().unwrap_or("?").to_string(),
                };
                requests.push(format!("{} {resource}", event["verb"].as_str().unwrap_or("?")));
            }
        }
        Ok(requests)
    }

    /// Starts the operator on `namespace` against the emulator at `api_url`, its
    /// metrics on a free port of 127.0.0.1.
    pub(crate) fn start_operator(
        &self,
        api_url: &str,
        namespace: &str,
        extra: &[&str],
    ) -> anyhow::Result<OperatorProcess> {
        self.spawn_operator(
            api_url,
            namespace,
            &["--namespace", namespace, "--default-key-namespaces", namespace],
            extra,
        )
    }

    /// Starts the operator on the objects labelled `label` (`key=value`) of every
    /// namespace in `namespaces`, with a Lease of its own.
    pub(crate) fn start_operator_across(
        &self,
        api_url: &str,
        label: &str,
        namespaces: &[&str],
        extra: &[&str],
    ) -> anyhow::Result<OperatorProcess> {
        let name = label.replace(['=', '.', '/'], "-");
        let lease = format!("edge-bench-{name}");
        let default_key = namespaces.join(",");
        let scope = [
            "--watch-label-selector",
            label,
            "--lease-name",
            &lease,
            "--default-key-namespaces",
            &default_key,
        ];
        self.spawn_operator(api_url, &name, &scope, extra)
    }

    /// A namespace for each of two tenants (`purposes`), and one operator serving both
    /// (with `extra`): it reconciles the objects carrying [`Tenants::labels`], may use
    /// its own key in both namespaces and reads the Secrets of both.
    pub(crate) async fn tenants<A, B>(
        &self,
        api_url: &str,
        purposes: [&str; 2],
        extra: &[&str],
    ) -> anyhow::Result<Tenants<A, B>>
    where
        A: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
        B: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        let (first, first_api) = self.namespace::<A>(purposes[0]).await?;
        let (second, second_api) = self.namespace::<B>(purposes[1]).await?;
        let labels = std::collections::BTreeMap::from([(TENANTS_LABEL.to_string(), first.clone())]);
        let secrets = format!("{first},{second}");
        let extra = [&["--secret-namespaces", secrets.as_str()], extra].concat();
        let selector = format!("{TENANTS_LABEL}={first}");
        let operator = self.start_operator_across(api_url, &selector, &[&first, &second], &extra)?;
        Ok(Tenants {
            first: (first, first_api),
            second: (second, second_api),
            labels,
            operator,
        })
    }

    fn spawn_operator(
        &self,
        api_url: &str,
        name: &str,
        scope: &[&str],
        extra: &[&str],
    ) -> anyhow::Result<OperatorProcess> {
        let key_file = std::env::temp_dir().join(format!("edge-bench-key-{name}"));
        std::fs::write(&key_file, ACCESS_KEY).context("writing the access key file")?;
        let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = match self.operator_wrapper.split_first() {
            Some((wrapper, wrapper_args)) => {
                let mut command = Command::new(wrapper);
                command.args(wrapper_args).arg(&self.operator_bin);
                command
            }
            None => Command::new(&self.operator_bin),
        };
        let child = command
            .args(["run", "--api-url", api_url])
            .args(scope)
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .arg("--access-key-file")
            .arg(&key_file)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", self.operator_bin.display()))?;
        Ok(OperatorProcess {
            child,
            key_file,
            metrics_port,
        })
    }
}

/// The label of the objects an operator of [`Cluster::tenants`] reconciles.
const TENANTS_LABEL: &str = "edge-bench-tenants";

/// Two tenants' namespaces (name, API), and the operator serving both.
pub(crate) struct Tenants<A: Resource, B: Resource> {
    pub first: (String, Api<A>),
    pub second: (String, Api<B>),
    /// The labels of the objects the operator reconciles.
    pub labels: std::collections::BTreeMap<String, String>,
    pub operator: OperatorProcess,
}

/// An operator process, stopped when dropped.
pub(crate) struct OperatorProcess {
    child: Child,
    key_file: PathBuf,
    metrics_port: u16,
}

impl OperatorProcess {
    /// The sum of the samples of `metric` labelled with `kind` (none when the
    /// operator's metrics do not answer).
    async fn kind_metric(&self, metric: &str, kind: &str) -> Option<f64> {
        let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.metrics_port))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        let (series, label) = (format!("{metric}{{"), format!("kind=\"{kind}\""));
        text.lines()
            .filter(|l| l.starts_with(&series) && l.contains(&label))
            .map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum()
    }

    /// Reconciles of `kind` the operator has finished, whatever their result.
    pub(crate) async fn reconciles(&self, kind: &str) -> Option<f64> {
        self.kind_metric("edge_operator_reconciles_total", kind).await
    }

    /// Waits until the operator has finished `count` reconciles of `kind`, polling its
    /// metrics, for at most `within`: answers the time waited, none when `within`
    /// passed first; fails when the operator exits.
    pub(crate) async fn reconciles_within(
        &mut self,
        kind: &str,
        count: usize,
        within: Duration,
    ) -> anyhow::Result<Option<Duration>> {
        let started = Instant::now();
        while self.reconciles(kind).await.unwrap_or(0.0) < count as f64 {
            self.ensure_running()?;
            if started.elapsed() >= within {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Some(started.elapsed()))
    }

    /// The mean duration of the reconciles of `kind` so far.
    pub(crate) async fn mean_reconcile(&self, kind: &str) -> Option<Duration> {
        let sum = self
            .kind_metric("edge_operator_reconcile_duration_seconds_sum", kind)
            .await?;
        let count = self
            .kind_metric("edge_operator_reconcile_duration_seconds_count", kind)
            .await?;
        (count > 0.0).then(|| Duration::from_secs_f64(sum / count))
    }

    /// The series the operator exposes, and those `--object-metrics` would add (one
    /// per condition of each object: the sum of `edge_operator_objects`).
    pub(crate) async fn series(&self) -> Option<(usize, usize)> {
        let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.metrics_port))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
        let per_object: f64 = samples
            .iter()
            .filter(|l| l.starts_with("edge_operator_objects{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        Some((samples.len(), per_object as usize))
    }

    /// Peak resident memory so far (VmHWM), in MB (MiB).
    pub(crate) fn peak_rss_mb(&self) -> anyhow::Result<f64> {
        self.memory_mb("VmHWM", |status| status.vmhwm)
    }

    /// Resident memory now (VmRSS), in MB (MiB).
    pub(crate) fn rss_mb(&self) -> anyhow::Result<f64> {
        self.memory_mb("VmRSS", |status| status.vmrss)
    }

    /// The member `name` of the operator's /proc/<pid>/status (`read`), in MB (MiB).
    fn memory_mb(&self, name: &str, read: fn(&procfs::process::Status) -> Option<u64>) -> anyhow::Result<f64> {
        let pid = i32::try_from(self.child.id()).context("a process id")?;
        procfs::process::Process::new(pid)
            .and_then(|process| process.status())
            .ok()
            .and_then(|status| read(&status))
            .map(|kb| kb as f64 / 1024.0)
            .with_context(|| format!("no {name} in the operator's /proc/<pid>/status"))
    }

    /// Fails when the process has exited (a crash would otherwise look like slowness).
    pub(crate) fn ensure_running(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait()? {
            Some(status) => bail!("edge-operator exited: {status}"),
            None => Ok(()),
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.key_file);
    }
}

/// Watches `api` and answers the moment `expected` objects satisfy `is_ready` (a watch,
/// not polling: the benchmark should not load the apiserver it measures).
pub(crate) fn ready_waiter<K>(
    api: Api<K>,
    expected: usize,
    is_ready: fn(&K) -> bool,
) -> JoinHandle<anyhow::Result<Instant>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    tokio::spawn(async move {
        let mut ready = HashSet::new();
        // A watch error (an expired resourceVersion) is followed by a new listing;
        // the callers bound the wait.
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .filter_map(|object| std::future::ready(object.ok()));
        let mut stream = std::pin::pin!(stream);
        while let Some(object) = stream.next().await {
            if is_ready(&object) {
                ready.insert(object.name_any());
            } else {
                ready.remove(&object.name_any());
            }
            if ready.len() >= expected {
                return Ok(Instant::now());
            }
        }
        bail!("the watch ended before {expected} objects were ready")
    })
}
