//! The status vocabulary: condition types and reasons as types, and conditions kept in
//! the Kubernetes convention (one per type; an unchanged status keeps its
//! lastTransitionTime).

use crate::api::ApiError;
use crate::crd::{Condition, ConditionStatus};

/// Every condition type the operator writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ConditionType {
    /// The object's goal is reached for its current generation (list in sync,
    /// certificate issued, app active with every summary synced).
    Ready,
    /// Present (True) only while work for the current generation is pending.
    Reconciling,
    /// Present (True) only while waiting cannot help: a person must act.
    Stalled,
    /// The last reconcile reached the platform and did what it had to.
    Synced,
    /// ContainerAppWatch: the application is active.
    AppReady,
    /// ContainerAppWatch: the rate-limit rules are mirrored.
    RateLimitsSynced,
    /// ContainerAppWatch: the security events of the window are summarised.
    SecurityEvents,
    /// ContainerAppWatch: the CDN logs of the window are summarised.
    CdnLogsSynced,
}

impl ConditionType {
    pub(crate) const ALL: [ConditionType; 8] = [
        ConditionType::Ready,
        ConditionType::Reconciling,
        ConditionType::Stalled,
        ConditionType::Synced,
        ConditionType::AppReady,
        ConditionType::RateLimitsSynced,
        ConditionType::SecurityEvents,
        ConditionType::CdnLogsSynced,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
            ConditionType::Synced => "Synced",
            ConditionType::AppReady => "AppReady",
            ConditionType::RateLimitsSynced => "RateLimitsSynced",
            ConditionType::SecurityEvents => "SecurityEvents",
            ConditionType::CdnLogsSynced => "CdnLogsSynced",
        }
    }
}

/// Every condition reason the operator writes; also the Event reasons and the
/// `reason` label of the error metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    // Ready, Reconciling and Stalled of every kind
    /// A new generation is not applied yet.
    Progressing,
    // Synced
    Paused,
    Resumed,
    Reconciled,
    Applied,
    UpToDate,
    Observed,
    // AccessListConfig
    InSync,
    Drifted,
    DriftCorrected,
    DriftDetected,
    Restored,
    RestoreSkipped,
    AccessListNotFound,
    AmbiguousListName,
    ConfigurationClaimed,
    RestoreFailed,
    NothingToRestore,
    RestorePointRejected,
    /// A restore waits for credentials a person must fix, until its deadline.
    RestoreHeld,
    // PullZoneCertificate
    Issued,
    VerificationFailed,
    HostnameNotFound,
    // ContainerAppWatch
    Polled,
    PolledLate,
    Synced,
    Quiet,
    Elevated,
    NoPullZone,
    Partial,
    AppActive,
    AppNotReady,
    SecurityEventsElevated,
    /// An application's status, in the platform's own words (`Active`, `Failing`...).
    App(&'static str),
    // Errors, one map from every failure (see `Reason::of`)
    Unauthorized,
    Forbidden,
    NotFound,
    Rejected,
    RateLimited,
    ServerError,
    UnexpectedStatus,
    Timeout,
    TransportError,
    DecodeError,
    InvalidInput,
    KubernetesError,
    CredentialsUnavailable,
    /// The operator failed to encode one of its own requests.
    EncodingError,
    NotLeader,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Progressing => "Progressing",
            Reason::Paused => "Paused",
            Reason::Resumed => "Resumed",
            Reason::Reconciled => "Reconciled",
            Reason::Applied => "Applied",
            Reason::UpToDate => "UpToDate",
            Reason::Observed => "Observed",
            Reason::InSync => "InSync",
            Reason::Drifted => "Drifted",
            Reason::DriftCorrected => "DriftCorrected",
            Reason::DriftDetected => "DriftDetected",
            Reason::Restored => "Restored",
            Reason::RestoreSkipped => "RestoreSkipped",
            Reason::AccessListNotFound => "AccessListNotFound",
            Reason::AmbiguousListName => "AmbiguousListName",
            Reason::ConfigurationClaimed => "ConfigurationClaimed",
            Reason::RestoreFailed => "RestoreFailed",
            Reason::NothingToRestore => "NothingToRestore",
            Reason::RestorePointRejected => "RestorePointRejected",
            Reason::RestoreHeld => "RestoreHeld",
            Reason::Issued => "Issued",
            Reason::VerificationFailed => "VerificationFailed",
            Reason::HostnameNotFound => "HostnameNotFound",
            Reason::Polled => "Polled",
            Reason::PolledLate => "PolledLate",
            Reason::Synced => "Synced",
            Reason::Quiet => "Quiet",
            Reason::Elevated => "Elevated",
            Reason::NoPullZone => "NoPullZone",
            Reason::Partial => "Partial",
            Reason::AppActive => "AppActive",
            Reason::AppNotReady => "AppNotReady",
            Reason::SecurityEventsElevated => "SecurityEventsElevated",
            Reason::App(status) => status,
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::Rejected => "Rejected",
            Reason::RateLimited => "RateLimited",
            Reason::ServerError => "ServerError",
            Reason::UnexpectedStatus => "UnexpectedStatus",
            Reason::Timeout => "Timeout",
            Reason::TransportError => "TransportError",
            Reason::DecodeError => "DecodeError",
            Reason::InvalidInput => "InvalidInput",
            Reason::KubernetesError => "KubernetesError",
            Reason::CredentialsUnavailable => "CredentialsUnavailable",
            Reason::EncodingError => "EncodingError",
            Reason::NotLeader => "NotLeader",
        }
    }

    /// Whether an object not Ready for this reason waits for a person: a spec, a
    /// Secret, a key or the platform's configuration must change first. Everything
    /// else (a platform that is busy or down, a quota, a new generation) resolves by
    /// waiting. The one map behind `Stalled`, the error backoff and the Ready of a
    /// failed reconcile.
    pub fn is_terminal(self) -> bool {
        TERMINAL.contains(&self)
    }

    /// [`Reason::is_terminal`] of a reason as a condition carries it.
    pub fn is_terminal_str(reason: &str) -> bool {
        TERMINAL.iter().any(|r| r.as_str() == reason)
    }

    /// The one map from a failed platform call to a reason.
    pub fn of(error: &ApiError) -> Self {
        match error {
            ApiError::Unauthorized(_) => Reason::Unauthorized,
            ApiError::Forbidden(_) => Reason::Forbidden,
            ApiError::NotFound(_) => Reason::NotFound,
            ApiError::Validation { .. } => Reason::Rejected,
            ApiError::RateLimited { .. } => Reason::RateLimited,
            ApiError::Server { .. } => Reason::ServerError,
            ApiError::UnexpectedStatus { .. } | ApiError::Redirected { .. } => Reason::UnexpectedStatus,
            ApiError::Timeout => Reason::Timeout,
            ApiError::Transport(_) => Reason::TransportError,
            ApiError::Decode(_) => Reason::DecodeError,
            ApiError::InvalidInput(_) => Reason::InvalidInput,
            ApiError::WriteWithheld => Reason::NotLeader,
        }
    }
}

/// The reasons that wait for a person (see [`Reason::is_terminal`]).
const TERMINAL: [Reason; 19] = [
    Reason::Paused,
    Reason::RestoreHeld,
    Reason::Drifted,
    Reason::AccessListNotFound,
    Reason::AmbiguousListName,
    Reason::ConfigurationClaimed,
    Reason::HostnameNotFound,
    Reason::NoPullZone,
    Reason::Unauthorized,
    Reason::Forbidden,
    Reason::NotFound,
    Reason::Rejected,
    Reason::UnexpectedStatus,
    Reason::DecodeError,
    Reason::InvalidInput,
    Reason::CredentialsUnavailable,
    // Application states a person ends: a crash loop, a stop, a suspension.
    Reason::App("Failing"),
    Reason::App("Inactive"),
    Reason::App("Suspended"),
];

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition as a reconciler decides it, before timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decided {
    pub type_: ConditionType,
    pub status: ConditionStatus,
    pub reason: Reason,
    pub message: String,
}

impl Decided {
    pub(crate) fn new(type_: ConditionType, status: bool, reason: Reason, message: impl Into<String>) -> Self {
        Self {
            type_,
            status: if status {
                ConditionStatus::True
            } else {
                ConditionStatus::False
            },
            reason,
            message: message.into(),
        }
    }
}

/// Merges decided conditions into `current`: a condition whose status did not change
/// keeps its lastTransitionTime; others get `now`. Types not decided are kept.
pub(crate) fn merge(current: &[Condition], decided: &[Decided], generation: Option<i64>, now: &str) -> Vec<Condition> {
    let mut merged: Vec<Condition> = current
        .iter()
        .filter(|c| !decided.iter().any(|d| d.type_.as_str() == c.type_))
        .cloned()
        .collect();
    for d in decided {
        let previous = find(current, d.type_);
        let last_transition_time = match previous {
            Some(p) if p.status == d.status => p.last_transition_time.clone(),
            _ => now.to_string(),
        };
        merged.push(Condition {
            type_: d.type_.as_str().to_string(),
            status: d.status,
            reason: d.reason.as_str().to_string(),
            message: d.message.clone(),
            last_transition_time,
            observed_generation: generation,
        });
    }
    merged.sort_by(|a, b| a.type_.cmp(&b.type_));
    merged
}

/// The condition of a type, if present.
pub(crate) fn find(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == type_.as_str())
}

/// Whether a condition of `type_` is True.
#[cfg(test)]
pub(crate) fn is_true(conditions: &[Condition], type_: ConditionType) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_status_keeps_its_transition_time() {
        let ready = |status, reason, message: &str| Decided::new(ConditionType::Ready, status, reason, message);
        let first = merge(&[], &[ready(true, Reason::InSync, "ok")], Some(1), "t1");
        let same = merge(&first, &[ready(true, Reason::InSync, "still ok")], Some(2), "t2");
        assert_eq!(same[0].last_transition_time, "t1");
        assert_eq!(same[0].message, "still ok");
        assert_eq!(same[0].observed_generation, Some(2));
        let flipped = merge(&same, &[ready(false, Reason::Drifted, "x")], Some(2), "t3");
        assert_eq!(flipped[0].last_transition_time, "t3");
        assert!(!is_true(&flipped, ConditionType::Ready));
        assert_eq!(flipped[0].reason, Reason::Drifted.as_str());
    }

    #[test]
    fn conditions_are_keyed_by_type_and_others_are_kept() {
        let both = merge(
            &[],
            &[
                Decided::new(ConditionType::Synced, true, Reason::Applied, ""),
                Decided::new(ConditionType::Ready, true, Reason::InSync, ""),
            ],
            None,
            "t",
        );
        assert_eq!(
            both.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["Ready", "Synced"]
        );
        let one = merge(
            &both,
            &[Decided::new(ConditionType::Ready, false, Reason::Drifted, "")],
            None,
            "t2",
        );
        assert_eq!(one.len(), 2);
        assert!(is_true(&one, ConditionType::Synced));
    }

    #[test]
    fn application_states_a_person_ends_are_terminal() {
        use crate::api::models::apps::AppStatus;
        for status in [AppStatus::Failing, AppStatus::Inactive, AppStatus::Suspended] {
            assert!(Reason::App(status.reason()).is_terminal(), "{status}");
        }
        for status in [AppStatus::Active, AppStatus::Progressing, AppStatus::Unknown] {
            assert!(!Reason::App(status.reason()).is_terminal(), "{status}");
        }
        assert!(Reason::is_terminal_str("AccessListNotFound"));
        assert!(!Reason::is_terminal_str("ServerError"));
    }

    #[test]
    fn a_platform_error_reads_the_same_as_condition_reason_and_client_label() {
        let mut errors: Vec<ApiError> = [401, 403, 404, 400, 429, 503, 302]
            .map(|status| ApiError::from_response(status, None, b""))
            .into();
        errors.extend([
            ApiError::Timeout,
            ApiError::Transport("x".into()),
            ApiError::Decode("x".into()),
            ApiError::InvalidInput("x".into()),
        ]);
        for error in &errors {
            assert_eq!(Reason::of(error).as_str(), error.reason(), "{error}");
        }
    }
}
