//! The words of a PullZoneCertificate's status beside every kind's: its reasons.

use crate::api::ApiError;
use crate::controller::framework::status::vocabulary::{KindReason, Reason, StatusName};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString)]
pub(crate) enum CertificateReason {
    Issued,
    VerificationFailed,
    /// Waits for a person: the hostname is on no Pull Zone.
    HostnameNotFound,
}

impl KindReason for CertificateReason {
    fn is_terminal(self) -> bool {
        self == CertificateReason::HostnameNotFound
    }
}

/// [`Reason::of`], in this kind's words where it has its own.
pub(super) fn certificate_reason(error: &ApiError) -> &'static str {
    match error {
        ApiError::NotFound(_) => CertificateReason::HostnameNotFound.as_str(),
        ApiError::Validation { .. } => CertificateReason::VerificationFailed.as_str(),
        ApiError::Unauthorized(_) | ApiError::Forbidden(_) => Reason::Unauthorized.as_str(),
        other => Reason::of(other).as_str(),
    }
}
