//! The leader Lease while this process holds it: the watchdog that confirms or revokes
//! the leader gate, and the release on the way out.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::LeaderElection;
use super::shutdown;
use crate::controller::framework::context::Context;
use crate::controller::framework::leader::{self, Standing};

/// Confirms leadership while the Lease shows this process as its holder with a recent
/// renewal; revokes it otherwise. Returns when another process holds the Lease.
pub(super) async fn watch_lease(client: kube::Client, election: LeaderElection, ctx: Arc<Context>) {
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

/// Closes the lease manager's channel, which makes it release the Lease if held, so a
/// standby takes over at once instead of after the lease duration. Bounded: the
/// apiserver may already be gone.
pub(super) async fn release_lease(
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
