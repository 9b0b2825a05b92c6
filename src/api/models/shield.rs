//! Shield: event-log search, access lists and rate limits.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::GenericRequestResponse;

/// A searchable dimension of a Shield event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Dimension {
    Feature,
    RuleId,
    Ip,
    Ja4,
    Ua,
    Url,
    Asn,
    Country,
    Action,
}

impl Dimension {
    pub const ALL: [Dimension; 9] = [
        Dimension::Feature,
        Dimension::RuleId,
        Dimension::Ip,
        Dimension::Ja4,
        Dimension::Ua,
        Dimension::Url,
        Dimension::Asn,
        Dimension::Country,
        Dimension::Action,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Feature => "feature",
            Dimension::RuleId => "ruleId",
            Dimension::Ip => "ip",
            Dimension::Ja4 => "ja4",
            Dimension::Ua => "ua",
            Dimension::Url => "url",
            Dimension::Asn => "asn",
            Dimension::Country => "country",
            Dimension::Action => "action",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Dimension {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dimension::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| {
            let allowed: Vec<_> = Dimension::ALL.iter().map(|d| d.as_str()).collect();
            format!("unknown dimension `{s}`, expected one of {}", allowed.join(", "))
        })
    }
}

/// Operator of an [`EventLogsFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FilterOp {
    Eq,
    In,
    Contains,
    Cidr,
    Wildcard,
}

impl FilterOp {
    pub const ALL: [FilterOp; 5] = [
        FilterOp::Eq,
        FilterOp::In,
        FilterOp::Contains,
        FilterOp::Cidr,
        FilterOp::Wildcard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FilterOp::Eq => "eq",
            FilterOp::In => "in",
            FilterOp::Contains => "contains",
            FilterOp::Cidr => "cidr",
            FilterOp::Wildcard => "wildcard",
        }
    }
}

impl std::str::FromStr for FilterOp {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FilterOp::ALL
            .into_iter()
            .find(|op| op.as_str() == s)
            .ok_or_else(|| format!("unknown operator `{s}`, expected one of eq, in, contains, cidr, wildcard"))
    }
}

/// `EventLogsFilter` (additional properties not allowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventLogsFilter {
    #[serde(default)]
    pub field: Option<Dimension>,
    #[serde(default)]
    pub op: Option<FilterOp>,
    #[serde(default)]
    pub value: Option<Vec<String>>,
}

impl EventLogsFilter {
    pub fn new(field: Dimension, op: FilterOp, values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            field: Some(field),
            op: Some(op),
            value: Some(values.into_iter().map(Into::into).collect()),
        }
    }
}

/// `EventLogsSearchRequest` (additional properties not allowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventLogsSearchRequest {
    pub from: i64,
    pub to: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<EventLogsFilter>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<Vec<Dimension>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
}

impl EventLogsSearchRequest {
    /// A search of the half-open window `[from, to)` (Unix milliseconds).
    pub fn window(from: i64, to: i64) -> Self {
        Self {
            from,
            to,
            ..Self::default()
        }
    }

    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    pub fn filter(mut self, filter: EventLogsFilter) -> Self {
        self.filters.get_or_insert_with(Vec::new).push(filter);
        self
    }

    pub fn group_by(mut self, dimensions: impl IntoIterator<Item = Dimension>) -> Self {
        self.group_by = Some(dimensions.into_iter().collect());
        self
    }

    pub fn buckets(mut self, buckets: i32) -> Self {
        self.buckets = Some(buckets);
        self
    }

    pub fn page(mut self, page: i32) -> Self {
        self.page = Some(page);
        self
    }

    pub fn page_size(mut self, page_size: i32) -> Self {
        self.page_size = Some(page_size);
        self
    }
}

/// `EventRow`: one security event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    #[serde(default)]
    pub log_id: Option<String>,
    pub timestamp: i64,
    #[serde(default)]
    pub log: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub fields: Option<BTreeMap<String, String>>,
}

/// Aggregates of an [`EventGroup`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupContext {
    #[serde(default)]
    pub country: String,
    #[serde(default)]
    pub asn: String,
    #[serde(default)]
    pub blocked: i64,
    #[serde(default)]
    pub challenged: i64,
    #[serde(default)]
    pub logged: i64,
    #[serde(default)]
    pub features: String,
    #[serde(default)]
    pub rule_ids: String,
}

/// `EventGroup`: events sharing the values of the requested `groupBy` dimensions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventGroup {
    #[serde(default)]
    pub key: Option<BTreeMap<String, String>>,
    pub count: i64,
    pub first_seen: i64,
    pub last_seen: i64,
    #[serde(default)]
    pub context: Option<GroupContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparkline: Option<Vec<i64>>,
}

/// `EventLogsSearchResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventLogsSearchResponse {
    #[serde(default)]
    pub rows: Option<Vec<EventRow>>,
    #[serde(default)]
    pub groups: Option<Vec<EventGroup>>,
    pub total: i64,
    pub total_pages: i32,
    pub page: i32,
    #[serde(default)]
    pub error_response: Option<GenericRequestResponse>,
}

/// Access-list `action` (0 None, 1 Allow, 2 Block, 3 Challenge, 4 Log, 5 Bypass).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum AccessListAction {
    None,
    Allow,
    Block,
    Challenge,
    Log,
    Bypass,
}

impl AccessListAction {
    pub const ALL: [AccessListAction; 6] = [
        AccessListAction::None,
        AccessListAction::Allow,
        AccessListAction::Block,
        AccessListAction::Challenge,
        AccessListAction::Log,
        AccessListAction::Bypass,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    pub fn from_code(code: i32) -> Option<Self> {
        usize::try_from(code).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    pub fn name(self) -> &'static str {
        match self {
            AccessListAction::None => "None",
            AccessListAction::Allow => "Allow",
            AccessListAction::Block => "Block",
            AccessListAction::Challenge => "Challenge",
            AccessListAction::Log => "Log",
            AccessListAction::Bypass => "Bypass",
        }
    }

    /// Human name of a wire code, or the number itself when the code is unknown.
    pub fn describe(code: i32) -> String {
        Self::from_code(code).map_or_else(|| code.to_string(), |a| a.name().to_string())
    }
}

/// Human name of an access-list `type` code (0 IP, 1 CIDR, 2 ASN, 3 Country, 4 Organization, 5 JA4).
pub fn access_list_type_name(code: i32) -> String {
    const NAMES: [&str; 6] = ["IP", "CIDR", "ASN", "Country", "Organization", "JA4"];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| code.to_string(), |n| (*n).to_string())
}

/// One item of `managedLists[]` / `customLists[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListItem {
    #[serde(default)]
    pub list_id: i64,
    #[serde(default)]
    pub configuration_id: i64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub is_enabled: bool,
    #[serde(default, rename = "type")]
    pub list_type: i32,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub action: i32,
    #[serde(default)]
    pub required_plan: Option<String>,
    #[serde(default)]
    pub entry_count: i64,
    #[serde(default)]
    pub update_frequency: Option<String>,
    #[serde(default)]
    pub last_updated: Option<String>,
}

/// Answer of `GET /shield/shield-zone/{id}/access-lists`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListsResponse {
    #[serde(default)]
    pub managed_lists: Vec<AccessListItem>,
    #[serde(default)]
    pub custom_lists: Vec<AccessListItem>,
    #[serde(default)]
    pub custom_entry_count: i64,
    #[serde(default)]
    pub custom_entry_limit: i64,
    #[serde(default)]
    pub custom_list_count: i64,
    #[serde(default)]
    pub custom_list_limit: i64,
    #[serde(default)]
    pub error: Option<GenericRequestResponse>,
}

impl AccessListsResponse {
    pub fn all_lists(&self) -> impl Iterator<Item = &AccessListItem> {
        self.managed_lists.iter().chain(&self.custom_lists)
    }

    /// Every list with whether the platform manages it (`managedLists`) or not.
    pub fn lists_with_kind(&self) -> impl Iterator<Item = (&AccessListItem, bool)> {
        let managed = self.managed_lists.iter().map(|l| (l, true));
        managed.chain(self.custom_lists.iter().map(|l| (l, false)))
    }
}

/// Body of the access-list configuration PATCH; a `None` member keeps the current value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListConfigurationPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<i32>,
}

impl AccessListConfigurationPatch {
    pub fn is_empty(&self) -> bool {
        self.is_enabled.is_none() && self.action.is_none()
    }
}

/// `data` of the access-list configuration PATCH answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListConfiguration {
    pub is_enabled: bool,
    pub action: i32,
}

/// `{data, error}` answer of the access-list configuration PATCH.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessListConfigurationResponse {
    pub data: AccessListConfiguration,
    #[serde(default)]
    pub error: Option<GenericRequestResponse>,
}

/// A chained condition of a rate-limit rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ChainedRuleCondition {
    #[serde(default)]
    pub variable_types: BTreeMap<String, String>,
    #[serde(default)]
    pub operator_type: i32,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub is_negated: bool,
    #[serde(default)]
    pub is_regex_variable: bool,
}

/// `ruleConfiguration` of a rate-limit rule. Reads are lenient: every member may be missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RuleConfiguration {
    #[serde(default)]
    pub action_type: i32,
    #[serde(default)]
    pub variable_types: BTreeMap<String, String>,
    #[serde(default)]
    pub operator_type: i32,
    #[serde(default)]
    pub severity_type: i32,
    #[serde(default)]
    pub transformation_types: Vec<i32>,
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub is_negated: bool,
    #[serde(default)]
    pub is_regex_variable: bool,
    #[serde(default)]
    pub chained_rule_conditions: Vec<ChainedRuleCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_key_type: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeframe: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_time: Option<i64>,
}

/// Human name of a rate-limit `actionType` (1 RateLimit, 2 Log, 3 Challenge).
pub fn rate_limit_action_name(code: i32) -> String {
    match code {
        1 => "RateLimit".to_string(),
        2 => "Log".to_string(),
        3 => "Challenge".to_string(),
        other => other.to_string(),
    }
}

/// A rate-limit rule of a Shield Zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitRule {
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub shield_zone_id: i64,
    #[serde(default)]
    pub user_id: String,
    #[serde(default)]
    pub rule_name: String,
    #[serde(default)]
    pub rule_description: String,
    #[serde(default)]
    pub rule_json: String,
    #[serde(default)]
    pub rule_configuration: RuleConfiguration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_response: Option<GenericRequestResponse>,
}

/// `page` object of the rate-limit list (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    #[serde(default)]
    pub total_count: i64,
    #[serde(default)]
    pub total_pages: i64,
    #[serde(default)]
    pub current_page: i64,
    #[serde(default)]
    pub next_page: Option<i64>,
    #[serde(default)]
    pub page_size: i64,
}

/// List envelope of `GET /shield/rate-limits/{shieldZoneId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RateLimitListResponse {
    #[serde(default)]
    pub data: Vec<RateLimitRule>,
    #[serde(default)]
    pub page: PageInfo,
    #[serde(default)]
    pub error: Option<GenericRequestResponse>,
}

/// `{statusCode}` body of a failed rate-limit list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCodeBody {
    pub status_code: i32,
}
