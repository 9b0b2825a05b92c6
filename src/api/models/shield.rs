//! Shield: event-log search, access lists and rate limits.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::GenericRequestResponse;
use super::lenient::null_as_default;

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

/// `EventRow`: one security event. Every member may be missing or null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EventRow {
    #[serde(default)]
    pub log_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub timestamp: i64,
    /// Any JSON value (the published schema gives it no type).
    #[serde(default)]
    pub log: Option<serde_json::Value>,
    #[serde(default)]
    pub fields: Option<BTreeMap<String, String>>,
}

/// Aggregates of an [`EventGroup`]. The published schema types `context` as an object
/// with members of any type: a count reads from an integer, a number or a numeric
/// string, a name from a string or a number; anything else reads as empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupContext {
    pub country: String,
    pub asn: String,
    pub blocked: i64,
    pub challenged: i64,
    pub logged: i64,
    pub features: String,
    pub rule_ids: String,
}

impl<'de> Deserialize<'de> for GroupContext {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value;
        let members = Option::<serde_json::Map<String, Value>>::deserialize(d)?.unwrap_or_default();
        let text = |key: &str| match members.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let count = |key: &str| match members.get(key) {
            Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).unwrap_or(0),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(0),
            _ => 0,
        };
        Ok(Self {
            country: text("country"),
            asn: text("asn"),
            blocked: count("blocked"),
            challenged: count("challenged"),
            logged: count("logged"),
            features: text("features"),
            rule_ids: text("ruleIds"),
        })
    }
}

/// `EventGroup`: events sharing the values of the requested `groupBy` dimensions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EventGroup {
    #[serde(default)]
    pub key: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub count: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub first_seen: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub last_seen: i64,
    #[serde(default)]
    pub context: Option<GroupContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparkline: Option<Vec<i64>>,
}

/// `EventLogsSearchResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct EventLogsSearchResponse {
    #[serde(default)]
    pub rows: Option<Vec<EventRow>>,
    #[serde(default)]
    pub groups: Option<Vec<EventGroup>>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub total: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub total_pages: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub page: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// One item of `managedLists[]` / `customLists[]` (`AccessListDetails`). The members
/// the product uses are typed; the rest (`category`, `requiredPlan`, `updateFrequency`,
/// `lastUpdated` and whatever the platform adds) are kept as sent in `other`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListItem {
    #[serde(default, deserialize_with = "null_as_default")]
    pub list_id: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub configuration_id: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub is_enabled: bool,
    #[serde(default, rename = "type", deserialize_with = "null_as_default")]
    pub list_type: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub action: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub entry_count: i64,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// Answer of `GET /shield/shield-zone/{id}/access-lists` (`AccessListsDetailsResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListsResponse {
    #[serde(default, deserialize_with = "null_as_default")]
    pub managed_lists: Vec<AccessListItem>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub custom_lists: Vec<AccessListItem>,
    #[serde(default)]
    pub custom_entry_count: Option<i64>,
    #[serde(default)]
    pub custom_entry_limit: Option<i64>,
    #[serde(default)]
    pub custom_list_count: Option<i64>,
    #[serde(default)]
    pub custom_list_limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

    /// The one list `selector` names, with whether the platform manages it.
    pub fn find(&self, selector: &ListSelector) -> Result<(&AccessListItem, bool), ListLookupError> {
        match selector {
            ListSelector::Configuration(id) => self
                .lists_with_kind()
                .find(|(l, _)| l.configuration_id == *id)
                .ok_or(ListLookupError::NoConfiguration(*id)),
            ListSelector::Name(name) => {
                let matches: Vec<_> = self.lists_with_kind().filter(|(l, _)| l.name == *name).collect();
                match matches.as_slice() {
                    [found] => Ok(*found),
                    [] => Err(ListLookupError::NoName(name.clone())),
                    many => Err(ListLookupError::AmbiguousName {
                        name: name.clone(),
                        count: many.len(),
                    }),
                }
            }
        }
    }
}

/// How an access list is picked out of a zone's lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListSelector {
    /// By `configurationId` (the id the PATCH takes).
    Configuration(i64),
    /// By exact `name`; must match exactly one list.
    Name(String),
}

/// Why a [`ListSelector`] matched no single list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListLookupError {
    #[error("no access list has configurationId {0}")]
    NoConfiguration(i64),
    #[error("no access list is named {0:?}")]
    NoName(String),
    #[error("{count} access lists are named {name:?}; select one by configuration id")]
    AmbiguousName { name: String, count: usize },
}

/// Body of the access-list configuration PATCH; a `None` member keeps the current value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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

/// `data` of the access-list configuration PATCH answer; the published schema lets
/// either member be missing or null.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct AccessListConfiguration {
    #[serde(default)]
    pub is_enabled: Option<bool>,
    #[serde(default)]
    pub action: Option<i32>,
}

impl AccessListConfiguration {
    /// The configuration after `patch`: what the platform reported, or else what was
    /// asked for (a member the answer leaves out was not reported as different).
    pub fn or_requested(self, patch: &AccessListConfigurationPatch) -> Self {
        Self {
            is_enabled: self.is_enabled.or(patch.is_enabled),
            action: self.action.or(patch.action),
        }
    }
}

/// `{data, error}` answer of the access-list configuration PATCH
/// (`UpdateAccessListConfigurationResponse`); `data` is null when the PATCH is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AccessListConfigurationResponse {
    #[serde(default)]
    pub data: Option<AccessListConfiguration>,
    #[serde(default)]
    pub error: Option<GenericRequestResponse>,
}

/// `ruleConfiguration` of a rate-limit rule: the members the product shows are typed,
/// every other member is kept as sent. Every member may be missing or null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RuleConfiguration {
    #[serde(default, deserialize_with = "null_as_default")]
    pub action_type: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeframe: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_time: Option<i64>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
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

/// A rate-limit rule of a Shield Zone (`CustomWafRule` or `RateLimitRule`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitRule {
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub shield_zone_id: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub rule_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub rule_configuration: RuleConfiguration,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// `page` object of the rate-limit list (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    #[serde(default, deserialize_with = "null_as_default")]
    pub total_count: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub total_pages: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub current_page: i64,
    #[serde(default)]
    pub next_page: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub page_size: i64,
}

/// List envelope of `GET /shield/rate-limits/{shieldZoneId}` (`GetCustomWafRulesResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RateLimitListResponse {
    #[serde(default, deserialize_with = "null_as_default")]
    pub data: Vec<RateLimitRule>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub page: PageInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<GenericRequestResponse>,
}

/// `{statusCode}` body of a failed rate-limit list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCodeBody {
    pub status_code: i32,
}
