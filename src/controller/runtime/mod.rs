//! The operator process: one controller per kind, Secret watches, leader election and
//! the metrics/health server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource, ResourceExt};

use super::backoff::{Failures, certificate_policy, failure_delay};
use super::context::{Context, Settings};
use super::credentials::{Credentials, DefaultKey, NamespaceSet};
use super::driver::{self, Reconciled};
use super::error::ReconcileError;
use super::leader::{self, LeaderGate, Standing};
use super::metrics::Metrics;
use super::reads::Reads;
use super::shutdown::{self, Shutdown};
use super::status::{MANAGER, object_key};
use crate::api::{ClientConfig, Credentials as ApiCredentials, EdgeClient, Hooks, RetryPolicy, Secret, USER_AGENT};
use crate::crd::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

/// The metadata of Secrets as the watches of the allowed namespaces deliver it.
type SecretEvents =
    futures::stream::BoxStream<'static, Result<watcher::Event<PartialObjectMeta<KubeSecret>>, watcher::Error>>;

/// One metadata watch per namespace whose Secrets the operator may read (one
/// cluster-wide watch for every namespace, none for none).
fn secret_events(client: &kube::Client, namespaces: &NamespaceSet) -> SecretEvents {
    let watch =
        |api: Api<PartialObjectMeta<KubeSecret>>| watcher(api, watcher::Config::default()).default_backoff().boxed();
    match namespaces {
        NamespaceSet::All => watch(Api::all(client.clone())),
        NamespaceSet::Only(names) => {
            futures::stream::select_all(names.iter().map(|ns| watch(Api::namespaced(client.clone(), ns)))).boxed()
        }
        NamespaceSet::None => futures::stream::empty().boxed(),
    }
}

/// Settings of `edge-operator run`.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub api_url: String,
    pub logging_url: String,
    /// File holding the operator's own key, read again when it changes.
    pub access_key_file: Option<std::path::PathBuf>,
    /// Watch only this namespace (all when `None`).
    pub namespace: Option<String>,
    pub resync: Duration,
    pub concurrency: u16,
    /// ContainerAppWatch reconciles at once: high, because the controller's queue picks
    /// among due objects in no fair order once this is reached, while the platform
    /// quota serves waiting polls first come, first served.
    pub poll_concurrency: u16,
    pub metrics_addr: SocketAddr,
    /// Requests per second to the platform, all objects together (0: unlimited).
    pub platform_rate: u32,
    /// First delay between certificate completion attempts.
    pub certificate_backoff: Duration,
    /// Logging requests one CDN summary may make per poll.
    pub cdn_pages_per_poll: u32,
    /// How long the platform takes to make a log entry readable.
    pub cdn_log_delay: Duration,
    /// The longest a ContainerAppWatch's unchanged `observedAt` is kept.
    pub status_refresh: Duration,
    pub leader_election: Option<LeaderElection>,
    /// Namespaces whose objects may use the default key.
    pub default_key_namespaces: NamespaceSet,
    /// Namespaces whose Secrets objects may reference (and the operator may read).
    pub secret_namespaces: NamespaceSet,
    /// Keep a finalizer on Secrets that restoring AccessListConfigs need.
    pub protect_secrets: bool,
}

#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub lease_name: String,
    pub lease_namespace: String,
    pub identity: String,
    pub lease_duration: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("Kubernetes client: {0}")]
    Kube(#[from] kube::Error),
    #[error("Kubernetes configuration: {0}")]
    KubeConfig(#[from] kube::config::InferConfigError),
    #[error("platform client: {0}")]
    Platform(#[from] crate::api::ApiError),
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    #[error("metrics server on {addr}: {source}")]
    Serve { addr: SocketAddr, source: std::io::Error },
    #[error("lost the leader lease; exiting so a standby can take over")]
    LostLease,
    #[error("{0}")]
    AccessKey(String),
}

struct Health {
    metrics: Arc<Metrics>,
    leader: Arc<LeaderGate>,
    ready: AtomicBool,
    /// Controllers whose watch is failing now (RBAC forbidden, CRD missing...).
    failing_watches: std::sync::atomic::AtomicUsize,
    /// Since when some watch has been failing without a pause.
    failing_since: std::sync::Mutex<Option<tokio::time::Instant>>,
}

/// The media type of the metrics exposition.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A watch failing this long makes /healthz fail, so the kubelet restarts the Pod.
const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);

impl Health {
    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && self.failing_watches.load(Ordering::Relaxed) == 0
    }

    fn is_live(&self) -> bool {
        let since = *self.failing_since.lock().unwrap_or_else(|e| e.into_inner());
        since.is_none_or(|since| since.elapsed() < UNHEALTHY_AFTER)
    }

    fn watch_failed(&self, failing: &AtomicBool) {
        if !failing.swap(true, Ordering::Relaxed) {
            self.failing_watches.fetch_add(1, Ordering::Relaxed);
        }
        self.failing_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(tokio::time::Instant::now);
    }

    fn watch_recovered(&self, failing: &AtomicBool) {
        if failing.swap(false, Ordering::Relaxed) && self.failing_watches.fetch_sub(1, Ordering::Relaxed) == 1 {
            *self.failing_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

async fn serve_health(addr: SocketAddr, health: Arc<Health>) -> Result<(), RunError> {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(h): State<Arc<Health>>| async move {
                h.metrics.set_leader(h.leader.may_act());
                ([(http::header::CONTENT_TYPE, OPENMETRICS)], h.metrics.encode())
            }),
        )
        .route(
            "/healthz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.is_live() {
                    (StatusCode::OK, "ok")
                } else {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "a watch has been failing for 5 minutes",
                    )
                }
            }),
        )
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                match (h.ready.load(Ordering::Relaxed), h.is_ready()) {
                    (_, true) => (StatusCode::OK, "ok"),
                    (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "starting"),
                    (true, false) => (StatusCode::SERVICE_UNAVAILABLE, "a watch is failing; see the log"),
                }
            }),
        )
        .with_state(health);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| RunError::Serve { addr, source })?;
    axum::serve(listener, app)
        .await
        .map_err(|source| RunError::Serve { addr, source })
}

fn api<K>(client: &kube::Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Logs what the controller reports: a failing watch (RBAC forbidden, CRD missing) at
/// error level, and counted so that /readyz fails until the watch answers again or a
/// reconcile succeeds.
fn report_controller_event<K: Reconciled>(
    result: Result<(ObjectRef<K>, Action), controller::Error<ReconcileError, watcher::Error>>,
    health: &Health,
    failing: &AtomicBool,
) {
    match result {
        Err(controller::Error::QueueError(error)) => {
            health.watch_failed(failing);
            tracing::error!(kind = K::KIND, %error, "the watch of this kind fails; /readyz reports it");
        }
        Err(error) => tracing::debug!(%error, "controller event"),
        Ok(_) => health.watch_recovered(failing),
    }
}

/// Forgets the metrics and failure counts of a deleted object (objects without a
/// finalizer are never reconciled once deleted).
fn forget_deleted<K: Reconciled>(ctx: &Context, event: &Result<watcher::Event<K>, watcher::Error>) {
    if let Ok(watcher::Event::Delete(object)) = event {
        ctx.metrics
            .forget(K::KIND, &object.namespace().unwrap_or_default(), &object.name_any());
        let key = object_key(object);
        ctx.failures.forget(&key);
        ctx.polls.forget(&key);
    }
}

/// Objects of a kind whose credentials come from `secret` (only its metadata is
/// watched: Secret data is never cached).
fn referencing<K: Reconciled>(
    store: &kube::runtime::reflector::Store<K>,
    secret: &PartialObjectMeta<KubeSecret>,
) -> Vec<ObjectRef<K>> {
    store
        .state()
        .iter()
        .filter(|o| {
            o.namespace() == secret.namespace()
                && o.secret_ref()
                    .is_some_and(|r| Some(&r.name) == secret.metadata.name.as_ref())
        })
        .map(|o| ObjectRef::from_obj(o.as_ref()))
        .collect()
}

fn error_policy<K: Resource<DynamicType = ()> + ResourceExt>(
    object: Arc<K>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    let failures = ctx.failures.failed(object_key(object.as_ref()));
    let delay = failure_delay(failures, error.is_transient(), rand::random::<f64>())
        .max(error.retry_after().unwrap_or_default());
    tracing::warn!(name = %object.name_any(), reason = error.reason().as_str(), %error, ?delay, "reconcile failed");
    Action::requeue(delay)
}

async fn run_controller<K: Reconciled>(
    api: Api<K>,
    secrets: SecretEvents,
    ctx: Arc<Context>,
    health: Arc<Health>,
    concurrency: u16,
    shutdown: Shutdown,
    follow: impl Fn(&Context, &watcher::Event<K>) + Send + 'static,
) {
    // Only changes of generation (spec, deletion), annotations (paused, requests) and
    // finalizers trigger a reconcile; the operator's own status writes do not.
    let (reader, writer) = kube::runtime::reflector::store();
    let failing = Arc::new(AtomicBool::new(false));
    let stream = watcher::watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(|object: &mut K| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .inspect({
            let (ctx, health, failing) = (ctx.clone(), health.clone(), failing.clone());
            move |event| {
                // A watch that answers again is healthy, whether or not an object of
                // this kind exists to reconcile.
                if let Ok(event) = event {
                    health.watch_recovered(&failing);
                    follow(&ctx, event);
                }
                forget_deleted(&ctx, event);
            }
        })
        .applied_objects()
        .predicate_filter(
            predicates::generation
                .combine(predicates::annotations)
                .combine(predicates::finalizers),
            Default::default(),
        );
    let controller = Controller::for_stream(stream, reader);
    let store = controller.store();
    controller
        .watches_stream(
            secrets
                .inspect({
                    let ctx = ctx.clone();
                    move |event| {
                        if let Ok(event) = event {
                            ctx.credentials.secrets.observe(event);
                        }
                    }
                })
                .touched_objects(),
            move |secret| referencing(&store, &secret),
        )
        .with_config(controller::Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown.requested())
        .run(driver::reconcile::<K>, error_policy, ctx)
        .for_each(|result| {
            let health = health.clone();
            let failing = failing.clone();
            async move { report_controller_event::<K>(result, &health, &failing) }
        })
        .await;
}

/// Confirms leadership while the Lease shows this process as its holder with a recent
/// renewal; revokes it otherwise. Returns when another process holds the Lease.
async fn watch_lease(client: kube::Client, election: LeaderElection, ctx: Arc<Context>) {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(client, &election.lease_namespace);
    let mut wait = leader::next_check(election.lease_duration, &Standing::Lapsed { renewed: None });
    loop {
        tokio::time::sleep(wait).await;
        let lease = match leases.get(&election.lease_name).await {
            Ok(lease) => lease,
            Err(error) => {
                tracing::warn!(%error, "cannot read the leader Lease");
                continue;
            }
        };
        let spec = lease.spec.unwrap_or_default();
        let standing = leader::standing(&spec, &election.identity, election.lease_duration, chrono::Utc::now());
        match &standing {
            Standing::Held { remaining } => ctx.leader.confirm_for(*remaining),
            Standing::Lapsed { renewed } => {
                ctx.leader.revoke();
                tracing::warn!(?renewed, "the leader Lease is not being renewed; acting has stopped");
            }
            Standing::Lost { holder } => {
                ctx.leader.revoke();
                tracing::error!(?holder, "another operator holds the leader Lease; stopping");
                return;
            }
        }
        wait = leader::next_check(election.lease_duration, &standing);
    }
}

/// Runs the operator until interrupted (or until it loses the leader lease).
pub async fn run(config: RunConfig) -> Result<(), RunError> {
    let default_key = config
        .access_key_file
        .clone()
        .map(DefaultKey::file)
        .transpose()
        .map_err(RunError::AccessKey)?;
    let mut kube_config = kube::Config::infer().await?;
    // Names the operator in the apiserver's audit log and metrics.
    kube_config
        .headers
        .push((http::header::USER_AGENT, http::HeaderValue::from_static(USER_AGENT)));
    let kube_client = kube::Client::try_from(kube_config)?;
    let metrics = Arc::new(Metrics::default());
    let mut platform_config = ClientConfig::new(
        config.api_url.clone(),
        config.logging_url.clone(),
        ApiCredentials::AccessKey(Secret::new("")),
    );
    platform_config.retry = RetryPolicy {
        max_retries: 1,
        ..RetryPolicy::default()
    };
    platform_config.global_quota = std::num::NonZeroU32::new(config.platform_rate).map(governor::Quota::per_second);
    let leader = Arc::new(match &config.leader_election {
        Some(election) => LeaderGate::elected(election.lease_duration),
        None => LeaderGate::sole(),
    });
    let hooks = Hooks {
        observer: Some(metrics.clone()),
        write_gate: Some(leader.clone()),
    };
    let platform = EdgeClient::with_hooks(platform_config, hooks)?;
    let reporter = Reporter {
        controller: MANAGER.to_string(),
        instance: config.leader_election.as_ref().map(|l| l.identity.clone()),
    };
    let ctx = Arc::new(Context {
        kube: kube_client.clone(),
        credentials: Credentials::new(kube_client.clone(), platform, default_key)
            .with_default_key_namespaces(config.default_key_namespaces.clone())
            .with_secret_namespaces(config.secret_namespaces.clone()),
        reads: Reads::default(),
        failures: Failures::default(),
        metrics: metrics.clone(),
        recorder: Recorder::new(kube_client.clone(), reporter),
        settings: Settings {
            resync: config.resync,
            certificate_backoff: certificate_policy(config.certificate_backoff),
            cdn_pages_per_poll: config.cdn_pages_per_poll,
            cdn_log_delay: config.cdn_log_delay,
            status_refresh: config.status_refresh,
            protect_secrets: config.protect_secrets,
        },
        access_list_claims: Default::default(),
        polls: Default::default(),
        leader,
    });
    let health = Arc::new(Health {
        metrics,
        leader: ctx.leader.clone(),
        ready: AtomicBool::new(false),
        failing_watches: Default::default(),
        failing_since: Default::default(),
    });
    let server = tokio::spawn(serve_health(config.metrics_addr, health.clone()));

    let shutdown = Shutdown::on_signals();
    let mut leadership = None;
    if let Some(election) = &config.leader_election {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(kube_client.clone(), &election.lease_name)
            .with_namespace(&election.lease_namespace)
            .with_identity(&election.identity)
            .with_duration(election.lease_duration.as_secs().max(2))
            // Renew every half of the gate's usable time (see `leader`).
            .with_grace(leader::renewal_grace(election.lease_duration))
            .build()
            .await?;
        let (mut is_leader, task) = manager.watch().await;
        health.ready.store(true, Ordering::Relaxed);
        tracing::info!(identity = %election.identity, "waiting for the leader lease");
        let acquired = async {
            while !*is_leader.borrow_and_update() {
                if is_leader.changed().await.is_err() {
                    return false;
                }
            }
            true
        };
        let acquired = tokio::select! {
            acquired = acquired => acquired,
            () = shutdown.clone().requested() => {
                release_lease(is_leader, task).await;
                return Ok(());
            }
        };
        if !acquired {
            return Err(RunError::LostLease);
        }
        tracing::info!(identity = %election.identity, "acquired the leader lease");
        ctx.leader.confirm();
        let watchdog = tokio::spawn(watch_lease(kube_client.clone(), election.clone(), ctx.clone()));
        leadership = Some((is_leader, task, watchdog));
    }
    health.ready.store(true, Ordering::Relaxed);

    let secrets = || secret_events(&kube_client, &config.secret_namespaces);
    let controllers = async {
        tokio::join!(
            run_controller(
                api::<AccessListConfig>(&kube_client, &config.namespace),
                secrets(),
                ctx.clone(),
                health.clone(),
                config.concurrency,
                shutdown.clone(),
                |ctx, event| ctx.access_list_claims.observe(event),
            ),
            run_controller(
                api::<PullZoneCertificate>(&kube_client, &config.namespace),
                secrets(),
                ctx.clone(),
                health.clone(),
                config.concurrency,
                shutdown.clone(),
                |_, _| {},
            ),
            run_controller(
                api::<ContainerAppWatch>(&kube_client, &config.namespace),
                secrets(),
                ctx.clone(),
                health.clone(),
                config.poll_concurrency,
                shutdown.clone(),
                |_, _| {},
            ),
        );
    };
    let controllers = async {
        if !shutdown::bounded(controllers, shutdown.clone(), shutdown::GRACE).await {
            tracing::warn!(grace = ?shutdown::GRACE, "in-flight reconciles did not finish in time; abandoned");
        }
    };
    tracing::info!("controllers started");
    let outcome = match leadership {
        Some((mut is_leader, task, watchdog)) => {
            let lost = async {
                while *is_leader.borrow_and_update() {
                    if is_leader.changed().await.is_err() {
                        break;
                    }
                }
            };
            let outcome = tokio::select! {
                () = controllers => Ok(()),
                () = lost => Err(RunError::LostLease),
                _ = watchdog => Err(RunError::LostLease),
                served = server => served.unwrap_or(Ok(())),
            };
            release_lease(is_leader, task).await;
            outcome
        }
        None => tokio::select! {
            () = controllers => Ok(()),
            served = server => served.unwrap_or(Ok(())),
        },
    };
    tracing::info!("stopped");
    outcome
}

/// Closes the lease manager's channel, which makes it release the Lease if held, so a
/// standby takes over at once instead of after the lease duration. Bounded: the
/// apiserver may already be gone.
async fn release_lease(
    is_leader: tokio::sync::watch::Receiver<bool>,
    task: tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
) {
    drop(is_leader);
    match tokio::time::timeout(shutdown::LEASE_RELEASE_GRACE, task).await {
        Ok(Ok(Ok(_))) => tracing::info!("leader Lease released"),
        Ok(Ok(Err(error))) => tracing::warn!(%error, "could not release the leader Lease; it expires by itself"),
        Ok(Err(_)) | Err(_) => tracing::warn!("the leader Lease was not released in time; it expires by itself"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_fails_readiness_at_once_and_liveness_after_five_minutes() {
        let health = Health {
            metrics: Arc::new(Metrics::default()),
            leader: Arc::new(LeaderGate::sole()),
            ready: AtomicBool::new(true),
            failing_watches: Default::default(),
            failing_since: Default::default(),
        };
        let (first, second) = (AtomicBool::new(false), AtomicBool::new(false));
        health.watch_failed(&first);
        health.watch_failed(&first);
        health.watch_failed(&second);
        assert!(!health.is_ready() && health.is_live());
        tokio::time::sleep(UNHEALTHY_AFTER).await;
        assert!(!health.is_live());
        health.watch_recovered(&first);
        assert!(!health.is_ready() && !health.is_live(), "the other watch still fails");
        health.watch_recovered(&second);
        assert!(health.is_ready() && health.is_live());
    }
}
