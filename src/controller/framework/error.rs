//! Reconcile failures: those any kind can have, and a kind's own (`E`). Each
//! variant's [`ReconcileError::reason`] is the condition reason, Event reason and
//! metric label.

use super::status::vocabulary::{AnyReason, KindReasons, Nothing, Reason};
use crate::api::ApiError;

/// The failures a kind has of its own; each names its reason.
pub trait KindError: std::error::Error + Send + Sync + 'static {
    type Reason: KindReasons;

    fn reason(&self) -> Self::Reason;

    /// The reason of the failure behind this one, which its message begins with.
    fn cause_reason(&self) -> Option<AnyReason<Self::Reason>> {
        None
    }
}

impl KindError for Nothing {
    type Reason = Nothing;

    fn reason(&self) -> Nothing {
        *self
    }
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

impl<E> From<ApiError> for ReconcileError<E> {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::WriteWithheld => ReconcileError::NotLeader,
            error => ReconcileError::Platform(error),
        }
    }
}

impl<E: KindError> ReconcileError<E> {
    pub fn reason(&self) -> AnyReason<E::Reason> {
        let common = match self {
            ReconcileError::Kind(error) => return AnyReason::Kind(error.reason()),
            ReconcileError::Platform(error) => Reason::of(error),
            ReconcileError::Kube(_) | ReconcileError::Stale => Reason::KubernetesError,
            ReconcileError::Credentials { .. }
            | ReconcileError::NoCredentials
            | ReconcileError::DefaultKeyUnreadable(_)
            | ReconcileError::DefaultKeyNotAllowed(_) => Reason::CredentialsUnavailable,
            ReconcileError::Encoding(_) => Reason::EncodingError,
            ReconcileError::TimedOut(_) => Reason::Timeout,
            ReconcileError::NotLeader => Reason::NotLeader,
        };
        AnyReason::Common(common)
    }

    /// The reason of the failure behind this one, which its message begins with.
    pub fn cause_reason(&self) -> Option<AnyReason<E::Reason>> {
        match self {
            ReconcileError::Kind(error) => error.cause_reason(),
            _ => None,
        }
    }

    /// When the platform asked to be left alone, for how long.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ReconcileError::Platform(error) => error.retry_after(),
            _ => None,
        }
    }

    /// Whether waiting alone may fix it (otherwise the spec, a Secret or the platform's
    /// configuration must change first): see [`AnyReason::is_terminal`].
    pub fn is_transient(&self) -> bool {
        !self.reason().is_terminal()
    }
}
