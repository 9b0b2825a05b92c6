//! AccessListConfig: observe the zone's lists → plan the PATCH (pure) → record the
//! restore point, PATCH → status, drift Events, zone-aligned requeue.

use std::time::Duration;

use kube::ResourceExt;

use self::claims::Claims;
use self::vocabulary::{AccessListError, AccessListReason, Failure};
use self::zone_lists::{ListsFreshness, ZoneLists};
use crate::api::models::shield::AccessListItem;
use crate::controller::framework::object::poll_interval;
use crate::controller::framework::pipeline::{Io, Note, Now, Outcome, Reconciled, Requeue, kind_accessors};
use crate::controller::framework::status::vocabulary::{AnyReason, Word};
use crate::crd::access_list_config::{AccessListConfig, AccessListConfigStatus};

mod claims;
#[cfg(test)]
mod fixtures;
mod plan;
mod restore;
mod secret_protection;
mod settings;
pub mod vocabulary;
mod zone_lists;

pub use self::settings::{AccessListSettings, SECRET_IN_USE_FINALIZER, SecretFinalizer};

pub use self::plan::{Plan, converged_status, diff, plan, resolve};
use self::plan::{drift_note, is_converged, predates_status, since_zone_resync, until_zone_resync};
pub use self::restore::FINALIZER;
use self::restore::{
    AfterRestore, Restore, after_restore, keep_finalizer, record_restore_point, restore, restore_point_of_spec_zone,
    wants_finalizer,
};
use self::secret_protection::{SecretTriggers, protect_own_secret, protected_secret};
pub(crate) use self::secret_protection::{reconcile_secret, secret_error_policy};

/// The access list an object names, as the platform holds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub list: AccessListItem,
    /// Whether the list is one the platform manages rather than a custom one.
    pub managed: bool,
}

/// What a reconcile decided, and the list it read.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub plan: Plan,
    /// The list as the platform holds it (after `act`: as written).
    pub observed: AccessListItem,
    pub managed: bool,
    pub requeue: Duration,
}

/// What the reconciles of AccessListConfigs keep between them.
#[derive(Default)]
pub struct State {
    /// Which object writes which configuration, and which Secrets restores need, from
    /// the kind's watch.
    pub claims: Claims,
    /// The Secrets whose need changed, for the Secret protection controller.
    pub secret_triggers: SecretTriggers,
    /// The zones' access lists, read once for all objects of a zone.
    pub zone_lists: ZoneLists,
}

impl AccessListConfig {
    async fn observe_list(
        &self,
        io: &Io<'_, Self>,
        client: &crate::api::EdgeClient,
        freshness: ListsFreshness,
    ) -> Result<Observed, Failure> {
        // Released before any wait: a write to the zone copies the lists it shares.
        let lists = io
            .state
            .zone_lists
            .read(client, self.spec.shield_zone_id, freshness)
            .await?;
        let (list, managed) = resolve(&self.spec, &lists)?;
        Ok(Observed {
            list: list.clone(),
            managed,
        })
    }

    /// The list its spec names, read with its own credentials: recent enough to apply a
    /// spec, or since the zone's resync instant once converged.
    async fn read_own_list(&self, io: &Io<'_, Self>, now: &Now) -> Result<Observed, Failure> {
        let client = io.client().await?;
        let zone = self.spec.shield_zone_id;
        let converged = self
            .status
            .as_ref()
            .is_some_and(|status| is_converged(status, self.metadata.generation));
        let freshness = if converged {
            let interval = poll_interval(self, io.settings.resync);
            ListsFreshness::SinceResync(since_zone_resync(interval, zone, now.since_epoch()))
        } else {
            ListsFreshness::Recent
        };
        let mut observed = self.observe_list(io, client, freshness).await?;
        if freshness != ListsFreshness::Recent && predates_status(self.status.as_ref(), &observed.list) {
            observed = self.observe_list(io, client, ListsFreshness::Fresh).await?;
        }
        Ok(observed)
    }
}

/// Whether a failure says the object's credentials cannot see its list (refused, or
/// the zone or list is not theirs): then it claims nothing.
fn cannot_see_its_list(error: &Failure) -> bool {
    match error.reason() {
        AnyReason::Common(reason) => claims::refuses_credentials(reason),
        AnyReason::Kind(reason) => reason == AccessListReason::AccessListNotFound,
    }
}

impl Reconciled for AccessListConfig {
    const KIND: &'static str = "AccessListConfig";
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    type Reason = AccessListReason;
    type Error = AccessListError;
    type Settings = AccessListSettings;

    type Status = AccessListConfigStatus;
    type State = State;
    type Observed = Observed;
    type Plan = Planned;

    kind_accessors!();

    fn follow(state: &State, event: &kube::runtime::watcher::Event<Self>) {
        state.secret_triggers.send(state.claims.follow(event));
    }

    async fn observe(&self, io: &Io<'_, Self>, now: &Now) -> Result<Observed, Failure> {
        let observed = match self.read_own_list(io, now).await {
            Ok(observed) => observed,
            Err(error) => {
                if cannot_see_its_list(&error) {
                    io.state.claims.refuse(self);
                }
                return Err(error);
            }
        };
        if let Some(owner) = io.state.claims.claim(self, &observed.list).await {
            return Err(Failure::from(AccessListError::ConfigurationClaimed {
                zone: self.spec.shield_zone_id,
                configuration: observed.list.configuration_id,
                owner,
            }));
        }
        Ok(observed)
    }

    fn plan(&self, observed: Observed, previous: &Self::Status, now: &Now, settings: &AccessListSettings) -> Planned {
        let interval = poll_interval(self, settings.resync);
        Planned {
            plan: plan(&self.spec, previous, self.metadata.generation, &observed.list),
            observed: observed.list,
            managed: observed.managed,
            requeue: until_zone_resync(interval, self.spec.shield_zone_id, now.since_epoch()),
        }
    }

    async fn act(&self, planned: &mut Planned, io: &Io<'_, Self>) -> Result<(), Failure> {
        let plan = &planned.plan;
        keep_finalizer(self, io).await?;
        record_restore_point(self, io, plan.restore_point.filter(|_| plan.patch.is_some())).await?;
        let Some(patch) = &plan.patch else {
            return Ok(());
        };
        let client = io.client().await?;
        let configuration_id = planned.observed.configuration_id;
        let written = client
            .update_access_list(self.spec.shield_zone_id, configuration_id, patch)
            .await?
            .or_requested(patch);
        let observed = &mut planned.observed;
        observed.is_enabled = written.is_enabled.unwrap_or(observed.is_enabled);
        observed.action = written.action.unwrap_or(observed.action);
        io.state
            .zone_lists
            .note_write(
                client,
                self.spec.shield_zone_id,
                configuration_id,
                observed.is_enabled,
                observed.action,
            )
            .await;
        Ok(())
    }

    fn outcome(
        &self,
        planned: Planned,
        previous: &Self::Status,
        now: &Now,
        _settings: &AccessListSettings,
    ) -> Outcome<Self::Status> {
        let status = converged_status(
            &self.spec,
            previous,
            self.metadata.generation,
            &planned.plan,
            &planned.observed,
            planned.managed,
            &now.rfc3339(),
        );
        Outcome {
            status,
            events: drift_note(&planned.plan).into_iter().collect(),
            requeue: Requeue::After(planned.requeue),
        }
    }

    /// With Restore: put back the values recorded in `status.restorePoint` before the
    /// first write, on the configuration they were read from, in the spec's zone. What
    /// the object says now decides (a `deletionPolicy` switched to Orphan restores
    /// nothing). See [`restore_point_of_spec_zone`] and [`after_restore`] for when the
    /// object is released without a restore; each such release is also logged at error
    /// level, the durable record.
    async fn finalize(&self, io: &Io<'_, Self>, now: &Now) -> Result<Vec<Note>, Failure> {
        let point = self.status.as_ref().and_then(|s| s.restore_point);
        let point = point
            .filter(|_| wants_finalizer(self))
            .map(|point| restore_point_of_spec_zone(self.spec.shield_zone_id, point));
        let notes = match point {
            None => Vec::new(),
            Some(Err(rejected)) => vec![rejected],
            Some(Ok(point)) => match restore(self, io, point).await {
                Ok(Restore::Rejected(rejected)) => vec![rejected],
                restored => {
                    let deleted_at = self
                        .metadata
                        .deletion_timestamp
                        .as_ref()
                        .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond()));
                    let restored = restored.map(|_| ());
                    match after_restore(self.spec.shield_zone_id, &point, restored, deleted_at, now.time) {
                        AfterRestore::Done(note) => vec![note],
                        AfterRestore::Retry(error) => return Err(error),
                    }
                }
            },
        };
        let unrestored = [AccessListReason::RestoreFailed, AccessListReason::RestorePointRejected].map(Word::as_str);
        for note in notes.iter().filter(|note| unrestored.contains(&note.reason)) {
            tracing::error!(
                namespace = %io.namespace,
                name = %self.name_any(),
                message = %note.message,
                "released without restoring: the platform keeps the values this object wrote"
            );
        }
        Ok(notes)
    }

    /// Protects the Secret this object needs for a restore, on every pass.
    async fn maintain(&self, io: &Io<'_, Self>) -> Result<(), Failure> {
        protect_own_secret(self, io).await
    }

    fn deleted_while_paused(&self) -> Vec<Note> {
        vec![Note::warning(
            AccessListReason::RestoreSkipped,
            "deleted while paused: the platform is left as it is",
        )]
    }
}
