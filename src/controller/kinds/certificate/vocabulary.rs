//! The words of a PullZoneCertificate's status beside every kind's: its reasons.

use crate::api::{ApiError, ApiFailure};
use crate::controller::framework::reasons::AnyReason;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
pub(crate) enum CertificateReason {
    Issued,
    VerificationFailed,
    /// Waits for a person: the hostname is on no Pull Zone.
    HostnameNotFound,
}

impl CertificateReason {
    /// Whether an object not Ready for this reason waits for a person.
    pub(crate) fn is_terminal(self) -> bool {
        self == CertificateReason::HostnameNotFound
    }
}

/// A failed completion's reason, in this kind's words where it has its own.
pub(super) fn certificate_reason(error: &ApiError) -> AnyReason<CertificateReason> {
    match error.reason() {
        ApiFailure::NotFound => CertificateReason::HostnameNotFound.into(),
        ApiFailure::Rejected => CertificateReason::VerificationFailed.into(),
        other => other.into(),
    }
}
