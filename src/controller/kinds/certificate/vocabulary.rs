//! The words of a PullZoneCertificate's status beside every kind's: its reasons.

use crate::api::ApiError;
use crate::controller::framework::status::vocabulary::{AnyReason, KindReasons, Reason, Word};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CertificateReason {
    Issued,
    VerificationFailed,
    HostnameNotFound,
}

impl Word for CertificateReason {
    fn as_str(self) -> &'static str {
        match self {
            CertificateReason::Issued => "Issued",
            CertificateReason::VerificationFailed => "VerificationFailed",
            CertificateReason::HostnameNotFound => "HostnameNotFound",
        }
    }
}

impl KindReasons for CertificateReason {
    const TERMINAL: &'static [Self] = &[CertificateReason::HostnameNotFound];
}

/// [`Reason::of`], in this kind's words where it has its own.
pub(super) fn certificate_reason(error: &ApiError) -> AnyReason<CertificateReason> {
    match error {
        ApiError::NotFound(_) => AnyReason::Kind(CertificateReason::HostnameNotFound),
        ApiError::Validation { .. } => AnyReason::Kind(CertificateReason::VerificationFailed),
        ApiError::Unauthorized(_) | ApiError::Forbidden(_) => Reason::Unauthorized.into(),
        other => Reason::of(other).into(),
    }
}
