//! The flags of `edge-operator run` that AccessListConfigs read.

use std::time::Duration;

use super::resource::AccessListConfig;
use crate::resources::poll_interval;
use crate::resources::time::duration_of_at_least;

#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct AccessListSettings {
    /// How often managed objects are re-read from the platform to find drift.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub resync: Duration,
    /// The shortest re-read period an object's `edgeplatform.io/poll-interval`
    /// annotation may ask for (at least 5s): in a shared cluster, what one tenant's
    /// objects may take of the platform quota for reads.
    #[arg(long, default_value = "5s", value_parser = duration_of_at_least::<5>)]
    pub min_poll_interval: Duration,
    /// Put a finalizer on Secrets that AccessListConfigs with deletionPolicy Restore
    /// need, so a namespace deletion keeps them until the restore is done (needs
    /// `patch` on those Secrets).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub protect_secrets: bool,
    /// The finalizer that protection puts on Secrets: one per shard, set by the runtime.
    #[arg(skip = SecretFinalizer::default())]
    pub secret_finalizer: SecretFinalizer,
    /// `<namespace>/<name>` of the ConfigMap (created by the operator) recording that
    /// the owners release 0.2.0 decided were carried over: at the first start on a
    /// platform, once. Without it, no owner is ever taken from a status.
    #[arg(long)]
    pub carry_over_record: Option<CarryOverRecord>,
}

/// Where the carry-over of 0.2.0's owners is recorded: one key per platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarryOverRecord {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for CarryOverRecord {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        match raw.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => Ok(Self {
                namespace: namespace.to_string(),
                name: name.to_string(),
            }),
            _ => Err(format!("{raw:?} is not <namespace>/<name>")),
        }
    }
}

impl AccessListSettings {
    /// How often `object` is re-read: its annotation, else `--resync`, never shorter
    /// than `--min-poll-interval`.
    pub(crate) fn poll_interval(&self, object: &AccessListConfig) -> Duration {
        poll_interval(object, self.resync, self.min_poll_interval)
    }
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
    use kube::ResourceExt;

    use super::*;

    #[test]
    fn a_poll_interval_annotation_is_floored_by_the_operators_setting() {
        let settings = |floor: u64| AccessListSettings {
            resync: Duration::from_secs(600),
            min_poll_interval: Duration::from_secs(floor),
            protect_secrets: true,
            secret_finalizer: SecretFinalizer::default(),
            carry_over_record: None,
        };
        let annotated = |value: &str| {
            let mut object = AccessListConfig::new("x", super::super::fixtures::spec(true, None));
            object
                .annotations_mut()
                .insert(crate::resources::ANNOTATION_POLL_INTERVAL.into(), value.into());
            object
        };
        let plain = AccessListConfig::new("x", super::super::fixtures::spec(true, None));
        assert_eq!(settings(5).poll_interval(&annotated("1s")), Duration::from_secs(5));
        assert_eq!(settings(60).poll_interval(&annotated("5s")), Duration::from_secs(60));
        assert_eq!(settings(60).poll_interval(&annotated("2m")), Duration::from_secs(120));
        assert_eq!(settings(60).poll_interval(&plain), Duration::from_secs(600));
    }

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
