//! The Shield event-log search: request, filters, dimensions and the answer.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::api::models::GenericRequestResponse;
use crate::api::models::lenient::null_as_default;

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
