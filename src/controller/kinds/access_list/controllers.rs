//! What runs beside the controller of AccessListConfigs: the claim records (renamed and
//! carried over from the previous release before the first reconcile, then followed),
//! and the Secret in-use protection, which keeps the in-use finalizer on each Secret
//! exactly while a live AccessListConfig may need it for a restore.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::Store;

use super::claims::ClaimRecords;
use super::resource::AccessListConfig;
use super::secret_protection::{ProtectionChange, change_protection};
use crate::controller::framework::extend::{Reconciler, Runner};
use crate::controller::framework::prelude::Failure;
use crate::fairness::FairQueue;

/// Reconciles of Secret protection at once, handed to namespaces in turn: each decides
/// from the caches, and writes at most one PATCH.
const PROTECTION_CONCURRENCY: usize = 4;

/// How soon a Secret is looked at again when the objects are not listed yet, or after
/// a failure.
const PROTECTION_RETRY: Duration = Duration::from_secs(5);

/// The controller of AccessListConfigs, once the claim records are renamed, carried
/// over and listed, beside the Secret protection and the claims' watch.
pub(super) fn run<'a, R: Runner>(reconciler: Arc<Reconciler<AccessListConfig>>, runner: &'a R) -> BoxFuture<'a, ()> {
    let secret_changes = runner.secret_changes();
    let protection = protect_secrets(
        reconciler.clone(),
        runner.secret_changes(),
        runner.secrets(),
        runner.namespace().map(str::to_string),
        runner.stopping(),
    );
    let claims = reconciler.clone();
    let follow = async move {
        let shared = &claims.shared;
        let platform = shared.access_keys.platform_url();
        claims
            .state
            .claims
            .follow(shared.kube.clone(), platform, runner.stopping())
            .await;
    };
    let controller = async move {
        let shared = &reconciler.shared;
        let platform = shared.access_keys.platform_url();
        ClaimRecords::rename_all_respelled(&shared.kube, platform).await;
        let record = reconciler.settings.carry_over_record.as_ref();
        let objects = runner.api::<AccessListConfig>();
        let carried = ClaimRecords::carry_over(&shared.kube, platform, record, &objects, &runner.watch_config()).await;
        if carried > 0 {
            tracing::info!(
                carried,
                "recorded the owners of access-list configurations of the previous release"
            );
        }
        reconciler.state.claims.listed().await;
        runner.run(reconciler, secret_changes).await;
    };
    async move {
        tokio::join!(controller, protection, follow);
    }
    .boxed()
}

/// Runs the Secret in-use protection: each Secret that changes, or whose need the
/// AccessListConfig watch saw change, keeps the finalizer exactly while needed. Only
/// Secrets of the `watched` namespace are judged: the objects of others are unknown.
/// With `--protect-secrets=false` no Secret is ever patched; the changes are still
/// taken, so the shared watch never waits for this subscriber.
async fn protect_secrets(
    access_lists: Arc<Reconciler<AccessListConfig>>,
    secret_changes: impl Stream<Item = Arc<PartialObjectMeta<Secret>>> + Send + 'static,
    secrets: Store<PartialObjectMeta<Secret>>,
    watched: Option<String>,
    stopping: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let needs_changed = access_lists.state.secret_triggers.take();
    let Some(needs_changed) = needs_changed.filter(|_| access_lists.settings.protect_secrets) else {
        secret_changes.for_each(|_| std::future::ready(())).await;
        return;
    };
    let secret_changes =
        secret_changes.filter(move |secret| std::future::ready(watched.is_none() || secret.namespace() == watched));
    // Every due Secret starts at once and waits for its namespace's turn: a tenant
    // whose Secrets keep changing delays another's by one reconcile per seat.
    let seats = Arc::new(FairQueue::new(PROTECTION_CONCURRENCY));
    let in_turn = move |secret: Arc<PartialObjectMeta<Secret>>, reconciler| {
        let seats = seats.clone();
        async move {
            let _seat = seats.enter(&secret.namespace().unwrap_or_default()).await;
            protect(secret, reconciler).await
        }
    };
    Controller::for_shared_stream(secret_changes, secrets)
        .reconcile_on(needs_changed)
        .with_config(controller::Config::default().concurrency(0))
        .graceful_shutdown_on(stopping)
        .run(in_turn, protection_failed, access_lists)
        .for_each(|_| std::future::ready(()))
        .await;
}

/// Keeps the in-use finalizer on `secret` exactly while some live object needs it.
/// Nothing is removed before every AccessListConfig has been listed once.
async fn protect(
    secret: Arc<PartialObjectMeta<Secret>>,
    reconciler: Arc<Reconciler<AccessListConfig>>,
) -> Result<Action, Failure<AccessListConfig>> {
    let shared = &reconciler.shared;
    if !shared.leader.may_act() {
        return Err(Failure::<AccessListConfig>::NotLeader);
    }
    let needs = &reconciler.state.secret_needs;
    if !needs.listed().await {
        return Ok(Action::requeue(PROTECTION_RETRY));
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
fn protection_failed(
    secret: Arc<PartialObjectMeta<Secret>>,
    error: &Failure<AccessListConfig>,
    _kind: Arc<Reconciler<AccessListConfig>>,
) -> Action {
    tracing::warn!(namespace = ?secret.namespace(), secret = %secret.name_any(), %error, "Secret protection failed");
    Action::requeue(PROTECTION_RETRY)
}
