//! Reconcile failures. Each variant's [`ReconcileError::reason`] is the condition
//! reason, Event reason and metric label.

use super::status::conditions::Reason;
use crate::api::ApiError;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
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
    #[error("Shield Zone {zone} has no access list {what}")]
    AccessListNotFound { zone: i64, what: String },
    #[error("Shield Zone {zone} has {count} access lists named {name:?}; use spec.configurationId")]
    AmbiguousListName { zone: i64, name: String, count: usize },
    #[error("the operator could not encode its request: {0}")]
    Encoding(String),
    #[error("the reconcile took longer than {0:?}")]
    TimedOut(std::time::Duration),
    #[error("leadership is not confirmed: another operator may be acting")]
    NotLeader,
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
         {deadline} it is released without restoring", .cause.reason().as_str()
    )]
    RestoreBlocked {
        zone: i64,
        configuration: i64,
        deadline: String,
        cause: Box<ReconcileError>,
    },
}

impl From<ApiError> for ReconcileError {
    fn from(error: ApiError) -> Self {
        match error {
            ApiError::WriteWithheld => ReconcileError::NotLeader,
            error => ReconcileError::Platform(error),
        }
    }
}

impl ReconcileError {
    pub fn reason(&self) -> Reason {
        match self {
            ReconcileError::Platform(error) => Reason::of(error),
            ReconcileError::Kube(_) => Reason::KubernetesError,
            ReconcileError::Credentials { .. }
            | ReconcileError::NoCredentials
            | ReconcileError::DefaultKeyUnreadable(_)
            | ReconcileError::DefaultKeyNotAllowed(_) => Reason::CredentialsUnavailable,
            ReconcileError::AccessListNotFound { .. } => Reason::AccessListNotFound,
            ReconcileError::AmbiguousListName { .. } => Reason::AmbiguousListName,
            ReconcileError::Encoding(_) => Reason::EncodingError,
            ReconcileError::TimedOut(_) => Reason::Timeout,
            ReconcileError::ConfigurationClaimed { .. } => Reason::ConfigurationClaimed,
            ReconcileError::NotLeader => Reason::NotLeader,
            ReconcileError::RestoreBlocked { .. } => Reason::RestoreHeld,
        }
    }

    /// The reason of the failure behind this one, which its message begins with.
    pub fn cause_reason(&self) -> Option<Reason> {
        match self {
            ReconcileError::RestoreBlocked { cause, .. } => Some(cause.reason()),
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
    /// configuration must change first): see [`Reason::is_terminal`].
    pub fn is_transient(&self) -> bool {
        !self.reason().is_terminal()
    }
}
