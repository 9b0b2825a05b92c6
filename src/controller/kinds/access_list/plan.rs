//! The pure core of AccessListConfig: which list the spec names, what differs, the
//! PATCH, the status of a converged object, drift Events and the zone-aligned resync.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::vocabulary::AccessListReason;
use crate::api::models::shield::{
    AccessListAction, AccessListConfigurationPatch, AccessListItem, AccessListsResponse, ListLookupError, ListSelector,
    access_list_type_name,
};
use crate::controller::framework::prelude::{Failure, NewCondition, Notice, Outcome};
use crate::controller::kinds::access_list::resource::{
    AccessListConfig, AccessListConfigSpec, AccessListConfigStatus, AccessListObservation, ManagementPolicy,
    RestorePoint,
};

/// Finds the spec's access list among the zone's lists; `true` when platform-managed.
pub fn resolve<'a>(
    spec: &AccessListConfigSpec,
    lists: &'a AccessListsResponse,
) -> Result<(&'a AccessListItem, bool), ListLookupError> {
    let selector = match spec.configuration_id {
        Some(id) => ListSelector::Configuration(id),
        None => ListSelector::Name(spec.list_name.clone().unwrap_or_default()),
    };
    lists.find(&selector)
}

/// The failure of an object whose spec names no single list of Shield Zone `zone`.
pub(super) fn unresolved(zone: i64, error: ListLookupError) -> Failure<AccessListConfig> {
    let not_found = |what: String| {
        Failure::<AccessListConfig>::own(
            AccessListReason::AccessListNotFound,
            format!("Shield Zone {zone} has no access list {what}"),
        )
    };
    match error {
        ListLookupError::NoConfiguration(id) => not_found(format!("with configurationId {id}")),
        ListLookupError::NoName(name) => not_found(format!("named {name:?}")),
        ListLookupError::AmbiguousName { name, count } => Failure::<AccessListConfig>::own(
            AccessListReason::AmbiguousListName,
            format!("Shield Zone {zone} has {count} access lists named {name:?}; use spec.configurationId"),
        ),
    }
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
pub(super) fn is_converged(status: &AccessListConfigStatus, generation: Option<i64>) -> bool {
    NewCondition::<AccessListReason>::ready_in(&status.conditions).is_some_and(|ready| ready.is_true_for(generation))
}

/// `recorded` is the restore point the object's claim record holds, if any.
pub fn plan(
    spec: &AccessListConfigSpec,
    status: &AccessListConfigStatus,
    generation: Option<i64>,
    observed: &AccessListItem,
    recorded: Option<RestorePoint>,
) -> Plan {
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

/// Whether a kept read of the list disagrees with what the object's status last
/// observed of it: the read may predate a write of another process (another shard, a
/// previous leader), so a new read decides.
pub(super) fn predates_status(status: Option<&AccessListConfigStatus>, item: &AccessListItem) -> bool {
    status.and_then(|s| s.at_provider.as_ref()).is_some_and(|seen| {
        seen.configuration_id == item.configuration_id
            && (seen.is_enabled != item.is_enabled || seen.action != AccessListAction::describe(item.action))
    })
}

fn observation(item: &AccessListItem, managed: bool) -> AccessListObservation {
    AccessListObservation {
        configuration_id: item.configuration_id,
        list_id: item.list_id,
        name: crate::api::bounded_text(&item.name, 256),
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

/// The status after a successful reconcile, its Ready and its Synced: `observed` is the
/// platform state now.
pub(crate) fn converged(
    spec: &AccessListConfigSpec,
    previous: &AccessListConfigStatus,
    generation: Option<i64>,
    plan: &Plan,
    observed: &AccessListItem,
    managed: bool,
) -> (
    AccessListConfigStatus,
    NewCondition<AccessListReason>,
    NewCondition<AccessListReason>,
) {
    let remaining = diff(spec, observed);
    let (ready, synced) = if remaining.is_empty() {
        let applied_earlier = NewCondition::<AccessListReason>::synced_in(&previous.conditions)
            .is_some_and(|synced| synced.is(AccessListReason::Applied) && synced.is_true_for(generation));
        // A resync that finds nothing to change keeps the reason of this generation's
        // change, so the status of an idle object is never rewritten.
        let synced_reason = if plan.patch.is_some() || applied_earlier {
            AccessListReason::Applied
        } else {
            AccessListReason::UpToDate
        };
        (
            NewCondition::ready(true, AccessListReason::InSync, "the access list matches the spec"),
            NewCondition::synced(true, synced_reason, ""),
        )
    } else {
        (
            NewCondition::ready(false, AccessListReason::Drifted, describe_difference(&remaining)),
            NewCondition::synced(
                true,
                AccessListReason::Observed,
                "managementPolicy is Observe: the platform is not changed",
            ),
        )
    };
    let corrected = plan.drift && plan.patch.is_some();
    let status = AccessListConfigStatus {
        observed_generation: generation,
        conditions: previous.conditions.clone(),
        at_provider: Some(observation(observed, managed)),
        drift_corrections: previous.drift_corrections + i64::from(corrected),
        restore_point: plan.restore_point,
        rollout: None,
        claim: None,
    };
    (status, ready, synced)
}

/// The status the operator writes at `now` after a successful reconcile without a
/// rollout that wrote by `plan` and then observed the platform (and whether the list
/// is managed): `converged`'s, its conditions merged as the driver merges them.
pub fn converged_status(
    spec: &AccessListConfigSpec,
    previous: &AccessListConfigStatus,
    generation: Option<i64>,
    (plan, observed, managed): (&Plan, &AccessListItem, bool),
    now: DateTime<Utc>,
) -> AccessListConfigStatus {
    let (status, ready, synced) = converged(spec, previous, generation, plan, observed, managed);
    Outcome::new(status)
        .with_conditions([ready, synced])
        .status_over(previous, generation, now)
}

/// The Event of a drift: corrected (Manage) or only detected (Observe).
pub(super) fn drift_event(plan: &Plan) -> Option<Notice<AccessListReason>> {
    match (&plan.patch, plan.drift) {
        (Some(patch), true) => Some(Notice::normal(
            AccessListReason::DriftCorrected,
            format!("changed outside this object; corrected: {}", describe_difference(patch)),
        )),
        (None, true) => Some(Notice::warning(
            AccessListReason::DriftDetected,
            "differs from the spec; managementPolicy is Observe, so it is left as it is",
        )),
        _ => None,
    }
}

/// Time until the zone's next re-read: every `interval`, at an offset fixed by the zone
/// id. All objects of a zone re-read at the same instants, so they share one read however
/// far apart they converged, and zones are spread over the interval. At least half an
/// interval away, so a fresh object is not re-read at once.
pub(super) fn until_zone_resync(interval: Duration, zone: i64, since_epoch: Duration) -> Duration {
    let period = interval.as_millis().max(2);
    let mut wait = until_next_resync(interval, zone, since_epoch).as_millis();
    if wait < period / 2 {
        wait += period;
    }
    Duration::from_millis(u64::try_from(wait).unwrap_or(u64::MAX))
}

/// Time until the zone's next resync instant, however close: more than zero, at most one
/// interval (see [`until_zone_resync`]).
pub(super) fn until_next_resync(interval: Duration, zone: i64, since_epoch: Duration) -> Duration {
    let period = interval.as_millis().max(2);
    let wait = period - since_zone_resync(interval, zone, since_epoch).as_millis();
    Duration::from_millis(u64::try_from(wait).unwrap_or(u64::MAX))
}

/// Time since the zone's latest resync instant (see [`until_zone_resync`]).
pub(super) fn since_zone_resync(interval: Duration, zone: i64, since_epoch: Duration) -> Duration {
    let period = interval.as_millis().max(2);
    let offset = u128::from((zone as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % period;
    let since = (since_epoch.as_millis() + period - offset) % period;
    Duration::from_millis(u64::try_from(since).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::fixtures::{converged, item, spec};
    use super::*;
    use crate::api::models::shield::AccessListsResponse;
    use crate::controller::framework::pipeline::status::conditions::find;
    use crate::controller::framework::pipeline::status::conditions::is_true;
    use crate::controller::framework::reasons::ConditionType;

    /// The plan of a new object's first reconcile, the list disabled with action 2.
    fn first_plan(spec: &AccessListConfigSpec) -> Plan {
        plan(spec, &AccessListConfigStatus::default(), Some(1), &item(false, 2), None)
    }

    /// A time `second` seconds into the tests' day.
    fn instant(second: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_795_000_000 + second, 0).expect("a time")
    }

    #[test]
    fn patches_only_the_members_that_differ() {
        let p = first_plan(&spec(true, None));
        assert_eq!(
            p.patch,
            Some(AccessListConfigurationPatch {
                is_enabled: Some(true),
                action: None
            })
        );
        let p = first_plan(&spec(false, Some(AccessListAction::Challenge)));
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
            None,
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
    fn the_next_resync_instant_is_within_one_interval_and_on_the_zones_grid() {
        let interval = Duration::from_secs(5);
        let start = Duration::from_secs(1_800_000_000);
        let on_grid = |now: Duration| (now + until_next_resync(interval, 7, now)).as_millis() % 5_000;
        for step in 0..40u64 {
            let now = start + Duration::from_millis(step * 1_237);
            let wait = until_next_resync(interval, 7, now);
            assert!(wait > Duration::ZERO && wait <= interval, "{wait:?}");
            assert_eq!(on_grid(now), on_grid(start), "from {now:?}");
            assert!(until_zone_resync(interval, 7, now) >= wait);
        }
    }

    #[test]
    fn a_resync_that_changes_nothing_leaves_the_status_as_it_was() {
        let fresh = AccessListConfigStatus::default();
        let first = first_plan(&spec(true, None));
        let converge = |previous: &AccessListConfigStatus, generation, plan: &Plan, second| {
            converged_status(
                &spec(true, None),
                previous,
                generation,
                (plan, &item(true, 2), false),
                instant(second),
            )
        };
        let applied = converge(&fresh, Some(1), &first, 1);
        let resync = plan(
            &spec(true, None),
            &applied,
            Some(1),
            &item(true, 2),
            first.restore_point,
        );
        assert_eq!(resync.patch, None);
        let after = converge(&applied, Some(1), &resync, 2);
        assert_eq!(after, applied);
        let edited = converge(&applied, Some(2), &resync, 3);
        let synced = find(&edited.conditions, ConditionType::Synced).expect("Synced");
        assert_eq!(
            synced.reason, "UpToDate",
            "a new generation that needs no change is up to date"
        );
    }

    #[test]
    fn change_behind_a_converged_objects_back_is_drift_and_is_counted() {
        let status = converged(3);
        let p = plan(&spec(true, None), &status, Some(3), &item(false, 2), None);
        assert!(p.drift);
        assert!(p.patch.is_some());
        let after = converged_status(
            &spec(true, None),
            &status,
            Some(3),
            (&p, &item(true, 2), true),
            instant(2),
        );
        assert_eq!(after.drift_corrections, 1);
        assert!(is_true(&after.conditions, ConditionType::Ready));
        let new_generation = plan(&spec(true, None), &status, Some(4), &item(false, 2), None);
        assert!(!new_generation.drift, "a spec change is not drift");
    }

    #[test]
    fn observe_never_patches_and_reports_the_difference() {
        let mut observe = spec(true, None);
        observe.management_policy = ManagementPolicy::Observe;
        let p = first_plan(&observe);
        assert_eq!(p.patch, None);
        assert_eq!(p.restore_point, None);
        let status = converged_status(
            &observe,
            &AccessListConfigStatus::default(),
            Some(1),
            (&p, &item(false, 2), true),
            instant(0),
        );
        let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
        assert_eq!(ready.reason, "Drifted");
        assert!(ready.message.contains("isEnabled should be true"));
    }

    #[test]
    fn a_kept_read_that_disagrees_with_the_status_is_read_again() {
        let status = AccessListConfigStatus {
            at_provider: Some(observation(&item(true, 2), false)),
            ..converged(3)
        };
        assert!(!predates_status(Some(&status), &item(true, 2)));
        assert!(predates_status(Some(&status), &item(false, 2)));
        assert!(predates_status(Some(&status), &item(true, 3)));
        assert!(!predates_status(Some(&converged(3)), &item(false, 2)));
        assert!(!predates_status(None, &item(false, 2)));
    }

    #[test]
    fn drift_is_an_event_corrected_or_only_detected() {
        let status = converged(3);
        let manage = plan(&spec(true, None), &status, Some(3), &item(false, 2), None);
        let note = drift_event(&manage).expect("a note");
        assert_eq!(
            (note.warning, note.reason),
            (false, AccessListReason::DriftCorrected.into())
        );
        assert!(note.message.contains("isEnabled should be true"), "{}", note.message);
        let mut observe = spec(true, None);
        observe.management_policy = ManagementPolicy::Observe;
        let note = drift_event(&plan(&observe, &status, Some(3), &item(false, 2), None)).expect("a note");
        assert_eq!(
            (note.warning, note.reason),
            (true, AccessListReason::DriftDetected.into())
        );
        assert_eq!(
            drift_event(&plan(&spec(true, None), &status, Some(4), &item(false, 2), None)),
            None
        );
    }

    #[test]
    fn the_restore_point_is_the_first_observation_only() {
        let point = RestorePoint {
            shield_zone_id: Some(1),
            configuration_id: 9101,
            is_enabled: false,
            action: 2,
        };
        let recorded = Some(point);
        let forged = AccessListConfigStatus {
            restore_point: Some(RestorePoint {
                is_enabled: true,
                ..point
            }),
            ..AccessListConfigStatus::default()
        };
        let later = plan(
            &spec(true, Some(AccessListAction::Log)),
            &forged,
            Some(2),
            &item(true, 3),
            recorded,
        );
        assert_eq!(later.restore_point, recorded, "the record's, never the status's");
        let first = plan(&spec(true, None), &forged, Some(1), &item(false, 2), None);
        assert_eq!(first.restore_point, recorded, "the values read before the first write");
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
            unresolved(1, resolve(&by_name, &lists).expect_err("ambiguous")).reason(),
            AccessListReason::AmbiguousListName.into()
        );
        by_name.list_name = Some("nope".into());
        assert_eq!(
            unresolved(1, resolve(&by_name, &lists).expect_err("missing")).reason(),
            AccessListReason::AccessListNotFound.into()
        );
    }
}
