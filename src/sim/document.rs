//! The fixtures document (`--fixtures`, `/_sim/state`): what the emulated platform
//! holds, checked against the platform's published types.

use std::collections::HashSet;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{always_sent, wire_form};
use crate::api::contract::{BodyValidator, Document, Required};

mod checks;

/// The whole configurable state of the emulator, as YAML (`--fixtures`) or JSON
/// (`PUT /_sim/state`). Events and logs are loaded separately (admin API, generator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimDocument {
    /// `AccessKey` values of the default account, which owns every resource that no
    /// entry of `accounts` lists.
    #[serde(default)]
    pub access_keys: Vec<String>,
    /// Further accounts: their keys see only the resources they list, and the keys of
    /// other accounts do not see those.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<Account>,
    /// HS256 secret of the logging API's bearer tokens; none disables bearer auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_secret: Option<String>,
    /// A fixed "now"; absent means real time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<DateTime<Utc>>,
    #[serde(default)]
    pub shield_zones: Vec<ShieldZone>,
    #[serde(default)]
    pub pull_zones: Vec<PullZone>,
    /// Full Application objects, served as given.
    #[serde(default)]
    pub apps: Vec<Value>,
}

/// An account: its keys and the resources it owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Account {
    pub name: String,
    #[serde(default)]
    pub access_keys: Vec<String>,
    #[serde(default)]
    pub shield_zones: Vec<i64>,
    /// Pull Zones, with their hostnames and logs.
    #[serde(default)]
    pub pull_zones: Vec<i64>,
    #[serde(default)]
    pub apps: Vec<String>,
}

/// The name of the account of the top-level `accessKeys`.
pub const DEFAULT_ACCOUNT: &str = "default";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShieldZone {
    pub id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_zone_id: Option<i64>,
    #[serde(default)]
    pub access_lists: Vec<SimAccessList>,
    /// Rate-limit rules (`CustomWafRule` or `RateLimitRule` members), served as given.
    #[serde(default)]
    pub rate_limits: Vec<Value>,
    /// `ShieldZoneResponse` members of the zone's configuration (all but `shieldZoneId`
    /// and `pullZoneId`); those left out take [`shield_zone_defaults`].
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub settings: Map<String, Value>,
}

/// The configuration of a Shield Zone whose fixture sets none: a zone on the Basic
/// plan, WAF and DDoS protection on, nothing blocked beyond them.
pub fn shield_zone_defaults() -> Map<String, Value> {
    let defaults = serde_json::json!({
        "learningMode": false,
        "learningModeUntil": null,
        "wafEnabled": true,
        "wafExecutionMode": 1,
        "wafDisabledRules": [],
        "wafLogOnlyRules": [],
        "wafRequestHeaderLoggingEnabled": true,
        "wafRequestIgnoredHeaders": [],
        "wafRealtimeThreatIntelligenceEnabled": false,
        "wafProfileId": 1,
        "wafEngineConfig": [],
        "wafRequestBodyLimitAction": 0,
        "wafResponseBodyLimitAction": 0,
        "rateLimitRulesLimit": 10,
        "customWafRulesLimit": 10,
        "planType": 0,
        "dDoSShieldSensitivity": 1,
        "dDoSExecutionMode": 1,
        "dDoSChallengeWindow": 300,
        "blockVpn": false,
        "blockTor": false,
        "blockDatacentre": false,
        "whitelabelResponsePages": false,
    });
    match defaults {
        Value::Object(members) => members,
        _ => Map::new(),
    }
}

/// `ShieldZoneResponse` members a fixture's `settings` may not set: the zone's `id`
/// and `pullZoneId` say them.
const SHIELD_ZONE_IDS: [&str; 2] = ["shieldZoneId", "pullZoneId"];

impl ShieldZone {
    /// The zone as the platform answers it (`ShieldZoneResponse`): every member, the
    /// fixture's settings over the defaults; `pullZoneId` 0 when it protects none.
    pub fn configuration(&self) -> Value {
        let mut answer = Map::new();
        answer.insert("shieldZoneId".into(), Value::from(self.id));
        answer.insert("pullZoneId".into(), Value::from(self.pull_zone_id.unwrap_or(0)));
        answer.extend(shield_zone_defaults());
        answer.extend(self.settings.clone());
        Value::Object(answer)
    }
}

/// An access list of a zone: `AccessListDetails` members, served as given except
/// `isEnabled` and `action`, which the configuration PATCH changes. `managed` puts it
/// in `managedLists`, else `customLists`. Missing required members are filled in when
/// the document is loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SimAccessList {
    #[serde(default)]
    pub managed: bool,
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

impl SimAccessList {
    /// A list with the members the emulator interprets; the rest take their defaults.
    pub fn new(configuration_id: i64, name: &str, is_enabled: bool, action: i64) -> Self {
        let details = serde_json::json!({
            "configurationId": configuration_id,
            "name": name,
            "isEnabled": is_enabled,
            "action": action,
        });
        let mut list = Self {
            managed: false,
            details: details.as_object().cloned().unwrap_or_default(),
        };
        list.fill_required(DEFAULT_LAST_UPDATED);
        list
    }

    pub fn configuration_id(&self) -> Option<i64> {
        self.details.get("configurationId").and_then(Value::as_i64)
    }

    pub fn list_id(&self) -> Option<i64> {
        self.details.get("listId").and_then(Value::as_i64)
    }

    pub fn is_enabled(&self) -> bool {
        self.details.get("isEnabled").and_then(Value::as_bool).unwrap_or(false)
    }

    pub fn action(&self) -> i64 {
        self.details.get("action").and_then(Value::as_i64).unwrap_or(0)
    }

    pub fn entry_count(&self) -> i64 {
        self.details.get("entryCount").and_then(Value::as_i64).unwrap_or(0)
    }

    pub fn set_enabled(&mut self, enabled: bool) {
        self.details.insert("isEnabled".into(), Value::Bool(enabled));
    }

    pub fn set_action(&mut self, action: i64) {
        self.details.insert("action".into(), Value::from(action));
    }

    /// The members `AccessListDetails` requires, where the fixture left them out.
    fn fill_required(&mut self, last_updated: &str) {
        let configuration_id = self.configuration_id().unwrap_or_default();
        let defaults = [
            ("listId", Value::from(configuration_id)),
            ("name", Value::Null),
            ("isEnabled", Value::Bool(false)),
            ("type", Value::from(0)),
            ("action", Value::from(0)),
            ("entryCount", Value::from(0)),
            ("lastUpdated", Value::from(last_updated)),
        ];
        for (member, value) in defaults {
            self.details.entry(member).or_insert(value);
        }
    }
}

/// `lastUpdated` of lists whose fixture leaves it out and of documents without a clock.
pub const DEFAULT_LAST_UPDATED: &str = "2026-01-01T00:00:00Z";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PullZone {
    pub id: i64,
    #[serde(default = "yes")]
    pub logging_enabled: bool,
    #[serde(default)]
    pub suspended: bool,
    #[serde(default)]
    pub hostnames: Vec<Hostname>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Challenge {
    Ready,
    #[default]
    Pending,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Certificate {
    Issued,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hostname {
    pub hostname: String,
    #[serde(default)]
    pub challenge: Challenge,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate: Option<Certificate>,
}

/// A resource that belongs to an account.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    ShieldZone(i64),
    PullZone(i64),
    App(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::ShieldZone(id) => write!(f, "Shield Zone {id}"),
            Resource::PullZone(id) => write!(f, "Pull Zone {id}"),
            Resource::App(id) => write!(f, "application {id}"),
        }
    }
}

/// Why a document was refused.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error("{0}")]
    Parse(String),
    #[error("{member}: {message}")]
    Invalid { member: String, message: String },
}

impl SimDocument {
    pub fn from_yaml(text: &str) -> Result<Self, DocumentError> {
        let deserializer = serde_yaml::Deserializer::from_str(text);
        let document: Self =
            serde_path_to_error::deserialize(deserializer).map_err(|e| DocumentError::Parse(e.to_string()))?;
        document.check()?;
        document.complete().in_platform_form()
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, DocumentError> {
        let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
        let document: Self =
            serde_path_to_error::deserialize(deserializer).map_err(|e| DocumentError::Parse(e.to_string()))?;
        document.check()?;
        document.complete().in_platform_form()
    }

    /// The account of `key`, if it is a known key.
    pub fn account_of(&self, key: &str) -> Option<&str> {
        if self.access_keys.iter().any(|k| k == key) {
            return Some(DEFAULT_ACCOUNT);
        }
        self.accounts
            .iter()
            .find(|account| account.access_keys.iter().any(|k| k == key))
            .map(|account| account.name.as_str())
    }

    /// The account that owns `resource`: the one that lists it, else the default one.
    pub fn owner_of(&self, resource: &Resource) -> &str {
        let lists = |account: &&Account| match resource {
            Resource::ShieldZone(id) => account.shield_zones.contains(id),
            Resource::PullZone(id) => account.pull_zones.contains(id),
            Resource::App(id) => account.apps.contains(id),
        };
        self.accounts
            .iter()
            .find(lists)
            .map_or(DEFAULT_ACCOUNT, |account| account.name.as_str())
    }

    /// Fills in what the platform always sends and the fixtures left out, where a
    /// default is honest (see `always_sent`), and puts apps in the wire form
    /// (`wire_form`).
    pub fn complete(mut self) -> Self {
        let last_updated = self.clock.map_or_else(
            || DEFAULT_LAST_UPDATED.to_string(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
        for list in self.shield_zones.iter_mut().flat_map(|z| z.access_lists.iter_mut()) {
            list.fill_required(&last_updated);
        }
        for zone in &mut self.shield_zones {
            for rule in &mut zone.rate_limits {
                let rate_limit = always_sent::is_rate_limit_rule(rule);
                always_sent::fill_rule(rule, zone.id, rate_limit);
            }
        }
        for app in &mut self.apps {
            always_sent::fill_app(app);
            wire_form::app_in_wire_form(app);
        }
        self
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let serde_json::Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(serde_json::Map::new());
    }
    if let serde_json::Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(serde_json::Value::Null), value);
            }
        }
    }
}
