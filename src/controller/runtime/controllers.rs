//! One controller per kind: its watch, the Secret changes that requeue the objects
//! referencing a Secret, the error backoff, and what a deleted object leaves; and the
//! Secret in-use protection controller.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use futures::StreamExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource, ResourceExt};

use super::secret_watch::{SecretChanges, SecretMeta};
use super::server::Health;
use super::shutdown::Shutdown;
use crate::controller::framework::backoff::failure_delay;
use crate::controller::framework::driver;
use crate::controller::framework::object::{keep_what_is_read, object_key};
use crate::controller::framework::pipeline::{Failure, KindContext, Reconciled};
use crate::controller::framework::status::vocabulary::Word;
use crate::controller::kinds::access_list::{reconcile_secret, secret_error_policy};
use crate::crd::AccessListConfig;

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
    result: Result<(ObjectRef<K>, Action), controller::Error<Failure<K>, watcher::Error>>,
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

/// Forgets the metrics, failure counts and kind state of a deleted object (objects
/// without a finalizer are never reconciled once deleted).
fn forget_deleted<K: Reconciled>(kind: &KindContext<K>, event: &Result<watcher::Event<K>, watcher::Error>) {
    if let Ok(watcher::Event::Delete(object)) = event {
        let ctx = &kind.shared;
        ctx.metrics
            .forget(K::KIND, &object.namespace().unwrap_or_default(), &object.name_any());
        let key = object_key(object);
        ctx.failures.forget(&key);
        K::forget(&kind.state, &key);
    }
}

/// Objects of a kind whose credentials come from `secret` (only its metadata is
/// watched: Secret data is never cached).
fn referencing<K: Reconciled>(store: &Store<K>, secret: &SecretMeta) -> Vec<ObjectRef<K>> {
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

fn error_policy<K: Reconciled>(object: Arc<K>, error: &Failure<K>, kind: Arc<KindContext<K>>) -> Action {
    let failures = kind.shared.failures.failed(object_key(object.as_ref()));
    let delay = failure_delay(failures, error.is_transient(), rand::random::<f64>())
        .max(error.retry_after().unwrap_or_default());
    tracing::warn!(name = %object.name_any(), reason = error.reason().as_str(), %error, ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// What every kind's controller starts with.
pub(super) struct Wiring<'a> {
    pub client: &'a kube::Client,
    /// The namespace watched (all when `None`).
    pub namespace: &'a Option<String>,
    /// The labels of the objects watched (all when `None`); Secrets are watched whole.
    pub label_selector: Option<&'a str>,
    pub health: &'a Arc<Health>,
    pub shutdown: &'a Shutdown,
}

/// Reconciles of Secret protection at once: each decides from the caches, and writes
/// at most one PATCH.
const SECRET_PROTECTION_CONCURRENCY: u16 = 4;

impl Wiring<'_> {
    /// Runs the controller of kind `K`, `concurrency` reconciles at once, until shutdown.
    pub(super) async fn run<K: Reconciled>(
        &self,
        kind: Arc<KindContext<K>>,
        secret_changes: SecretChanges,
        concurrency: u16,
    ) {
        // Only changes of generation (spec, deletion), annotations (paused, requests) and
        // finalizers trigger a reconcile; the operator's own status writes do not.
        let (reader, writer) = kube::runtime::reflector::store();
        let failing = Arc::new(AtomicBool::new(false));
        let mut watch = watcher::Config::default().any_semantic();
        if let Some(selector) = self.label_selector {
            watch = watch.labels(selector);
        }
        let stream = watcher::watcher(api::<K>(self.client, self.namespace), watch)
            .default_backoff()
            .modify(|object: &mut K| keep_what_is_read(object.meta_mut()))
            .reflect(writer)
            .inspect({
                let (kind, health, failing) = (kind.clone(), self.health.clone(), failing.clone());
                move |event| {
                    // A watch that answers again is healthy, whether or not an object of
                    // this kind exists to reconcile.
                    if let Ok(event) = event {
                        health.watch_recovered(&failing);
                        K::follow(&kind.state, event);
                    }
                    forget_deleted(&kind, event);
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
            .watches_shared_stream(secret_changes, move |secret| referencing(&store, &secret))
            .with_config(controller::Config::default().concurrency(concurrency))
            .graceful_shutdown_on(self.shutdown.clone().requested())
            .run(driver::reconcile::<K>, error_policy, kind)
            .for_each(|result| {
                let health = self.health.clone();
                let failing = failing.clone();
                async move { report_controller_event::<K>(result, &health, &failing) }
            })
            .await;
    }

    /// Runs the Secret in-use protection: each Secret that changes, or whose need the
    /// AccessListConfig watch saw change, keeps the finalizer exactly while needed. Only
    /// Secrets of the watched namespace are judged: the objects of others are unknown.
    /// With `--protect-secrets=false` no Secret is ever patched; the changes are still
    /// taken, so the shared watch never waits for this subscriber.
    pub(super) async fn protect_secrets(
        &self,
        access_lists: Arc<KindContext<AccessListConfig>>,
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
        Controller::for_shared_stream(secret_changes, secrets)
            .reconcile_on(needs_changed)
            .with_config(controller::Config::default().concurrency(SECRET_PROTECTION_CONCURRENCY))
            .graceful_shutdown_on(self.shutdown.clone().requested())
            .run(reconcile_secret, secret_error_policy, access_lists)
            .for_each(|_| std::future::ready(()))
            .await;
    }
}
