//! What a kind implements ([`Reconcilable`]: one reconcile of a live object, its clean-up,
//! its state) and what a reconcile sees ([`Context`], [`Now`]); the status helpers every
//! kind's outcome shares (Ready, failures, the Events it publishes: [`Notice`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Api, CustomResourceExt, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use crate::api::{EdgeClient, bounded_text};
use crate::controller::framework::pipeline::plan::Verdict;
use crate::controller::framework::pipeline::status::conditions::NewCondition;
use crate::controller::framework::reasons::error::ReconcileError;
use crate::controller::framework::reasons::{AnyReason, KindReason};
use crate::controller::framework::services::shared::Shared;
use crate::resources::time::rfc3339;
use crate::resources::{EdgeObject, SecretKeyRef};

/// The time of a reconcile and a random draw in [0, 1) for jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Now {
    pub time: DateTime<Utc>,
    pub jitter: f64,
}

impl Now {
    pub(crate) fn current() -> Self {
        Self {
            time: Utc::now(),
            jitter: rand::random::<f64>(),
        }
    }

    pub(crate) fn rfc3339(&self) -> String {
        rfc3339(self.time)
    }

    pub(crate) fn millis(&self) -> i64 {
        self.time.timestamp_millis()
    }

    pub(crate) fn since_epoch(&self) -> Duration {
        crate::resources::time::since_epoch(self.time)
    }
}

/// A Kubernetes Event the driver publishes about the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notice<R> {
    pub warning: bool,
    pub reason: AnyReason<R>,
    pub message: String,
    /// The failure behind `reason`, when there is one.
    pub cause: Option<AnyReason<R>>,
}

impl<R: KindReason> Notice<R> {
    pub(crate) fn normal(reason: impl Into<AnyReason<R>>, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason: reason.into(),
            message: message.into(),
            cause: None,
        }
    }

    pub(crate) fn warning(reason: impl Into<AnyReason<R>>, message: impl Into<String>) -> Self {
        Self {
            warning: true,
            reason: reason.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The Event's action: what was done, and the cause a reason has. Events of one
    /// object, reason and action are counted as one series, so a new cause makes a new
    /// Event rather than a repeat of the old one.
    pub(crate) fn action(&self) -> String {
        match self.cause {
            Some(cause) => format!("Reconcile/{cause}"),
            None => "Reconcile".to_string(),
        }
    }
}

/// When to reconcile again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requeue {
    After(Duration),
    /// At this time (Unix ms), however long the reconcile took.
    At(i64),
    /// Only when the object (or a Secret it references) changes.
    OnChange,
}

/// What a reconcile reports: the kind's fields of the status and the conditions it
/// decided, which the driver alone merges into the object's (with generation and time).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome<S, R> {
    /// The status but its conditions: those the object shows are the driver's to keep.
    pub status: S,
    /// The conditions this pass decided; of two of one type, the later.
    pub conditions: Vec<NewCondition<R>>,
    pub events: Vec<Notice<R>>,
    pub requeue: Requeue,
}

impl<S, R> Outcome<S, R> {
    /// `status`, with nothing decided, no Events, and no reconcile again but on a change.
    pub(crate) fn new(status: S) -> Self {
        Self {
            status,
            conditions: Vec::new(),
            events: Vec::new(),
            requeue: Requeue::OnChange,
        }
    }

    /// With `conditions` decided, after those already.
    pub(crate) fn with_conditions(mut self, conditions: impl IntoIterator<Item = NewCondition<R>>) -> Self {
        self.conditions.extend(conditions);
        self
    }

    /// With `events` to publish, after those already.
    pub(crate) fn with_events(mut self, events: impl IntoIterator<Item = Notice<R>>) -> Self {
        self.events.extend(events);
        self
    }

    /// Reconciled again after `wait`.
    pub(crate) fn requeue_after(mut self, wait: Duration) -> Self {
        self.requeue = Requeue::After(wait);
        self
    }

    /// Reconciled again at `at_ms` (Unix ms), however long the reconcile took.
    pub(crate) fn requeue_at(mut self, at_ms: i64) -> Self {
        self.requeue = Requeue::At(at_ms);
        self
    }
}

/// The reconciler of one kind: what its reconciles share (the operator's [`Shared`]
/// parts, the kind's settings and its own state: indexes and reads kept between
/// reconciles).
pub(crate) struct Reconciler<K: Reconcilable> {
    pub shared: Arc<Shared>,
    pub settings: K::Settings,
    pub state: K::State,
}

impl<K: Reconcilable> Reconciler<K> {
    pub(crate) fn new(shared: Arc<Shared>, settings: K::Settings) -> Self {
        Self {
            shared,
            settings,
            state: K::State::default(),
        }
    }
}

/// How long one reconcile may take; past it the reconcile fails with `Timeout` and is
/// retried with backoff.
pub(crate) const RECONCILE_TIMEOUT: Duration = Duration::from_secs(120);

/// A failed reconcile of kind `K`.
pub(crate) type Failure<K> = ReconcileError<<K as Reconcilable>::Reason>;

/// What one reconcile of an object sees, the one context a kind is passed: the
/// operator's [`Shared`] parts, the kind's settings and state, the object's API, the
/// time, and the status the object showed.
pub(crate) struct Context<'a, K: Reconcilable> {
    pub shared: &'a Shared,
    pub settings: &'a K::Settings,
    pub state: &'a K::State,
    pub api: Api<K>,
    pub namespace: String,
    pub now: Now,
    /// The status as the object showed it (the default when it has none).
    pub previous: K::Status,
    /// The object's resourceVersion as this reconcile last saw or wrote it: the status
    /// write at the end is fenced on it.
    resource_version: Option<String>,
    secret_ref: Option<&'a SecretKeyRef>,
    client: OnceCell<EdgeClient>,
}

impl<'a, K: Reconcilable> Context<'a, K> {
    pub(crate) fn new(reconciler: &'a Reconciler<K>, object: &'a K, now: Now) -> Self {
        let namespace = object.namespace().unwrap_or_default();
        let shared = reconciler.shared.as_ref();
        Self {
            shared,
            settings: &reconciler.settings,
            state: &reconciler.state,
            api: Api::namespaced(shared.kube.clone(), &namespace),
            namespace,
            now,
            previous: object.status().cloned().unwrap_or_default(),
            resource_version: object.resource_version(),
            secret_ref: object.secret_ref(),
            client: OnceCell::new(),
        }
    }

    pub(crate) fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Adds the kind's finalizer to `object` (`wanted`) or removes it, before a write
    /// the platform keeps. The cache holds only our finalizer, so the list written is
    /// the apiserver's, read now; the write is fenced on the resourceVersion of the copy
    /// the decision was made on, so it never overwrites a finalizer list, or acts on a
    /// spec, that changed meanwhile. The status written at the end is fenced on the
    /// version this write made.
    pub(crate) async fn keep_finalizer(&mut self, object: &K, wanted: bool) -> Result<(), Failure<K>> {
        let Some(finalizer) = K::FINALIZER else {
            return Ok(());
        };
        if object.finalizers().iter().any(|f| f == finalizer) == wanted {
            return Ok(());
        }
        let name = object.name_any();
        let current = self.api.get_metadata(&name).await?;
        let mut finalizers: Vec<&str> = current
            .finalizers()
            .iter()
            .map(String::as_str)
            .filter(|f| *f != finalizer)
            .collect();
        if wanted {
            finalizers.push(finalizer);
        }
        let metadata = serde_json::json!({ "finalizers": finalizers, "resourceVersion": object.resource_version() });
        let written = self
            .api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "metadata": metadata })),
            )
            .await?;
        self.resource_version = written.resource_version();
        Ok(())
    }

    /// How long this reconcile may take: past it, it fails with `TimedOut`.
    pub(crate) fn time_limit(&self) -> Duration {
        RECONCILE_TIMEOUT
    }

    /// Fails with `NotLeader` unless this process may still write.
    pub(crate) fn ensure_leader(&self) -> Result<(), Failure<K>> {
        if self.shared.leader.may_act() {
            Ok(())
        } else {
            Err(ReconcileError::NotLeader)
        }
    }

    /// The object's platform client (resolved once per reconcile), its requests waiting
    /// for the shared quota in its namespace's turn.
    pub(crate) async fn client(&self) -> Result<EdgeClient, Failure<K>> {
        self.client
            .get_or_try_init(|| async {
                let client = self
                    .shared
                    .access_keys
                    .client_for(&self.namespace, self.secret_ref)
                    .await?;
                Ok(client.acting_for(&self.namespace))
            })
            .await
            .cloned()
    }
}

/// A change to a kind's example that its CRD must refuse: `edge-operator check` creates
/// the example so changed (a dry run) to learn that the CRD's validation rules are
/// installed.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedExample {
    /// Members merged into the example's spec (a JSON merge patch).
    pub spec: serde_json::Value,
    /// What makes it invalid, as the check says it ("naming both a … and a …").
    pub rule: &'static str,
}

/// A kind the driver reconciles. The driver owns the envelope (leadership, pause,
/// deletion and the finalizer, the status contract and its fenced write, Events,
/// metrics, requeue); the kind owns one pass over a live object and its clean-up.
/// It joins the operator with one line of the registry (`controller::kinds`); its
/// name is its CRD's (`#[kube(kind = ..)]`).
pub(crate) trait Reconcilable:
    EdgeObject
    + Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + CustomResourceExt
    + ResourceExt
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Its example manifest (in `examples/`).
    const EXAMPLE: &'static str;
    /// Whether it only reads the platform: its reconciles are polls, `--poll-concurrency`
    /// of them at once rather than `--concurrency`.
    const POLLS: bool = false;
    /// The finalizer of objects that must clean up the platform when deleted.
    const FINALIZER: Option<&'static str> = None;
    /// The condition types it writes beside those of every kind
    /// ([`ConditionType`](crate::controller::framework::reasons::ConditionType)): a
    /// cached status keeps only the conditions of these types and those.
    const OWN_CONDITION_TYPES: &'static [&'static str] = &[];

    /// Its reasons beside those of every kind: one enum, whose variants name its
    /// conditions, its Events and its own failures ([`ReconcileError::own`]).
    type Reason: KindReason + Send + Sync + 'static;
    /// Its flags of `edge-operator run`.
    type Settings: clap::Args + clap::FromArgMatches + Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What the kind keeps between reconciles.
    type State: Default + Send + Sync + 'static;

    /// Whether an object not Ready for this reason of its own waits for a person: a
    /// spec, a Secret or the platform's configuration must change first (see
    /// [`AnyReason::is_terminal`]). None, unless the kind says so.
    fn is_terminal(_reason: Self::Reason) -> bool {
        false
    }

    /// The kind's name: its CRD's kind, metric label and bookkeeping key.
    fn kind_name() -> &'static str {
        match Self::kind(&()) {
            std::borrow::Cow::Borrowed(name) => name,
            std::borrow::Cow::Owned(_) => std::any::type_name::<Self>(),
        }
    }

    /// Follows the kind's watch: what the state keeps of every object (an index, what
    /// a deleted object leaves).
    fn on_watch(_state: &Self::State, _event: &watcher::Event<Self>) {}

    /// One pass over a live, unpaused object: read, decide (pure), write, report (pure).
    fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> impl Future<Output = Result<Outcome<Self::Status, Self::Reason>, Failure<Self>>> + Send;

    /// The longest a failed reconcile of this object waits for its retry, from `now`
    /// (its next poll, say): the error backoff never waits longer, a `Retry-After` of
    /// the platform still does. `None`: the backoff alone.
    fn retry_by(&self, _settings: &Self::Settings, _now: DateTime<Utc>) -> Option<Duration> {
        None
    }

    /// Cleans the platform up when an object carrying [`Self::FINALIZER`] is deleted;
    /// `paused`: deleted while paused, when the platform is left as it is. An error
    /// keeps the finalizer and retries with backoff; the kind decides when to give up
    /// (a deletion must never stay stuck).
    fn cleanup(
        &self,
        _cx: &Context<'_, Self>,
        _paused: bool,
    ) -> impl Future<Output = Result<Vec<Notice<Self::Reason>>, Failure<Self>>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Runs the kind's controllers until shutdown: its one controller, unless the kind
    /// keeps records or protections beside its objects. Every subscription is taken
    /// before the future is returned.
    fn controllers<'a, R: Runner>(reconciler: Arc<Reconciler<Self>>, runner: &'a R) -> BoxFuture<'a, ()> {
        let secret_changes = runner.secret_changes();
        runner.run(reconciler, secret_changes).boxed()
    }

    /// The CRDs of the records its controllers keep beside its objects.
    fn own_crds() -> Vec<CustomResourceDefinition> {
        Vec::new()
    }

    /// A change to its example that its CRD's validation rules refuse, if it has rules.
    fn refused_example() -> Option<RefusedExample> {
        None
    }

    /// The settings of one shard of several operators, named `shard`.
    fn for_shard(_settings: &mut Self::Settings, _shard: &str) {}

    /// The finalizer its controllers put on Secrets, which the Secret watch keeps.
    fn secret_finalizer(_settings: &Self::Settings) -> Option<&str> {
        None
    }

    /// What `edgectl plan` says for each object (with its platform client, or why it
    /// has none), in their order.
    fn plan(objects: Vec<(Self, Result<EdgeClient, String>)>) -> impl Future<Output = Vec<Verdict>> + Send {
        let verdicts = objects
            .iter()
            .map(|_| Verdict::Change {
                detail: "the operator would reconcile it".to_string(),
                changes: Vec::new(),
            })
            .collect();
        async move { verdicts }
    }
}

/// The Secrets that changed, as a subscriber receives them.
pub(crate) type SecretChanges = BoxStream<'static, Arc<PartialObjectMeta<Secret>>>;

/// What runs each kind's controllers (the runtime).
pub(crate) trait Runner: Sync {
    /// The objects of kind `K` in the namespace watched.
    fn api<K: Reconcilable>(&self) -> Api<K>;

    /// The namespace watched (all when `None`).
    fn namespace(&self) -> Option<&str>;

    /// How every kind's watch lists its objects, at start and at every relist.
    fn watch_config(&self) -> watcher::Config;

    /// A subscription to the changes of Secrets, taken before the Secret watch runs
    /// and polled while it runs.
    fn secret_changes(&self) -> SecretChanges;

    /// The Secrets the Secret watch holds.
    fn secrets(&self) -> Store<PartialObjectMeta<Secret>>;

    /// Resolves when the process stops.
    fn stopping(&self) -> impl Future<Output = ()> + Send + Sync + 'static;

    /// Runs the controller of kind `K` until shutdown: its objects are reconciled
    /// again when a Secret they reference changes.
    fn run<K: Reconcilable>(
        &self,
        reconciler: Arc<Reconciler<K>>,
        secret_changes: SecretChanges,
    ) -> impl Future<Output = ()> + Send + '_;
}

/// The longest Event note the apiserver accepts.
const MAX_NOTE_BYTES: usize = 1024;

/// An Event's `note` cut to [`MAX_NOTE_BYTES`] at a character boundary.
pub(crate) fn shortened(note: &str) -> String {
    bounded_text(note, MAX_NOTE_BYTES)
}
