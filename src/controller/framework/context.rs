//! What the reconcilers of every kind share, each part in its own module: credentials,
//! failure counts, metrics, Events, leadership and settings. What one kind keeps is
//! its `Reconciled::State`.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::events::Recorder;

use super::backoff::Failures;
use super::credentials::Credentials;
use super::leader::LeaderGate;
use super::metrics::Metrics;
use crate::api::RetryPolicy;

/// Settings of `edge-operator run` that reconcilers read.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Default re-read period (`--resync`).
    pub resync: Duration,
    /// Between certificate completion attempts.
    pub certificate_backoff: RetryPolicy,
    /// Logging requests one CDN summary may make per poll (`--cdn-pages-per-poll`).
    pub cdn_pages_per_poll: u32,
    /// How long the platform takes to make a log entry readable (`--cdn-log-delay`):
    /// CDN summaries end this long before the poll.
    pub cdn_log_delay: Duration,
    /// The longest a ContainerAppWatch keeps an unchanged `observedAt`
    /// (`--status-refresh`).
    pub status_refresh: Duration,
    /// Keep the in-use finalizer on Secrets that restoring objects need
    /// (`--protect-secrets`).
    pub protect_secrets: bool,
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
