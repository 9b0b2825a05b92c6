//! The operator process: one controller per kind, Secret watches, leader election and
//! the metrics/health server.

pub mod check;
mod controllers;
pub use controllers::{LIST_PAGE_SIZE, NO_OBJECT};
mod kinds;
mod kube_client;
mod leadership;
mod list_gate;
mod secret_watch;
mod server;
pub mod shutdown;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kube::runtime::events::{Recorder, Reporter};

use self::controllers::{Controllers, InitialList};
use self::leadership::Leadership;
use self::list_gate::Listing;
use self::secret_watch::SecretWatch;
use self::server::{Health, serve_health};
use self::shutdown::Shutdown;
use crate::api::{ClientConfig, EdgeClient, Hooks, PlainHttp, RetryPolicy, USER_AGENT};
use crate::controller::framework::pipeline::status::MANAGER;
use crate::controller::framework::services::backoff::FailureCounts;
use crate::controller::framework::services::credentials::{AccessKeys, DefaultKey, NamespaceSet, SecretIndex};
use crate::controller::framework::services::event_budget::EventBudget;
use crate::controller::framework::services::leader::LeaderGate;
use crate::controller::framework::services::metrics::Metrics;
use crate::controller::framework::services::shared::Shared;
use crate::controller::kinds::KindSettings;
use crate::resources::time::duration_of_at_least;
use crate::telemetry::LogFormat;

/// The flags of `edge-operator run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunConfig {
    /// Base URL of the platform API.
    #[arg(long, env = "EDGE_API_URL")]
    pub api_url: String,
    /// Base URL of the logging API [default: the API URL].
    #[arg(long, env = "EDGE_LOGGING_URL")]
    pub logging_url: Option<String>,
    /// File holding the operator's default access key (objects without
    /// spec.accessKeySecretRef use it), read again when it changes.
    #[arg(long, env = "EDGE_ACCESS_KEY_FILE")]
    pub access_key_file: Option<PathBuf>,
    /// Watch only this namespace [default: all namespaces].
    #[arg(long, env = "EDGE_WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// Reconcile only the objects whose labels match this selector (for example
    /// `sharding.edgeplatform.io/key=a`): one shard of several operators, each with its
    /// own selector and its own --lease-name. Secrets are watched whole.
    #[arg(long, value_parser = non_empty)]
    pub watch_label_selector: Option<String>,
    /// Reconciles running at once per kind that writes to the platform.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Polls running at once per kind that only reads the platform (its reconciles are
    /// polls). They mostly wait for the platform quota;
    /// beyond this many, due polls wait for a turn, handed to namespaces in turn, each
    /// one's in the order they fell due. Each running poll holds its reconcile's state
    /// (about 10 KB).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..))]
    pub poll_concurrency: u16,
    /// Requests to the Kubernetes API running at once, watches aside (status writes,
    /// Events, reads); each one's seat goes to namespaces in turn, and the others wait.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
    pub kube_api_concurrency: u16,
    /// Events each namespace's objects may publish per minute, and at once (0:
    /// unlimited). Events over it are dropped and counted in
    /// `edge_operator_events_dropped`; conditions still say what happened.
    #[arg(long, default_value_t = 120)]
    pub namespace_events_per_minute: u32,
    /// Requests per second to the platform, all objects together (0: unlimited).
    #[arg(long, default_value_t = 50)]
    pub platform_rate: u32,
    /// Accept plain http API URLs to cluster-internal addresses (private IPs, Service
    /// names), e.g. the in-cluster emulator; otherwise http is accepted for loopback
    /// addresses only. Keys travel in clear text.
    #[arg(long)]
    pub allow_http_in_cluster: bool,
    #[command(flatten)]
    pub transport: crate::api::TransportFlags,
    /// The most bytes of platform answers read at once, all polls together.
    #[arg(long, default_value_t = crate::api::config::DEFAULT_ANSWER_BUDGET_BYTES)]
    pub answer_budget_bytes: usize,
    #[command(flatten)]
    pub kinds: KindSettings,
    /// Also expose a series per condition of each object (`edge_operator_condition`):
    /// tens of thousands of series at 10,000 objects. Without it, objects are counted
    /// by condition (`edge_operator_objects`), and kube-state-metrics can give each
    /// object's conditions from its status (the chart's `kubeStateMetrics` values).
    #[arg(long)]
    pub object_metrics: bool,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Namespaces whose objects may use the operator's own key, comma-separated, or `*`
    /// for every namespace [default: none]; objects elsewhere must reference a Secret.
    #[arg(long, value_delimiter = ',')]
    pub default_key_namespaces: Vec<String>,
    /// Namespaces whose Secrets objects may reference, comma-separated, or `*` for every
    /// namespace [default: the --namespace watched, else none]. The operator watches
    /// Secret metadata and reads referenced Secrets there only; grant it that much.
    #[arg(long, value_delimiter = ',')]
    pub secret_namespaces: Vec<String>,
    #[command(flatten)]
    pub leader_election: LeaderElection,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

impl RunConfig {
    fn logging_url(&self) -> &str {
        self.logging_url.as_deref().unwrap_or(&self.api_url)
    }

    fn secret_namespaces(&self) -> NamespaceSet {
        match (self.secret_namespaces.is_empty(), &self.namespace) {
            (true, Some(watched)) => NamespaceSet::parse(std::slice::from_ref(watched)),
            _ => NamespaceSet::parse(&self.secret_namespaces),
        }
    }

    fn election(&self) -> Option<&LeaderElection> {
        self.leader_election.enabled.then_some(&self.leader_election)
    }

    /// Each kind's settings, as those of this shard (named by its Lease) when it is one.
    fn kind_settings(&self) -> Result<KindSettings, RunError> {
        let mut settings = self.kinds.clone();
        if self.watch_label_selector.is_some() {
            if self.leader_election.lease_name == DEFAULT_LEASE_NAME {
                return Err(RunError::Shard(
                    "with --watch-label-selector, give this shard its own --lease-name: it names the shard's Lease \
                     and the finalizers it puts on Secrets"
                        .into(),
                ));
            }
            kinds::for_shard(&mut settings, &self.leader_election.lease_name);
        }
        Ok(settings)
    }
}

fn non_empty(raw: &str) -> Result<String, String> {
    match raw.trim() {
        "" => Err("must not be empty".to_string()),
        value => Ok(value.to_string()),
    }
}

/// The Lease of an operator that is not one shard of several.
const DEFAULT_LEASE_NAME: &str = "edge-operator";

#[derive(Debug, Clone, clap::Args)]
pub struct LeaderElection {
    /// Elect a leader through a Lease: only the leader reconciles.
    #[arg(long = "leader-elect")]
    pub enabled: bool,
    /// Name of the Lease.
    #[arg(long, default_value = DEFAULT_LEASE_NAME)]
    pub lease_name: String,
    /// Namespace of the Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// Identity in the Lease (the host name and process id by default).
    #[arg(long, env = "POD_NAME", default_value_t = host_and_process())]
    pub identity: String,
    /// How long a leader's Lease lasts without renewal; a standby takes over after it
    /// (at least 3s, or there is no time to renew before the leader must stop acting).
    #[arg(long, default_value = "15s", value_parser = duration_of_at_least::<3>)]
    pub lease_duration: Duration,
}

fn host_and_process() -> String {
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    format!("{}-{}", host.trim(), std::process::id())
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("Kubernetes client: {0}")]
    Kube(#[from] kube::Error),
    #[error("Kubernetes configuration: {0}")]
    KubeConfig(#[from] kube::config::InferConfigError),
    #[error("platform client: {0}")]
    Platform(#[from] crate::api::ApiError),
    #[error("platform connection: {0}")]
    PlatformConnection(String),
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    #[error("metrics server on {addr}: {source}")]
    Serve { addr: SocketAddr, source: std::io::Error },
    #[error("lost the leader lease; exiting so a standby can take over")]
    LostLease,
    #[error("{0}")]
    AccessKey(String),
    #[error("the health and metrics server stopped: {0}")]
    HealthServerStopped(String),
    #[error("{0}")]
    Shard(String),
    #[error("the operator's task ended: {0}")]
    Stopped(String),
    #[error("--watch-label-selector {selector:?}: the apiserver refuses it: {message}")]
    LabelSelector { selector: String, message: String },
}

/// The health server runs until the process ends: its end, clean or not, is an error,
/// so the kubelet restarts a Pod that no longer answers its probes.
fn health_server_ended(served: Result<Result<(), RunError>, tokio::task::JoinError>) -> RunError {
    match served {
        Ok(Err(error)) => error,
        Ok(Ok(())) => RunError::HealthServerStopped("it returned".into()),
        Err(error) => RunError::HealthServerStopped(error.to_string()),
    }
}

/// Refuses a selector the apiserver does not parse, before any watch retries it.
async fn check_label_selector(client: &kube::Client, namespace: Option<&str>, selector: &str) -> Result<(), RunError> {
    let Some(api) = kinds::probed_api(client, namespace) else {
        return Ok(());
    };
    let params = kube::api::ListParams::default().labels(selector).limit(1);
    match api.list_metadata(&params).await {
        Err(kube::Error::Api(response)) if response.code == 400 => Err(RunError::LabelSelector {
            selector: selector.to_string(),
            message: response.message,
        }),
        _ => Ok(()),
    }
}

/// Runs the operator until interrupted (or until it loses the leader lease), as a task
/// of the runtime's workers: a future the binary blocks on runs on the main thread,
/// apart from the I/O driver, so that every response would wake a second thread.
pub async fn run(config: RunConfig) -> Result<(), RunError> {
    match tokio::spawn(operate(config)).await {
        Ok(outcome) => outcome,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => Err(RunError::Stopped(error.to_string())),
        },
    }
}

async fn operate(config: RunConfig) -> Result<(), RunError> {
    let kind_settings = config.kind_settings()?;
    let default_key = config
        .access_key_file
        .clone()
        .map(DefaultKey::file)
        .transpose()
        .map_err(RunError::AccessKey)?;
    let kube_client = kube_client(&config).await?;
    if let Some(selector) = &config.watch_label_selector {
        check_label_selector(&kube_client, config.namespace.as_deref(), selector).await?;
    }
    let metrics = Arc::new(Metrics::new(config.object_metrics));
    let leader = Arc::new(match config.election() {
        Some(election) => LeaderGate::elected(election.lease_duration),
        None => LeaderGate::sole(),
    });
    let (secret_watch, secret_index) = SecretWatch::new(kinds::secret_finalizers(&kind_settings));
    let keys = (default_key, secret_index);
    let shared = Arc::new(shared(&config, &kube_client, (metrics.clone(), leader), keys)?);
    let health = Arc::new(Health::new(metrics, shared.leader.clone()));
    let server = tokio::spawn(serve_health(config.metrics_addr, health.clone()));

    let shutdown = Shutdown::on_signals();
    let leadership = match config.election() {
        Some(election) => {
            health.ready.store(true, Ordering::Relaxed);
            match Leadership::acquire(&kube_client, election, &shared, &shutdown).await? {
                Some(leadership) => Some(leadership),
                None => return Ok(()),
            }
        }
        None => None,
    };
    health.ready.store(true, Ordering::Relaxed);

    let initial_list = match kinds::probed_api(&kube_client, config.namespace.as_deref()) {
        Some(api) => InitialList::probe(&api).await,
        None => InitialList::Paged,
    };
    let controllers = Controllers {
        client: &kube_client,
        namespace: &config.namespace,
        label_selector: config.watch_label_selector.as_deref(),
        health: &health,
        shutdown: &shutdown,
        initial_list,
        list_gate: initial_list.gate(),
        secret_watch: &secret_watch,
        reconciles: config.concurrency,
        polls: config.poll_concurrency,
    };
    let running = kinds::controllers(&controllers, &shared, &kind_settings);
    let secrets = Listing {
        config: initial_list.watch_config(None),
        gate: controllers.list_gate.clone(),
    };
    let running = async {
        let secrets = secret_watch.run(
            kube_client.clone(),
            secrets,
            config.secret_namespaces(),
            shared.clone(),
            health.clone(),
            shutdown.clone().requested(),
        );
        tokio::join!(secrets, futures::future::join_all(running));
    };
    let running = async {
        if !shutdown::bounded(running, shutdown.clone(), shutdown::GRACE).await {
            tracing::warn!(grace = ?shutdown::GRACE, "in-flight reconciles did not finish in time; abandoned");
        }
    };
    tracing::info!("controllers started");
    let outcome = until_stopped(running, leadership, server).await;
    tracing::info!("stopped");
    outcome
}

/// Runs the controllers until they stop (on a signal), the leader lease is lost or the
/// health server ends; then releases the lease.
async fn until_stopped(
    running: impl Future<Output = ()>,
    mut leadership: Option<Leadership>,
    server: tokio::task::JoinHandle<Result<(), RunError>>,
) -> Result<(), RunError> {
    let outcome = match &mut leadership {
        Some(held) => tokio::select! {
            () = running => Ok(()),
            () = held.lost() => Err(RunError::LostLease),
            served = server => Err(health_server_ended(served)),
        },
        None => tokio::select! {
            () = running => Ok(()),
            served = server => Err(health_server_ended(served)),
        },
    };
    if let Some(held) = leadership {
        held.release().await;
    }
    outcome
}

/// The Kubernetes client, its requests seated `--kube-api-concurrency` at once.
async fn kube_client(config: &RunConfig) -> Result<kube::Client, RunError> {
    let mut kube_config = kube::Config::infer().await?;
    // Names the operator in the apiserver's audit log and metrics.
    kube_config
        .headers
        .push((http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT)));
    Ok(kube_client::seated_client(
        kube_config,
        config.kube_api_concurrency.into(),
    )?)
}

/// The platform client every object's client derives from: retried once, within the
/// shared quota, its writes gated on leadership and its calls observed by `metrics`.
fn platform_client(config: &RunConfig, metrics: Arc<Metrics>, leader: Arc<LeaderGate>) -> Result<EdgeClient, RunError> {
    let mut platform_config =
        ClientConfig::without_credentials(config.api_url.clone(), config.logging_url().to_string());
    platform_config.retry = RetryPolicy {
        max_retries: 1,
        ..RetryPolicy::default()
    };
    platform_config.global_quota = std::num::NonZeroU32::new(config.platform_rate).map(governor::Quota::per_second);
    platform_config.plain_http = PlainHttp::allowing_in_cluster(config.allow_http_in_cluster);
    platform_config.answer_budget_bytes = config.answer_budget_bytes;
    config
        .transport
        .apply(&mut platform_config.transport)
        .map_err(RunError::PlatformConnection)?;
    let hooks = Hooks {
        observer: Some(metrics),
        write_gate: Some(leader),
    };
    Ok(EdgeClient::with_hooks(platform_config, hooks)?)
}

/// What every kind's reconciles share.
fn shared(
    config: &RunConfig,
    kube_client: &kube::Client,
    (metrics, leader): (Arc<Metrics>, Arc<LeaderGate>),
    (default_key, secret_index): (Option<DefaultKey>, SecretIndex),
) -> Result<Shared, RunError> {
    let platform = platform_client(config, metrics.clone(), leader.clone())?;
    let reporter = Reporter {
        controller: MANAGER.to_string(),
        instance: config.election().map(|l| l.identity.clone()),
    };
    Ok(Shared {
        kube: kube_client.clone(),
        access_keys: AccessKeys::new(kube_client.clone(), platform, default_key, secret_index)
            .with_default_key_namespaces(NamespaceSet::parse(&config.default_key_namespaces))
            .with_secret_namespaces(config.secret_namespaces()),
        failures: FailureCounts::default(),
        metrics,
        recorder: Recorder::new(kube_client.clone(), reporter),
        event_budget: EventBudget::new(config.namespace_events_per_minute),
        leader,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::controller::kinds::access_list::SecretFinalizer;
    use crate::controller::kinds::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: RunConfig,
    }

    fn parse(args: &[&str]) -> Result<RunConfig, clap::Error> {
        let args = ["edge-operator", "--api-url", "http://api"].iter().chain(args);
        Cli::try_parse_from(args).map(|cli| cli.config)
    }

    #[test]
    fn the_flags_parse_into_one_config_with_the_documented_defaults() {
        let config = parse(&["--namespace", "team", "--certificate-backoff", "1m"]).expect("valid flags");
        assert_eq!(config.logging_url(), "http://api");
        assert_eq!(config.secret_namespaces(), NamespaceSet::parse(&["team".to_string()]));
        let access_lists = config.kinds.get::<AccessListConfig>().expect("registered");
        assert_eq!(access_lists.resync, Duration::from_secs(600));
        assert!(access_lists.protect_secrets);
        let certificates = config.kinds.get::<PullZoneCertificate>().expect("registered");
        assert_eq!(
            certificates.certificate_backoff.initial_backoff,
            Duration::from_secs(60)
        );
        let app_watches = config.kinds.get::<ContainerAppWatch>().expect("registered");
        assert_eq!(app_watches.status_refresh, Duration::from_secs(3600));
        assert!(config.election().is_none());
        let elected =
            parse(&["--leader-elect", "--identity", "pod-a", "--logging-url", "http://logs"]).expect("valid flags");
        assert_eq!(elected.election().map(|e| e.identity.as_str()), Some("pod-a"));
        assert_eq!(elected.logging_url(), "http://logs");
        assert_eq!(elected.secret_namespaces(), NamespaceSet::None);
    }

    #[test]
    fn a_shard_needs_its_own_lease_name_which_names_its_secret_finalizer() {
        let whole = parse(&[]).expect("valid flags");
        let finalizers = |config: &RunConfig| config.kind_settings().map(|s| kinds::secret_finalizers(&s)).ok();
        assert_eq!(
            finalizers(&whole),
            Some(vec![SecretFinalizer::default().as_str().to_string()])
        );
        let unnamed = parse(&["--watch-label-selector", "sharding.edgeplatform.io/key=a"]).expect("valid flags");
        let refused = unnamed.kind_settings().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("--lease-name"), "{refused}");
        let shard = parse(&[
            "--watch-label-selector",
            "sharding.edgeplatform.io/key=a",
            "--lease-name",
            "edge-operator-a",
        ])
        .expect("valid flags");
        assert_eq!(
            finalizers(&shard),
            Some(vec![SecretFinalizer::of_shard("edge-operator-a").as_str().to_string()])
        );
        let empty = parse(&["--watch-label-selector", " "]).err().map(|e| e.to_string());
        assert!(empty.is_some_and(|e| e.contains("must not be empty")));
    }

    #[test]
    fn values_the_operator_cannot_work_with_are_refused_with_the_flag_named() {
        for (flag, value, message) in [
            ("--lease-duration", "2s", "must be at least 3s"),
            ("--status-refresh", "9s", "must be at least 10s"),
            ("--concurrency", "0", "not in 1.."),
            ("--poll-concurrency", "0", "not in 1.."),
            ("--cdn-pages-per-poll", "0", "not in 1..=1000"),
            ("--certificate-backoff", "soon", "expected number"),
        ] {
            let error = parse(&[flag, value]).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                error.contains(flag) && error.contains(message),
                "{flag} {value}: {error}"
            );
        }
    }
}
