//! One controller per kind: its watch, the Secret changes that requeue the objects
//! referencing a Secret, the error backoff, and what a deleted object leaves.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures::future::Either;
use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{WatchEvent, WatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource};

use super::list_gate::ListGate;
use super::secret_watch::SecretWatch;
use super::server::Health;
use super::shutdown::Shutdown;
use crate::controller::framework::pipeline::driver;
use crate::controller::framework::pipeline::kind::{Failure, Now, Reconcilable, Reconciler, Runner, SecretChanges};
use crate::controller::framework::pipeline::object::keep_what_is_read_of;
use crate::fairness::FairQueue;
use crate::resources::object_key;

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
fn report_controller_event<K: Reconcilable>(
    result: Result<(ObjectRef<K>, Action), controller::Error<Failure<K>, watcher::Error>>,
    health: &Health,
    failing: &AtomicBool,
) {
    match result {
        Err(controller::Error::QueueError(error)) => {
            health.watch_failed(failing);
            tracing::error!(kind = K::kind_name(), %error, "the watch of this kind fails; /readyz reports it");
        }
        Err(error) => tracing::debug!(%error, "controller event"),
        Ok(_) => health.watch_recovered(failing),
    }
}

/// Forgets the metrics and failure counts of a deleted object (objects without a
/// finalizer are never reconciled once deleted), and at the end of every list those of
/// the objects it no longer holds (deleted while the watch was away).
fn forget_deleted<K: Reconcilable>(
    reconciler: &Reconciler<K>,
    event: &Result<watcher::Event<K>, watcher::Error>,
    store: &Store<K>,
) {
    let shared = &reconciler.shared;
    match event {
        Ok(watcher::Event::Delete(object)) => forget::<K>(reconciler, object),
        Ok(watcher::Event::InitDone) => {
            let held = |namespace: &str, name: &str| store.get(&ObjectRef::new(name).within(namespace)).is_some();
            shared.metrics.forget_all_but(K::kind_name(), held);
            let listed: HashSet<String> = store.state().iter().map(|object| object_key(object.as_ref())).collect();
            let prefix = format!("{}/", K::kind_name());
            shared
                .failures
                .retain(|key| !key.starts_with(&prefix) || listed.contains(key));
        }
        _ => {}
    }
}

/// Forgets what the operator keeps of a deleted object (its metrics and failure count).
fn forget<K: Reconcilable>(reconciler: &Reconciler<K>, object: &K) {
    let shared = &reconciler.shared;
    shared.metrics.forget(
        K::kind_name(),
        &object.namespace().unwrap_or_default(),
        &object.name_any(),
    );
    shared.failures.forget(&object_key(object));
}

/// Objects of a kind whose credentials come from `secret` (only its metadata is
/// watched: Secret data is never cached).
fn referencing<K: Reconcilable>(store: &Store<K>, secret: &PartialObjectMeta<Secret>) -> Vec<ObjectRef<K>> {
    store
        .state()
        .iter()
        .filter(|o| {
            // Compared in place: every Secret change scans every object of the kind.
            o.meta().namespace == secret.metadata.namespace
                && o.secret_ref()
                    .is_some_and(|r| Some(&r.name) == secret.metadata.name.as_ref())
        })
        .map(|o| ObjectRef::from_obj(o.as_ref()))
        .collect()
}

fn error_policy<K: Reconcilable>(object: Arc<K>, error: &Failure<K>, reconciler: Arc<Reconciler<K>>) -> Action {
    let failures = reconciler.shared.failures.failed(object_key(object.as_ref()));
    let reason = error.reason();
    let delay = retry_delay(object.as_ref(), &reconciler.settings, failures, error, &Now::current());
    tracing::warn!(
        kind = K::kind_name(),
        namespace = object.namespace().as_deref().unwrap_or_default(),
        name = %object.name_any(),
        %reason,
        %error,
        ?delay,
        "reconcile failed"
    );
    Action::requeue(delay)
}

/// How long an object waits after its `failures`-th failure in a row: the error backoff,
/// for a transient failure never past what its kind allows ([`Reconcilable::retry_by`]),
/// never before the platform's `Retry-After`.
fn retry_delay<K: Reconcilable>(
    object: &K,
    settings: &K::Settings,
    failures: u32,
    error: &Failure<K>,
    now: &Now,
) -> Duration {
    let transient = error.is_transient(K::is_terminal);
    let backoff = Failure::<K>::delay(failures, transient, now.jitter);
    // Only a transient failure is retried sooner: one that waits for a person (a claimed
    // configuration, a refused key) keeps its backoff, whatever the poll interval.
    let bounded = match object.retry_by(settings, now.time) {
        Some(by) if transient => backoff.min(by),
        _ => backoff,
    };
    bounded.max(error.retry_after().unwrap_or_default())
}

/// Holds the objects of a list (at start, and at every relist after a watch gap) back
/// until the list ends: the reflector's store takes a list's objects all at once when
/// it ends, and a reconcile triggered before then finds no object and is dropped, so an
/// object created while the watch was down would wait for its next change. Only their
/// references are held; each is handed on, one at a time, as the store holds it.
fn once_stored<K>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    store: Store<K>,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let mut listed: Vec<ObjectRef<K>> = Vec::new();
    events.flat_map(move |event| match event {
        Ok(watcher::Event::InitApply(object)) => {
            listed.push(ObjectRef::from_obj(&object));
            Either::Left(stream::iter(None))
        }
        Ok(watcher::Event::InitDone) => {
            let store = store.clone();
            let stored = std::mem::take(&mut listed)
                .into_iter()
                .filter_map(move |reference| store.get(&reference))
                .map(|object| Ok(watcher::Event::Apply(object.as_ref().clone())));
            Either::Right(stream::iter(
                std::iter::once(Ok(watcher::Event::InitDone)).chain(stored),
            ))
        }
        Ok(watcher::Event::Init) => {
            listed.clear();
            Either::Left(stream::iter(Some(Ok(watcher::Event::Init))))
        }
        other => Either::Left(stream::iter(Some(other))),
    })
}

/// The largest object the apiserver stores (etcd's request limit, 1.5 MiB): what one
/// object, all a tenant wrote on it included, may weigh.
const LARGEST_OBJECT_BYTES: u32 = 3 << 19;

/// The most one page of a list may weigh: a page is decoded whole before its objects
/// are trimmed.
const LIST_PAGE_BYTES: u32 = 6 << 20;

/// Objects per answer of an initial list (and of every relist) of a kind, of the Secret
/// metadata watch and of the carry-over, when the apiserver cannot stream it: as many
/// of the largest objects as fit in `LIST_PAGE_BYTES`.
pub const LIST_PAGE_SIZE: u32 = LIST_PAGE_BYTES / LARGEST_OBJECT_BYTES;

/// A label selector no object carries: the probe of streamed lists reads no object
/// (the benchmark tells its watch from the real ones by it).
pub const NO_OBJECT: &str = "edgeplatform.io/initial-list-probe=none";

/// How the apiserver hands the operator a kind's objects, at start and at every relist.
/// Either way the full form of every object is never held at once: each object, or
/// each page, is trimmed to what is read before the next arrives. A list from any
/// version (`resourceVersion=0`) would come whole from the apiserver's cache, whatever
/// the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InitialList {
    /// One watch event per object (`sendInitialEvents`, the WatchList feature: on by
    /// default in Kubernetes 1.32 and from 1.34 on): what a tenant's object carries
    /// (up to the apiserver's 1.5 MiB) is held one object at a time.
    Streamed,
    /// Pages of [`LIST_PAGE_SIZE`] objects of the most recent version (1.30, 1.31 and
    /// 1.33 by default, or with `--feature-gates=WatchList=false`): a page of the
    /// largest objects a tenant can write is held until it is trimmed.
    Paged,
}

impl InitialList {
    /// Asks the apiserver with a watch that matches no object: streamed when it
    /// answers the bookmark that ends the initial events, paged on anything else.
    pub(super) async fn probe<K>(api: &Api<K>) -> Self
    where
        K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let probe = WatchParams::streaming_lists().labels(NO_OBJECT).timeout(1);
        let first = tokio::time::timeout(PROBE_WITHIN, async {
            match api.watch(&probe, "0").await {
                Ok(events) => events.boxed().next().await,
                Err(error) => Some(Err(error)),
            }
        })
        .await;
        match first.ok().flatten() {
            Some(Ok(WatchEvent::Bookmark(bookmark)))
                if bookmark.metadata.annotations.contains_key(INITIAL_EVENTS_END) =>
            {
                Self::Streamed
            }
            other => {
                tracing::info!(answer = ?other.map(|event| event.map(|_| "an event")), "the apiserver streams no initial list; listing in pages");
                Self::Paged
            }
        }
    }

    /// The gate the watches of a process share: one list at a time where they are
    /// paged, none where they stream.
    pub(super) fn gate(self) -> ListGate {
        match self {
            Self::Streamed => ListGate::default(),
            Self::Paged => ListGate::one_at_a_time(),
        }
    }

    pub(super) fn watch_config(self, label_selector: Option<&str>) -> watcher::Config {
        let watch = match self {
            Self::Streamed => watcher::Config::default().streaming_lists(),
            Self::Paged => watcher::Config::default().page_size(LIST_PAGE_SIZE),
        };
        match label_selector {
            Some(selector) => watch.labels(selector),
            None => watch,
        }
    }
}

/// A kind's reconcile turns: `concurrency` seats, each freed one handed to the waiting
/// namespace that holds the fewest ([`FairQueue`]), so a namespace with thousands of
/// objects due gets no more turns than one with a single object while both have work. An object reconciles as the watch
/// holds it when its turn comes, not as it was when it became due.
struct FairTurns<K: Reconcilable> {
    seats: Arc<FairQueue>,
    store: Store<K>,
}

impl<K: Reconcilable> FairTurns<K> {
    fn reconcile(
        &self,
        due: Arc<K>,
        reconciler: Arc<Reconciler<K>>,
    ) -> impl Future<Output = Result<Action, Failure<K>>> + Send + use<K> {
        let (seats, store) = (self.seats.clone(), self.store.clone());
        async move {
            let namespace = due.namespace().unwrap_or_default();
            let _seat = seats.enter(&namespace).await;
            reconciler
                .shared
                .metrics
                .reconcile_waiting(K::kind_name(), seats.waiting());
            // Gone from the watch while it waited: deleted (an object with our finalizer
            // stays until its clean-up removes it), nothing left to reconcile.
            let Some(object) = store.get(&ObjectRef::from_obj(due.as_ref())) else {
                return Ok(Action::await_change());
            };
            // Boxed: what waits for a turn holds a few references, not a reconcile's state.
            let result = Box::pin(driver::reconcile::<K>(object.clone(), reconciler.clone())).await;
            // Deleted while it ran: what the reconcile recorded of it came after its
            // Delete, so it is forgotten again, and nothing is left to retry.
            if store.get(&ObjectRef::from_obj(object.as_ref())).is_none() {
                forget::<K>(&reconciler, object.as_ref());
                K::on_watch(&reconciler.state, &watcher::Event::Delete(object.as_ref().clone()));
                return Ok(Action::await_change());
            }
            result
        }
    }
}

/// One turn in this many is kept for namespaces that hold none (none below 16 turns):
/// a namespace whose objects hold every other turn for long (polls waiting for the
/// platform quota) leaves another namespace's object a turn at once.
const RESERVED_TURNS_SHARE: usize = 16;

/// How long the controller remembers what it last saw of an object (its generation,
/// annotations and finalizers): deletes never reach that memory, so objects created
/// and deleted in a loop are held this long at most. An object unseen for longer is
/// reconciled once more at its next change.
const PREDICATE_MEMORY: Duration = Duration::from_secs(300);

/// How long the probe of streamed lists may take.
const PROBE_WITHIN: Duration = Duration::from_secs(10);

/// The annotation of the bookmark that ends a watch's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// What every kind's controller starts with.
pub(super) struct Controllers<'a> {
    pub client: &'a kube::Client,
    /// The namespace watched (all when `None`).
    pub namespace: &'a Option<String>,
    /// The labels of the objects watched (all when `None`); Secrets are watched whole.
    pub label_selector: Option<&'a str>,
    pub health: &'a Arc<Health>,
    pub shutdown: &'a Shutdown,
    /// How the apiserver hands over initial objects: one apiserver serves every kind.
    pub initial_list: InitialList,
    /// What every paged list waits for (the Secret watch's too).
    pub list_gate: ListGate,
    /// The Secret watch every kind subscribes to.
    pub secret_watch: &'a SecretWatch,
    /// Reconciles at once per kind: `--concurrency` of those that write, ...
    pub reconciles: u16,
    /// ... `--poll-concurrency` of those that poll.
    pub polls: u16,
}

impl Runner for Controllers<'_> {
    fn api<K: Reconcilable>(&self) -> Api<K> {
        api::<K>(self.client, self.namespace)
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn watch_config(&self) -> watcher::Config {
        self.initial_list.watch_config(self.label_selector)
    }

    fn secret_changes(&self) -> SecretChanges {
        self.secret_watch.subscribe()
    }

    fn secrets(&self) -> Store<PartialObjectMeta<Secret>> {
        self.secret_watch.store()
    }

    fn stopping(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.shutdown.clone().requested()
    }

    async fn run<K: Reconcilable>(&self, reconciler: Arc<Reconciler<K>>, secret_changes: SecretChanges) {
        let concurrency = if K::POLLS { self.polls } else { self.reconciles };
        // Only changes of generation (spec, deletion), annotations (paused, requests) and
        // finalizers trigger a reconcile; the operator's own status writes do not.
        let (reader, writer) = kube::runtime::reflector::store();
        let failing = Arc::new(AtomicBool::new(false));
        let objects = api::<K>(self.client, self.namespace);
        tracing::info!(kind = K::kind_name(), initial_list = ?self.initial_list, "watching");
        let events = self
            .list_gate
            .guard(watcher::watcher(objects, self.watch_config()).boxed())
            .default_backoff()
            .modify(keep_what_is_read_of::<K>)
            .reflect(writer)
            .inspect({
                let (reconciler, health, failing) = (reconciler.clone(), self.health.clone(), failing.clone());
                let store = reader.clone();
                move |event| {
                    // A watch that answers again is healthy, whether or not an object of
                    // this kind exists to reconcile.
                    if let Ok(event) = event {
                        health.watch_recovered(&failing);
                        K::on_watch(&reconciler.state, event);
                    }
                    forget_deleted(&reconciler, event, &store);
                }
            });
        let stream = once_stored(events, reader.clone()).applied_objects().predicate_filter(
            predicates::generation
                .combine(predicates::annotations)
                .combine(predicates::finalizers),
            PredicateConfig::default().ttl(PREDICATE_MEMORY),
        );
        let controller = Controller::for_stream(stream, reader);
        let store = controller.store();
        let turns = FairTurns {
            seats: Arc::new(FairQueue::with_reserved(
                concurrency.into(),
                usize::from(concurrency) / RESERVED_TURNS_SHARE,
            )),
            store: store.clone(),
        };
        controller
            .watches_shared_stream(secret_changes, move |secret| referencing(&store, &secret))
            // Every due object starts at once and waits for its turn in `turns`: the
            // controller's own limit would serve them first come, first served.
            .with_config(controller::Config::default().concurrency(0))
            .graceful_shutdown_on(self.shutdown.clone().requested())
            .run(
                move |object, reconciler| turns.reconcile(object, reconciler),
                error_policy,
                reconciler,
            )
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
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::ResourceExt;
    use kube::runtime::watcher::{InitialListStrategy, ListSemantic};
    use serde_json::json;

    use super::*;
    use crate::controller::framework::mock_apiserver;
    use crate::controller::kinds::access_list::resource::AccessListConfig;

    async fn probed(status: u16, answer: serde_json::Value) -> (InitialList, String) {
        let (sent, seen) = std::sync::mpsc::channel();
        let client = mock_apiserver::client(move |request, _| {
            let _ = sent.send(request.uri.to_string());
            (status, answer.clone())
        });
        let probed = InitialList::probe(&Api::<AccessListConfig>::all(client)).await;
        (probed, seen.recv().unwrap_or_default())
    }

    #[tokio::test]
    async fn an_apiserver_that_streams_initial_events_is_watched_so_and_one_that_does_not_is_listed_in_pages() {
        let end = json!({"type": "BOOKMARK", "object": {
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
            "metadata": {"resourceVersion": "7", "annotations": {INITIAL_EVENTS_END: "true"}}}});
        let (streamed, uri) = probed(200, end).await;
        assert_eq!(streamed, InitialList::Streamed);
        for asked in [
            "watch=true",
            "sendInitialEvents=true",
            "labelSelector=edgeplatform.io%2Finitial-list-probe%3Dnone",
        ] {
            assert!(uri.contains(asked), "{uri}");
        }

        let refused = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
            "reason": "Invalid", "message": "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"});
        assert_eq!(probed(422, refused).await.0, InitialList::Paged);
        let plain_bookmark = json!({"type": "BOOKMARK", "object": {
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig", "metadata": {"resourceVersion": "7"}}});
        assert_eq!(
            probed(200, plain_bookmark).await.0,
            InitialList::Paged,
            "no end of initial events"
        );
    }

    fn config_map(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("team".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[tokio::test]
    async fn every_object_listed_is_handed_on_once_the_store_holds_it() {
        let (reader, writer) = kube::runtime::reflector::store::<ConfigMap>();
        let (a, b, c) = (config_map("a"), config_map("b"), config_map("c"));
        let events = [
            watcher::Event::Init,
            watcher::Event::InitApply(a.clone()),
            watcher::Event::InitDone,
            watcher::Event::Apply(b.clone()),
            // A relist after a watch gap: c was created meanwhile, b deleted.
            watcher::Event::Init,
            watcher::Event::InitApply(a.clone()),
            watcher::Event::InitApply(c.clone()),
            watcher::Event::InitDone,
        ];
        let reflected = stream::iter(events.map(Ok)).reflect(writer);
        let mut handed_on = Box::pin(once_stored(reflected, reader.clone()));
        let mut names = Vec::new();
        while let Some(event) = handed_on.next().await {
            match event.expect("no watch error") {
                watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                    assert!(
                        reader.get(&ObjectRef::from_obj(&object)).is_some(),
                        "{} is handed on before the store holds it",
                        object.name_any()
                    );
                    names.push(object.name_any());
                }
                watcher::Event::Init | watcher::Event::InitDone | watcher::Event::Delete(_) => {}
            }
        }
        assert_eq!(names, ["a", "b", "a", "c"]);
    }

    #[test]
    fn a_failing_access_list_is_retried_by_its_zones_next_resync_unless_the_platform_asks_to_wait() {
        use crate::api::{ApiError, PlatformMessage};
        use crate::controller::framework::reasons::error::ReconcileError;
        use crate::controller::kinds::access_list::{AccessListSettings, SecretFinalizer};

        let settings = AccessListSettings {
            resync: Duration::from_secs(600),
            min_poll_interval: Duration::from_secs(5),
            protect_secrets: true,
            secret_finalizer: SecretFinalizer::default(),
            carry_over_record: None,
        };
        let object = |policy: &str, poll: &str| -> AccessListConfig {
            serde_json::from_value(json!({
                "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
                "metadata": {"name": "observer", "namespace": "team",
                             "annotations": {"edgeplatform.io/poll-interval": poll}},
                "spec": {"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "managementPolicy": policy},
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let down: Failure<AccessListConfig> = ReconcileError::Platform(ApiError::Transport("down".into()));
        let start = chrono::DateTime::from_timestamp_millis(1_800_000_000_000).unwrap_or_default();
        let (observer, manager) = (object("Observe", "5s"), object("Manage", "10m"));
        let mut resync_instants = std::collections::BTreeSet::new();
        for step in 0..20i64 {
            let now = Now {
                time: start + chrono::Duration::milliseconds(step * 1_237),
                jitter: 1.0,
            };
            let delay = retry_delay(&observer, &settings, 30, &down, &now);
            assert!(delay <= Duration::from_secs(5), "30 failures in a row: {delay:?}");
            resync_instants.insert((now.millis() + i64::try_from(delay.as_millis()).unwrap_or(0)) % 5_000);
            assert_eq!(
                retry_delay(&manager, &settings, 1, &down, &now),
                Duration::from_secs(5),
                "a shorter backoff still holds"
            );
        }
        assert_eq!(resync_instants.len(), 1, "retries on the zone's resync instants");
        let limited: Failure<AccessListConfig> = ReconcileError::Platform(ApiError::RateLimited {
            retry_after: Some(Duration::from_secs(60)),
            message: PlatformMessage {
                message: "slow down".into(),
                field: None,
                error_key: None,
            },
        });
        let now = Now {
            time: start,
            jitter: 1.0,
        };
        assert_eq!(
            retry_delay(&observer, &settings, 1, &limited, &now),
            Duration::from_secs(60)
        );
        let refused: Failure<AccessListConfig> = ReconcileError::Platform(ApiError::Unauthorized(PlatformMessage {
            message: "no".into(),
            field: None,
            error_key: None,
        }));
        assert!(
            retry_delay(&observer, &settings, 30, &refused, &now) > Duration::from_secs(60),
            "a failure that waits for a person keeps its backoff at the 5 s floor"
        );
    }

    #[test]
    fn a_kind_is_streamed_or_listed_in_pages_of_the_most_recent_version() {
        for selector in [None, Some("team=a")] {
            let paged = InitialList::Paged.watch_config(selector);
            assert_eq!(paged.page_size, Some(LIST_PAGE_SIZE));
            assert_eq!(paged.list_semantic, ListSemantic::MostRecent);
            assert_eq!(paged.initial_list_strategy, InitialListStrategy::ListWatch);
            assert_eq!(paged.label_selector.as_deref(), selector);
            let streamed = InitialList::Streamed.watch_config(selector);
            assert_eq!(streamed.initial_list_strategy, InitialListStrategy::StreamingList);
            assert_eq!(streamed.label_selector.as_deref(), selector);
        }
    }
}
