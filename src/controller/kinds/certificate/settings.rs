//! The flags of `edge-operator run` that PullZoneCertificates read, and the backoff
//! between completion attempts.

use std::time::Duration;

use crate::api::RetryPolicy;

#[derive(Debug, Clone, PartialEq, clap::Args)]
pub(crate) struct CertificateSettings {
    /// First delay between certificate completion attempts (doubles up to 1h).
    #[arg(long, default_value = "30s", value_parser = certificate_backoff)]
    pub certificate_backoff: RetryPolicy,
}

fn certificate_backoff(raw: &str) -> Result<RetryPolicy, humantime::DurationError> {
    humantime::parse_duration(raw).map(certificate_policy)
}

/// Between certificate completion attempts: from `initial` (30 s by default) doubling
/// to an hour.
pub(crate) fn certificate_policy(initial: Duration) -> RetryPolicy {
    RetryPolicy {
        max_retries: u32::MAX,
        initial_backoff: initial,
        max_backoff: Duration::from_secs(3600),
        ..RetryPolicy::default()
    }
}
