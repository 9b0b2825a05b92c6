//! AccessListConfig: read the zone's lists → plan the PATCH (pure) → record the
//! restore point, PATCH → status, drift Events, zone-aligned requeue.

use kube::ResourceExt;

use self::claims::Claims;
use self::vocabulary::{AccessListError, AccessListReason, Failure};
use self::zone_lists::{ListsFreshness, ZoneLists};
use crate::api::EdgeClient;
use crate::api::models::shield::{AccessListConfigurationPatch, AccessListItem};
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::kind::{Cx, Event, Outcome, Reconciled, Requeue};
use crate::controller::framework::object::poll_interval;
use crate::controller::framework::status::vocabulary::StatusName;
use crate::crd::SecretKeyRef;
use crate::crd::access_list_config::{AccessListConfig, AccessListConfigStatus};

mod claims;
#[cfg(test)]
mod fixtures;
mod plan;
mod restore;
mod secret_protection;
mod settings;
pub(crate) mod vocabulary;
mod zone_lists;

pub use self::settings::{AccessListSettings, SECRET_IN_USE_FINALIZER, SecretFinalizer};

pub use self::plan::{Plan, converged_status, diff, plan, resolve};
use self::plan::{drift_event, is_converged, predates_status, since_zone_resync, until_zone_resync};
pub use self::restore::FINALIZER;
use self::restore::{
    AfterRestore, Restore, after_restore, keep_finalizer, record_restore_point, restore, restore_point_of_spec_zone,
    wants_finalizer,
};
pub(crate) use self::secret_protection::{ProtectionChange, change_protection};
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
        cx: &Cx<'_, Self>,
        client: &EdgeClient,
        freshness: ListsFreshness,
    ) -> Result<Observed, Failure> {
        // Released before any wait: a write to the zone copies the lists it shares.
        let lists = cx
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
    async fn read_own_list(&self, cx: &Cx<'_, Self>) -> Result<Observed, Failure> {
        let client = cx.client().await?;
        let zone = self.spec.shield_zone_id;
        let converged = self
            .status
            .as_ref()
            .is_some_and(|status| is_converged(status, self.metadata.generation));
        let freshness = if converged {
            let interval = poll_interval(self, cx.settings.resync);
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

    /// The list its spec names, which no other object writes: refused credentials claim
    /// nothing.
    async fn observe(&self, cx: &Cx<'_, Self>) -> Result<Observed, Failure> {
        let observed = match self.read_own_list(cx).await {
            Ok(observed) => observed,
            Err(error) => {
                if cannot_see_its_list(&error) {
                    cx.state.claims.refuse(self);
                }
                return Err(error);
            }
        };
        if let Some(owner) = cx.state.claims.claim(self, &observed.list).await {
            return Err(Failure::from(AccessListError::ConfigurationClaimed {
                zone: self.spec.shield_zone_id,
                configuration: observed.list.configuration_id,
                owner,
            }));
        }
        Ok(observed)
    }

    /// PATCHes the list; answers it as written.
    async fn write(
        &self,
        cx: &Cx<'_, Self>,
        patch: &AccessListConfigurationPatch,
        list: &AccessListItem,
    ) -> Result<AccessListItem, Failure> {
        let client = cx.client().await?;
        let zone = self.spec.shield_zone_id;
        let written = client
            .update_access_list(zone, list.configuration_id, patch)
            .await?
            .or_requested(patch);
        let written = AccessListItem {
            is_enabled: written.is_enabled.unwrap_or(list.is_enabled),
            action: written.action.unwrap_or(list.action),
            ..list.clone()
        };
        cx.state
            .zone_lists
            .note_write(
                &client,
                zone,
                written.configuration_id,
                written.is_enabled,
                written.action,
            )
            .await;
        Ok(written)
    }
}

/// Whether a failure says the object's credentials cannot see its list (refused, or
/// the zone or list is not theirs): then it claims nothing.
fn cannot_see_its_list(error: &Failure) -> bool {
    match error {
        ReconcileError::Kind(error) => matches!(error, AccessListError::NotFound { .. }),
        _ => error.common_reason().is_some_and(claims::refuses_credentials),
    }
}

impl Reconciled for AccessListConfig {
    const KIND: &'static str = "AccessListConfig";
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    type Error = AccessListError;
    type Settings = AccessListSettings;
    type Status = AccessListConfigStatus;
    type State = State;

    fn status(&self) -> Option<&AccessListConfigStatus> {
        self.status.as_ref()
    }

    fn secret_ref(&self) -> Option<&SecretKeyRef> {
        self.spec.access_key_secret_ref.as_ref()
    }

    fn is_terminal_reason(reason: &str) -> bool {
        reason.parse().is_ok_and(AccessListReason::is_terminal)
    }

    fn on_watch(state: &State, event: &kube::runtime::watcher::Event<Self>) {
        state.secret_triggers.send(state.claims.follow(event));
    }

    /// Reads the list, plans the PATCH; before writing, protects the Secret a restore
    /// needs, keeps the finalizer and records the restore point; then PATCHes and
    /// reports the list as written, with a drift Event, until the zone's next resync.
    async fn reconcile(&self, cx: &mut Cx<'_, Self>) -> Result<Outcome<AccessListConfigStatus>, Failure> {
        let observed = self.observe(cx).await?;
        let generation = self.metadata.generation;
        let plan = plan(&self.spec, &cx.previous, generation, &observed.list);
        cx.ensure_leader()?;
        protect_own_secret(self, cx).await?;
        keep_finalizer(self, cx).await?;
        if plan.patch.is_some() {
            record_restore_point(self, cx, plan.restore_point).await?;
        }
        let written = match &plan.patch {
            Some(patch) => self.write(cx, patch, &observed.list).await?,
            None => observed.list,
        };
        let interval = poll_interval(self, cx.settings.resync);
        Ok(Outcome {
            status: converged_status(
                &self.spec,
                &cx.previous,
                generation,
                &plan,
                &written,
                observed.managed,
                &cx.now.rfc3339(),
            ),
            events: drift_event(&plan).into_iter().collect(),
            requeue: Requeue::After(until_zone_resync(
                interval,
                self.spec.shield_zone_id,
                cx.now.since_epoch(),
            )),
        })
    }

    /// Deleted while paused: the platform is left as it is. With Restore: put back the
    /// values recorded in `status.restorePoint` before the first write, on the
    /// configuration they were read from, in the spec's zone. What the object says now
    /// decides (a `deletionPolicy` switched to Orphan restores nothing). See
    /// [`restore_point_of_spec_zone`] and [`after_restore`] for when the object is
    /// released without a restore; each such release is also logged at error level,
    /// the durable record.
    async fn cleanup(&self, cx: &Cx<'_, Self>, paused: bool) -> Result<Vec<Event>, Failure> {
        if paused {
            return Ok(vec![Event::warning(
                AccessListReason::RestoreSkipped,
                "deleted while paused: the platform is left as it is",
            )]);
        }
        protect_own_secret(self, cx).await?;
        let point = self.status.as_ref().and_then(|s| s.restore_point);
        let point = point
            .filter(|_| wants_finalizer(self))
            .map(|point| restore_point_of_spec_zone(self.spec.shield_zone_id, point));
        let events = match point {
            None => Vec::new(),
            Some(Err(rejected)) => vec![rejected],
            Some(Ok(point)) => match restore(self, cx, point).await {
                Ok(Restore::Rejected(rejected)) => vec![rejected],
                restored => {
                    let deleted_at = self
                        .metadata
                        .deletion_timestamp
                        .as_ref()
                        .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond()));
                    let restored = restored.map(|_| ());
                    match after_restore(self.spec.shield_zone_id, &point, restored, deleted_at, cx.now.time) {
                        AfterRestore::Done(event) => vec![event],
                        AfterRestore::Retry(error) => return Err(error),
                    }
                }
            },
        };
        let unrestored =
            [AccessListReason::RestoreFailed, AccessListReason::RestorePointRejected].map(StatusName::as_str);
        for event in events.iter().filter(|event| unrestored.contains(&event.reason)) {
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
