//! Deletion with `deletionPolicy: Restore`: the finalizer and the restore point recorded
//! before the first write, the verdict after a restore attempt, and the restore call.

use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

use super::vocabulary::{AccessListError, AccessListReason, Failure};
use super::zone_lists::ListsFreshness;
use crate::api::models::shield::{AccessListAction, AccessListConfigurationPatch};
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::kind::{Cx, Event};
use crate::controller::framework::status::vocabulary::Reason;
use crate::crd::access_list_config::{
    AccessListConfig, AccessListConfigStatus, DeletionPolicy, ManagementPolicy, RestorePoint,
};

/// Finalizer of objects with `deletionPolicy: Restore`.
pub const FINALIZER: &str = "edgeplatform.io/restore-access-list";

/// How long after the deletion request a failing restore is retried.
pub(super) const RESTORE_DEADLINE: Duration = Duration::from_secs(600);

/// What to do after a restore attempt.
#[derive(Debug)]
pub(super) enum AfterRestore {
    /// Release the object, with this Event.
    Done(Event),
    /// Keep the finalizer and retry; the error shows in status until then.
    Retry(Failure),
}

/// Decides, without I/O, what a restore attempt means for the finalizer:
/// - restored, or the configuration is gone from the platform: release;
/// - a failure waiting may fix, or credentials a person may fix (missing, rejected,
///   forbidden): keep the finalizer and retry until [`RESTORE_DEADLINE`] after the
///   deletion request, the latter showing as Stalled with the two ways out;
/// - any other failure, or the deadline passed: release without restoring, with a
///   Warning Event (and an error-level log line, written by the caller).
pub(super) fn after_restore(
    spec_zone: i64,
    point: &RestorePoint,
    restored: Result<(), Failure>,
    deleted_at: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
) -> AfterRestore {
    let (zone, configuration) = (spec_zone, point.configuration_id);
    let error = match restored {
        Ok(()) => {
            return AfterRestore::Done(Event::normal(
                AccessListReason::Restored,
                format!(
                    "restored isEnabled={} action={} on configuration {configuration} of Shield Zone {zone}",
                    point.is_enabled,
                    AccessListAction::describe(point.action),
                ),
            ));
        }
        Err(error) => error,
    };
    if let ReconcileError::Platform(crate::api::ApiError::NotFound(_))
    | ReconcileError::Kind(AccessListError::NotFound { .. }) = error
    {
        return AfterRestore::Done(Event::normal(
            AccessListReason::NothingToRestore,
            format!("configuration {configuration} of Shield Zone {zone} no longer exists: nothing to restore"),
        ));
    }
    let deadline = deleted_at.and_then(|at| chrono::Duration::from_std(RESTORE_DEADLINE).ok().map(|d| at + d));
    let overdue = deadline.is_none_or(|deadline| now >= deadline);
    let fixable_credentials = matches!(
        error.common_reason(),
        Some(Reason::Unauthorized | Reason::Forbidden | Reason::CredentialsUnavailable)
    );
    match (overdue, deadline) {
        (false, Some(deadline)) if fixable_credentials => AfterRestore::Retry(
            AccessListError::RestoreBlocked {
                zone,
                configuration,
                deadline: crate::controller::framework::status::time::rfc3339(deadline),
                cause: Box::new(error),
            }
            .into(),
        ),
        (false, _) if error.is_transient() => AfterRestore::Retry(error),
        _ => AfterRestore::Done(Event::warning(
            AccessListReason::RestoreFailed,
            format!(
                "could not restore configuration {configuration} of Shield Zone {zone} ({}: {error}); \
                 released without restoring",
                error.reason()
            ),
        )),
    }
}

/// The restore point, if it names the spec's Shield Zone (or none: points recorded
/// before the zone was kept). The spec's zone cannot change, so a point naming another
/// one was written by someone who may patch the status, not by the operator; a restore
/// never goes there, and the object is released with a Warning Event saying why.
pub(super) fn restore_point_of_spec_zone(spec_zone: i64, point: RestorePoint) -> Result<RestorePoint, Event> {
    match point.shield_zone_id {
        Some(zone) if zone != spec_zone => Err(Event::warning(
            AccessListReason::RestorePointRejected,
            format!(
                "status.restorePoint names Shield Zone {zone}, not this object's zone {spec_zone}: \
                 released without restoring configuration {}",
                point.configuration_id
            ),
        )),
        _ => Ok(point),
    }
}

/// The restore point, if it names the configuration the spec resolves to now (with the
/// object's own credentials) and no other object owns that configuration. Else the
/// point was not recorded by the operator for this object, and the Warning Event of a
/// release without restoring.
pub(super) fn restore_point_of_list(
    zone: i64,
    point: &RestorePoint,
    resolved: i64,
    owner: Option<String>,
) -> Result<(), Event> {
    let configuration = point.configuration_id;
    if configuration != resolved {
        return Err(Event::warning(
            AccessListReason::RestorePointRejected,
            format!(
                "status.restorePoint names configuration {configuration}, but the spec names configuration {resolved} of Shield Zone {zone}: released without restoring"
            ),
        ));
    }
    match owner {
        None => Ok(()),
        Some(owner) => Err(Event::warning(
            AccessListReason::RestorePointRejected,
            format!(
                "configuration {configuration} of Shield Zone {zone} is written by {owner}, not this object: \
                 released without restoring"
            ),
        )),
    }
}

/// What a restore did.
#[derive(Debug)]
pub(super) enum Restore {
    Written,
    /// The restore point was refused: nothing was written.
    Rejected(Event),
}

/// Resolves the spec's list with the object's credentials, checks the restore point
/// against it and the claims, then writes the recorded values back.
pub(super) async fn restore(
    object: &AccessListConfig,
    cx: &Cx<'_, AccessListConfig>,
    point: RestorePoint,
) -> Result<Restore, Failure> {
    let client = cx.client().await?;
    let zone = object.spec.shield_zone_id;
    let list = object.observe_list(cx, &client, ListsFreshness::Recent).await?.list;
    let owner = cx.state.claims.claim(object, &list).await;
    if let Err(rejected) = restore_point_of_list(zone, &point, list.configuration_id, owner) {
        return Ok(Restore::Rejected(rejected));
    }
    let patch = AccessListConfigurationPatch {
        is_enabled: Some(point.is_enabled),
        action: Some(point.action),
    };
    client.update_access_list(zone, point.configuration_id, &patch).await?;
    cx.state
        .zone_lists
        .note_write(&client, zone, point.configuration_id, point.is_enabled, point.action)
        .await;
    Ok(Restore::Written)
}

pub(super) fn wants_finalizer(object: &AccessListConfig) -> bool {
    object.spec.deletion_policy == DeletionPolicy::Restore && object.spec.management_policy == ManagementPolicy::Manage
}

/// Adds the finalizer (with `Restore`) or removes it (otherwise). The cache holds only
/// our finalizer, so the list written is the apiserver's, read now; the write carries
/// the resourceVersion of the cached copy the decision was made on, so it never
/// overwrites a finalizer list, or acts on a spec, that changed meanwhile.
pub(super) async fn keep_finalizer(
    object: &AccessListConfig,
    cx: &mut Cx<'_, AccessListConfig>,
) -> Result<(), Failure> {
    let has = object.finalizers().iter().any(|f| f == FINALIZER);
    let wants = wants_finalizer(object);
    if has != wants {
        let current = cx.api.get_metadata(&object.name_any()).await?;
        let mut finalizers: Vec<String> = current
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        if wants {
            finalizers.push(FINALIZER.to_string());
        }
        let metadata = serde_json::json!({ "finalizers": finalizers, "resourceVersion": object.resource_version() });
        let written = cx
            .api
            .patch(
                &object.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "metadata": metadata })),
            )
            .await?;
        cx.wrote(written.resource_version());
    }
    Ok(())
}

/// Records the restore point in status before the platform is first changed, once, for
/// an object that restores. Status is the only record trusted: only the operator writes
/// it.
pub(super) async fn record_restore_point(
    object: &AccessListConfig,
    cx: &mut Cx<'_, AccessListConfig>,
    restore_point: Option<RestorePoint>,
) -> Result<(), Failure> {
    if cx.previous.restore_point.is_some() || !wants_finalizer(object) {
        return Ok(());
    }
    let Some(point) = restore_point else {
        return Ok(());
    };
    let status = AccessListConfigStatus {
        restore_point: Some(point),
        ..cx.previous.clone()
    };
    cx.write_status_now(object, status).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::framework::kind::failure_event;
    use crate::controller::framework::status::conditions::{NewCondition, merge};
    use crate::controller::framework::status::vocabulary::ConditionType;
    use crate::controller::framework::status::vocabulary::StatusName;

    #[test]
    fn a_restore_point_of_another_zone_is_not_used() {
        let point = |zone| RestorePoint {
            shield_zone_id: zone,
            configuration_id: 9101,
            is_enabled: false,
            action: 2,
        };
        assert_eq!(
            restore_point_of_spec_zone(1001, point(Some(1001))),
            Ok(point(Some(1001)))
        );
        assert_eq!(restore_point_of_spec_zone(1001, point(None)), Ok(point(None)));
        let rejected = restore_point_of_spec_zone(1001, point(Some(1002))).expect_err("another zone");
        assert_eq!(rejected.reason, AccessListReason::RestorePointRejected.as_str());
        assert!(rejected.message.contains("Shield Zone 1002"), "{}", rejected.message);
    }

    #[test]
    fn a_restore_point_of_another_configuration_or_owner_is_not_used() {
        let point = RestorePoint {
            shield_zone_id: Some(1001),
            configuration_id: 9101,
            is_enabled: false,
            action: 2,
        };
        assert_eq!(restore_point_of_list(1001, &point, 9101, None), Ok(()));
        let elsewhere = restore_point_of_list(1001, &point, 9102, None).expect_err("another configuration");
        assert_eq!(elsewhere.reason, AccessListReason::RestorePointRejected.as_str());
        assert!(
            elsewhere.message.contains("configuration 9101") && elsewhere.message.contains("configuration 9102"),
            "{}",
            elsewhere.message
        );
        let owned = restore_point_of_list(
            1001,
            &point,
            9101,
            Some("an AccessListConfig of another namespace".into()),
        )
        .expect_err("another owner");
        assert_eq!(owned.reason, AccessListReason::RestorePointRejected.as_str());
        assert!(owned.message.contains("another namespace"), "{}", owned.message);
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
        let shown = |error: &Failure| {
            let decided = [NewCondition::new(
                ConditionType::Synced,
                false,
                error.reason(),
                error.to_string(),
            )];
            merge(&[], &decided, Some(1), "t")
        };
        let (by_key, by_secret) = (held(revoked()), held(no_secret()));
        let note = failure_event(&[], &by_key).expect("the hold begins");
        assert_eq!(
            (note.reason, note.warning),
            (AccessListReason::RestoreHeld.as_str(), true)
        );
        assert!(
            note.message.starts_with("Unauthorized holds the restore"),
            "{}",
            note.message
        );
        assert_eq!(failure_event(&shown(&by_key), &held(revoked())), None, "the same hold");
        let changed = failure_event(&shown(&by_key), &by_secret).expect("its cause changed");
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
}
