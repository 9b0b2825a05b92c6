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
    /// The finalizer that protection puts on Secrets: one per shard, set by the runtime.
    #[arg(skip = SecretFinalizer::default())]
    pub secret_finalizer: SecretFinalizer,
}

/// The in-use finalizer of one operator's Secret protection. Each shard protects the
/// Secrets its own objects need with its own finalizer, so a shard never removes the
/// protection another shard's objects rely on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFinalizer(String);

/// The finalizer of an operator that watches every object.
pub const SECRET_IN_USE_FINALIZER: &str = "edgeplatform.io/credentials-in-use";

impl Default for SecretFinalizer {
    fn default() -> Self {
        Self(SECRET_IN_USE_FINALIZER.to_string())
    }
}

impl SecretFinalizer {
    /// The finalizer of the shard whose Lease is `lease_name` (a DNS subdomain name,
    /// so `<lease>.shard.edgeplatform.io` is a valid finalizer prefix).
    pub fn of_shard(lease_name: &str) -> Self {
        Self(format!("{lease_name}.shard.edgeplatform.io/credentials-in-use"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shard_has_its_own_finalizer_and_every_finalizer_is_a_qualified_name() {
        let shard = SecretFinalizer::of_shard("edge-operator-shard-a");
        assert_eq!(
            shard.as_str(),
            "edge-operator-shard-a.shard.edgeplatform.io/credentials-in-use"
        );
        assert_ne!(shard, SecretFinalizer::default());
        for finalizer in [shard, SecretFinalizer::default()] {
            let (prefix, name) = finalizer.as_str().split_once('/').expect("prefix/name");
            assert!(prefix.len() <= 253 && name.len() <= 63, "{finalizer:?}");
            assert!(prefix.split('.').all(|label| !label.is_empty() && label.len() <= 63));
        }
    }
}
