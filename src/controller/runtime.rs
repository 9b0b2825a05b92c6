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
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource, ResourceExt};

use super::backoff::{Failures, certificate_policy, failure_delay};
use super::context::{Context, Settings};
use super::credentials::Credentials;
use super::driver::{self, Reconciled};
use super::error::ReconcileError;
use super::metrics::Metrics;
use super::reads::Reads;
use super::status::{MANAGER, object_key};
use crate::api::{ClientConfig, Credentials as ApiCredentials, EdgeClient, RetryPolicy, Secret};
use crate::crd::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

/// Settings of `edge-operator run`.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub api_url: String,
    pub logging_url: String,
    pub access_key: Option<Secret>,
    /// Watch only this namespace (all when `None`).
    pub namespace: Option<String>,
    pub resync: Duration,
    pub concurrency: u16,
    pub metrics_addr: SocketAddr,
    /// Requests per second to the platform, all objects together (0: unlimited).
    pub platform_rate: u32,
    /// First delay between certificate completion attempts.
    pub certificate_backoff: Duration,
    pub leader_election: Option<LeaderElection>,
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
}

struct Health {
    metrics: Arc<Metrics>,
    ready: AtomicBool,
}

async fn serve_health(addr: SocketAddr, health: Arc<Health>) -> Result<(), RunError> {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(h): State<Arc<Health>>| async move { h.metrics.encode() }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "starting")
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

/// Objects of a kind whose credentials come from `secret`.
fn referencing<K: Reconciled>(store: &kube::runtime::reflector::Store<K>, secret: &KubeSecret) -> Vec<ObjectRef<K>> {
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
    secrets: Api<KubeSecret>,
    ctx: Arc<Context>,
    concurrency: u16,
    share_store: impl FnOnce(&Context, kube::runtime::reflector::Store<K>),
) {
    // Only changes of generation (spec, deletion), annotations (paused, requests) and
    // finalizers trigger a reconcile; the operator's own status writes do not.
    let (reader, writer) = kube::runtime::reflector::store();
    let stream = watcher::watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(|object: &mut K| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .applied_objects()
        .predicate_filter(
            predicates::generation
                .combine(predicates::annotations)
                .combine(predicates::finalizers),
            Default::default(),
        );
    let controller = Controller::for_stream(stream, reader);
    let store = controller.store();
    share_store(&ctx, store.clone());
    controller
        .watches(secrets, watcher::Config::default(), move |secret| {
            referencing(&store, &secret)
        })
        .with_config(controller::Config::default().concurrency(concurrency))
        .shutdown_on_signal()
        .run(driver::reconcile::<K>, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "controller event");
            }
        })
        .await;
}

/// Runs the operator until interrupted (or until it loses the leader lease).
pub async fn run(config: RunConfig) -> Result<(), RunError> {
    let kube_client = kube::Client::try_default().await?;
    let metrics = Arc::new(Metrics::default());
    let mut platform_config = ClientConfig::new(
        config.api_url.clone(),
        config.logging_url.clone(),
        ApiCredentials::AccessKey(config.access_key.clone().unwrap_or_else(|| Secret::new(""))),
    );
    platform_config.retry = RetryPolicy {
        max_retries: 1,
        ..RetryPolicy::default()
    };
    platform_config.global_quota = std::num::NonZeroU32::new(config.platform_rate).map(governor::Quota::per_second);
    let platform = EdgeClient::with_observer(platform_config, Some(metrics.clone()))?;
    let reporter = Reporter {
        controller: MANAGER.to_string(),
        instance: config.leader_election.as_ref().map(|l| l.identity.clone()),
    };
    let ctx = Arc::new(Context {
        kube: kube_client.clone(),
        credentials: Credentials::new(kube_client.clone(), platform, config.access_key.is_some()),
        reads: Reads::default(),
        failures: Failures::default(),
        metrics: metrics.clone(),
        recorder: Recorder::new(kube_client.clone(), reporter),
        settings: Settings {
            resync: config.resync,
            certificate_backoff: certificate_policy(config.certificate_backoff),
        },
        access_lists: std::sync::OnceLock::new(),
    });
    let health = Arc::new(Health {
        metrics,
        ready: AtomicBool::new(false),
    });
    let server = tokio::spawn(serve_health(config.metrics_addr, health.clone()));

    let mut leadership = None;
    if let Some(election) = &config.leader_election {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(kube_client.clone(), &election.lease_name)
            .with_namespace(&election.lease_namespace)
            .with_identity(&election.identity)
            .with_duration(election.lease_duration.as_secs().max(2))
            .with_grace(2)
            .build()
            .await?;
        let (mut is_leader, task) = manager.watch().await;
        health.ready.store(true, Ordering::Relaxed);
        tracing::info!(identity = %election.identity, "waiting for the leader lease");
        while !*is_leader.borrow_and_update() {
            if is_leader.changed().await.is_err() {
                return Err(RunError::LostLease);
            }
        }
        tracing::info!(identity = %election.identity, "acquired the leader lease");
        leadership = Some((is_leader, task));
    }
    health.ready.store(true, Ordering::Relaxed);

    let secrets: Api<KubeSecret> = match &config.namespace {
        Some(ns) => Api::namespaced(kube_client.clone(), ns),
        None => Api::all(kube_client.clone()),
    };
    let controllers = async {
        tokio::join!(
            run_controller(
                api::<AccessListConfig>(&kube_client, &config.namespace),
                secrets.clone(),
                ctx.clone(),
                config.concurrency,
                |ctx, store| {
                    let _ = ctx.access_lists.set(store);
                },
            ),
            run_controller(
                api::<PullZoneCertificate>(&kube_client, &config.namespace),
                secrets.clone(),
                ctx.clone(),
                config.concurrency,
                |_, _| {},
            ),
            run_controller(
                api::<ContainerAppWatch>(&kube_client, &config.namespace),
                secrets.clone(),
                ctx.clone(),
                config.concurrency,
                |_, _| {},
            ),
        );
    };
    tracing::info!("controllers started");
    match leadership {
        Some((mut is_leader, _task)) => {
            let lost = async move {
                while *is_leader.borrow_and_update() {
                    if is_leader.changed().await.is_err() {
                        break;
                    }
                }
            };
            tokio::select! {
                () = controllers => Ok(()),
                () = lost => Err(RunError::LostLease),
                served = server => served.unwrap_or(Ok(())),
            }
        }
        None => tokio::select! {
            () = controllers => Ok(()),
            served = server => served.unwrap_or(Ok(())),
        },
    }
}
