//! The Secret in-use protection controller: each Secret that changes, or whose need the
//! AccessListConfig watch saw change, keeps the in-use finalizer exactly while a live
//! AccessListConfig may need it for a restore.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::Store;

use super::controllers::Controllers;
use super::secret_watch::{SecretChanges, SecretMeta};
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::kind::{Failure, Reconciler};
use crate::controller::kinds::AccessListConfig;
use crate::controller::kinds::access_list::{ProtectionChange, change_protection};
use crate::fairness::FairQueue;

/// Reconciles of Secret protection at once, handed to namespaces in turn: each decides
/// from the caches, and writes at most one PATCH.
const CONCURRENCY: usize = 4;

/// How soon a Secret is looked at again when the objects are not listed yet, or after
/// a failure.
const RETRY: Duration = Duration::from_secs(5);

impl Controllers<'_> {
    /// Runs the Secret in-use protection: each Secret that changes, or whose need the
    /// AccessListConfig watch saw change, keeps the finalizer exactly while needed. Only
    /// Secrets of the watched namespace are judged: the objects of others are unknown.
    /// With `--protect-secrets=false` no Secret is ever patched; the changes are still
    /// taken, so the shared watch never waits for this subscriber.
    pub(super) async fn protect_secrets(
        &self,
        access_lists: Arc<Reconciler<AccessListConfig>>,
        secret_changes: SecretChanges,
        secrets: Store<SecretMeta>,
    ) {
        let needs_changed = access_lists.state.secret_triggers.take();
        let Some(needs_changed) = needs_changed.filter(|_| access_lists.settings.protect_secrets) else {
            secret_changes.for_each(|_| std::future::ready(())).await;
            return;
        };
        let watched = self.namespace.clone();
        let secret_changes =
            secret_changes.filter(move |secret| std::future::ready(watched.is_none() || secret.namespace() == watched));
        // Every due Secret starts at once and waits for its namespace's turn: a tenant
        // whose Secrets keep changing delays another's by one reconcile per seat.
        let seats = Arc::new(FairQueue::new(CONCURRENCY));
        let in_turn = move |secret: Arc<PartialObjectMeta<Secret>>, reconciler| {
            let seats = seats.clone();
            async move {
                let _seat = seats.enter(&secret.namespace().unwrap_or_default()).await;
                reconcile(secret, reconciler).await
            }
        };
        Controller::for_shared_stream(secret_changes, secrets)
            .reconcile_on(needs_changed)
            .with_config(controller::Config::default().concurrency(0))
            .graceful_shutdown_on(self.shutdown.clone().requested())
            .run(in_turn, error_policy, access_lists)
            .for_each(|_| std::future::ready(()))
            .await;
    }
}

/// Keeps the in-use finalizer on `secret` exactly while some live object needs it.
/// Nothing is removed before every AccessListConfig has been listed once.
async fn reconcile(
    secret: Arc<PartialObjectMeta<Secret>>,
    reconciler: Arc<Reconciler<AccessListConfig>>,
) -> Result<Action, Failure<AccessListConfig>> {
    let shared = &reconciler.shared;
    if !shared.leader.may_act() {
        return Err(ReconcileError::NotLeader);
    }
    let needs = &reconciler.state.secret_needs;
    if !needs.listed().await {
        return Ok(Action::requeue(RETRY));
    }
    let key = (secret.namespace().unwrap_or_default(), secret.name_any());
    let needed = needs.needs_secret(&key);
    let finalizer = &reconciler.settings.secret_finalizer;
    let protected = secret.finalizers().iter().any(|f| f == finalizer.as_str());
    if let Some(change) = ProtectionChange::of(needed, protected) {
        change_protection(&shared.kube, &key, change, finalizer).await?;
        tracing::info!(namespace = %key.0, secret = %key.1, ?change, "Secret in-use protection");
    }
    Ok(if needed || protected {
        Action::requeue(reconciler.settings.resync)
    } else {
        Action::await_change()
    })
}

/// A failed Secret reconcile is tried again after a short while.
fn error_policy(
    secret: Arc<PartialObjectMeta<Secret>>,
    error: &Failure<AccessListConfig>,
    _kind: Arc<Reconciler<AccessListConfig>>,
) -> Action {
    tracing::warn!(namespace = ?secret.namespace(), secret = %secret.name_any(), %error, "Secret protection failed");
    Action::requeue(RETRY)
}
