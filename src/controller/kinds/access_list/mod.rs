//! AccessListConfig: observe the zone's lists → plan the PATCH (pure) → record the
//! restore point, PATCH → status, drift Events, zone-aligned requeue.

use std::collections::BTreeSet;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

use super::conditions::{ConditionType, Decided, Reason, find, merge};
use super::context::Settings;
use super::driver::{Io, Note, Now, Outcome, Reconciled, Requeue, is_ready, kind_accessors};
use super::error::ReconcileError;
use super::reads::ListsFreshness;
use super::status::{is_paused, poll_interval};
use crate::api::models::shield::{
    AccessListAction, AccessListConfigurationPatch, AccessListItem, AccessListsResponse, ListLookupError, ListSelector,
    access_list_type_name,
};
use crate::crd::access_list_config::{
    AccessListConfig, AccessListConfigSpec, AccessListConfigStatus, AccessListObservation, DeletionPolicy,
    ManagementPolicy, RestorePoint,
};

pub mod claims;

/// Finalizer of objects with `deletionPolicy: Restore`.
pub const FINALIZER: &str = "edgeplatform.io/restore-access-list";

/// Finds the spec's access list among the zone's lists; `true` when platform-managed.
pub fn resolve<'a>(
    spec: &AccessListConfigSpec,
    lists: &'a AccessListsResponse,
) -> Result<(&'a AccessListItem, bool), ReconcileError> {
    let selector = match spec.configuration_id {
        Some(id) => ListSelector::Configuration(id),
        None => ListSelector::Name(spec.list_name.clone().unwrap_or_default()),
    };
    let zone = spec.shield_zone_id;
    lists.find(&selector).map_err(|error| match error {
        ListLookupError::NoConfiguration(id) => ReconcileError::AccessListNotFound {
            zone,
            what: format!("with configurationId {id}"),
        },
        ListLookupError::NoName(name) => ReconcileError::AccessListNotFound {
            zone,
            what: format!("named {name:?}"),
        },
        ListLookupError::AmbiguousName { name, count } => ReconcileError::AmbiguousListName { zone, name, count },
    })
}

/// The members of the platform's configuration that differ from the spec.
pub fn diff(spec: &AccessListConfigSpec, observed: &AccessListItem) -> AccessListConfigurationPatch {
    AccessListConfigurationPatch {
        is_enabled: (observed.is_enabled != spec.enabled).then_some(spec.enabled),
        action: spec
            .action
            .map(AccessListAction::code)
            .filter(|&a| a != observed.action),
    }
}

/// What to do for one object, decided without I/O.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The PATCH to send, if any.
    pub patch: Option<AccessListConfigurationPatch>,
    /// The platform changed behind a converged object's back.
    pub drift: bool,
    /// Values to keep for Restore, recorded before the first write.
    pub restore_point: Option<RestorePoint>,
}

/// Whether the status says the spec of `generation` was applied and is in sync.
pub fn is_converged(status: &AccessListConfigStatus, generation: Option<i64>) -> bool {
    is_ready::<AccessListConfig>(status, generation)
}

pub fn plan(
    spec: &AccessListConfigSpec,
    status: &AccessListConfigStatus,
    generation: Option<i64>,
    observed: &AccessListItem,
) -> Plan {
    let recorded = status.restore_point;
    let difference = diff(spec, observed);
    let drift = !difference.is_empty() && is_converged(status, generation);
    if spec.management_policy == ManagementPolicy::Observe || difference.is_empty() {
        return Plan {
            patch: None,
            drift,
            restore_point: recorded,
        };
    }
    let restore_point = recorded.or(Some(RestorePoint {
        shield_zone_id: Some(spec.shield_zone_id),
        configuration_id: observed.configuration_id,
        is_enabled: observed.is_enabled,
        action: observed.action,
    }));
    Plan {
        patch: Some(difference),
        drift,
        restore_point,
    }
}

fn observation(item: &AccessListItem, managed: bool) -> AccessListObservation {
    AccessListObservation {
        configuration_id: item.configuration_id,
        list_id: item.list_id,
        name: item.name.clone(),
        is_enabled: item.is_enabled,
        action: AccessListAction::describe(item.action),
        list_type: access_list_type_name(item.list_type),
        managed,
    }
}

/// "isEnabled should be true, action should be Block".
fn describe_difference(patch: &AccessListConfigurationPatch) -> String {
    let mut parts = Vec::new();
    if let Some(enabled) = patch.is_enabled {
        parts.push(format!("isEnabled should be {enabled}"));
    }
    if let Some(action) = patch.action {
        parts.push(format!("action should be {}", AccessListAction::describe(action)));
    }
    parts.join(", ")
}

/// The status after a successful reconcile: `observed` is the platform state now.
pub fn converged_status(
    spec: &AccessListConfigSpec,
    previous: &AccessListConfigStatus,
    generation: Option<i64>,
    plan: &Plan,
    observed: &AccessListItem,
    managed: bool,
    now: &str,
) -> AccessListConfigStatus {
    let remaining = diff(spec, observed);
    let (ready, synced) = if remaining.is_empty() {
        let applied_earlier = find(&previous.conditions, ConditionType::Synced).is_some_and(|c| {
            c.reason == Reason::Applied.as_str()
                && c.status == crate::crd::ConditionStatus::True
                && c.observed_generation == generation
        });
        // A resync that finds nothing to change keeps the reason of this generation's
        // change, so the status of an idle object is never rewritten.
        let synced_reason = if plan.patch.is_some() || applied_earlier {
            Reason::Applied
        } else {
            Reason::UpToDate
        };
        (
            Decided::new(
                ConditionType::Ready,
                true,
                Reason::InSync,
                "the access list matches the spec",
            ),
            Decided::new(ConditionType::Synced, true, synced_reason, ""),
        )
    } else {
        (
            Decided::new(
                ConditionType::Ready,
                false,
                Reason::Drifted,
                describe_difference(&remaining),
            ),
            Decided::new(
                ConditionType::Synced,
                true,
                Reason::Observed,
                "managementPolicy is Observe: the platform is not changed",
            ),
        )
    };
    let corrected = plan.drift && plan.patch.is_some();
    AccessListConfigStatus {
        observed_generation: generation,
        conditions: merge(&previous.conditions, &[ready, synced], generation, now),
        at_provider: Some(observation(observed, managed)),
        drift_corrections: previous.drift_corrections + i64::from(corrected),
        restore_point: plan.restore_point,
    }
}

/// The Event of a drift: corrected (Manage) or only detected (Observe).
pub fn drift_note(plan: &Plan) -> Option<Note> {
    match (&plan.patch, plan.drift) {
        (Some(patch), true) => Some(Note::normal(
            Reason::DriftCorrected,
            format!("changed outside this object; corrected: {}", describe_difference(patch)),
        )),
        (None, true) => Some(Note::warning(
            Reason::DriftDetected,
            "differs from the spec; managementPolicy is Observe, so it is left as it is",
        )),
        _ => None,
    }
}

/// Time until the zone's next re-read: every `interval`, at an offset fixed by the zone
/// id. All objects of a zone re-read at the same instants, so they share one read however
/// far apart they converged, and zones are spread over the interval. At least half an
/// interval away, so a fresh object is not re-read at once.
pub fn until_zone_resync(interval: Duration, zone: i64, since_epoch: Duration) -> Duration {
    let period = interval.as_millis().max(2);
    let mut wait = period - since_zone_resync(interval, zone, since_epoch).as_millis();
    if wait < period / 2 {
        wait += period;
    }
    Duration::from_millis(u64::try_from(wait).unwrap_or(u64::MAX))
}

/// Time since the zone's latest resync instant (see [`until_zone_resync`]).
pub fn since_zone_resync(interval: Duration, zone: i64, since_epoch: Duration) -> Duration {
    let period = interval.as_millis().max(2);
    let offset = u128::from((zone as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % period;
    let since = (since_epoch.as_millis() + period - offset) % period;
    Duration::from_millis(u64::try_from(since).unwrap_or(u64::MAX))
}

/// What a reconcile observed and decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub plan: Plan,
    /// The list as the platform holds it (after `act`: as written).
    pub observed: AccessListItem,
    pub managed: bool,
    pub requeue: Duration,
}

impl Reconciled for AccessListConfig {
    const KIND: &'static str = "AccessListConfig";
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    type Status = AccessListConfigStatus;
    type Observed = (AccessListItem, bool);
    type Plan = Planned;
    type Acted = Planned;

    kind_accessors!();

    async fn observe(&self, io: &Io<'_, Self>, now: &Now) -> Result<Self::Observed, ReconcileError> {
        let client = io.client().await?;
        let zone = self.spec.shield_zone_id;
        let converged = self
            .status
            .as_ref()
            .is_some_and(|status| is_converged(status, self.metadata.generation));
        let freshness = if converged {
            let interval = poll_interval(self, io.ctx.settings.resync);
            ListsFreshness::SinceResync(since_zone_resync(interval, zone, now.since_epoch()))
        } else {
            ListsFreshness::Recent
        };
        let (item, managed) = {
            // Released before any wait: a write to the zone copies the lists it shares.
            let lists = io.ctx.reads.zone_access_lists(client, zone, freshness).await?;
            let (item, managed) = resolve(&self.spec, &lists)?;
            (item.clone(), managed)
        };
        if let Some(owner) = io.ctx.access_list_claims.owner(self, item.configuration_id).await {
            return Err(ReconcileError::ConfigurationClaimed {
                zone: self.spec.shield_zone_id,
                configuration: item.configuration_id,
                owner,
            });
        }
        Ok((item, managed))
    }

    fn plan(&self, observed: Self::Observed, previous: &Self::Status, now: &Now, settings: &Settings) -> Planned {
        let (item, managed) = observed;
        let interval = poll_interval(self, settings.resync);
        Planned {
            plan: plan(&self.spec, previous, self.metadata.generation, &item),
            observed: item,
            managed,
            requeue: until_zone_resync(interval, self.spec.shield_zone_id, now.since_epoch()),
        }
    }

    async fn act(&self, mut planned: Planned, io: &Io<'_, Self>) -> Result<Planned, ReconcileError> {
        let plan = &planned.plan;
        record_restore_point(self, io, plan.restore_point.filter(|_| plan.patch.is_some())).await?;
        let Some(patch) = &plan.patch else {
            return Ok(planned);
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
        io.ctx
            .reads
            .note_access_list_write(
                client,
                self.spec.shield_zone_id,
                configuration_id,
                observed.is_enabled,
                observed.action,
            )
            .await;
        Ok(planned)
    }

    fn outcome(
        &self,
        acted: Planned,
        previous: &Self::Status,
        now: &Now,
        _settings: &Settings,
    ) -> Outcome<Self::Status> {
        let status = converged_status(
            &self.spec,
            previous,
            self.metadata.generation,
            &acted.plan,
            &acted.observed,
            acted.managed,
            &now.rfc3339(),
        );
        Outcome {
            status,
            events: drift_note(&acted.plan).into_iter().collect(),
            requeue: Requeue::After(acted.requeue),
        }
    }

    /// With Restore: put back the values recorded in `status.restorePoint` before the
    /// first write, on the zone and configuration they were read from. What the object
    /// says now decides (a `deletionPolicy` switched to Orphan restores nothing). See
    /// [`restore_verdict`] for when the object is released without a restore.
    async fn finalize(&self, io: &Io<'_, Self>, now: &Now) -> Result<Vec<Note>, ReconcileError> {
        let point = self.status.as_ref().and_then(|s| s.restore_point);
        let notes = match point.filter(|_| wants_finalizer(self)) {
            None => Vec::new(),
            Some(point) => {
                let restored = restore(self, io, point).await;
                let deleted_at = self
                    .metadata
                    .deletion_timestamp
                    .as_ref()
                    .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond()));
                match restore_verdict(self.spec.shield_zone_id, &point, restored, deleted_at, now.time) {
                    Verdict::Done(note) => {
                        if note.reason == Reason::RestoreFailed {
                            tracing::error!(
                                namespace = %io.namespace,
                                name = %self.name_any(),
                                message = %note.message,
                                "released without restoring: the platform keeps the values this object wrote"
                            );
                        }
                        vec![note]
                    }
                    Verdict::Retry(error) => return Err(error),
                }
            }
        };
        sync_secret_protection(self, io, Stage::Released).await?;
        Ok(notes)
    }

    /// Keeps the in-use finalizer on exactly the Secrets of the namespace that some
    /// object needs for a restore, on every pass (paused and deleting included).
    async fn maintain(&self, io: &Io<'_, Self>) -> Result<(), ReconcileError> {
        sync_secret_protection(self, io, Stage::Current).await
    }
}

/// How long after the deletion request a failing restore is retried.
pub const RESTORE_DEADLINE: Duration = Duration::from_secs(600);

/// What to do after a restore attempt.
#[derive(Debug)]
pub enum Verdict {
    /// Release the object, with this Event.
    Done(Note),
    /// Keep the finalizer and retry; the error shows in status until then.
    Retry(ReconcileError),
}

/// Decides, without I/O, what a restore attempt means for the finalizer:
/// - restored, or the configuration is gone from the platform: release;
/// - a failure waiting may fix, or credentials a person may fix (missing, rejected,
///   forbidden): keep the finalizer and retry until [`RESTORE_DEADLINE`] after the
///   deletion request, the latter showing as Stalled with the two ways out;
/// - any other failure, or the deadline passed: release without restoring, with a
///   Warning Event (and an error-level log line, written by the caller).
pub fn restore_verdict(
    spec_zone: i64,
    point: &RestorePoint,
    restored: Result<(), ReconcileError>,
    deleted_at: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
) -> Verdict {
    let zone = point.shield_zone_id.unwrap_or(spec_zone);
    let configuration = point.configuration_id;
    let error = match restored {
        Ok(()) => {
            return Verdict::Done(Note::normal(
                Reason::Restored,
                format!(
                    "restored isEnabled={} action={} on configuration {configuration} of Shield Zone {zone}",
                    point.is_enabled,
                    AccessListAction::describe(point.action),
                ),
            ));
        }
        Err(error) => error,
    };
    if let ReconcileError::Platform(crate::api::ApiError::NotFound(_)) = error {
        return Verdict::Done(Note::normal(
            Reason::NothingToRestore,
            format!("configuration {configuration} of Shield Zone {zone} no longer exists: nothing to restore"),
        ));
    }
    let deadline = deleted_at.and_then(|at| chrono::Duration::from_std(RESTORE_DEADLINE).ok().map(|d| at + d));
    let overdue = deadline.is_none_or(|deadline| now >= deadline);
    let fixable_credentials = matches!(
        error.reason(),
        Reason::Unauthorized | Reason::Forbidden | Reason::CredentialsUnavailable
    );
    match (overdue, deadline) {
        (false, Some(deadline)) if fixable_credentials => Verdict::Retry(ReconcileError::RestoreBlocked {
            zone,
            configuration,
            deadline: super::status::rfc3339(deadline),
            cause: Box::new(error),
        }),
        (false, _) if error.is_transient() => Verdict::Retry(error),
        _ => Verdict::Done(Note::warning(
            Reason::RestoreFailed,
            format!(
                "could not restore configuration {configuration} of Shield Zone {zone} ({}: {error}); \
                 released without restoring",
                error.reason()
            ),
        )),
    }
}

async fn restore(
    object: &AccessListConfig,
    io: &Io<'_, AccessListConfig>,
    point: RestorePoint,
) -> Result<(), ReconcileError> {
    let client = io.client().await?;
    let patch = AccessListConfigurationPatch {
        is_enabled: Some(point.is_enabled),
        action: Some(point.action),
    };
    let zone = point.shield_zone_id.unwrap_or(object.spec.shield_zone_id);
    client.update_access_list(zone, point.configuration_id, &patch).await?;
    io.ctx
        .reads
        .note_access_list_write(client, zone, point.configuration_id, point.is_enabled, point.action)
        .await;
    Ok(())
}

/// Finalizer the operator puts on a Secret that objects needing a Restore use: a
/// namespace deletion then removes the Secret only after those objects are gone, as
/// pvc-protection does for volumes.
pub const SECRET_IN_USE_FINALIZER: &str = "edgeplatform.io/credentials-in-use";

/// Whose need a protection pass counts for the object being reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// As the object is now.
    Current,
    /// Its restore is over: it needs nothing any more.
    Released,
}

/// The Secret `object` needs protected while it may still have to restore: it manages,
/// restores on delete, is not paused, and (when deleting) still holds the finalizer.
pub fn protected_secret(object: &AccessListConfig) -> Option<&str> {
    let deleting = object.metadata.deletion_timestamp.is_some();
    let holds = object.finalizers().iter().any(|f| f == FINALIZER);
    let needs = wants_finalizer(object) && !is_paused(object) && (!deleting || holds);
    object
        .spec
        .access_key_secret_ref
        .as_ref()
        .filter(|_| needs)
        .map(|r| r.name.as_str())
}

/// Which Secrets of a namespace to add the in-use finalizer to and remove it from.
pub fn protection_changes(needed: &BTreeSet<String>, protected: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    let add = needed.difference(protected).cloned().collect();
    let remove = protected.difference(needed).cloned().collect();
    (add, remove)
}

async fn sync_secret_protection(
    object: &AccessListConfig,
    io: &Io<'_, AccessListConfig>,
    stage: Stage,
) -> Result<(), ReconcileError> {
    if !io.ctx.settings.protect_secrets {
        return Ok(());
    }
    let uid = object.uid().unwrap_or_default();
    let mut needed = io.ctx.access_list_claims.secrets_needed(&io.namespace, &uid);
    if let Some(secret) = protected_secret(object).filter(|_| stage == Stage::Current) {
        needed.insert(secret.to_string());
    }
    let protected: BTreeSet<String> = io
        .ctx
        .credentials
        .secrets
        .with_finalizer(&io.namespace, SECRET_IN_USE_FINALIZER)
        .into_iter()
        .collect();
    let (add, remove) = protection_changes(&needed, &protected);
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(io.ctx.kube.clone(), &io.namespace);
    for (names, patch) in [
        (
            add,
            serde_json::json!({ "metadata": { "finalizers": [SECRET_IN_USE_FINALIZER] } }),
        ),
        (
            remove,
            serde_json::json!({ "metadata": { "$deleteFromPrimitiveList/finalizers": [SECRET_IN_USE_FINALIZER] } }),
        ),
    ] {
        for name in names {
            match secrets
                .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                Err(kube::Error::Api(response)) if response.code == 404 => {}
                other => drop(other?),
            }
        }
    }
    Ok(())
}

fn wants_finalizer(object: &AccessListConfig) -> bool {
    object.spec.deletion_policy == DeletionPolicy::Restore && object.spec.management_policy == ManagementPolicy::Manage
}

/// Adds the finalizer (with `Restore`) or removes it (otherwise), and records the
/// restore point in status before the platform is first changed. Status is the only
/// record trusted: only the operator writes it. The finalizer write carries the
/// resourceVersion it was computed from, so it never overwrites a finalizer list that
/// changed meanwhile.
async fn record_restore_point(
    object: &AccessListConfig,
    io: &Io<'_, AccessListConfig>,
    restore_point: Option<RestorePoint>,
) -> Result<(), ReconcileError> {
    let has = object.finalizers().iter().any(|f| f == FINALIZER);
    let wants = wants_finalizer(object);
    if has != wants {
        let mut finalizers: Vec<String> = object
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        if wants {
            finalizers.push(FINALIZER.to_string());
        }
        let metadata = serde_json::json!({ "finalizers": finalizers, "resourceVersion": object.resource_version() });
        io.api
            .patch(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "metadata": metadata })),
            )
            .await?;
    }
    let recorded = object.status.as_ref().and_then(|s| s.restore_point);
    if let Some(point) = restore_point.filter(|_| wants && recorded.is_none()) {
        io.api
            .patch_status(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "status": { "restorePoint": point } })),
            )
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::conditions::{is_true, merge};

    fn spec(enabled: bool, action: Option<AccessListAction>) -> AccessListConfigSpec {
        AccessListConfigSpec {
            shield_zone_id: 1,
            configuration_id: Some(9101),
            list_name: None,
            enabled,
            action,
            management_policy: ManagementPolicy::Manage,
            deletion_policy: DeletionPolicy::Orphan,
            access_key_secret_ref: None,
        }
    }

    fn item(enabled: bool, action: i32) -> AccessListItem {
        AccessListItem {
            list_id: 11,
            configuration_id: 9101,
            name: "Known bad actors".into(),
            is_enabled: enabled,
            action,
            ..AccessListItem::default()
        }
    }

    fn converged(generation: i64) -> AccessListConfigStatus {
        AccessListConfigStatus {
            observed_generation: Some(generation),
            conditions: merge(
                &[],
                &[Decided::new(ConditionType::Ready, true, Reason::InSync, "")],
                Some(generation),
                "t",
            ),
            ..AccessListConfigStatus::default()
        }
    }

    #[test]
    fn patches_only_the_members_that_differ() {
        let p = plan(
            &spec(true, None),
            &AccessListConfigStatus::default(),
            Some(1),
            &item(false, 2),
        );
        assert_eq!(
            p.patch,
            Some(AccessListConfigurationPatch {
                is_enabled: Some(true),
                action: None
            })
        );
        let p = plan(
            &spec(false, Some(AccessListAction::Challenge)),
            &AccessListConfigStatus::default(),
            Some(1),
            &item(false, 2),
        );
        assert_eq!(
            p.patch,
            Some(AccessListConfigurationPatch {
                is_enabled: None,
                action: Some(3)
            })
        );
        assert!(!p.drift, "the first write of a generation is not drift");
        assert_eq!(
            p.restore_point,
            Some(RestorePoint {
                shield_zone_id: Some(1),
                configuration_id: 9101,
                is_enabled: false,
                action: 2
            })
        );
    }

    #[test]
    fn in_sync_means_no_call_and_no_drift() {
        let p = plan(
            &spec(true, Some(AccessListAction::Block)),
            &converged(3),
            Some(3),
            &item(true, 2),
        );
        assert_eq!(p.patch, None);
        assert!(!p.drift);
    }

    #[test]
    fn objects_of_a_zone_re_read_at_the_same_instants_and_zones_spread_out() {
        let interval = Duration::from_secs(600);
        let grid = |zone: i64, now: Duration| (now + until_zone_resync(interval, zone, now)).as_millis() % 600_000;
        let start = Duration::from_secs(1_800_000_000);
        for step in 0..40u64 {
            let now = start + Duration::from_millis(step * 37_123);
            let wait = until_zone_resync(interval, 7, now);
            assert!(wait >= interval / 2 && wait < interval * 3 / 2, "{wait:?}");
            assert_eq!(grid(7, now), grid(7, start), "zone 7 from {now:?}");
        }
        let slot = start + until_zone_resync(interval, 7, start);
        assert_eq!(
            until_zone_resync(interval, 7, slot + Duration::from_millis(40)),
            interval - Duration::from_millis(40),
            "a reconcile at its slot comes back one interval later"
        );
        let offsets: std::collections::BTreeSet<u128> = (1..=20).map(|zone| grid(zone, start)).collect();
        assert_eq!(offsets.len(), 20);
        let later = slot + Duration::from_secs(123);
        assert_eq!(since_zone_resync(interval, 7, later), Duration::from_secs(123));
        assert_eq!(since_zone_resync(interval, 7, slot), Duration::ZERO);
    }

    #[test]
    fn a_resync_that_changes_nothing_leaves_the_status_as_it_was() {
        let fresh = AccessListConfigStatus::default();
        let first = plan(&spec(true, None), &fresh, Some(1), &item(false, 2));
        let applied = converged_status(&spec(true, None), &fresh, Some(1), &first, &item(true, 2), false, "t1");
        let resync = plan(&spec(true, None), &applied, Some(1), &item(true, 2));
        assert_eq!(resync.patch, None);
        let after = converged_status(
            &spec(true, None),
            &applied,
            Some(1),
            &resync,
            &item(true, 2),
            false,
            "t2",
        );
        assert_eq!(after, applied);
        let edited = converged_status(
            &spec(true, None),
            &applied,
            Some(2),
            &resync,
            &item(true, 2),
            false,
            "t3",
        );
        let synced = find(&edited.conditions, ConditionType::Synced).expect("Synced");
        assert_eq!(
            synced.reason, "UpToDate",
            "a new generation that needs no change is up to date"
        );
    }

    #[test]
    fn change_behind_a_converged_objects_back_is_drift_and_is_counted() {
        let status = converged(3);
        let p = plan(&spec(true, None), &status, Some(3), &item(false, 2));
        assert!(p.drift);
        assert!(p.patch.is_some());
        let after = converged_status(&spec(true, None), &status, Some(3), &p, &item(true, 2), true, "t2");
        assert_eq!(after.drift_corrections, 1);
        assert!(is_true(&after.conditions, ConditionType::Ready));
        let new_generation = plan(&spec(true, None), &status, Some(4), &item(false, 2));
        assert!(!new_generation.drift, "a spec change is not drift");
    }

    #[test]
    fn observe_never_patches_and_reports_the_difference() {
        let mut observe = spec(true, None);
        observe.management_policy = ManagementPolicy::Observe;
        let p = plan(&observe, &AccessListConfigStatus::default(), Some(1), &item(false, 2));
        assert_eq!(p.patch, None);
        assert_eq!(p.restore_point, None);
        let status = converged_status(
            &observe,
            &AccessListConfigStatus::default(),
            Some(1),
            &p,
            &item(false, 2),
            true,
            "t",
        );
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
        assert_eq!(ready.reason, "Drifted");
        assert!(ready.message.contains("isEnabled should be true"));
    }

    #[test]
    fn drift_is_an_event_corrected_or_only_detected() {
        let status = converged(3);
        let manage = plan(&spec(true, None), &status, Some(3), &item(false, 2));
        let note = drift_note(&manage).expect("a note");
        assert_eq!((note.warning, note.reason), (false, Reason::DriftCorrected));
        assert!(note.message.contains("isEnabled should be true"), "{}", note.message);
        let mut observe = spec(true, None);
        observe.management_policy = ManagementPolicy::Observe;
        let note = drift_note(&plan(&observe, &status, Some(3), &item(false, 2))).expect("a note");
        assert_eq!((note.warning, note.reason), (true, Reason::DriftDetected));
        assert_eq!(
            drift_note(&plan(&spec(true, None), &status, Some(4), &item(false, 2))),
            None
        );
    }

    #[test]
    fn a_restore_gives_up_only_when_no_one_can_help_or_the_deadline_passed() {
        use crate::api::{ApiError, PlatformMessage};
        let point = RestorePoint {
            shield_zone_id: Some(7),
            configuration_id: 9101,
            is_enabled: false,
            action: 2,
        };
        let deleted: chrono::DateTime<chrono::Utc> = "2026-11-20T12:00:00Z".parse().expect("time");
        let soon = deleted + chrono::Duration::seconds(30);
        let late = deleted + chrono::Duration::seconds(601);
        let server = || Err(ReconcileError::Platform(ApiError::from_response(503, None, b"")));
        let revoked = || {
            Err(ReconcileError::Platform(ApiError::Unauthorized(
                PlatformMessage::default(),
            )))
        };
        let no_secret = || {
            Err(ReconcileError::Credentials {
                namespace: "team".into(),
                name: "gone".into(),
                problem: "not found".into(),
            })
        };
        let rejected = || Err(ReconcileError::Platform(ApiError::from_response(400, None, b"")));
        let verdict = |restored, now| match restore_verdict(1, &point, restored, Some(deleted), now) {
            Verdict::Done(note) => format!(
                "{}:{}:{}",
                if note.warning { "warning" } else { "normal" },
                note.reason,
                note.message
            ),
            Verdict::Retry(error) => format!("retry:{}:{error}", error.reason()),
        };
        let restored = verdict(Ok(()), soon);
        assert!(
            restored.starts_with("normal:Restored:") && restored.contains("configuration 9101 of Shield Zone 7"),
            "the zone of the restore point, not the spec's: {restored}"
        );
        assert!(verdict(server(), soon).starts_with("retry:ServerError"));
        assert!(verdict(server(), late).starts_with("warning:RestoreFailed"));
        let gone = Err(ReconcileError::Platform(ApiError::NotFound(PlatformMessage::default())));
        assert!(verdict(gone, soon).starts_with("normal:NothingToRestore"));
        for (what, blocked) in [
            ("revoked", verdict(revoked(), soon)),
            ("no secret", verdict(no_secret(), soon)),
        ] {
            assert!(blocked.starts_with("retry:"), "{what}: {blocked}");
            assert!(
                blocked.contains("Fix the credentials")
                    && blocked.contains("Orphan")
                    && blocked.contains("2026-11-20T12:10:00"),
                "{what}: names the two ways out and the deadline: {blocked}"
            );
        }
        assert!(verdict(revoked(), late).starts_with("warning:RestoreFailed"));
        assert!(
            verdict(rejected(), soon).starts_with("warning:RestoreFailed"),
            "no one can fix a 400"
        );
        let old_point = RestorePoint {
            shield_zone_id: None,
            ..point
        };
        match restore_verdict(1, &old_point, Ok(()), Some(deleted), soon) {
            Verdict::Done(note) => assert!(note.message.contains("Shield Zone 1"), "{}", note.message),
            Verdict::Retry(error) => panic!("{error}"),
        }
    }

    #[test]
    fn the_secret_protection_follows_what_objects_need() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<String>>();
        let (add, remove) = protection_changes(&names(&["a", "b"]), &names(&["b", "old"]));
        assert_eq!((add, remove), (vec!["a".to_string()], vec!["old".to_string()]));
        let mut object = AccessListConfig::new("x", spec(true, None));
        object.spec.deletion_policy = DeletionPolicy::Restore;
        object.spec.access_key_secret_ref = Some(crate::crd::SecretKeyRef {
            name: "key".into(),
            key: "accessKey".into(),
        });
        assert_eq!(protected_secret(&object), Some("key"));
        let mut paused = object.clone();
        paused
            .annotations_mut()
            .insert("edgeplatform.io/paused".into(), "true".into());
        assert_eq!(protected_secret(&paused), None, "pause releases");
        let mut orphan = object.clone();
        orphan.spec.deletion_policy = DeletionPolicy::Orphan;
        assert_eq!(protected_secret(&orphan), None, "policy change releases");
        let mut deleting = object.clone();
        deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-11-20T12:00:00Z".parse().expect("time"),
        ));
        assert_eq!(protected_secret(&deleting), None, "restore done: finalizer gone");
        deleting.finalizers_mut().push(FINALIZER.into());
        assert_eq!(protected_secret(&deleting), Some("key"), "restore pending");
    }

    #[test]
    fn the_restore_point_is_the_first_observation_only() {
        let status = AccessListConfigStatus {
            restore_point: Some(RestorePoint {
                shield_zone_id: Some(1),
                configuration_id: 9101,
                is_enabled: false,
                action: 2,
            }),
            ..AccessListConfigStatus::default()
        };
        let p = plan(
            &spec(true, Some(AccessListAction::Log)),
            &status,
            Some(2),
            &item(true, 3),
        );
        assert_eq!(p.restore_point, status.restore_point);
    }

    #[test]
    fn lists_resolve_by_id_or_unique_name() {
        let lists = AccessListsResponse {
            managed_lists: vec![item(false, 2)],
            custom_lists: vec![
                AccessListItem {
                    configuration_id: 9201,
                    name: "dup".into(),
                    ..AccessListItem::default()
                },
                AccessListItem {
                    configuration_id: 9202,
                    name: "dup".into(),
                    ..AccessListItem::default()
                },
            ],
            ..AccessListsResponse::default()
        };
        let (found, managed) = resolve(&spec(true, None), &lists).expect("by id");
        assert_eq!((found.configuration_id, managed), (9101, true));
        let mut by_name = spec(true, None);
        by_name.configuration_id = None;
        by_name.list_name = Some("Known bad actors".into());
        assert_eq!(resolve(&by_name, &lists).expect("by name").0.configuration_id, 9101);
        by_name.list_name = Some("dup".into());
        assert_eq!(
            resolve(&by_name, &lists).expect_err("ambiguous").reason(),
            Reason::AmbiguousListName
        );
        by_name.list_name = Some("nope".into());
        assert_eq!(
            resolve(&by_name, &lists).expect_err("missing").reason(),
            Reason::AccessListNotFound
        );
    }
}
