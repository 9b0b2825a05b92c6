//! The flags of `edge-operator run` that AccessListConfigs read.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct AccessListSettings {
    /// How often managed objects are re-read from the platform to find drift.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub resync: Duration,
    /// Put a finalizer on Secrets that AccessListConfigs with deletionPolicy Restore
    /// need, so a namespace deletion keeps them until the restore is done (needs
    /// `patch` on those Secrets).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub protect_secrets: bool,
}
