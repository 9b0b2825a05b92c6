//! Reconcile failures: those any kind can have, and a kind's own (`E`, a
//! [`KindFailure`]). Each failure's [`ReconcileError::reason`] is the condition reason,
//! Event reason and metric label.

use crate::api::{ApiError, ApiFailure};
use crate::controller::framework::reasons::{AnyReason, KindReason, Reason};

/// A kind's own failures: an enum whose variants are named as the reasons they are
/// written with (`strum::IntoStaticStr`, `strum::VariantNames`), so the name is the one
/// map from a failure to its reason. A unit test of the registry checks that each
/// kind's reasons hold every name.
pub trait KindFailure: std::error::Error + strum::VariantNames + Send + Sync + 'static {
    /// The reason this failure is written with.
    fn reason_name(&self) -> &'static str;
}

impl<E> KindFailure for E
where
    E: std::error::Error + strum::VariantNames + Send + Sync + 'static,
    for<'e> &'e E: Into<&'static str>,
{
    fn reason_name(&self) -> &'static str {
        self.into()
    }
}

/// The failures of a kind that has none of its own.
#[derive(Debug, thiserror::Error)]
pub enum NoFailure {}

impl From<&NoFailure> for &'static str {
    fn from(never: &NoFailure) -> Self {
        match *never {}
    }
}

impl strum::VariantNames for NoFailure {
    const VARIANTS: &'static [&'static str] = &[];
}

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError<E> {
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
    #[error(transparent)]
    Kind(E),
}

/// A platform failure whose reason is `NotLeader` (a withheld write) is that failure.
impl<E> From<ApiError> for ReconcileError<E> {
    fn from(error: ApiError) -> Self {
        match AnyReason::<Reason>::from(error.reason()) {
            AnyReason::Common(Reason::NotLeader) => ReconcileError::NotLeader,
            _ => ReconcileError::Platform(error),
        }
    }
}

impl<E> ReconcileError<E> {
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
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ReconcileError::Platform(error) => error.retry_after(),
            _ => None,
        }
    }
}

impl<E: KindFailure> ReconcileError<E> {
    /// The condition reason, Event reason and metric label, in the words of a kind
    /// whose own reasons are `R`.
    pub(crate) fn reason<R: KindReason>(&self) -> AnyReason<R> {
        match self {
            // Never the fallback: every registered kind's reasons hold its failures' names.
            ReconcileError::Kind(error) => {
                AnyReason::parse(error.reason_name()).unwrap_or(AnyReason::Common(Reason::KubernetesError))
            }
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

    /// The reason of the failure behind this one, which its message begins with: a
    /// kind's error keeps it as its `source`, a `Box<ReconcileError<E>>`.
    pub(crate) fn cause_reason<R: KindReason>(&self) -> Option<AnyReason<R>> {
        let cause = std::error::Error::source(self)?.downcast_ref::<Box<ReconcileError<E>>>()?;
        Some(cause.reason())
    }

    /// Whether waiting alone may fix it (otherwise the spec, a Secret or the platform's
    /// configuration must change first).
    pub(crate) fn is_transient<R: KindReason>(&self) -> bool {
        !self.reason::<R>().is_terminal()
    }
}
