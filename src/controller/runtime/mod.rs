//! The operator process: one controller per kind, Secret watches, leader election and
//! the metrics/health server.

pub mod check;
mod controllers;
mod lease;
mod server;
pub mod shutdown;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::runtime::events::{Recorder, Reporter};

use self::controllers::Wiring;
use self::lease::{release_lease, watch_lease};
use self::server::{Health, serve_health};
use self::shutdown::Shutdown;
use crate::api::{ClientConfig, Credentials as ApiCredentials, EdgeClient, Hooks, RetryPolicy, Secret, USER_AGENT};
use crate::controller::framework::backoff::Failures;
use crate::controller::framework::context::{Context, Settings};
use crate::controller::framework::credentials::{Credentials, DefaultKey, NamespaceSet};
use crate::controller::framework::leader::{self, LeaderGate};
use crate::controller::framework::metrics::Metrics;
use crate::controller::framework::status::MANAGER;
use crate::crd::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

/// Settings of `edge-operator run`.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub api_url: String,
    pub logging_url: String,
    /// File holding the operator's own key, read again when it changes.
    pub access_key_file: Option<std::path::PathBuf>,
    /// Watch only this namespace (all when `None`).
    pub namespace: Option<String>,
    pub concurrency: u16,
    /// ContainerAppWatch reconciles at once: high, because the controller's queue picks
    /// among due objects in no fair order once this is reached, while the platform
    /// quota serves waiting polls first come, first served.
    pub poll_concurrency: u16,
    pub metrics_addr: SocketAddr,
    /// Requests per second to the platform, all objects together (0: unlimited).
    pub platform_rate: u32,
    pub leader_election: Option<LeaderElection>,
    /// Namespaces whose objects may use the default key.
    pub default_key_namespaces: NamespaceSet,
    /// Namespaces whose Secrets objects may reference (and the operator may read).
    pub secret_namespaces: NamespaceSet,
    /// What the reconcilers read.
    pub settings: Settings,
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
        failures: Failures::default(),
        metrics: metrics.clone(),
        recorder: Recorder::new(kube_client.clone(), reporter),
        settings: config.settings.clone(),
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

    let wiring = Wiring {
        client: &kube_client,
        namespace: &config.namespace,
        secret_namespaces: &config.secret_namespaces,
        ctx: &ctx,
        health: &health,
        shutdown: &shutdown,
    };
    let controllers = async {
        tokio::join!(
            wiring.run::<AccessListConfig>(config.concurrency),
            wiring.run::<PullZoneCertificate>(config.concurrency),
            wiring.run::<ContainerAppWatch>(config.poll_concurrency),
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
