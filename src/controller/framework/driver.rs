//! One reconcile for every kind. The driver owns what all kinds share: deletion and
//! finalizers, pause and resume, the credentials policy, the status write (only when
//! it changed), condition metrics, Events and the requeue. Each kind supplies a
//! pipeline ([`Reconciled`]):
//!
//! observe (reads) → plan (pure) → act (writes) → outcome (pure: status, Events, requeue)
//!
//! Time and randomness come in as [`Now`], so every decision is a function of its
//! inputs.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Resource};

use super::context::Context;
use super::error::ReconcileError;
use super::object::{is_paused, object_key};
use super::pipeline::{
    Failure, Io, KindContext, Note, Now, Reconciled, Requeue, clear_stale_synced, failure_note, is_ready, settled,
    shortened, with_decided,
};
use super::status::conditions::Decided;
use super::status::vocabulary::{AnyReason, ConditionType, Reason, Word};
use super::status::{StatusWrite, write_status};

/// The shortest requeue of [`Requeue::At`]: a time already past comes back after this.
const MIN_REQUEUE: Duration = Duration::from_secs(1);

/// How long one reconcile may take; past it the reconcile fails with `Timeout` and is
/// retried with backoff.
pub(crate) const RECONCILE_TIMEOUT: Duration = Duration::from_secs(120);

/// The controller's entry point for every kind.
pub(crate) async fn reconcile<K: Reconciled>(object: Arc<K>, kind: Arc<KindContext<K>>) -> Result<Action, Failure<K>> {
    let ctx = &kind.shared;
    let started = std::time::Instant::now();
    let run = run(object.as_ref(), &kind, Now::current());
    let result = match tokio::time::timeout(RECONCILE_TIMEOUT, run).await {
        Ok(result) => result,
        Err(_) => Err(ReconcileError::TimedOut(RECONCILE_TIMEOUT)),
    };
    if result.is_ok() {
        ctx.failures.forget(&object_key(object.as_ref()));
    }
    ctx.metrics.reconciled(
        K::KIND,
        started.elapsed(),
        result.as_ref().err().map(|error| error.reason().as_str()),
    );
    result
}

async fn run<K: Reconciled>(object: &K, kind: &KindContext<K>, now: Now) -> Result<Action, Failure<K>> {
    let ctx = kind.shared.as_ref();
    if !ctx.leader.may_act() {
        return Err(ReconcileError::NotLeader);
    }
    let io = Io::new(kind, object);
    object.maintain(&io).await?;
    if object.meta().deletion_timestamp.is_some() {
        return delete(object, &io, &now).await;
    }
    let previous = object.status().cloned().unwrap_or_default();
    let generation = object.meta().generation;
    if is_paused(object) {
        let paused = |type_| Decided::new(type_, false, Reason::Paused, "edgeplatform.io/paused is true");
        let mut decided = vec![paused(ConditionType::Synced)];
        if !is_ready::<K>(&previous, generation) {
            decided.push(paused(ConditionType::Ready));
        }
        let written = report(
            object,
            &io,
            &with_decided::<K>(&previous, &decided, generation, &now),
            &[],
            &now,
        )
        .await?;
        return Ok(match written {
            StatusWrite::Stale => Action::requeue(MIN_REQUEUE),
            StatusWrite::Written | StatusWrite::Unchanged => Action::await_change(),
        });
    }
    let settings = &kind.settings;
    let pipeline = async {
        let observed = object.observe(&io, &now).await?;
        let mut plan = object.plan(observed, &previous, &now, settings);
        if !ctx.leader.may_act() {
            return Err(ReconcileError::NotLeader);
        }
        object.act(&mut plan, &io).await?;
        Ok::<_, Failure<K>>(object.outcome(plan, &previous, &now, settings))
    }
    .await;
    match pipeline {
        Ok(outcome) => {
            let status = clear_stale_synced::<K>(outcome.status, generation, &now);
            if report(object, &io, &status, &outcome.events, &now).await? == StatusWrite::Stale {
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
        Err(error) => {
            report_failure(object, &io, &error, &now).await?;
            Err(error)
        }
    }
}

/// Reports a failed pass: status and a Warning Event for a new reason; credentials the
/// platform rejected are read again at the next pass.
async fn report_failure<K: Reconciled>(
    object: &K,
    io: &Io<'_, K>,
    error: &Failure<K>,
    now: &Now,
) -> Result<(), Failure<K>> {
    if error.reason() == AnyReason::Common(Reason::Unauthorized) {
        io.ctx.credentials.rejected(&io.namespace, object.secret_ref());
    }
    let previous = object.status().cloned().unwrap_or_default();
    let status = object.failed(error, &previous, now);
    let notes: Vec<Note> = failure_note(K::conditions(&previous), error).into_iter().collect();
    report(object, io, &status, &notes, now).await.map(drop)
}

/// Writes the status, settled, if it changed; publishes the condition metrics and the
/// Events.
async fn report<K: Reconciled>(
    object: &K,
    io: &Io<'_, K>,
    status: &K::Status,
    notes: &[Note],
    now: &Now,
) -> Result<StatusWrite, Failure<K>> {
    let status = settled::<K>(status, object.meta().generation, now);
    let version = io.resource_version();
    let written = write_status(&io.api, object, version.as_deref(), object.status(), &status).await?;
    match written {
        // Decided from a stale copy: the next reconcile decides again, from the new one.
        StatusWrite::Stale => return Ok(written),
        StatusWrite::Written => io.ctx.metrics.status_written(K::KIND),
        StatusWrite::Unchanged => {}
    }
    io.ctx
        .metrics
        .set_conditions(K::KIND, &io.namespace, &object.name_any(), K::conditions(&status));
    for note in notes {
        publish(io.ctx, object, note).await;
    }
    Ok(written)
}

/// Publishes an Event; failures are logged, never fatal.
pub(crate) async fn publish<K: Resource<DynamicType = ()>>(ctx: &Context, object: &K, note: &Note) {
    let event = Event {
        type_: if note.warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: note.reason.to_string(),
        note: Some(shortened(&note.message)),
        action: note.action(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &object.object_ref(&())).await {
        tracing::warn!(%error, reason = note.reason, "cannot publish Event");
    }
}

async fn delete<K: Reconciled>(object: &K, io: &Io<'_, K>, now: &Now) -> Result<Action, Failure<K>> {
    let name = object.name_any();
    io.ctx.metrics.forget(K::KIND, &io.namespace, &name);
    io.ctx.failures.forget(&object_key(object));
    let Some(finalizer) = K::FINALIZER else {
        return Ok(Action::await_change());
    };
    let Some(index) = object.finalizers().iter().position(|f| f == finalizer) else {
        return Ok(Action::await_change());
    };
    let notes = if is_paused(object) {
        object.deleted_while_paused()
    } else {
        match object.finalize(io, now).await {
            Ok(notes) => notes,
            Err(error) => {
                // The object stays until the clean-up succeeds or is given up: its
                // status says why, and what a person can do.
                report_failure(object, io, &error, now).await?;
                return Err(error);
            }
        }
    };
    for note in &notes {
        publish(io.ctx, object, note).await;
    }
    remove_finalizer(&io.api, &name, index, finalizer).await
}

/// Removes exactly our finalizer: the JSON patch tests that the entry at `index` is
/// still ours, so another controller's finalizer is never dropped.
async fn remove_finalizer<K: Reconciled>(
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
