//! Reconcile failures: those any kind can have, and a kind's own (`E`). Each
//! failure's [`ReconcileError::reason`] is the condition reason, Event reason and
//! metric label.

use super::status::vocabulary::{AnyReason, KindReason, Reason};
use crate::api::{ApiError, ApiFailure};

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

impl<E> From<ApiError> for ReconcileError<E> {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::WriteWithheld => ReconcileError::NotLeader,
            error => ReconcileError::Platform(error),
        }
    }
}

impl<E> ReconcileError<E> {
    /// When the platform asked to be left alone, for how long.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ReconcileError::Platform(error) => error.retry_after(),
            _ => None,
        }
    }
}

impl<E: std::error::Error + 'static> ReconcileError<E> {
    /// The condition reason, Event reason and metric label, in the words of a kind
    /// whose own reasons are `R`.
    pub(crate) fn reason<R>(&self) -> AnyReason<R>
    where
        R: KindReason + for<'e> From<&'e E>,
    {
        match self {
            ReconcileError::Kind(error) => AnyReason::Own(R::from(error)),
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
    pub(crate) fn cause_reason<R>(&self) -> Option<AnyReason<R>>
    where
        R: KindReason + for<'e> From<&'e E>,
    {
        let cause = std::error::Error::source(self)?.downcast_ref::<Box<ReconcileError<E>>>()?;
        Some(cause.reason())
    }

    /// Whether waiting alone may fix it (otherwise the spec, a Secret or the platform's
    /// configuration must change first).
    pub(crate) fn is_transient<R>(&self) -> bool
    where
        R: KindReason + for<'e> From<&'e E>,
    {
        !self.reason::<R>().is_terminal()
    }
}
