//! The words of an AccessListConfig's status beside every kind's: its reasons, its
//! own failures' among them.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
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

impl AccessListReason {
    /// Whether an object not Ready for this reason waits for a person.
    pub(crate) fn is_terminal(self) -> bool {
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
