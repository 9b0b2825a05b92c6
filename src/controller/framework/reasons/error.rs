//! Reconcile failures: those any kind can have, and a kind's own, each named by one of
//! the kind's reasons (`R`). A failure's [`ReconcileError::reason`] is the condition
//! reason, Event reason and metric label.

use crate::api::{ApiError, ApiFailure};
use crate::controller::framework::reasons::{AnyReason, KindReason, Reason};

/// A failed reconcile of a kind whose reasons are `R`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError<R> {
    #[error(transparent)]
    Platform(ApiError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("Secret {namespace}/{name}: {problem}")]
    Credentials {
        namespace: String,
        name: String,
        problem: String,
    },
    #[error("no default access key is configured and spec.accessKeySecretRef is not set")]
    NoCredentials,
    #[error("{0}")]
    DefaultKeyUnreadable(String),
    #[error("the operator's default access key may not be used in namespace {0}; set spec.accessKeySecretRef")]
    DefaultKeyNotAllowed(String),
    #[error("the operator could not encode its request: {0}")]
    Encoding(String),
    #[error("the reconcile took longer than {0:?}")]
    TimedOut(std::time::Duration),
    #[error("leadership is not confirmed: another operator may be acting")]
    NotLeader,
    /// The object changed while it was reconciled: the next reconcile decides again
    /// from the new copy.
    #[error("the object changed while it was reconciled")]
    Stale,
    /// A failure of the kind's own: its reason is the variant, the message says what
    /// failed (the failure behind it included, which is its `cause`).
    #[error("{message}")]
    Kind {
        reason: R,
        message: String,
        cause: Option<Box<ReconcileError<R>>>,
    },
}

/// A platform failure whose reason is `NotLeader` (a withheld write) is that failure.
impl<R> From<ApiError> for ReconcileError<R> {
    fn from(error: ApiError) -> Self {
        match AnyReason::<Reason>::from(error.reason()) {
            AnyReason::Common(Reason::NotLeader) => ReconcileError::NotLeader,
            _ => ReconcileError::Platform(error),
        }
    }
}

impl<R> ReconcileError<R> {
    /// A failure of the kind's own, for `reason`.
    pub(crate) fn own(reason: R, message: impl Into<String>) -> Self {
        ReconcileError::Kind {
            reason,
            message: message.into(),
            cause: None,
        }
    }

    /// A failure of the kind's own, for `reason`, behind which is `cause`.
    pub(crate) fn caused_by(reason: R, message: impl Into<String>, cause: ReconcileError<R>) -> Self {
        ReconcileError::Kind {
            reason,
            message: message.into(),
            cause: Some(Box::new(cause)),
        }
    }

    /// The delay before retrying an object after its `failures`-th consecutive failure:
    /// exponential from 5 s (transient failures) or 30 s (others), capped at 5 min.
    pub(crate) fn delay(failures: u32, transient: bool, jitter: f64) -> std::time::Duration {
        let policy = crate::api::RetryPolicy {
            max_retries: u32::MAX,
            initial_backoff: std::time::Duration::from_secs(if transient { 5 } else { 30 }),
            max_backoff: std::time::Duration::from_secs(300),
            ..crate::api::RetryPolicy::default()
        };
        policy.backoff_with_jitter(failures.saturating_sub(1), jitter)
    }

    /// When the platform asked to be left alone, for how long.
    pub(crate) fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ReconcileError::Platform(error) => error.retry_after(),
            _ => None,
        }
    }
}

impl<R: KindReason> ReconcileError<R> {
    /// The condition reason, Event reason and metric label.
    pub(crate) fn reason(&self) -> AnyReason<R> {
        match self {
            ReconcileError::Kind { reason, .. } => AnyReason::Own(*reason),
            ReconcileError::Platform(error) => error.reason().into(),
            ReconcileError::Kube(_) | ReconcileError::Stale => Reason::KubernetesError.into(),
            ReconcileError::Credentials { .. }
            | ReconcileError::NoCredentials
            | ReconcileError::DefaultKeyUnreadable(_)
            | ReconcileError::DefaultKeyNotAllowed(_) => Reason::CredentialsUnavailable.into(),
            ReconcileError::Encoding(_) => Reason::EncodingError.into(),
            ReconcileError::TimedOut(_) => ApiFailure::Timeout.into(),
            ReconcileError::NotLeader => Reason::NotLeader.into(),
        }
    }

    /// The reason of the failure behind this one, which its message begins with.
    pub(crate) fn cause_reason(&self) -> Option<AnyReason<R>> {
        match self {
            ReconcileError::Kind { cause: Some(cause), .. } => Some(cause.reason()),
            _ => None,
        }
    }

    /// Whether waiting alone may fix it (otherwise the spec, a Secret or the platform's
    /// configuration must change first); `own_is_terminal` answers for the kind's own
    /// reasons.
    pub(crate) fn is_transient(&self, own_is_terminal: fn(R) -> bool) -> bool {
        !self.reason().is_terminal(own_is_terminal)
    }
}
