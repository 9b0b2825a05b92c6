//! `AccessListConfig`: enablement and action of one access list of a Shield Zone.

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Condition, SecretKeyRef};
use crate::api::models::shield::AccessListAction;

/// Desired state of one access-list configuration of a Shield Zone.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "edgeplatform.io",
    version = "v1alpha1",
    kind = "AccessListConfig",
    namespaced,
    status = "AccessListConfigStatus",
    shortname = "alc",
    category = "edgeplatform",
    doc = "Enables, disables and sets the action of an access list of a Shield Zone.",
    printcolumn(name = "Zone", type_ = "integer", json_path = ".spec.shieldZoneId"),
    printcolumn(
        name = "Configuration",
        type_ = "integer",
        json_path = ".status.atProvider.configurationId"
    ),
    printcolumn(name = "Enabled", type_ = "boolean", json_path = ".status.atProvider.isEnabled"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Synced",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Synced\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("has(self.configurationId) != has(self.listName)").message("exactly one of spec.configurationId and spec.listName must be set"))]
#[x_kube(validation = Rule::new("self.shieldZoneId == oldSelf.shieldZoneId && has(self.configurationId) == has(oldSelf.configurationId) && (!has(self.configurationId) || self.configurationId == oldSelf.configurationId) && has(self.listName) == has(oldSelf.listName) && (!has(self.listName) || self.listName == oldSelf.listName)").message("spec.shieldZoneId, spec.configurationId and spec.listName are immutable: to target another access list, delete this object and create a new one"))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessListConfigSpec {
    /// Shield Zone that owns the access list.
    #[schemars(range(min = 1))]
    pub shield_zone_id: i64,
    /// The access list's configurationId (the id of the configuration PATCH, not its listId).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub configuration_id: Option<i64>,
    /// The access list's name, resolved to its configuration through the zone's lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub list_name: Option<String>,
    /// Whether the access list is enabled.
    pub enabled: bool,
    /// Action taken on matching requests; left as it is on the platform when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<AccessListAction>,
    /// Manage: correct the platform to match the spec. Observe: only read and report drift.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Orphan: leave the platform as it is on delete. Restore: put back the values
    /// observed before the first write.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Secret key holding the platform access key; the operator's own key when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret_ref: Option<SecretKeyRef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum ManagementPolicy {
    #[default]
    Manage,
    Observe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum DeletionPolicy {
    #[default]
    Orphan,
    Restore,
}

/// The access list as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListObservation {
    /// Id of the access list's configuration (used by the PATCH).
    pub configuration_id: i64,
    /// Id of the access list itself.
    pub list_id: i64,
    /// Name of the access list.
    pub name: String,
    /// Whether the access list is enabled on the platform.
    pub is_enabled: bool,
    /// Action name (None, Allow, Block, Challenge, Log, Bypass), or the number when unknown.
    pub action: String,
    /// List type name (IP, CIDR, ASN, Country, Organization, JA4).
    #[serde(rename = "type")]
    pub list_type: String,
    /// Whether the platform manages the list's entries.
    pub managed: bool,
}

/// Values to put back on delete with `deletionPolicy: Restore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestorePoint {
    /// Shield Zone the values belong to (absent from points recorded before it was
    /// kept: the spec's zone, which cannot change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shield_zone_id: Option<i64>,
    /// Configuration the values belong to.
    pub configuration_id: i64,
    /// Enablement before the first write.
    pub is_enabled: bool,
    /// Action code before the first write.
    pub action: i32,
}

/// Observed state of an AccessListConfig.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListConfigStatus {
    /// The metadata.generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready (the platform matches the spec of this generation), Reconciling or Stalled
    /// while not Ready, and Synced (the last reconcile succeeded).
    #[serde(default)]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The access list as last read from the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_provider: Option<AccessListObservation>,
    /// How many times a change made outside this object was corrected.
    #[serde(default)]
    pub drift_corrections: i64,
    /// Values observed before the first write, restored on delete with Restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_point: Option<RestorePoint>,
}
