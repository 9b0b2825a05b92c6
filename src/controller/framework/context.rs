//! What the reconcilers of every kind share, each part in its own module: credentials,
//! failure counts, metrics, Events, leadership and settings. What one kind keeps is
//! its `Reconciled::State`.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::events::Recorder;

use super::backoff::{Failures, certificate_policy};
use super::credentials::Credentials;
use super::leader::LeaderGate;
use super::metrics::Metrics;
use crate::api::RetryPolicy;

/// The flags of `edge-operator run` that reconcilers read.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Settings {
    /// How often managed objects are re-read from the platform to find drift.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub resync: Duration,
    /// First delay between certificate completion attempts (doubles up to 1h).
    #[arg(long, default_value = "30s", value_parser = certificate_backoff)]
    pub certificate_backoff: RetryPolicy,
    /// Logging requests (pages of 1,000 entries) one CDN summary may make per poll. A
    /// summary reads only the logs it has not read yet; when this budget cannot keep
    /// up, it says which share of its window it covers (CdnLogsSynced=False, Partial).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub cdn_pages_per_poll: u32,
    /// How long the platform takes to make a request's log entry readable. A summary
    /// ends this long before its poll, so entries that arrive late are still counted.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub cdn_log_delay: Duration,
    /// The longest a ContainerAppWatch keeps an unchanged status: a poll that finds the
    /// same data writes nothing, except to refresh `status.observedAt` once it is this
    /// old (at least 10s, or a status would be rewritten at nearly every poll).
    #[arg(long, default_value = "1h", value_parser = duration_of_at_least::<10>)]
    pub status_refresh: Duration,
    /// Put a finalizer on Secrets that AccessListConfigs with deletionPolicy Restore
    /// need, so a namespace deletion keeps them until the restore is done (needs
    /// `patch` on those Secrets).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub protect_secrets: bool,
}

fn certificate_backoff(raw: &str) -> Result<RetryPolicy, humantime::DurationError> {
    humantime::parse_duration(raw).map(certificate_policy)
}

/// A duration flag of at least `MIN_SECS` seconds.
pub fn duration_of_at_least<const MIN_SECS: u64>(raw: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(raw).map_err(|error| error.to_string())?;
    if duration < Duration::from_secs(MIN_SECS) {
        return Err(format!("must be at least {MIN_SECS}s"));
    }
    Ok(duration)
}

pub struct Context {
    pub kube: kube::Client,
    pub credentials: Credentials,
    pub failures: Failures,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    pub settings: Settings,
    /// Whether this process may act; also asked by the platform client before each write.
    pub leader: Arc<LeaderGate>,
}
