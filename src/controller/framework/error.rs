//! Reconcile failures: those any kind can have, and a kind's own (`E`). Each
//! variant's [`ReconcileError::reason`] is the condition reason, Event reason and
//! metric label.

use super::status::vocabulary::{Reason, StatusName};
use crate::api::ApiError;

/// The failures a kind has of its own (an enum; `Infallible` for none), each naming
/// its reason.
pub trait KindError: std::error::Error + Send + Sync + 'static {
    /// Its condition reason, Event reason and metric label.
    fn reason(&self) -> &'static str;

    /// Whether it waits for a person (see [`Reason::is_terminal`]).
    fn is_terminal(&self) -> bool;

    /// The reason of the failure behind this one, which its message begins with.
    fn cause_reason(&self) -> Option<&'static str> {
        None
    }
}

impl KindError for std::convert::Infallible {
    fn reason(&self) -> &'static str {
        match *self {}
    }

    fn is_terminal(&self) -> bool {
        match *self {}
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

impl<E> ReconcileError<E> {
    /// The reason of a failure any kind can have, or the kind's own failure.
    fn common_or_kind(&self) -> Result<Reason, &E> {
        Ok(match self {
            ReconcileError::Kind(error) => return Err(error),
            ReconcileError::Platform(error) => Reason::of(error),
            ReconcileError::Kube(_) | ReconcileError::Stale => Reason::KubernetesError,
            ReconcileError::Credentials { .. }
            | ReconcileError::NoCredentials
            | ReconcileError::DefaultKeyUnreadable(_)
            | ReconcileError::DefaultKeyNotAllowed(_) => Reason::CredentialsUnavailable,
            ReconcileError::Encoding(_) => Reason::EncodingError,
            ReconcileError::TimedOut(_) => Reason::Timeout,
            ReconcileError::NotLeader => Reason::NotLeader,
        })
    }

    /// The reason of a failure any kind can have; `None` for a kind's own.
    pub fn common_reason(&self) -> Option<Reason> {
        self.common_or_kind().ok()
    }

    /// When the platform asked to be left alone, for how long.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ReconcileError::Platform(error) => error.retry_after(),
            _ => None,
        }
    }
}

impl<E: KindError> ReconcileError<E> {
    /// The condition reason, Event reason and metric label.
    pub fn reason(&self) -> &'static str {
        match self.common_or_kind() {
            Ok(reason) => reason.as_str(),
            Err(error) => error.reason(),
        }
    }

    /// The reason of the failure behind this one, which its message begins with.
    pub fn cause_reason(&self) -> Option<&'static str> {
        match self {
            ReconcileError::Kind(error) => error.cause_reason(),
            _ => None,
        }
    }

    /// Whether waiting alone may fix it (otherwise the spec, a Secret or the platform's
    /// configuration must change first).
    pub fn is_transient(&self) -> bool {
        match self.common_or_kind() {
            Ok(reason) => !reason.is_terminal(),
            Err(error) => !error.is_terminal(),
        }
    }
}
