//! `AccessListClaim`: which AccessListConfig writes one access-list configuration of a
//! Shield Zone. Cluster-scoped and written only by the operator: tenants get no grant
//! on it, so nothing a tenant writes decides ownership or what a restore writes.

#![allow(clippy::duplicated_attributes)] // distinct printcolumns, read as duplicates

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::controller::kinds::access_list::resource::RolloutStatus;
use crate::resources::short_digest;

/// The record of one configuration's owner, named
/// `<shieldZoneId>-<configurationId>-<platform>` ([`claim_name`]).
/// The apiserver's create-if-absent decides a race between objects, processes and
/// shards: the first AccessListConfig whose own credentials resolved the configuration
/// owns it until it is deleted (after its restore), or until the operator finds it gone.
#[derive(CustomResource, Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "edgeplatform.io",
    version = "v1alpha1",
    kind = "AccessListClaim",
    shortname = "alclaim",
    doc = "The AccessListConfig that writes one access-list configuration; written by the operator only.",
    printcolumn(name = "Zone", type_ = "integer", json_path = ".spec.shieldZoneId"),
    printcolumn(name = "Configuration", type_ = "integer", json_path = ".spec.configurationId"),
    printcolumn(name = "Namespace", type_ = "string", json_path = ".spec.owner.namespace"),
    printcolumn(name = "Owner", type_ = "string", json_path = ".spec.owner.name"),
    printcolumn(name = "Platform", type_ = "string", json_path = ".spec.platform", priority = 1),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AccessListClaimSpec {
    /// Base URL of the platform the zone belongs to.
    #[schemars(length(max = 2048))]
    pub platform: String,
    /// Shield Zone of the configuration.
    #[schemars(range(min = 1))]
    pub shield_zone_id: i64,
    /// The access-list configuration owned.
    #[schemars(range(min = 1))]
    pub configuration_id: i64,
    /// The AccessListConfig that writes it.
    pub owner: ClaimOwner,
    /// Whose key showed the owner could see the configuration, and when.
    pub proof: ClaimProof,
    /// The platform's values read before the owner's first write, which a deletion with
    /// `deletionPolicy: Restore` puts back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_point: Option<RecordedValues>,
    /// The owner's restore point was lost with an earlier record of this claim, deleted
    /// while no operator ran: a deletion with Restore restores nothing and says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restore_point_lost: bool,
    /// The owner's spec.rollout as the operator decided it: the stage, the window and
    /// the evidence an approval names. The object's status.rollout mirrors it; nothing
    /// written to that status changes what the operator does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
}

/// An AccessListConfig, by namespace, name and uid (a new object of the same name is
/// another owner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimOwner {
    /// Namespace of the AccessListConfig.
    #[schemars(length(max = 63))]
    pub namespace: String,
    /// Name of the AccessListConfig.
    #[schemars(length(max = 253))]
    pub name: String,
    /// Its metadata.uid.
    #[schemars(length(max = 64))]
    pub uid: String,
}

/// The credentials that resolved the configuration for the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimProof {
    /// The Secret of the owner's namespace whose key read the zone; absent for the
    /// operator's default key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub secret: Option<String>,
    /// When that key read the zone (RFC 3339); absent for a record carried over from
    /// an owner that release 0.2.0 decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub read_at: Option<String>,
}

/// Enablement and action of a configuration, as the platform held them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordedValues {
    /// Whether the list was enabled.
    pub is_enabled: bool,
    /// Its action code.
    pub action: i32,
}

/// The label that names a record's platform by its [`platform_tag`].
pub const PLATFORM_LABEL: &str = "edgeplatform.io/platform";

/// The name of the record of `configuration_id` in `shield_zone_id` of the platform at
/// `platform` (its base URL): ids are the platform's, so operators of one cluster that
/// call different platforms never share a record.
pub fn claim_name(platform: &str, shield_zone_id: i64, configuration_id: i64) -> String {
    format!("{shield_zone_id}-{configuration_id}-{}", platform_tag(platform))
}

/// A platform's short name: the [`short_digest`] of its base URL as the client sends
/// it (scheme and host in lower case, no default port, no trailing `/`), so every
/// spelling of one URL names one platform.
pub fn platform_tag(platform: &str) -> String {
    short_digest(normalised(platform).as_bytes())
}

fn normalised(platform: &str) -> String {
    url::Url::parse(platform).map_or_else(
        |_| platform.trim_end_matches('/').to_string(),
        |url| url.as_str().trim_end_matches('/').to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_one_url_names_one_platform_and_a_canonical_url_keeps_its_tag() {
        let canonical = "https://api.edge.example";
        let before_normalising = short_digest(canonical.as_bytes());
        for spelling in [
            "https://api.edge.example",
            "https://api.edge.example/",
            "HTTPS://API.Edge.Example",
            "https://api.edge.example:443/",
        ] {
            assert_eq!(platform_tag(spelling), before_normalising, "{spelling}");
        }
        assert_ne!(platform_tag("https://api.edge.example:8443"), before_normalising);
        assert_ne!(platform_tag("https://api.edge.example/v2"), before_normalising);
        assert_eq!(
            platform_tag("http://127.0.0.1:8080/v2/"),
            platform_tag("http://127.0.0.1:8080/v2")
        );
    }
}
