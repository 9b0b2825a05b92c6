//! AccessListConfig: observe the zone's lists → plan the PATCH (pure) → record the
//! restore point, PATCH → status, drift Events, zone-aligned requeue.

use std::time::Duration;

use kube::ResourceExt;

use self::claims::Claims;
use self::zone_lists::{ListsFreshness, ZoneLists};
use crate::api::models::shield::AccessListItem;
use crate::controller::framework::conditions::Reason;
use crate::controller::framework::context::Settings;
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::pipeline::{Io, Note, Now, Outcome, Reconciled, Requeue, kind_accessors};
use crate::controller::framework::status::poll_interval;
use crate::crd::access_list_config::{AccessListConfig, AccessListConfigStatus};

mod claims;
mod plan;
mod restore;
mod secret_protection;
mod zone_lists;

pub use self::plan::{
    Plan, converged_status, diff, drift_note, is_converged, plan, resolve, since_zone_resync, until_zone_resync,
};
pub use self::restore::{AfterRestore, FINALIZER, RESTORE_DEADLINE, after_restore};
use self::restore::{record_restore_point, restore, restore_point_of_spec_zone, wants_finalizer};
pub use self::secret_protection::{
    ProtectionChange, SECRET_IN_USE_FINALIZER, protected_secret, reconcile_secret, secret_error_policy,
};
use self::secret_protection::{SecretTriggers, protect_own_secret};

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

impl Reconciled for AccessListConfig {
    const KIND: &'static str = "AccessListConfig";
    const FINALIZER: Option<&'static str> = Some(FINALIZER);

    type Status = AccessListConfigStatus;
    type State = State;
    type Observed = Observed;
    type Plan = Planned;

    kind_accessors!();

    fn follow(state: &State, event: &kube::runtime::watcher::Event<Self>) {
        state.secret_triggers.send(state.claims.follow(event));
    }

    async fn observe(&self, io: &Io<'_, Self>, now: &Now) -> Result<Observed, ReconcileError> {
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
        let observed = {
            // Released before any wait: a write to the zone copies the lists it shares.
            let lists = io.state.zone_lists.read(client, zone, freshness).await?;
            let (list, managed) = resolve(&self.spec, &lists)?;
            Observed {
                list: list.clone(),
                managed,
            }
        };
        if let Some(owner) = io.state.claims.claim(self, &observed.list).await {
            return Err(ReconcileError::ConfigurationClaimed {
                zone: self.spec.shield_zone_id,
                configuration: observed.list.configuration_id,
                owner,
            });
        }
        Ok(observed)
    }

    fn plan(&self, observed: Observed, previous: &Self::Status, now: &Now, settings: &Settings) -> Planned {
        let interval = poll_interval(self, settings.resync);
        Planned {
            plan: plan(&self.spec, previous, self.metadata.generation, &observed.list),
            observed: observed.list,
            managed: observed.managed,
            requeue: until_zone_resync(interval, self.spec.shield_zone_id, now.since_epoch()),
        }
    }

    async fn act(&self, planned: &mut Planned, io: &Io<'_, Self>) -> Result<(), ReconcileError> {
        let plan = &planned.plan;
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
        _settings: &Settings,
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
    async fn finalize(&self, io: &Io<'_, Self>, now: &Now) -> Result<Vec<Note>, ReconcileError> {
        let point = self.status.as_ref().and_then(|s| s.restore_point);
        let point = point
            .filter(|_| wants_finalizer(self))
            .map(|point| restore_point_of_spec_zone(self.spec.shield_zone_id, point));
        let notes = match point {
            None => Vec::new(),
            Some(Err(rejected)) => vec![rejected],
            Some(Ok(point)) => {
                let restored = restore(self, io, point).await;
                let deleted_at = self
                    .metadata
                    .deletion_timestamp
                    .as_ref()
                    .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond()));
                match after_restore(self.spec.shield_zone_id, &point, restored, deleted_at, now.time) {
                    AfterRestore::Done(note) => vec![note],
                    AfterRestore::Retry(error) => return Err(error),
                }
            }
        };
        let unrestored = [Reason::RestoreFailed, Reason::RestorePointRejected];
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
    async fn maintain(&self, io: &Io<'_, Self>) -> Result<(), ReconcileError> {
        protect_own_secret(self, io).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::api::models::shield::{AccessListAction, AccessListConfigurationPatch, AccessListsResponse};
    use crate::controller::framework::conditions::{ConditionType, Decided, Reason, find, is_true, merge};
    use crate::controller::framework::pipeline::failure_note;
    use crate::crd::access_list_config::{AccessListConfigSpec, DeletionPolicy, ManagementPolicy, RestorePoint};

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
            shield_zone_id: Some(1),
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
        let verdict = |restored, now| match after_restore(1, &point, restored, Some(deleted), now) {
            AfterRestore::Done(note) => format!(
                "{}:{}:{}",
                if note.warning { "warning" } else { "normal" },
                note.reason,
                note.message
            ),
            AfterRestore::Retry(error) => format!("retry:{}:{error}", error.reason()),
        };
        let restored = verdict(Ok(()), soon);
        assert!(
            restored.starts_with("normal:Restored:") && restored.contains("configuration 9101 of Shield Zone 1"),
            "{restored}"
        );
        assert!(verdict(server(), soon).starts_with("retry:ServerError"));
        assert!(verdict(server(), late).starts_with("warning:RestoreFailed"));
        let gone = Err(ReconcileError::Platform(ApiError::NotFound(PlatformMessage::default())));
        assert!(verdict(gone, soon).starts_with("normal:NothingToRestore"));
        for (what, blocked) in [
            ("revoked", verdict(revoked(), soon)),
            ("no secret", verdict(no_secret(), soon)),
        ] {
            assert!(blocked.starts_with("retry:RestoreHeld:"), "{what}: {blocked}");
            assert!(
                blocked.contains("fix the credentials")
                    && blocked.contains("Orphan")
                    && blocked.contains("2026-11-20T12:10:00"),
                "{what}: names the two ways out and the deadline: {blocked}"
            );
        }
        assert!(verdict(revoked(), late).starts_with("warning:RestoreFailed"));

        // The hold is told once when it begins and again when its cause changes.
        let held = |restored| match after_restore(1, &point, restored, Some(deleted), soon) {
            AfterRestore::Retry(error) => error,
            AfterRestore::Done(note) => panic!("{}", note.message),
        };
        let shown = |error: &ReconcileError| {
            let decided = [Decided::new(
                ConditionType::Synced,
                false,
                error.reason(),
                error.to_string(),
            )];
            merge(&[], &decided, Some(1), "t")
        };
        let (by_key, by_secret) = (held(revoked()), held(no_secret()));
        let note = failure_note(&[], &by_key).expect("the hold begins");
        assert_eq!((note.reason, note.warning), (Reason::RestoreHeld, true));
        assert!(
            note.message.starts_with("Unauthorized holds the restore"),
            "{}",
            note.message
        );
        assert_eq!(failure_note(&shown(&by_key), &held(revoked())), None, "the same hold");
        let changed = failure_note(&shown(&by_key), &by_secret).expect("its cause changed");
        assert!(
            changed.message.starts_with("CredentialsUnavailable holds"),
            "{}",
            changed.message
        );
        assert_ne!(
            note.action(),
            changed.action(),
            "a new Event, not a repeat of the first"
        );
        assert!(
            verdict(rejected(), soon).starts_with("warning:RestoreFailed"),
            "no one can fix a 400"
        );
        let old_point = RestorePoint {
            shield_zone_id: None,
            ..point
        };
        match after_restore(1, &old_point, Ok(()), Some(deleted), soon) {
            AfterRestore::Done(note) => assert!(note.message.contains("Shield Zone 1"), "{}", note.message),
            AfterRestore::Retry(error) => panic!("{error}"),
        }
    }

    #[test]
    fn an_object_needs_its_secret_while_it_may_restore() {
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
