//! `AccessListConfig`: enablement and action of one access list of a Shield Zone.

// Distinct printcolumns read as duplicates; KubeSchema re-declares each spec privately.
#![allow(clippy::duplicated_attributes, unreachable_pub)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::models::shield::AccessListAction;
use crate::resources::time::GoDuration;
use crate::resources::{Condition, EventFilter, SecretKeyRef};

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
    printcolumn(name = "Action", type_ = "string", json_path = ".status.atProvider.action"),
    printcolumn(name = "Rollout", type_ = "string", json_path = ".status.rollout.stage"),
    printcolumn(name = "Matches", type_ = "integer", json_path = ".status.rollout.evidence.matches"),
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
#[x_kube(validation = Rule::new("!has(self.rollout) || !has(self.action)").message("with spec.rollout, the action is spec.rollout.action: leave spec.action out"))]
#[x_kube(validation = Rule::new("!has(self.rollout) || self.enabled").message("spec.rollout needs spec.enabled: a disabled list logs nothing"))]
#[x_kube(validation = Rule::new("!has(self.rollout) || self.managementPolicy != 'Observe'").message("spec.rollout needs managementPolicy Manage: an observed list is never written"))]
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
    /// Reach the action in stages: the list logs first, what it would block is read
    /// from the zone's security events into status, and the action is set on a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
}

/// A staged change of the list's action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[x_kube(validation = Rule::new("self.promotion != 'Automatic' || has(self.maxMatches)").message("promotion Automatic needs maxMatches"))]
pub struct Rollout {
    /// The action the list takes once promoted.
    pub action: RolloutAction,
    /// How long the list logs before it may be promoted (a Go duration, 1m to 24h).
    #[serde(default = "default_rollout_window")]
    #[x_kube(validation = Rule::new("duration(self) >= duration('1m') && duration(self) <= duration('24h')").message("window must be from 1m to 24h"))]
    #[schemars(length(max = 32))]
    pub window: GoDuration,
    /// Automatic: promoted once the whole window elapsed with the gate holding.
    /// Manual: promoted when the annotation edgeplatform.io/promote carries the digest
    /// of the evidence in status.
    #[serde(default)]
    pub promotion: Promotion,
    /// The most events the list may log in the window (required with Automatic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_matches: Option<i64>,
    /// The most distinct client IPs among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_distinct_ips: Option<i64>,
    /// During probation (one window from promotion), requests blocked (or challenged)
    /// from more distinct client IPs than this return the list to Log, once. After
    /// probation nothing does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub rollback_above_sources: Option<i64>,
    /// The search that finds the list's events, AND-combined; by default `feature eq
    /// access_list` and `ruleId eq <the list's listId>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    pub filters: Vec<EventFilter>,
}

fn default_rollout_window() -> GoDuration {
    "1h".into()
}

/// The actions a rollout may reach: Block or Challenge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RolloutAction {
    Block,
    Challenge,
}

impl RolloutAction {
    pub fn action(self) -> AccessListAction {
        match self {
            RolloutAction::Block => AccessListAction::Block,
            RolloutAction::Challenge => AccessListAction::Challenge,
        }
    }

    /// What the list does to a request it matches, once promoted: `blocked`, `challenged`.
    pub fn past_tense(self) -> &'static str {
        match self {
            RolloutAction::Block => "blocked",
            RolloutAction::Challenge => "challenged",
        }
    }
}

/// How a rollout is promoted: Automatic (on its gate) or Manual (on an approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub enum Promotion {
    #[default]
    Automatic,
    Manual,
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
    /// Where spec.rollout stands, with its evidence: a copy of what the claim record
    /// holds, which is what the operator acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
    /// The AccessListClaim recording which object writes the configuration, its
    /// restore point and its rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub claim: Option<String>,
}

/// Where a rollout stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
)]
pub enum RolloutStage {
    /// The list logs; the window runs (or starts once the platform confirms Log).
    #[default]
    Logging,
    /// The window elapsed; promotion waits for the annotation with the evidence digest.
    AwaitingApproval,
    /// The gate was exceeded: the list keeps logging until the spec changes.
    Held,
    /// The list takes the rollout's action.
    Promoted,
    /// Blocked more sources than rollbackAboveSources on probation: back to Log until
    /// the spec changes.
    RolledBack,
}

/// The state of spec.rollout of one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// Logging, AwaitingApproval, Held, Promoted or RolledBack.
    pub stage: RolloutStage,
    /// The metadata.generation whose spec.rollout this is: a new one restarts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the platform was first seen logging for this generation: the window's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub window_start: Option<String>,
    /// What the list logged in the window, as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// When the list was promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub promoted_at: Option<String>,
    /// When probation ends: from then on no blocked traffic returns the list to Log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub probation_ends: Option<String>,
    /// Probation ended and was read whole: nothing returns the list to Log any more.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probation_over: bool,
    /// Events the list blocked (or challenged) on probation, as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<i64>,
    /// Distinct client IPs among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_sources: Option<i64>,
    /// When the list went back to Log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub rolled_back_at: Option<String>,
}

/// What a list logged over a window, from the zone's security events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The start of the window read, RFC 3339.
    #[schemars(length(max = 64))]
    pub from: String,
    /// The end of the window read (excluded), RFC 3339.
    #[schemars(length(max = 64))]
    pub to: String,
    /// Events the list logged.
    pub matches: i64,
    /// Distinct client IPs among them.
    pub distinct_ips: i64,
    /// The client IPs with the most events.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub top_ips: Vec<Tally>,
    /// The countries with the most events.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub top_countries: Vec<Tally>,
    /// The ASNs with the most events.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub top_asns: Vec<Tally>,
    /// The URLs with the most events.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub top_urls: Vec<Tally>,
    /// Events per equal slice of the window, oldest first.
    #[serde(default)]
    #[schemars(length(max = 60))]
    pub sparkline: Vec<i64>,
    /// A hash of everything above (128 bits): what an approval names.
    #[schemars(length(max = 32))]
    pub digest: String,
}

/// One value of a dimension and its events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
pub struct Tally {
    /// The value (an IP, a country code, an ASN, a URL).
    #[schemars(length(max = 256))]
    pub value: String,
    /// Its events.
    pub count: i64,
}

crate::resources::edge_object!(AccessListConfig => AccessListConfigStatus);
