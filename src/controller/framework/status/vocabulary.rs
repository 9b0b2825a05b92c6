//! The words of a status: condition types and reasons, as plain enums whose variant
//! names are what is written. The framework has those every kind shares
//! ([`ConditionType`], [`Reason`]); each kind has its own enums beside them.

use crate::api::ApiError;
use crate::crd::Condition;

/// A name written in status, a condition type or a reason: a variant of one of the
/// vocabulary enums, each of which derives its `&'static str` (the variant's name).
pub(crate) trait StatusName: Copy + Into<&'static str> {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

impl<T: Copy + Into<&'static str>> StatusName for T {}

/// The condition types of every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
pub(crate) enum ConditionType {
    /// The object's goal is reached for its current generation.
    Ready,
    /// Present (True) only while work for the current generation is pending.
    Reconciling,
    /// Present (True) only while waiting cannot help: a person must act.
    Stalled,
    /// The last reconcile reached the platform and did what it had to.
    Synced,
}

/// The reasons any kind can have: progress, pause, and every failure that is not the
/// kind's own (credentials, the platform, Kubernetes). Also the Event reasons and the
/// `reason` label of the error metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
pub enum Reason {
    /// A new generation is not applied yet.
    Progressing,
    Paused,
    Resumed,
    Reconciled,
    // Failures, one map from every platform error (see `Reason::of`)
    Unauthorized,
    Forbidden,
    NotFound,
    Rejected,
    RateLimited,
    ServerError,
    UnexpectedStatus,
    Timeout,
    TransportError,
    /// The platform's TLS identity is not trusted, or not valid for its host.
    TlsError,
    DecodeError,
    InvalidInput,
    KubernetesError,
    CredentialsUnavailable,
    /// The operator failed to encode one of its own requests.
    EncodingError,
    NotLeader,
}

impl Reason {
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
            ApiError::Tls { .. } => Reason::TlsError,
            ApiError::Decode(_) => Reason::DecodeError,
            ApiError::InvalidInput(_) => Reason::InvalidInput,
            ApiError::WriteWithheld => Reason::NotLeader,
        }
    }

    /// Whether an object not Ready for this reason waits for a person: a spec, a
    /// Secret, a key or the platform's configuration must change first. Everything
    /// else (a platform that is busy or down, a quota, a new generation) resolves by
    /// waiting. With the kinds' own, the one map behind `Stalled`, the error backoff
    /// and the Ready of a failed reconcile.
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            Reason::Paused
                | Reason::Unauthorized
                | Reason::Forbidden
                | Reason::NotFound
                | Reason::Rejected
                | Reason::UnexpectedStatus
                | Reason::DecodeError
                | Reason::InvalidInput
                | Reason::CredentialsUnavailable
                | Reason::TlsError
        )
    }
}

/// A kind's own reasons, beside [`Reason`]: one enum whose variant names are what is
/// written.
pub(crate) trait KindReason: Copy + Into<&'static str> + std::str::FromStr {
    /// Whether an object not Ready for this reason waits for a person (see
    /// [`Reason::is_terminal`]).
    fn is_terminal(self) -> bool;
}

/// A kind with no reasons of its own.
impl KindReason for Reason {
    fn is_terminal(self) -> bool {
        Reason::is_terminal(self)
    }
}

// A condition as written is read back here only: into the words of the vocabulary.

/// Whether a reason, as a condition carries it, waits for a person: a common reason,
/// or one of the kind's reasons `R`.
pub(crate) fn is_terminal_name<R: KindReason>(name: &str) -> bool {
    name.parse().is_ok_and(Reason::is_terminal) || name.parse().is_ok_and(R::is_terminal)
}

/// A condition's type and reason as the vocabulary names them: a type of
/// [`ConditionType`] or of the kind's `own_types`, a reason of [`Reason`] or of the
/// kind's `R`. `None` for any other text: anyone granted the status subresource may
/// write a condition, and only these words become metric labels.
pub(crate) fn vocabulary_words<R: KindReason>(
    condition: &Condition,
    own_types: &[&'static str],
) -> Option<(&'static str, &'static str)> {
    let type_ = (condition.type_.parse::<ConditionType>().ok().map(<&'static str>::from))
        .or_else(|| own_types.iter().copied().find(|own| *own == condition.type_))?;
    let reason = (condition.reason.parse::<Reason>().ok().map(<&'static str>::from))
        .or_else(|| condition.reason.parse::<R>().ok().map(Into::into))?;
    Some((type_, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_reasons_that_wait_for_a_person_are_terminal() {
        assert!(Reason::Unauthorized.is_terminal());
        assert!(!Reason::ServerError.is_terminal());
        assert!(is_terminal_name::<Reason>("CredentialsUnavailable"));
        assert!(!is_terminal_name::<Reason>("RateLimited"));
        assert!(!is_terminal_name::<Reason>("Drifted"), "not a common reason");
    }

    #[test]
    fn a_platform_error_reads_the_same_as_condition_reason_and_client_label() {
        let mut errors: Vec<ApiError> = [401, 403, 404, 400, 429, 503, 302]
            .map(|status| ApiError::from_response(status, None, b""))
            .into();
        errors.extend([
            ApiError::Timeout,
            ApiError::Transport("x".into()),
            ApiError::Tls {
                host: "x".into(),
                problem: "x".into(),
            },
            ApiError::Decode("x".into()),
            ApiError::InvalidInput("x".into()),
        ]);
        for error in &errors {
            assert_eq!(Reason::of(error).as_str(), error.reason(), "{error}");
        }
    }
}
