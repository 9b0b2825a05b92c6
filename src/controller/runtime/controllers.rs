//! One controller per kind: its watch, the Secret changes that requeue the objects
//! referencing a Secret, the error backoff, and what a deleted object leaves.

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
use crate::controller::framework::kind::{Failure, KindContext, Reconciled};
use crate::controller::framework::object::{keep_what_is_read, object_key};

pub(super) fn api<K>(client: &kube::Client, namespace: &Option<String>) -> Api<K>
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

/// Forgets the metrics and failure counts of a deleted object (objects without a
/// finalizer are never reconciled once deleted).
fn forget_deleted<K: Reconciled>(kind: &KindContext<K>, event: &Result<watcher::Event<K>, watcher::Error>) {
    if let Ok(watcher::Event::Delete(object)) = event {
        let ctx = &kind.shared;
        ctx.metrics
            .forget(K::KIND, &object.namespace().unwrap_or_default(), &object.name_any());
        ctx.failures.forget(&object_key(object));
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
    tracing::warn!(name = %object.name_any(), reason = error.reason(), %error, ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// Objects per answer of a kind's initial list (and of every relist).
pub const LIST_PAGE_SIZE: u32 = 500;

/// How a kind is watched: listed in pages of [`LIST_PAGE_SIZE`], each page trimmed to
/// what is read before the next is asked for, so that the full form of every object is
/// never held at once. A list from any version (`resourceVersion=0`) would come whole
/// from the apiserver's cache, whatever the page size.
fn watch_config(label_selector: Option<&str>) -> watcher::Config {
    let watch = watcher::Config::default().page_size(LIST_PAGE_SIZE);
    match label_selector {
        Some(selector) => watch.labels(selector),
        None => watch,
    }
}

/// What every kind's controller starts with.
pub(super) struct Controllers<'a> {
    pub client: &'a kube::Client,
    /// The namespace watched (all when `None`).
    pub namespace: &'a Option<String>,
    /// The labels of the objects watched (all when `None`); Secrets are watched whole.
    pub label_selector: Option<&'a str>,
    pub health: &'a Arc<Health>,
    pub shutdown: &'a Shutdown,
}

impl Controllers<'_> {
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
        let stream = watcher::watcher(api::<K>(self.client, self.namespace), watch_config(self.label_selector))
            .default_backoff()
            .modify(|object: &mut K| keep_what_is_read(object.meta_mut(), K::FINALIZER))
            .reflect(writer)
            .inspect({
                let (kind, health, failing) = (kind.clone(), self.health.clone(), failing.clone());
                move |event| {
                    // A watch that answers again is healthy, whether or not an object of
                    // this kind exists to reconcile.
                    if let Ok(event) = event {
                        health.watch_recovered(&failing);
                        K::on_watch(&kind.state, event);
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
}

#[cfg(test)]
mod tests {
    use kube::runtime::watcher::{InitialListStrategy, ListSemantic};

    use super::*;

    #[test]
    fn a_kind_is_listed_in_pages_of_the_most_recent_version() {
        for selector in [None, Some("team=a")] {
            let watch = watch_config(selector);
            assert_eq!(watch.page_size, Some(LIST_PAGE_SIZE));
            assert_eq!(watch.list_semantic, ListSemantic::MostRecent);
            assert_eq!(watch.initial_list_strategy, InitialListStrategy::ListWatch);
            assert_eq!(watch.label_selector.as_deref(), selector);
        }
    }
}
