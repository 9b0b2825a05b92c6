//! Deletion with `deletionPolicy: Restore`: the finalizer, the verdict after a restore
//! attempt, and the restore call. The values restored are those the object's claim
//! record holds (see [`super::claims`]), read before its first write.

use std::time::Duration;

use super::claims::Claim;
use super::vocabulary::AccessListReason;
use crate::api::models::shield::{AccessListAction, AccessListConfigurationPatch};
use crate::controller::framework::prelude::{Context, Failure, Notice};
use crate::controller::kinds::access_list::claim_resource::RecordedValues;
use crate::controller::kinds::access_list::resource::{
    AccessListConfig, DeletionPolicy, ManagementPolicy, RolloutStage,
};

/// Finalizer of objects with `deletionPolicy: Restore`.
pub const FINALIZER: &str = "edgeplatform.io/restore-access-list";

/// How long after the deletion request a failing restore is retried.
pub(super) const RESTORE_DEADLINE: Duration = Duration::from_secs(600);

/// What to do after a restore attempt.
#[derive(Debug)]
pub(super) enum AfterRestore {
    /// Release the object, with this Event.
    Done(Notice<AccessListReason>),
    /// Keep the finalizer and retry; the error shows in status until then.
    Retry(Failure<AccessListConfig>),
}

/// Decides, without I/O, what a restore attempt means for the finalizer:
/// - restored, or the configuration is gone from the platform: release;
/// - a failure waiting may fix, or credentials a person may fix (missing, rejected,
///   forbidden): keep the finalizer and retry until [`RESTORE_DEADLINE`] after the
///   deletion request, the latter showing as Stalled with the two ways out;
/// - any other failure, or the deadline passed: release without restoring, with a
///   Warning Event (and an error-level log line, written by the caller).
pub(super) fn after_restore(
    (zone, configuration): (i64, i64),
    values: RecordedValues,
    restored: Result<(), Failure<AccessListConfig>>,
    deleted_at: Option<chrono::DateTime<chrono::Utc>>,
    now: chrono::DateTime<chrono::Utc>,
) -> AfterRestore {
    let error = match restored {
        Ok(()) => {
            return AfterRestore::Done(Notice::normal(
                AccessListReason::Restored,
                format!(
                    "restored isEnabled={} action={} on configuration {configuration} of Shield Zone {zone}",
                    values.is_enabled,
                    AccessListAction::describe(values.action),
                ),
            ));
        }
        Err(error) => error,
    };
    if let Failure::<AccessListConfig>::Platform(crate::api::ApiError::NotFound(_))
    | Failure::<AccessListConfig>::Kind {
        reason: AccessListReason::AccessListNotFound,
        ..
    } = error
    {
        return AfterRestore::Done(Notice::normal(
            AccessListReason::NothingToRestore,
            format!("configuration {configuration} of Shield Zone {zone} no longer exists: nothing to restore"),
        ));
    }
    let deadline = deleted_at.and_then(|at| chrono::Duration::from_std(RESTORE_DEADLINE).ok().map(|d| at + d));
    let overdue = deadline.is_none_or(|deadline| now >= deadline);
    let fixable_credentials = error.reason().is_credentials_problem();
    match (overdue, deadline) {
        (false, Some(deadline)) if fixable_credentials => {
            let message = format!(
                "{} holds the restore of configuration {configuration} of Shield Zone {zone}: {error}. Two ways out: \
                 fix the credentials, or set spec.deletionPolicy to Orphan to release the object without restoring; \
                 at {} it is released without restoring",
                error.reason(),
                crate::resources::time::rfc3339(deadline),
            );
            AfterRestore::Retry(Failure::<AccessListConfig>::caused_by(
                AccessListReason::RestoreHeld,
                message,
                error,
            ))
        }
        (false, _) if error.is_transient(AccessListReason::is_terminal) => AfterRestore::Retry(error),
        _ => AfterRestore::Done(Notice::warning(
            AccessListReason::RestoreFailed,
            format!(
                "could not restore configuration {configuration} of Shield Zone {zone} ({}: {error}); \
                 released without restoring",
                error.reason()
            ),
        )),
    }
}

/// Writes back `values` to `configuration` of `zone`, with the object's own credentials.
pub(super) async fn restore(
    cx: &Context<'_, AccessListConfig>,
    (zone, configuration): (i64, i64),
    values: RecordedValues,
) -> Result<(), Failure<AccessListConfig>> {
    let client = cx.client().await?;
    let patch = AccessListConfigurationPatch {
        is_enabled: Some(values.is_enabled),
        action: Some(values.action),
    };
    cx.state.zone_lists.write(&client, zone, configuration, &patch).await?;
    Ok(())
}

/// The Event of an owner deleted mid-rollout that restores nothing (Orphan, or paused):
/// the list is left logging instead of taking the rollout's action. A rollout recorded
/// for an earlier spec says nothing.
pub(super) fn left_logging(
    record: &Claim,
    generation: Option<i64>,
    restores: bool,
) -> Option<Notice<AccessListReason>> {
    let rollout = record
        .rollout
        .as_deref()
        .filter(|r| r.stage != RolloutStage::Promoted && of_this_spec(r.observed_generation, generation))?;
    (!restores).then(|| {
        Notice::warning(
            AccessListReason::LeftLogging,
            format!(
                "deleted while its rollout was {:?}, restoring nothing: configuration {} of Shield Zone {} is left logging (action Log)",
                rollout.stage, record.configuration_id, record.shield_zone_id
            ),
        )
    })
}

/// Whether a rollout recorded for `recorded` is that of an object now at `generation`,
/// being deleted: the apiserver counts the deletion request as one more generation.
fn of_this_spec(recorded: Option<i64>, generation: Option<i64>) -> bool {
    match (recorded, generation) {
        (Some(recorded), Some(now)) => recorded == now || recorded + 1 == now,
        _ => false,
    }
}

pub(super) fn wants_finalizer(object: &AccessListConfig) -> bool {
    object.spec.deletion_policy == DeletionPolicy::Restore && object.spec.management_policy == ManagementPolicy::Manage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::framework::pipeline::driver::failure_event;
    use crate::controller::framework::pipeline::status::conditions::{NewCondition, merge};
    use crate::controller::framework::reasons::ConditionType;

    #[test]
    fn a_restore_gives_up_only_when_no_one_can_help_or_the_deadline_passed() {
        use crate::api::{ApiError, PlatformMessage};
        let record = (1, 9101);
        let values = RecordedValues {
            is_enabled: false,
            action: 2,
        };
        let deleted: chrono::DateTime<chrono::Utc> = "2026-11-20T12:00:00Z".parse().expect("time");
        let soon = deleted + chrono::Duration::seconds(30);
        let late = deleted + chrono::Duration::seconds(601);
        let server = || {
            Err(Failure::<AccessListConfig>::Platform(ApiError::from_response(
                503, None, b"",
            )))
        };
        let revoked = || {
            Err(Failure::<AccessListConfig>::Platform(ApiError::Unauthorized(
                PlatformMessage::default(),
            )))
        };
        let no_secret = || {
            Err(Failure::<AccessListConfig>::Credentials {
                namespace: "team".into(),
                name: "gone".into(),
                problem: "not found".into(),
            })
        };
        let rejected = || {
            Err(Failure::<AccessListConfig>::Platform(ApiError::from_response(
                400, None, b"",
            )))
        };
        let verdict = |restored, now| match after_restore(record, values, restored, Some(deleted), now) {
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
        let gone = Err(Failure::<AccessListConfig>::Platform(ApiError::NotFound(
            PlatformMessage::default(),
        )));
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
        let held = |restored| match after_restore(record, values, restored, Some(deleted), soon) {
            AfterRestore::Retry(error) => error,
            AfterRestore::Done(note) => panic!("{}", note.message),
        };
        let shown = |error: &Failure<AccessListConfig>| {
            let decided = [NewCondition::new(
                ConditionType::Synced,
                false,
                error.reason(),
                error.to_string(),
            )];
            merge(&[], &decided, Some(1), "t")
        };
        let (by_key, by_secret) = (held(revoked()), held(no_secret()));
        let note = failure_event::<AccessListConfig>(&[], &by_key).expect("the hold begins");
        assert_eq!(
            (note.reason, note.warning),
            (AccessListReason::RestoreHeld.into(), true)
        );
        assert!(
            note.message.starts_with("Unauthorized holds the restore"),
            "{}",
            note.message
        );
        assert_eq!(
            failure_event::<AccessListConfig>(&shown(&by_key), &held(revoked())),
            None,
            "the same hold"
        );
        let changed = failure_event::<AccessListConfig>(&shown(&by_key), &by_secret).expect("its cause changed");
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
    }

    #[test]
    fn an_owner_deleted_mid_rollout_without_a_restore_says_the_list_is_left_logging() {
        use crate::controller::kinds::access_list::claim_resource::{
            AccessListClaim, AccessListClaimSpec, ClaimOwner, ClaimProof,
        };
        use crate::controller::kinds::access_list::resource::RolloutStatus;
        let claim = |stage: RolloutStage| {
            Claim::from(AccessListClaim::new(
                "1001-9101-x",
                AccessListClaimSpec {
                    platform: "https://api.edge.example".into(),
                    shield_zone_id: 1001,
                    configuration_id: 9101,
                    owner: ClaimOwner {
                        namespace: "shop".into(),
                        name: "staged".into(),
                        uid: "u1".into(),
                    },
                    proof: ClaimProof {
                        secret: None,
                        read_at: Some("2026-11-20T10:00:00Z".into()),
                    },
                    restore_point: None,
                    restore_point_lost: false,
                    rollout: Some(RolloutStatus {
                        stage,
                        observed_generation: Some(3),
                        ..RolloutStatus::default()
                    }),
                },
            ))
        };
        let left = left_logging(&claim(RolloutStage::AwaitingApproval), Some(4), false).expect("an Event");
        assert_eq!(left.reason, AccessListReason::LeftLogging.into());
        assert!(left.message.contains("AwaitingApproval"), "{}", left.message);
        assert!(left.message.contains("left logging"), "{}", left.message);
        assert!(
            left_logging(&claim(RolloutStage::Promoted), Some(3), false).is_none(),
            "it blocks"
        );
        assert!(
            left_logging(&claim(RolloutStage::Logging), Some(3), true).is_none(),
            "restored"
        );
        assert!(
            left_logging(&claim(RolloutStage::Logging), Some(5), false).is_none(),
            "a rollout the spec no longer asks for"
        );
    }
}
