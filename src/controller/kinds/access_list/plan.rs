//! The pure core of AccessListConfig: which list the spec names, what differs, the
//! PATCH, the status of a converged object, drift Events and the zone-aligned resync.

use std::time::Duration;

use crate::api::models::shield::{
    AccessListAction, AccessListConfigurationPatch, AccessListItem, AccessListsResponse, ListLookupError, ListSelector,
    access_list_type_name,
};
use crate::controller::framework::conditions::{ConditionType, Decided, Reason, find, merge};
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::pipeline::{Note, is_ready};
use crate::crd::access_list_config::{
    AccessListConfig, AccessListConfigSpec, AccessListConfigStatus, AccessListObservation, ManagementPolicy,
    RestorePoint,
};

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
