//! AccessListConfig: read the zone's lists → claim the configuration → plan the PATCH
//! (pure) → record the restore point in the claim, PATCH → status, drift Events,
//! zone-aligned requeue.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{CustomResourceExt, ResourceExt};

use self::claims::ClaimRecords;
use self::claims::{Claim, Claimed};
use self::secret_needs::SecretNeeds;
use self::vocabulary::AccessListReason;
use self::zone_lists::{ListsFreshness, ZoneLists};
use crate::api::models::shield::{AccessListConfigurationPatch, AccessListItem};
use crate::api::{ApiFailure, EdgeClient};
use crate::controller::framework::extend::{Reconciler, RefusedExample, Runner, Verdict};
use crate::controller::framework::prelude::{Context, Failure, Notice, Outcome, Reconcilable};
use crate::controller::kinds::access_list::claim_resource::RecordedValues;
use crate::controller::kinds::access_list::resource::{
    AccessListConfig, AccessListConfigSpec, ManagementPolicy, RestorePoint,
};
use crate::resources::ANNOTATION_PROMOTE;
use crate::resources::time::since_epoch;

pub(crate) mod approval;
pub mod claim_resource;
mod claims;
mod controllers;
pub(crate) mod export;
#[cfg(test)]
mod fixtures;
mod plan;
pub mod resource;
mod restore;
mod rollout;
mod secret_needs;
mod secret_protection;
mod settings;
mod verdict;
pub(crate) mod vocabulary;
mod zone_lists;

pub use self::settings::{AccessListSettings, CarryOverRecord, SECRET_IN_USE_FINALIZER, SecretFinalizer};

pub use self::plan::{Plan, converged_status, diff, plan, resolve};
use self::plan::{
    converged, drift_event, is_converged, predates_status, since_zone_resync, unresolved, until_next_resync,
    until_zone_resync,
};
pub use self::restore::FINALIZER;
use self::restore::{AfterRestore, after_restore, left_logging, restore, wants_finalizer};
use self::secret_protection::{SecretTriggers, protect_own_secret, protected_secret};
pub use self::zone_lists::ZONE_LISTS_TTL;

/// The access list an object names, as the platform holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub list: AccessListItem,
    /// Whether the list is one the platform manages rather than a custom one.
    pub managed: bool,
}

/// What the reconciles of AccessListConfigs keep between them.
#[derive(Default)]
pub struct State {
    /// Which object writes which configuration: the operator's records of them.
    pub claims: ClaimRecords,
    /// Which Secrets restores need, from the kind's watch.
    pub secret_needs: SecretNeeds,
    /// The Secrets whose need changed, for the Secret protection controller.
    pub secret_triggers: SecretTriggers,
    /// The zones' access lists, read once for all objects of a zone.
    pub zone_lists: ZoneLists,
}

impl AccessListConfig {
    async fn observe_list(
        &self,
        cx: &Context<'_, Self>,
        client: &EdgeClient,
        freshness: ListsFreshness,
    ) -> Result<Observed, Failure<AccessListConfig>> {
        // Released before any wait: a write to the zone copies the lists it shares.
        let lists = cx
            .state
            .zone_lists
            .read(client, self.spec.shield_zone_id, freshness)
            .await?;
        let (list, managed) =
            resolve(&self.spec, &lists).map_err(|error| unresolved(self.spec.shield_zone_id, error))?;
        Ok(Observed {
            list: list.clone(),
            managed,
        })
    }

    /// The list its spec names, read with its own credentials: recent enough to apply a
    /// spec, since the zone's resync instant once converged, read anew for a rollout.
    async fn read_own_list(&self, cx: &Context<'_, Self>) -> Result<Observed, Failure<AccessListConfig>> {
        let client = cx.client().await?;
        let zone = self.spec.shield_zone_id;
        let converged = self
            .status
            .as_ref()
            .is_some_and(|status| is_converged(status, self.metadata.generation));
        // A rollout measures its window in the platform's time: each of its reconciles
        // reads anew, and with the lists the platform's clock.
        let freshness = if self.spec.rollout.is_some() {
            ListsFreshness::Fresh
        } else if converged {
            let interval = cx.settings.poll_interval(self);
            ListsFreshness::SinceResync(since_zone_resync(interval, zone, cx.now.since_epoch()))
        } else {
            ListsFreshness::Recent
        };
        let mut observed = self.observe_list(cx, &client, freshness).await?;
        if freshness != ListsFreshness::Recent && predates_status(self.status.as_ref(), &observed.list) {
            observed = self.observe_list(cx, &client, ListsFreshness::Fresh).await?;
        }
        Ok(observed)
    }

    /// The list its spec names, and, when it manages, its claim on it: the record that
    /// says no other object writes it. Refused credentials claim nothing, and give up a
    /// claim their key never confirmed.
    async fn observe(&self, cx: &Context<'_, Self>) -> Result<(Observed, Option<Claim>), Failure<AccessListConfig>> {
        let observed = match self.read_own_list(cx).await {
            Ok(observed) => observed,
            Err(error) => {
                if cannot_see_its_list(&error)
                    && let Err(release) = cx.state.claims.release_unconfirmed(&cx.shared.kube, self).await
                {
                    tracing::warn!(name = %self.name_any(), %release, "a claim carried over is not released yet");
                }
                return Err(error);
            }
        };
        if self.spec.management_policy != ManagementPolicy::Manage {
            return Ok((observed, None));
        }
        let configuration = observed.list.configuration_id;
        match cx
            .state
            .claims
            .claim(
                &cx.shared.kube,
                cx.shared.access_keys.platform_url(),
                self,
                configuration,
                &cx.now.rfc3339(),
            )
            .await?
        {
            Claimed::Mine(claim) => Ok((observed, Some(claim))),
            Claimed::Theirs(owner) => Err(Failure::<AccessListConfig>::own(
                AccessListReason::ConfigurationClaimed,
                format!(
                    "configuration {configuration} of Shield Zone {} is written by {owner}, which claimed it first; \
                     only one AccessListConfig writes a configuration",
                    self.spec.shield_zone_id
                ),
            )),
        }
    }

    /// The step of spec.rollout at this reconcile, at the platform's time, with the
    /// security events it reads (with the object's own credentials), from the rollout
    /// its claim records (never from status); `None` without a rollout.
    async fn rollout_step(
        &self,
        cx: &Context<'_, Self>,
        observed: &Observed,
        claim: Option<&Claim>,
    ) -> Result<Option<rollout::Step>, Failure<AccessListConfig>> {
        let Some(spec) = &self.spec.rollout else {
            return Ok(None);
        };
        // Windows are measured in the platform's time, as its events are.
        let client = cx.client().await?;
        let now = client.platform_now();
        let generation = self.metadata.generation;
        let list = (observed.list.is_enabled, observed.list.action);
        let recorded = claim.and_then(|claim| claim.rollout.as_deref());
        let shown = cx.previous.rollout.as_ref();
        let previous = rollout::recorded_or_adopted(spec, recorded, shown, generation, list, now);
        let current = rollout::current(previous.as_ref(), generation, observed.list.action, now);
        let (mut evidence, mut blocked) = (None, None);
        if let Some(read) = rollout::read_needed(spec, &current.status, now) {
            let mut answers = Vec::new();
            for search in rollout::searches(read, spec, observed.list.list_id) {
                answers.push(client.search_events(self.spec.shield_zone_id, &search).await?);
            }
            match read {
                rollout::Read::Evidence { from, to } => evidence = Some(rollout::evidence(from, to, &answers)),
                rollout::Read::Blocked { .. } => blocked = Some(rollout::blocked(&answers)),
            }
        }
        let approval = self.promote_annotation();
        Ok(Some(rollout::step(spec, current, evidence, blocked, approval, now)))
    }

    /// The value of `edgeplatform.io/promote`: the evidence digest a person approved.
    fn promote_annotation(&self) -> Option<&str> {
        self.annotations().get(ANNOTATION_PROMOTE).map(String::as_str)
    }

    /// The rollout's step once its write was answered: a write that made the list log
    /// starts the window at the platform's time of its answer.
    async fn after_write(
        &self,
        cx: &Context<'_, Self>,
        step: Option<rollout::Step>,
        written: &AccessListItem,
    ) -> Result<Option<rollout::Step>, Failure<AccessListConfig>> {
        let (Some(spec), Some(step)) = (&self.spec.rollout, step) else {
            return Ok(None);
        };
        let answered_at = cx.client().await?.platform_now();
        let approval = self.promote_annotation();
        Ok(Some(rollout::after_write(
            spec,
            step,
            written.action,
            approval,
            answered_at,
        )))
    }

    /// PATCHes the list; answers it as written. Later reads of the zone show the write
    /// (see [`ZoneLists::write`]).
    async fn write(
        &self,
        cx: &Context<'_, Self>,
        patch: &AccessListConfigurationPatch,
        list: &AccessListItem,
    ) -> Result<AccessListItem, Failure<AccessListConfig>> {
        let client = cx.client().await?;
        let written = cx
            .state
            .zone_lists
            .write(&client, self.spec.shield_zone_id, list.configuration_id, patch)
            .await?;
        Ok(AccessListItem {
            is_enabled: written.is_enabled.unwrap_or(list.is_enabled),
            action: written.action.unwrap_or(list.action),
            ..list.clone()
        })
    }
}

/// Whether a failure says the object's credentials cannot see its list (refused, or
/// the zone or list is not theirs): then it claims nothing.
fn cannot_see_its_list(error: &Failure<AccessListConfig>) -> bool {
    match error {
        Failure::<AccessListConfig>::Kind { reason, .. } => *reason == AccessListReason::AccessListNotFound,
        _ => {
            let reason = error.reason();
            reason.is_credentials_problem() || reason == ApiFailure::NotFound.into()
        }
    }
}

impl Reconcilable for AccessListConfig {
    const EXAMPLE: &'static str = include_str!("../../../../examples/access-list-config.yaml");
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    type Reason = AccessListReason;
    type Settings = AccessListSettings;
    type State = State;

    fn is_terminal(reason: AccessListReason) -> bool {
        reason.is_terminal()
    }

    fn on_watch(state: &State, event: &kube::runtime::watcher::Event<Self>) {
        state.secret_triggers.send(state.secret_needs.follow(event));
    }

    fn controllers<'a, R: Runner>(reconciler: Arc<Reconciler<Self>>, runner: &'a R) -> BoxFuture<'a, ()> {
        controllers::run(reconciler, runner)
    }

    fn own_crds() -> Vec<CustomResourceDefinition> {
        vec![claim_resource::AccessListClaim::crd()]
    }

    /// The example naming a configurationId beside its listName.
    fn refused_example() -> Option<RefusedExample> {
        Some(RefusedExample {
            spec: serde_json::json!({"configurationId": 1}),
            rule: "naming both a configurationId and a listName",
        })
    }

    fn for_shard(settings: &mut AccessListSettings, shard: &str) {
        settings.secret_finalizer = SecretFinalizer::of_shard(shard);
    }

    fn secret_finalizer(settings: &AccessListSettings) -> Option<&str> {
        Some(settings.secret_finalizer.as_str())
    }

    async fn plan(objects: Vec<(Self, Result<EdgeClient, String>)>) -> Vec<Verdict> {
        verdict::plan_all(objects).await
    }

    /// Reads the list and claims it, plans the PATCH; before writing, protects the
    /// Secret a restore needs, keeps the finalizer and records the restore point in the
    /// claim; then PATCHes and reports the list as written (status mirrors the claim's
    /// restore point), with a drift Event, until the zone's next resync.
    async fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> Result<Outcome<Self::Status, Self::Reason>, Failure<AccessListConfig>> {
        let (observed, mut claim) = self.observe(cx).await?;
        let generation = self.metadata.generation;
        let step = self.rollout_step(cx, &observed, claim.as_ref()).await?;
        let spec = match &step {
            Some(step) => AccessListConfigSpec {
                action: Some(step.action),
                ..self.spec.clone()
            },
            None => self.spec.clone(),
        };
        let recorded = claim.as_ref().and_then(restore_point_of);
        let mut plan = plan(&spec, &cx.previous, generation, &observed.list, recorded);
        let previous_stage = claim.as_ref().and_then(|c| c.rollout.as_ref()).map(|r| r.stage);
        if step
            .as_ref()
            .is_some_and(|step| Some(step.status.stage) != previous_stage)
        {
            // A rollout's step changes the action: not a change made outside this object.
            plan.drift = false;
        }
        cx.ensure_leader()?;
        protect_own_secret(self, cx).await?;
        cx.keep_finalizer(self, wants_finalizer(self) || self.spec.rollout.is_some())
            .await?;
        let lost = claim.as_ref().is_some_and(|claim| claim.restore_point_lost);
        let records_now = plan.patch.is_some() && recorded.is_none() && !lost && wants_finalizer(self);
        if let (Some(mine), Some(point), true) = (&claim, plan.restore_point, records_now) {
            let values = RecordedValues {
                is_enabled: point.is_enabled,
                action: point.action,
            };
            let recorded = cx.state.claims.record_restore_point(&cx.shared.kube, mine, values);
            claim = Some(recorded.await?);
        } else {
            // Status mirrors the claim: an object that does not restore shows none.
            plan.restore_point = recorded;
        }
        let (written, step) = match &plan.patch {
            Some(patch) => {
                let written = self.write(cx, patch, &observed.list).await?;
                let step = self.after_write(cx, step, &written).await?;
                (written, step)
            }
            None => (observed.list, step),
        };
        if let (Some(mine), Some(step)) = (&claim, &step) {
            let record = rollout::recorded(&step.status);
            if mine.rollout.as_deref() != Some(&record) {
                claim = Some(cx.state.claims.record_rollout(&cx.shared.kube, mine, &record).await?);
            }
        }
        let (mut status, ready, synced) = converged(&spec, &cx.previous, generation, &plan, &written, observed.managed);
        status.claim = claim.as_ref().map(|claim| claim.name().to_string());
        let mut events: Vec<Notice<AccessListReason>> = drift_event(&plan).into_iter().collect();
        let interval = cx.settings.poll_interval(self);
        let mut requeue = until_zone_resync(interval, self.spec.shield_zone_id, cx.now.since_epoch());
        let (status, ready) = match step {
            Some(step) => {
                if let Some((reason, matches)) = step.decided_on {
                    cx.shared.metrics.decided_on(Self::kind_name(), reason.into(), matches);
                }
                events.extend(step.events.iter().cloned());
                requeue = step.check_within.map_or(requeue, |within| within.min(requeue));
                rollout::with_step(status, ready, &step)
            }
            None => (status, ready),
        };
        Ok(Outcome::new(status)
            .with_conditions([ready, synced])
            .with_events(events)
            .requeue_after(requeue))
    }

    /// A failed reconcile is retried with the error backoff, but never later than the
    /// zone's next resync instant (within one poll interval), so what status shows of
    /// the platform is read again on the zone's schedule once the failures end.
    fn retry_by(&self, settings: &AccessListSettings, now: DateTime<Utc>) -> Option<std::time::Duration> {
        let interval = settings.poll_interval(self);
        Some(until_next_resync(interval, self.spec.shield_zone_id, since_epoch(now)))
    }

    /// Deleted while paused: the platform is left as it is. With Restore: put back the
    /// values its claim recorded before the first write, on that configuration, with
    /// the object's own credentials. What the object says now decides (a
    /// `deletionPolicy` switched to Orphan restores nothing). Its claims are released
    /// once done; see [`after_restore`] for when the object is released without a
    /// restore, each such release also logged at error level, the durable record.
    async fn cleanup(
        &self,
        cx: &Context<'_, Self>,
        paused: bool,
    ) -> Result<Vec<Notice<AccessListReason>>, Failure<AccessListConfig>> {
        let platform = cx.shared.access_keys.platform_url();
        let records = cx.state.claims.records_of(&cx.shared.kube, platform, self).await?;
        let mut events = Vec::new();
        if paused {
            events.push(Notice::warning(
                AccessListReason::RestoreSkipped,
                "deleted while paused: the platform is left as it is",
            ));
        } else {
            protect_own_secret(self, cx).await?;
        }
        let restores = wants_finalizer(self) && !paused;
        for record in &records {
            let values = record.restore_point.filter(|_| restores);
            let configuration = (record.shield_zone_id, record.configuration_id);
            if let Some(event) = left_logging(record, self.metadata.generation, restores) {
                events.push(event);
            }
            if restores && values.is_none() && record.restore_point_lost {
                events.push(Notice::warning(
                    AccessListReason::RestoreFailed,
                    format!(
                        "nothing restored on configuration {} of Shield Zone {}: its restore point was lost with its AccessListClaim, deleted while no operator ran",
                        record.configuration_id, record.shield_zone_id
                    ),
                ));
            }
            if let Some(values) = values {
                let restored = restore(cx, configuration, values).await;
                let deleted_at = self
                    .metadata
                    .deletion_timestamp
                    .as_ref()
                    .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond()));
                match after_restore(configuration, values, restored, deleted_at, cx.now.time) {
                    AfterRestore::Done(event) => events.push(event),
                    AfterRestore::Retry(error) => return Err(error),
                }
            }
            cx.state.claims.release(&cx.shared.kube, record).await?;
        }
        let unrestored = AccessListReason::RestoreFailed.into();
        for event in events.iter().filter(|event| event.reason == unrestored) {
            tracing::error!(
                namespace = %cx.namespace,
                name = %self.name_any(),
                message = %event.message,
                "released without restoring: the platform keeps the values this object wrote"
            );
        }
        Ok(events)
    }
}

/// The restore point a claim holds, as status shows it.
fn restore_point_of(claim: &Claim) -> Option<RestorePoint> {
    claim.restore_point.map(|values| RestorePoint {
        shield_zone_id: Some(claim.shield_zone_id),
        configuration_id: claim.configuration_id,
        is_enabled: values.is_enabled,
        action: values.action,
    })
}
