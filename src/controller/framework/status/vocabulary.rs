//! The words of a status: condition types and reasons, as types. The framework has
//! those every kind shares ([`ConditionType`], [`Reason`]); each kind declares its
//! own ([`KindConditions`], [`KindReasons`]) and the driver is generic over them.

use crate::api::ApiError;

/// A word of a status as it is written: a condition type or a reason.
pub trait Word: Copy + Eq + std::fmt::Debug + Send + Sync + 'static {
    fn as_str(self) -> &'static str;
}

/// A condition type: one of every kind's, or one of a kind's own.
pub(crate) trait ConditionWord: Word {}

/// A reason: a common one, or one of a kind's own.
pub(crate) trait ReasonWord: Word {}

/// The condition types a kind has beside every kind's [`ConditionType`]s.
pub(crate) trait KindConditions: Word {}

/// The reasons a kind has beside the common [`Reason`]s.
pub trait KindReasons: Word {
    /// Those that wait for a person (see [`AnyReason::is_terminal`]).
    const TERMINAL: &'static [Self];
}

impl<T: KindConditions> ConditionWord for T {}
impl<T: KindReasons> ReasonWord for T {}

/// The words this process has written into conditions. Only these become metric label
/// values: whatever else a status holds (anyone granted the status subresource may
/// write any text there) is not counted.
static WRITTEN: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn written() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<&'static str>> {
    WRITTEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Records a word this process writes into a condition.
pub(crate) fn note_written(word: &'static str) {
    written().insert(word);
}

/// Whether this process has written `word` into a condition.
pub(crate) fn is_written(word: &str) -> bool {
    written().contains(word)
}

/// The condition types of every kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl Word for ConditionType {
    fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
            ConditionType::Synced => "Synced",
        }
    }
}

impl ConditionWord for ConditionType {}

/// The reasons any kind can have: progress, pause, and every failure that is not the
/// kind's own (credentials, the platform, Kubernetes). Also the Event reasons and the
/// `reason` label of the error metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

impl Word for Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Progressing => "Progressing",
            Reason::Paused => "Paused",
            Reason::Resumed => "Resumed",
            Reason::Reconciled => "Reconciled",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::Rejected => "Rejected",
            Reason::RateLimited => "RateLimited",
            Reason::ServerError => "ServerError",
            Reason::UnexpectedStatus => "UnexpectedStatus",
            Reason::Timeout => "Timeout",
            Reason::TransportError => "TransportError",
            Reason::TlsError => "TlsError",
            Reason::DecodeError => "DecodeError",
            Reason::InvalidInput => "InvalidInput",
            Reason::KubernetesError => "KubernetesError",
            Reason::CredentialsUnavailable => "CredentialsUnavailable",
            Reason::EncodingError => "EncodingError",
            Reason::NotLeader => "NotLeader",
        }
    }
}

impl ReasonWord for Reason {}

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
}

/// The common reasons that wait for a person (see [`AnyReason::is_terminal`]).
const TERMINAL: [Reason; 10] = [
    Reason::Paused,
    Reason::Unauthorized,
    Reason::Forbidden,
    Reason::NotFound,
    Reason::Rejected,
    Reason::UnexpectedStatus,
    Reason::DecodeError,
    Reason::InvalidInput,
    Reason::CredentialsUnavailable,
    Reason::TlsError,
];

/// A reason of kind `R`'s vocabulary: common, or its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnyReason<R> {
    Common(Reason),
    Kind(R),
}

impl<R> From<Reason> for AnyReason<R> {
    fn from(reason: Reason) -> Self {
        AnyReason::Common(reason)
    }
}

impl<R: KindReasons> Word for AnyReason<R> {
    fn as_str(self) -> &'static str {
        match self {
            AnyReason::Common(reason) => reason.as_str(),
            AnyReason::Kind(reason) => reason.as_str(),
        }
    }
}

impl<R: KindReasons> ReasonWord for AnyReason<R> {}

impl<R: KindReasons> AnyReason<R> {
    /// Whether an object not Ready for this reason waits for a person: a spec, a
    /// Secret, a key or the platform's configuration must change first. Everything
    /// else (a platform that is busy or down, a quota, a new generation) resolves by
    /// waiting. The one map behind `Stalled`, the error backoff and the Ready of a
    /// failed reconcile.
    pub(crate) fn is_terminal(self) -> bool {
        match self {
            AnyReason::Common(reason) => TERMINAL.contains(&reason),
            AnyReason::Kind(reason) => R::TERMINAL.contains(&reason),
        }
    }

    /// [`AnyReason::is_terminal`] of a reason as a condition carries it.
    pub(crate) fn is_terminal_name(name: &str) -> bool {
        TERMINAL.iter().any(|r| r.as_str() == name) || R::TERMINAL.iter().any(|r| r.as_str() == name)
    }
}

impl<R: KindReasons> std::fmt::Display for AnyReason<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The vocabulary of a kind with no words (or errors) of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Nothing {}

impl Word for Nothing {
    fn as_str(self) -> &'static str {
        match self {}
    }
}

impl KindReasons for Nothing {
    const TERMINAL: &'static [Self] = &[];
}

impl std::fmt::Display for Nothing {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {}
    }
}

impl std::error::Error for Nothing {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_reasons_that_wait_for_a_person_are_terminal() {
        type Common = AnyReason<Nothing>;
        assert!(Common::from(Reason::Unauthorized).is_terminal());
        assert!(!Common::from(Reason::ServerError).is_terminal());
        assert!(Common::is_terminal_name("CredentialsUnavailable"));
        assert!(!Common::is_terminal_name("RateLimited"));
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
