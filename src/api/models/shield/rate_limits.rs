//! Shield rate-limit rules and their paged list.

use serde::{Deserialize, Serialize};

use crate::api::models::GenericRequestResponse;
use crate::api::models::lenient::null_as_default;

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
