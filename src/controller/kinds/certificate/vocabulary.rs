//! The words of a PullZoneCertificate's status beside every kind's: its reasons.

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
