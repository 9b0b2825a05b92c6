//! One reconcile for every kind. The driver owns what all kinds share: leadership,
//! deletion and finalizers, pause and resume, the credentials policy, the status write
//! (with the kstatus conditions, fenced, only when it changed), condition metrics,
//! Events and the requeue.
//! Each kind supplies its pass over a live object ([`Reconcilable::reconcile`]) and its
//! clean-up ([`Reconcilable::cleanup`]).
//!
//! Time and randomness come in as [`Now`], so every decision is a function of its
//! inputs.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event as KubeEvent, EventType};

use crate::api::{ApiError, bounded_text};
use crate::controller::framework::pipeline::kind::{
    Context, Failure, Notice, Now, Outcome, RECONCILE_TIMEOUT, Reconcilable, Reconciler, Requeue, shortened,
};
use crate::controller::framework::pipeline::status::conditions::{
    MAX_CONDITION_MESSAGE_BYTES, NewCondition, find, merge,
};
use crate::controller::framework::pipeline::status::kstatus;
use crate::controller::framework::pipeline::status::{StatusScope, StatusWrite, write_status};
use crate::controller::framework::reasons::error::ReconcileError;
use crate::controller::framework::reasons::{ConditionType, KindReason, Reason};
use crate::controller::framework::services::shared::Shared;
use crate::resources::is_paused;
use crate::resources::object_key;
use crate::resources::time::rfc3339;
use crate::resources::{Condition, ConditionStatus, StatusConditions};

/// The shortest requeue of [`Requeue::At`]: a time already past comes back after this.
const MIN_REQUEUE: Duration = Duration::from_secs(1);

/// The controller's entry point for every kind.
pub(crate) async fn reconcile<K: Reconcilable>(
    object: Arc<K>,
    reconciler: Arc<Reconciler<K>>,
) -> Result<Action, Failure<K>> {
    let shared = &reconciler.shared;
    let started = std::time::Instant::now();
    let run = run(object.as_ref(), &reconciler, Now::current());
    let result = match tokio::time::timeout(RECONCILE_TIMEOUT, run).await {
        Ok(result) => result,
        Err(_) => Err(ReconcileError::TimedOut(RECONCILE_TIMEOUT)),
    };
    if result.is_ok() {
        shared.failures.forget(&object_key(object.as_ref()));
    }
    shared.metrics.reconciled(
        K::kind_name(),
        started.elapsed(),
        result.as_ref().err().map(ReconcileError::reason),
    );
    result
}

async fn run<K: Reconcilable>(object: &K, reconciler: &Reconciler<K>, now: Now) -> Result<Action, Failure<K>> {
    let mut cx = Context::new(reconciler, object, now);
    cx.ensure_leader()?;
    // The clean-up and the kind's pass are boxed: what every reconcile waiting for an
    // apiserver seat holds (a start on thousands of paused objects has them all
    // waiting) is the driver's own state, not the largest of theirs.
    if object.meta().deletion_timestamp.is_some() {
        return Box::pin(delete(object, reconciler, cx.now)).await;
    }
    let generation = object.meta().generation;
    if is_paused(object) {
        let paused =
            |type_| NewCondition::<K::Reason>::new(type_, false, Reason::Paused, "edgeplatform.io/paused is true");
        let mut decided = vec![paused(ConditionType::Synced)];
        if !shows_ready::<K>(&cx.previous, generation) {
            decided.push(paused(ConditionType::Ready));
        }
        let status = with_merged(&cx.previous, &decided, generation, &cx.now);
        // The cache holds a paused object's conditions only, unless it held nothing
        // (a status the operator never wrote, or one larger than it writes): then the
        // whole status is the operator's to write.
        let scope = match cx.previous == K::Status::default() {
            true => StatusScope::Whole,
            false => StatusScope::Conditions,
        };
        return Ok(match report(object, &cx, (&status, scope), &[]).await? {
            StatusWrite::Stale => Action::requeue(MIN_REQUEUE),
            StatusWrite::Written(_) | StatusWrite::Unchanged => Action::await_change(),
        });
    }
    match Box::pin(object.reconcile(&mut cx)).await {
        Ok(outcome) => {
            let status = outcome.status_over(&cx.previous, generation, cx.now.time);
            if report(object, &cx, (&status, StatusScope::Whole), &outcome.events).await? == StatusWrite::Stale {
                return Ok(Action::requeue(MIN_REQUEUE));
            }
            Ok(match outcome.requeue {
                Requeue::After(delay) => Action::requeue(delay),
                Requeue::At(at_ms) => {
                    let wait = u64::try_from(at_ms - Now::current().millis()).unwrap_or_default();
                    Action::requeue(Duration::from_millis(wait).max(MIN_REQUEUE))
                }
                Requeue::OnChange => Action::await_change(),
            })
        }
        // Another operator may be acting: write nothing.
        Err(error @ ReconcileError::NotLeader) => Err(error),
        // NewCondition from a stale copy: the next reconcile decides again, from the new one.
        Err(ReconcileError::Stale) => Ok(Action::requeue(MIN_REQUEUE)),
        Err(error) => {
            report_failure(object, &cx, &error).await?;
            Err(error)
        }
    }
}

/// Whether `status` shows Ready=True for `generation`.
fn shows_ready<K: Reconcilable>(status: &K::Status, generation: Option<i64>) -> bool {
    NewCondition::<K::Reason>::ready_in(status.conditions()).is_some_and(|ready| ready.is_true_for(generation))
}

/// The status after a failed reconcile: Synced=False with the error's reason, and
/// Ready=False too unless the error is transient and the current generation was
/// already Ready (a failed re-read of an applied object).
fn failed<K: Reconcilable>(previous: &K::Status, generation: Option<i64>, error: &Failure<K>, now: &Now) -> K::Status {
    let message = failure_message(error, now);
    let reason = error.reason();
    let mut decided = vec![NewCondition::synced(false, reason, message.clone())];
    if reason.is_terminal(K::is_terminal) || !shows_ready::<K>(previous, generation) {
        decided.push(NewCondition::ready(false, reason, message));
    }
    with_merged(previous, &decided, generation, now)
}

/// Reports a failed pass: status and a Warning Event for a new reason; credentials the
/// platform rejected are read again at the next pass.
async fn report_failure<K: Reconcilable>(
    object: &K,
    cx: &Context<'_, K>,
    error: &Failure<K>,
) -> Result<(), Failure<K>> {
    if matches!(error, ReconcileError::Platform(ApiError::Unauthorized(_))) {
        cx.shared.access_keys.rejected(&cx.namespace, object.secret_ref());
    }
    let status = failed::<K>(&cx.previous, object.meta().generation, error, &cx.now);
    let events: Vec<Notice<K::Reason>> = failure_event::<K>(cx.previous.conditions(), error)
        .into_iter()
        .collect();
    report(object, cx, (&status, StatusScope::Whole), &events)
        .await
        .map(drop)
}

/// Writes the status, with the kstatus conditions, if it changed; publishes the condition metrics and the
/// Events.
async fn report<K: Reconcilable>(
    object: &K,
    cx: &Context<'_, K>,
    (status, scope): (&K::Status, StatusScope),
    events: &[Notice<K::Reason>],
) -> Result<StatusWrite, Failure<K>> {
    let status = with_kstatus_conditions::<K>(status, object.meta().generation, &cx.now);
    let written = write_status(
        &cx.api,
        object,
        cx.resource_version(),
        object.status(),
        (&status, scope),
    )
    .await?;
    match written {
        // NewCondition from a stale copy: the next reconcile decides again, from the new one.
        StatusWrite::Stale => return Ok(written),
        StatusWrite::Written(_) => cx.shared.metrics.status_written(K::kind_name()),
        StatusWrite::Unchanged => {}
    }
    cx.shared.metrics.set_conditions::<K::Reason>(
        K::kind_name(),
        &cx.namespace,
        &object.name_any(),
        status.conditions(),
        K::OWN_CONDITION_TYPES,
    );
    for event in events {
        publish(cx.shared, object, event).await;
    }
    Ok(written)
}

/// `status` as the driver writes it: under the status contract of [`kstatus`].
fn with_kstatus_conditions<K: Reconcilable>(status: &K::Status, generation: Option<i64>, now: &Now) -> K::Status {
    let mut next = status.clone();
    next.set_conditions(kstatus::settle(
        status.conditions(),
        generation,
        &now.rfc3339(),
        K::is_terminal,
    ));
    next.set_observed_generation(generation);
    next
}

/// `status` with `decided` merged into its conditions.
fn with_merged<S: StatusConditions + Clone, R: KindReason>(
    status: &S,
    decided: &[NewCondition<R>],
    generation: Option<i64>,
    now: &Now,
) -> S {
    let mut next = status.clone();
    next.set_conditions(merge(status.conditions(), decided, generation, &now.rfc3339()));
    next
}

impl<S: StatusConditions + Clone, R: KindReason> Outcome<S, R> {
    /// The status a successful reconcile writes over `previous`: the kind's fields, and
    /// the object's conditions with those decided merged in, once. It leaves no
    /// Synced=False behind: one left from a pause turns into `Resumed`, one left from a
    /// failure into `Reconciled`.
    pub(crate) fn status_over(&self, previous: &S, generation: Option<i64>, now: DateTime<Utc>) -> S {
        // Whether the Synced this pass leaves (the last it decided, else the one shown)
        // is False, and if so, whether from a pause.
        let stale_from_pause = match self.conditions.iter().rev().find(|d| d.is_synced()) {
            Some(decided) => (decided.status != ConditionStatus::True).then(|| decided.reason == Reason::Paused.into()),
            None => NewCondition::<R>::synced_in(previous.conditions())
                .filter(|shown| !shown.status)
                .map(|shown| shown.is(Reason::Paused)),
        };
        let mut decided = self.conditions.clone();
        if let Some(paused) = stale_from_pause {
            let reason = match paused {
                true => Reason::Resumed,
                false => Reason::Reconciled,
            };
            decided.push(NewCondition::synced(true, reason, ""));
        }
        let mut status = self.status.clone();
        let conditions = match decided.is_empty() {
            true => previous.conditions().to_vec(),
            false => merge(previous.conditions(), &decided, generation, &rfc3339(now)),
        };
        status.set_conditions(conditions);
        status
    }
}

/// An error as a condition message, bounded; a rate limit says when the next attempt
/// is due.
fn failure_message<R: KindReason>(error: &ReconcileError<R>, now: &Now) -> String {
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

/// The Warning Event for a failure whose reason, or cause, the object did not already
/// show.
pub(crate) fn failure_event<K: Reconcilable>(previous: &[Condition], error: &Failure<K>) -> Option<Notice<K::Reason>> {
    let reason = error.reason();
    let cause = error.cause_reason();
    let shown = find(previous, ConditionType::Synced).is_some_and(|c| {
        c.status == ConditionStatus::False
            && c.reason == reason.as_str()
            && cause.is_none_or(|cause| c.message.starts_with(&format!("{cause} ")))
    });
    (!shown).then(|| Notice {
        cause,
        ..Notice::warning(reason, error.to_string())
    })
}

/// Publishes an Event within its namespace's budget; failures are logged, never fatal.
pub(crate) async fn publish<K: Reconcilable>(shared: &Shared, object: &K, event: &Notice<K::Reason>) {
    if !shared.event_budget.spend(&object.namespace().unwrap_or_default()) {
        shared.metrics.event_dropped(K::kind_name());
        return;
    }
    let published = KubeEvent {
        type_: if event.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: event.reason.as_str().to_string(),
        note: Some(shortened(&event.message)),
        action: event.action(),
        secondary: None,
    };
    match shared.recorder.publish(&published, &object.object_ref(&())).await {
        Ok(()) => shared
            .metrics
            .event_published(K::kind_name(), event.reason, event.warning),
        Err(error) => tracing::warn!(%error, reason = %event.reason, "cannot publish Event"),
    }
}

/// Cleans up a deleted object, then removes its finalizer. The clean-up acts on the
/// object as the apiserver holds it now: the cached copy may predate an earlier pass's
/// release, and cleaning up from it would write the platform again for an object that
/// is gone.
async fn delete<K: Reconcilable>(cached: &K, reconciler: &Reconciler<K>, now: Now) -> Result<Action, Failure<K>> {
    let name = cached.name_any();
    let namespace = cached.namespace().unwrap_or_default();
    reconciler.shared.metrics.forget(K::kind_name(), &namespace, &name);
    reconciler.shared.failures.forget(&object_key(cached));
    let Some(finalizer) = K::FINALIZER else {
        return Ok(Action::await_change());
    };
    if !cached.finalizers().iter().any(|f| f == finalizer) {
        return Ok(Action::await_change());
    }
    let api: Api<K> = Api::namespaced(reconciler.shared.kube.clone(), &namespace);
    let Some(object) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let Some(index) = object.finalizers().iter().position(|f| f == finalizer) else {
        return Ok(Action::await_change());
    };
    let cx = Context::new(reconciler, &object, now);
    let events = match object.cleanup(&cx, is_paused(&object)).await {
        Ok(events) => events,
        Err(error) => {
            // The object stays until the clean-up succeeds or is given up: its status
            // says why, and what a person can do.
            report_failure(&object, &cx, &error).await?;
            return Err(error);
        }
    };
    for event in &events {
        publish(cx.shared, &object, event).await;
    }
    remove_finalizer(&cx.api, &name, index, finalizer).await
}

/// Removes exactly our finalizer: the JSON patch tests that the entry at `index` is
/// still ours, so another controller's finalizer is never dropped.
async fn remove_finalizer<K: Reconcilable>(
    api: &Api<K>,
    name: &str,
    index: usize,
    finalizer: &str,
) -> Result<Action, Failure<K>> {
    let path = format!("/metadata/finalizers/{index}");
    let patch: json_patch::Patch = serde_json::from_value(serde_json::json!([
        { "op": "test", "path": path, "value": finalizer },
        { "op": "remove", "path": path },
    ]))
    .map_err(|e| ReconcileError::Encoding(e.to_string()))?;
    match api
        .patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        // The object is gone already, or changed under us: the next event decides.
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(Action::await_change()),
        Err(error) => Err(error.into()),
    }
}
