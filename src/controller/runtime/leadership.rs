//! Leadership through the leader Lease: acquiring it, the watchdog that confirms or
//! revokes the leader gate while it is held, noticing its loss, and releasing it on the
//! way out.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::shutdown::{self, Shutdown};
use super::{LeaderElection, RunError};
use crate::controller::framework::services::leader::{self, Standing};
use crate::controller::framework::services::shared::Shared;

type ManagerTask = JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>;

/// The leader Lease, held by this process.
pub(super) struct Leadership {
    is_leader: watch::Receiver<bool>,
    manager: ManagerTask,
    watchdog: JoinHandle<()>,
}

impl Leadership {
    /// Waits until this process holds the Lease: `None` when shutdown came first (the
    /// Lease then released if it was just won).
    pub(super) async fn acquire(
        client: &kube::Client,
        election: &LeaderElection,
        shared: &Arc<Shared>,
        shutdown: &Shutdown,
    ) -> Result<Option<Self>, RunError> {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), &election.lease_name)
            .with_namespace(&election.lease_namespace)
            .with_identity(&election.identity)
            .with_duration(election.lease_duration.as_secs().max(2))
            // Renew every half of the gate's usable time (see `leader`).
            .with_grace(leader::renewal_grace(election.lease_duration))
            .build()
            .await?;
        let (mut is_leader, manager) = manager.watch().await;
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
                release_lease(is_leader, manager).await;
                return Ok(None);
            }
        };
        if !acquired {
            return Err(RunError::LostLease);
        }
        tracing::info!(identity = %election.identity, "acquired the leader lease");
        shared.leader.confirm();
        let watchdog = tokio::spawn(watch_lease(client.clone(), election.clone(), shared.clone()));
        Ok(Some(Self {
            is_leader,
            manager,
            watchdog,
        }))
    }

    /// Resolves when the Lease is lost: the lease manager says so, or the watchdog saw
    /// another holder.
    pub(super) async fn lost(&mut self) {
        let is_leader = &mut self.is_leader;
        let manager_says = async {
            while *is_leader.borrow_and_update() {
                if is_leader.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            () = manager_says => {}
            _ = &mut self.watchdog => {}
        }
    }

    /// Releases the Lease, so a standby takes over at once.
    pub(super) async fn release(self) {
        self.watchdog.abort();
        release_lease(self.is_leader, self.manager).await;
    }
}

/// Confirms leadership while the Lease shows this process as its holder with a recent
/// renewal; revokes it otherwise. Returns when another process holds the Lease.
async fn watch_lease(client: kube::Client, election: LeaderElection, shared: Arc<Shared>) {
    let leases: Api<Lease> = Api::namespaced(client, &election.lease_namespace);
    let every = leader::check_every(election.lease_duration);
    let mut wait = every;
    loop {
        tokio::time::sleep(wait).await;
        let lease = match leases.get(&election.lease_name).await {
            Ok(lease) => lease,
            Err(error) => {
                tracing::warn!(%error, "cannot read the leader Lease");
                wait = every;
                continue;
            }
        };
        let spec = lease.spec.unwrap_or_default();
        let standing = leader::standing(&spec, &election.identity, election.lease_duration, chrono::Utc::now());
        match &standing {
            Standing::Held { remaining } => shared.leader.confirm_for(*remaining),
            Standing::Lapsed { renewed } => {
                shared.leader.revoke();
                tracing::warn!(?renewed, "the leader Lease is not being renewed; acting has stopped");
            }
            Standing::Lost { holder } => {
                shared.leader.revoke();
                tracing::error!(?holder, "another operator holds the leader Lease; stopping");
                return;
            }
        }
        wait = leader::next_check(election.lease_duration, &standing);
    }
}

/// Closes the lease manager's channel, which makes it release the Lease if held, so a
/// standby takes over at once instead of after the lease duration. Bounded: the
/// apiserver may already be gone.
async fn release_lease(is_leader: watch::Receiver<bool>, task: ManagerTask) {
    drop(is_leader);
    match tokio::time::timeout(shutdown::LEASE_RELEASE_GRACE, task).await {
        Ok(Ok(Ok(_))) => tracing::info!("leader Lease released"),
        Ok(Ok(Err(error))) => tracing::warn!(%error, "could not release the leader Lease; it expires by itself"),
        Ok(Err(_)) | Err(_) => tracing::warn!("the leader Lease was not released in time; it expires by itself"),
    }
}
