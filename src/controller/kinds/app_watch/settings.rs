//! The flags of `edge-operator run` that ContainerAppWatches read.

use std::time::Duration;

use crate::resources::time::duration_of_at_least;

#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct AppWatchSettings {
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
}
