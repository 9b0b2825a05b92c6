//! What a kind implements ([`Reconciled`]: observe → plan → act → outcome, and its
//! state) and what its steps see ([`Io`], [`Now`]); the status helpers every kind's
//! outcome shares (Ready, failures, notes).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use super::context::Context;
use super::error::{KindError, ReconcileError};
use super::status::conditions::{Decided, MAX_CONDITION_MESSAGE_BYTES, find, merge};
use super::status::kstatus;
use super::status::time::rfc3339;
use super::status::vocabulary::{AnyReason, ConditionType, KindReasons, Reason, ReasonWord, Word};
use crate::api::{EdgeClient, bounded_text};
use crate::crd::{Condition, ConditionStatus, SecretKeyRef};

/// The time of a reconcile and a random draw in [0, 1) for jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Now {
    pub time: DateTime<Utc>,
    pub jitter: f64,
}

impl Now {
    pub fn current() -> Self {
        Self {
            time: Utc::now(),
            jitter: rand::random::<f64>(),
        }
    }

    pub fn rfc3339(&self) -> String {
        rfc3339(self.time)
    }

    pub fn millis(&self) -> i64 {
        self.time.timestamp_millis()
    }

    pub fn since_epoch(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.millis()).unwrap_or_default())
    }
}

/// An Event to publish about the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
    /// The failure behind `reason`, when there is one.
    pub cause: Option<&'static str>,
}

impl Note {
    pub(crate) fn normal(reason: impl ReasonWord, message: impl Into<String>) -> Self {
        Self {
            warning: false,
            reason: reason.as_str(),
            message: message.into(),
            cause: None,
        }
    }

    pub(crate) fn warning(reason: impl ReasonWord, message: impl Into<String>) -> Self {
        Self {
            warning: true,
            reason: reason.as_str(),
            message: message.into(),
            cause: None,
        }
    }

    /// The Event's action: what was done, and the cause a reason has. Events of one
    /// object, reason and action are counted as one series, so a new cause makes a new
    /// Event rather than a repeat of the old note.
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

/// What a reconcile reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome<S> {
    pub status: S,
    pub events: Vec<Note>,
    pub requeue: Requeue,
}

/// What the reconciles of one kind share: the operator's context, the kind's settings
/// and its own state (indexes and reads kept between reconciles).
pub(crate) struct KindContext<K: Reconciled> {
    pub shared: Arc<Context>,
    pub settings: K::Settings,
    pub state: K::State,
}

impl<K: Reconciled> KindContext<K> {
    pub(crate) fn new(shared: Arc<Context>, settings: K::Settings) -> Self {
        Self {
            shared,
            settings,
            state: K::State::default(),
        }
    }
}

/// A failed reconcile of kind `K`.
pub(crate) type Failure<K> = ReconcileError<<K as Reconciled>::Error>;

/// What a kind's I/O steps may use.
pub(crate) struct Io<'a, K: Reconciled> {
    pub ctx: &'a Context,
    pub settings: &'a K::Settings,
    pub state: &'a K::State,
    pub object: &'a K,
    pub api: Api<K>,
    pub namespace: String,
    client: OnceCell<EdgeClient>,
    /// The object's resourceVersion as this reconcile last saw or wrote it.
    resource_version: std::sync::Mutex<Option<String>>,
}

impl<'a, K: Reconciled> Io<'a, K> {
    pub(crate) fn new(kind: &'a KindContext<K>, object: &'a K) -> Self {
        let namespace = object.namespace().unwrap_or_default();
        let ctx = kind.shared.as_ref();
        Self {
            ctx,
            settings: &kind.settings,
            state: &kind.state,
            object,
            api: Api::namespaced(ctx.kube.clone(), &namespace),
            namespace,
            client: OnceCell::new(),
            resource_version: std::sync::Mutex::new(object.resource_version()),
        }
    }

    /// The object's resourceVersion after this reconcile's own writes.
    pub(crate) fn resource_version(&self) -> Option<String> {
        self.resource_version
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// This reconcile wrote the object: `written` is what the apiserver answered.
    pub(crate) fn wrote(&self, written: &K) {
        *self
            .resource_version
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = written.resource_version();
    }

    /// The object's platform client (resolved once per reconcile).
    pub(crate) async fn client(&self) -> Result<&EdgeClient, Failure<K>> {
        self.client
            .get_or_try_init(|| {
                self.ctx
                    .credentials
                    .client_for(&self.namespace, self.object.secret_ref())
            })
            .await
    }
}

/// A kind the driver reconciles.
pub(crate) trait Reconciled:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + ResourceExt
    + Clone
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The kind's name: metric label and bookkeeping key.
    const KIND: &'static str;
    /// The finalizer of objects that must clean up the platform when deleted.
    const FINALIZER: Option<&'static str> = None;

    /// Its reasons beside the common ones.
    type Reason: KindReasons;
    /// Its failures beside those of every kind.
    type Error: KindError;
    /// Its flags of `edge-operator run`.
    type Settings: clap::Args + clap::FromArgMatches + Send + Sync + 'static;

    type Status: Clone + Default + PartialEq + Serialize + Send + Sync;
    /// What the kind keeps between reconciles.
    type State: Default + Send + Sync + 'static;
    /// What `observe` read. A kind that reads nothing leaves `observe` out and
    /// observes `Default::default()`.
    type Observed: Default + Send;
    /// What `plan` decided; `act` records in it what the platform answered.
    type Plan: Send;

    fn status(&self) -> Option<&Self::Status>;
    fn conditions(status: &Self::Status) -> &[Condition];
    fn set_conditions(status: &mut Self::Status, conditions: Vec<Condition>);
    fn set_observed_generation(status: &mut Self::Status, generation: Option<i64>);
    fn secret_ref(&self) -> Option<&SecretKeyRef>;

    /// Follows the kind's watch (an index of all objects of the kind).
    fn follow(_state: &Self::State, _event: &watcher::Event<Self>) {}

    /// Forgets what the state keeps of a deleted object (by its key).
    fn forget(_state: &Self::State, _key: &str) {}

    /// Reads what the plan needs.
    fn observe(
        &self,
        _io: &Io<'_, Self>,
        _now: &Now,
    ) -> impl Future<Output = Result<Self::Observed, Failure<Self>>> + Send {
        async { Ok(Self::Observed::default()) }
    }

    /// Decides, without I/O.
    fn plan(
        &self,
        observed: Self::Observed,
        previous: &Self::Status,
        now: &Now,
        settings: &Self::Settings,
    ) -> Self::Plan;

    /// Carries the plan out and records the platform's answers in it. A kind that
    /// never writes leaves it out.
    fn act(
        &self,
        _plan: &mut Self::Plan,
        _io: &Io<'_, Self>,
    ) -> impl Future<Output = Result<(), Failure<Self>>> + Send {
        async { Ok(()) }
    }

    /// Reports, without I/O.
    fn outcome(
        &self,
        plan: Self::Plan,
        previous: &Self::Status,
        now: &Now,
        settings: &Self::Settings,
    ) -> Outcome<Self::Status>;

    /// The status after a failed reconcile: Synced=False with the error's reason, and
    /// Ready=False too unless the error is transient and the current generation was
    /// already Ready (a failed re-read of an applied object).
    fn failed(&self, error: &Failure<Self>, previous: &Self::Status, now: &Now) -> Self::Status {
        let generation = self.meta().generation;
        let message = failure_message(error, now);
        let mut decided = vec![Decided::new(
            ConditionType::Synced,
            false,
            error.reason(),
            message.clone(),
        )];
        if !error.is_transient() || !is_ready::<Self>(previous, generation) {
            decided.push(Decided::new(ConditionType::Ready, false, error.reason(), message));
        }
        with_decided::<Self>(previous, &decided, generation, now)
    }

    /// Keeps what the kind maintains outside the object in step with it; runs first on
    /// every pass, paused and deleting included.
    fn maintain(&self, _io: &Io<'_, Self>) -> impl Future<Output = Result<(), Failure<Self>>> + Send {
        async { Ok(()) }
    }

    /// Cleans the platform up when an object carrying [`Self::FINALIZER`] is deleted.
    /// An error keeps the finalizer and retries with backoff; the kind decides when to
    /// give up (a deletion must never stay stuck).
    fn finalize(
        &self,
        _io: &Io<'_, Self>,
        _now: &Now,
    ) -> impl Future<Output = Result<Vec<Note>, Failure<Self>>> + Send {
        async { Ok(Vec::new()) }
    }

    /// The Events of a deletion while paused, which skips [`Reconciled::finalize`].
    fn deleted_while_paused(&self) -> Vec<Note> {
        Vec::new()
    }
}

/// The accessors every kind implements alike: `status`, the conditions of its status
/// and `spec.accessKeySecretRef`.
macro_rules! kind_accessors {
    () => {
        fn status(&self) -> Option<&Self::Status> {
            self.status.as_ref()
        }

        fn conditions(status: &Self::Status) -> &[crate::crd::Condition] {
            &status.conditions
        }

        fn set_conditions(status: &mut Self::Status, conditions: Vec<crate::crd::Condition>) {
            status.conditions = conditions;
        }

        fn set_observed_generation(status: &mut Self::Status, generation: Option<i64>) {
            status.observed_generation = generation;
        }

        fn secret_ref(&self) -> Option<&crate::crd::SecretKeyRef> {
            self.spec.access_key_secret_ref.as_ref()
        }
    };
}
pub(crate) use kind_accessors;

/// Whether `status` is Ready for `generation`.
pub(crate) fn is_ready<K: Reconciled>(status: &K::Status, generation: Option<i64>) -> bool {
    find(K::conditions(status), ConditionType::Ready)
        .is_some_and(|r| r.status == ConditionStatus::True && r.observed_generation == generation)
}

/// `status` as the driver writes it: under the status contract of [`kstatus`].
pub(super) fn settled<K: Reconciled>(status: &K::Status, generation: Option<i64>, now: &Now) -> K::Status {
    let mut next = status.clone();
    K::set_conditions(
        &mut next,
        kstatus::settle(K::conditions(status), generation, &now.rfc3339(), |reason| {
            AnyReason::<K::Reason>::is_terminal_name(reason)
                || AnyReason::<<K::Error as KindError>::Reason>::is_terminal_name(reason)
        }),
    );
    K::set_observed_generation(&mut next, generation);
    next
}

/// `status` with `decided` merged into its conditions.
pub(crate) fn with_decided<K: Reconciled>(
    status: &K::Status,
    decided: &[Decided],
    generation: Option<i64>,
    now: &Now,
) -> K::Status {
    let mut next = status.clone();
    K::set_conditions(
        &mut next,
        merge(K::conditions(status), decided, generation, &now.rfc3339()),
    );
    next
}

/// A successful reconcile leaves no Synced=False behind: one left from a pause turns
/// into `Resumed`, one left from a failure into `Reconciled`.
pub(crate) fn clear_stale_synced<K: Reconciled>(status: K::Status, generation: Option<i64>, now: &Now) -> K::Status {
    let Some(synced) = find(K::conditions(&status), ConditionType::Synced) else {
        return status;
    };
    if synced.status == ConditionStatus::True {
        return status;
    }
    let reason = if synced.reason == Reason::Paused.as_str() {
        Reason::Resumed
    } else {
        Reason::Reconciled
    };
    with_decided::<K>(
        &status,
        &[Decided::new(ConditionType::Synced, true, reason, "")],
        generation,
        now,
    )
}

/// An error as a condition message, bounded; a rate limit says when the next attempt
/// is due.
pub(crate) fn failure_message<E: KindError>(error: &ReconcileError<E>, now: &Now) -> String {
    let message = match error.retry_after() {
        Some(wait) => {
            let at = chrono::Duration::from_std(wait)
                .ok()
                .and_then(|wait| now.time.checked_add_signed(wait))
                .unwrap_or(now.time);
            format!("{error}; next attempt at {}", rfc3339(at))
        }
        None => error.to_string(),
    };
    bounded_text(&message, MAX_CONDITION_MESSAGE_BYTES)
}

/// The longest Event note the apiserver accepts.
const MAX_NOTE_BYTES: usize = 1024;

/// `note` cut to [`MAX_NOTE_BYTES`] at a character boundary.
pub(crate) fn shortened(note: &str) -> String {
    bounded_text(note, MAX_NOTE_BYTES)
}

/// The Warning Event for a failure whose reason, or cause, the object did not already
/// show.
pub(crate) fn failure_note<E: KindError>(previous: &[Condition], error: &ReconcileError<E>) -> Option<Note> {
    let reason = error.reason();
    let cause = error.cause_reason().map(Word::as_str);
    let shown = find(previous, ConditionType::Synced).is_some_and(|c| {
        c.status == ConditionStatus::False
            && c.reason == reason.as_str()
            && cause.is_none_or(|cause| c.message.starts_with(&format!("{cause} ")))
    });
    (!shown).then(|| Note {
        cause,
        ..Note::warning(reason, error.to_string())
    })
}
