//! `ContainerAppWatch`: an observe-only mirror of a container app, its Shield rate
//! limits, a security-event summary and a CDN summary.

// Distinct printcolumns read as duplicates; KubeSchema re-declares each spec privately.
#![allow(clippy::duplicated_attributes, unreachable_pub)]

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::models::shield::Dimension;
use crate::resources::time::GoDuration;
use crate::resources::{Condition, EventFilter, SecretKeyRef};

fn default_interval() -> GoDuration {
    "60s".into()
}

fn default_window() -> GoDuration {
    "1h".into()
}

fn default_top() -> u32 {
    5
}

fn default_warn_threshold() -> i64 {
    100
}

/// What to watch. Nothing here is ever written to the platform.
#[derive(CustomResource, KubeSchema, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "edgeplatform.io",
    version = "v1alpha1",
    kind = "ContainerAppWatch",
    namespaced,
    status = "ContainerAppWatchStatus",
    shortname = "caw",
    category = "edgeplatform",
    doc = "Mirrors a container application, its Shield rate limits, security events and CDN traffic into status.",
    printcolumn(name = "App", type_ = "string", json_path = ".spec.appId"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.app.status"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Events",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"SecurityEvents\")].reason"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("!has(self.securityEvents) || has(self.shieldZoneId)").message("spec.securityEvents needs spec.shieldZoneId"))]
#[x_kube(validation = Rule::new("!has(self.rateLimits) || !self.rateLimits.enabled || has(self.shieldZoneId)").message("spec.rateLimits needs spec.shieldZoneId"))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerAppWatchSpec {
    /// Id of the container application: letters, digits, `-`, `_`, `.` and `~`,
    /// beginning with a letter or digit (it is a segment of the platform's paths).
    #[schemars(length(min = 1, max = 128), regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._~-]*$"))]
    pub app_id: String,
    /// How often to poll (a Go duration of at least 10s).
    #[serde(default = "default_interval")]
    #[x_kube(validation = Rule::new("duration(self) >= duration('10s')").message("interval must be at least 10s"))]
    #[schemars(length(max = 32))]
    pub interval: GoDuration,
    /// Shield Zone of the app, for rate limits and security events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub shield_zone_id: Option<i64>,
    /// Mirror the zone's rate-limit rules into status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limits: Option<RateLimitsWatch>,
    /// Summarise the zone's security events into a condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_events: Option<SecurityEventsWatch>,
    /// Summarise CDN request logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdn: Option<CdnWatch>,
    /// Secret key holding the platform access key; the operator's own key when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret_ref: Option<SecretKeyRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitsWatch {
    /// Whether to mirror rate-limit rules.
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecurityEventsWatch {
    /// Search window ending now (a Go duration, at most 72h).
    #[serde(default = "default_window")]
    #[x_kube(validation = Rule::new("duration(self) > duration('0s') && duration(self) <= duration('72h')").message("window must be positive and at most 72h"))]
    #[schemars(length(max = 32))]
    pub window: GoDuration,
    /// Free text: every word must appear in the IP, rule id, URL, user agent or rule name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub query: Option<String>,
    /// Filters, AND-combined.
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub filters: Vec<EventFilter>,
    /// Dimensions to group by (default ruleId, ip).
    #[serde(default)]
    #[schemars(length(max = 9))]
    #[x_kube(validation = Rule::new("self.all(d, self.exists_one(e, e == d))").message("groupBy dimensions must not repeat"))]
    pub group_by: Vec<Dimension>,
    /// How many top groups to keep in status.
    #[serde(default = "default_top")]
    #[schemars(range(min = 1, max = 50))]
    pub top: u32,
    /// Events in the window at or above which SecurityEvents turns Elevated.
    #[serde(default = "default_warn_threshold")]
    #[schemars(range(min = 1))]
    pub warn_threshold: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CdnWatch {
    /// Pull Zone to summarise; defaults to the app's endpoint Pull Zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub pull_zone_id: Option<i64>,
    /// Window ending now (a Go duration, at most 72h).
    #[serde(default = "default_window")]
    #[x_kube(validation = Rule::new("duration(self) > duration('0s') && duration(self) <= duration('72h')").message("window must be positive and at most 72h"))]
    #[schemars(length(max = 32))]
    pub window: GoDuration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct ImageSummary {
    /// Container template name.
    pub template: String,
    /// Full image reference.
    pub image: String,
    /// Image tag.
    pub tag: String,
    /// Image digest, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
}

/// The application as the platform reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct AppSummary {
    /// Application name.
    pub name: String,
    /// unknown, active, progressing, inactive, failing or suspended.
    pub status: String,
    /// shared or reserved.
    pub runtime_type: String,
    /// Running container instances.
    pub instances: i64,
    /// Allowed region ids.
    pub regions: Vec<String>,
    /// Public hosts of the app's endpoints.
    pub endpoints: Vec<String>,
    /// Images of the container templates.
    pub images: Vec<ImageSummary>,
    /// Autoscaling minimum instances.
    pub autoscaling_min: i64,
    /// Autoscaling maximum instances.
    pub autoscaling_max: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitSummary {
    /// Rule id.
    pub id: i64,
    /// Rule name.
    pub name: String,
    /// RateLimit, Log or Challenge (or the number when unknown).
    pub action: String,
    /// Requests allowed per timeframe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_count: Option<i64>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeframe: Option<i64>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_time: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct EventGroupSummary {
    /// groupBy dimension → value.
    pub key: BTreeMap<String, String>,
    /// Events in the group.
    pub count: i64,
    /// Blocked events.
    pub blocked: i64,
    /// Challenged events.
    pub challenged: i64,
    /// Logged events.
    pub logged: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct SecurityEventsSummary {
    /// Search window ending at the last poll.
    pub window: String,
    /// Events in the window.
    pub total: i64,
    /// Largest groups, by count.
    pub top: Vec<EventGroupSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct CdnSummary {
    /// Pull Zone summarised.
    pub pull_zone_id: i64,
    /// Window ending at the last poll.
    pub window: String,
    /// Requests in the window.
    pub requests: i64,
    /// Share of HIT answers among all, as a decimal string (e.g. "0.873").
    pub hit_ratio: String,
    /// 2xx, 3xx, 4xx, 5xx → count.
    pub by_status_class: BTreeMap<String, i64>,
    /// HIT, MISS, ... → count.
    pub by_cache_status: BTreeMap<String, i64>,
    /// Start of the span the counts cover (RFC 3339): the window's start (rounded down
    /// to 1/360 of the window) once complete, later while older logs are still read.
    #[serde(default)]
    pub from: String,
    /// End of the span the counts cover: the poll's time, or earlier when the page
    /// budget ran out before the newest logs.
    #[serde(default)]
    pub to: String,
    /// Share of the window the counts cover, as a decimal string: "1" when complete;
    /// below, the CdnLogsSynced condition says Partial.
    #[serde(default)]
    pub coverage: String,
}

/// Observed state of a ContainerAppWatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct ContainerAppWatchStatus {
    /// The metadata.generation the status was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When a poll last changed this status (RFC 3339), refreshed once older than the
    /// operator's --status-refresh (default 1h): polls that find the same data write
    /// nothing. While Synced is True the data is at most that old; a failed read turns
    /// its condition False at once, and Synced says PolledLate when the platform quota
    /// delays polls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// Ready (the app is active and every summary asked for is synced), Reconciling or
    /// Stalled while not Ready, Synced (Polled or PolledLate), AppReady,
    /// RateLimitsSynced, SecurityEvents, CdnLogsSynced.
    #[serde(default)]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppSummary>,
    /// Every rate-limit rule of the Shield Zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limits: Option<Vec<RateLimitSummary>>,
    /// Security events of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_events: Option<SecurityEventsSummary>,
    /// CDN traffic of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdn: Option<CdnSummary>,
    /// What was cut to keep this status under 64 KiB (texts to 256 bytes, lists to
    /// their first entries); absent when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<String>,
}

crate::resources::edge_object!(ContainerAppWatch => ContainerAppWatchStatus);
