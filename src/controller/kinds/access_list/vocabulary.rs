//! The words of an AccessListConfig's status beside every kind's: its reasons and
//! its failures.

use crate::controller::framework::reasons::KindReason;
use crate::controller::framework::reasons::error::ReconcileError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
pub enum AccessListReason {
    InSync,
    Drifted,
    DriftCorrected,
    DriftDetected,
    Applied,
    UpToDate,
    Observed,
    Restored,
    RestoreSkipped,
    AccessListNotFound,
    AmbiguousListName,
    ConfigurationClaimed,
    RestoreFailed,
    NothingToRestore,
    /// A restore waits for credentials a person must fix, until its deadline.
    RestoreHeld,
    /// spec.rollout: the list logs while the window runs (or until it logs).
    RolloutLogging,
    /// spec.rollout: the window started (an Event).
    RolloutStarted,
    /// spec.rollout, Manual: the window elapsed; promotion waits for the annotation.
    AwaitingApproval,
    /// spec.rollout: the promote annotation names evidence other than the one shown (an Event).
    StaleApproval,
    /// spec.rollout: the gate was exceeded; the list keeps logging until the spec changes.
    RolloutHeld,
    /// spec.rollout: the list takes the rollout's action.
    Promoted,
    /// spec.rollout: blocked from more sources than rollbackAboveSources on probation;
    /// back to Log.
    RolledBack,
    /// spec.rollout: the object was deleted before promotion and restores nothing: the
    /// list keeps logging (an Event).
    LeftLogging,
}

impl KindReason for AccessListReason {
    fn is_terminal(self) -> bool {
        matches!(
            self,
            AccessListReason::RestoreHeld
                | AccessListReason::RolloutHeld
                | AccessListReason::RolledBack
                | AccessListReason::Drifted
                | AccessListReason::AccessListNotFound
                | AccessListReason::AmbiguousListName
                | AccessListReason::ConfigurationClaimed
        )
    }
}

/// Its failures, each variant named as its reason.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
pub enum AccessListError {
    #[error("Shield Zone {zone} has no access list {what}")]
    AccessListNotFound { zone: i64, what: String },
    #[error("Shield Zone {zone} has {count} access lists named {name:?}; use spec.configurationId")]
    AmbiguousListName { zone: i64, name: String, count: usize },
    #[error(
        "configuration {configuration} of Shield Zone {zone} is written by {owner}, which claimed it first; only one \
         AccessListConfig writes a configuration"
    )]
    ConfigurationClaimed {
        zone: i64,
        configuration: i64,
        owner: String,
    },
    #[error(
        "{} holds the restore of configuration {configuration} of Shield Zone {zone}: {cause}. Two ways out: fix \
         the credentials, or set spec.deletionPolicy to Orphan to release the object without restoring; at \
         {deadline} it is released without restoring", .cause.reason::<AccessListReason>()
    )]
    RestoreHeld {
        zone: i64,
        configuration: i64,
        deadline: String,
        #[source]
        cause: Box<ReconcileError<AccessListError>>,
    },
}

impl From<AccessListError> for ReconcileError<AccessListError> {
    fn from(error: AccessListError) -> Self {
        ReconcileError::Kind(error)
    }
}
