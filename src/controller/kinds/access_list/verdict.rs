//! What `edgectl plan` says for AccessListConfigs: the reconciler's own decision for a
//! new object, from one read of each Shield Zone's lists per key.

use std::collections::HashMap;

use super::plan::{diff, plan, resolve, unresolved};
use super::resource::{
    AccessListConfig, AccessListConfigSpec, AccessListConfigStatus, ManagementPolicy, Promotion, Rollout,
};
use crate::api::models::shield::{AccessListAction, AccessListConfigurationPatch, AccessListItem, AccessListsResponse};
use crate::api::{ApiError, EdgeClient};
use crate::controller::framework::extend::{MemberChange, Verdict};

/// The verdict of each object, reading each zone's lists once per key.
pub(super) async fn plan_all(objects: Vec<(AccessListConfig, Result<EdgeClient, String>)>) -> Vec<Verdict> {
    let mut zone_lists: HashMap<(String, i64), Result<AccessListsResponse, ApiError>> = HashMap::new();
    let mut verdicts = Vec::with_capacity(objects.len());
    for (object, client) in objects {
        let client = match client {
            Ok(client) => client,
            Err(detail) => {
                verdicts.push(Verdict::Error { detail });
                continue;
            }
        };
        let zone = object.spec.shield_zone_id;
        let key = (client.credential_id(), zone);
        if !zone_lists.contains_key(&key) {
            let read = client.access_lists(zone).await;
            zone_lists.insert(key.clone(), read);
        }
        verdicts.push(match &zone_lists[&key] {
            Ok(lists) => verdict(&object.spec, lists),
            Err(error) => Verdict::platform_error(error),
        });
    }
    verdicts
}

/// The reconciler's own decision for a new object of `spec`.
pub(crate) fn verdict(spec: &AccessListConfigSpec, lists: &AccessListsResponse) -> Verdict {
    let (item, _) = match resolve(spec, lists) {
        Ok(found) => found,
        Err(error) => {
            let error = unresolved(spec.shield_zone_id, error);
            return Verdict::Error {
                detail: format!("{}: {error}", error.reason()),
            };
        }
    };
    // A rollout starts with the list logging.
    let staged = spec.rollout.as_ref().map(|rollout| {
        let first = AccessListConfigSpec {
            action: Some(AccessListAction::Log),
            ..spec.clone()
        };
        (first, format!("; then {}", staged_steps(rollout)))
    });
    let (spec, then) = match &staged {
        Some((first, then)) => (first, then.as_str()),
        None => (spec, ""),
    };
    let planned = plan(spec, &AccessListConfigStatus::default(), Some(1), item, None);
    let target = format!("configuration {} ({:?})", item.configuration_id, item.name);
    match (&planned.patch, spec.management_policy) {
        (Some(patch), _) => Verdict::Change {
            detail: format!("PATCH {target}{then}"),
            changes: changes(item, patch),
        },
        (None, ManagementPolicy::Observe) if !diff(spec, item).is_empty() => Verdict::NoChange {
            detail: format!("{target} differs, but managementPolicy is Observe: reported as drift, not changed"),
        },
        (None, _) => Verdict::NoChange {
            detail: format!("{target} already matches{then}"),
        },
    }
}

/// The members `patch` changes of `item`.
fn changes(item: &AccessListItem, patch: &AccessListConfigurationPatch) -> Vec<MemberChange> {
    let mut changes = Vec::new();
    if let Some(enabled) = patch.is_enabled {
        changes.push(MemberChange {
            member: "isEnabled".into(),
            before: item.is_enabled.to_string(),
            after: enabled.to_string(),
        });
    }
    if let Some(action) = patch.action {
        changes.push(MemberChange {
            member: "action".into(),
            before: AccessListAction::describe(item.action),
            after: AccessListAction::describe(action),
        });
    }
    changes
}

/// The steps of a rollout after the first write (action Log).
fn staged_steps(rollout: &Rollout) -> String {
    let gate = [
        rollout.max_matches.map(|n| format!("at most {n} matches")),
        rollout.max_distinct_ips.map(|n| format!("at most {n} IPs")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" from ");
    let promotion = match rollout.promotion {
        Promotion::Automatic => format!("once {} of Log showed {gate}", rollout.window),
        Promotion::Manual if gate.is_empty() => "once its evidence is approved".to_string(),
        Promotion::Manual => format!("once its evidence is approved, if it shows {gate}"),
    };
    let rollback = rollout
        .rollback_above_sources
        .map(|n| {
            format!(
                "; back to Log, once, if blocked from more than {n} sources in the {} after promotion",
                rollout.window
            )
        })
        .unwrap_or_default();
    format!("action {} {promotion}{rollback}", rollout.action.action().name())
}
