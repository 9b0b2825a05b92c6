//! The emulated platform: the fixtures document (`--fixtures`, `/_sim/state`) and the
//! live world built from it.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::events::EventStore;
use crate::api::models::apps::Application;
use crate::api::models::logging::LogEntry;
use crate::api::models::shield::{AccessListItem, RateLimitRule};

/// The whole configurable state of the emulator, as YAML (`--fixtures`) or JSON
/// (`PUT /_sim/state`). Events and logs are loaded separately (admin API, generator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimDocument {
    /// Accepted `AccessKey` values.
    #[serde(default)]
    pub access_keys: Vec<String>,
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
    pub apps: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShieldZone {
    pub id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_zone_id: Option<i64>,
    #[serde(default)]
    pub access_lists: Vec<SimAccessList>,
    #[serde(default)]
    pub rate_limits: Vec<RateLimitRule>,
}

/// An access list of a zone; `managed` puts it in `managedLists`, else `customLists`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SimAccessList {
    #[serde(flatten)]
    pub item: AccessListItem,
    #[serde(default)]
    pub managed: bool,
}

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
        Ok(document)
    }

    pub fn from_json(bytes: &[u8]) -> Result<Self, DocumentError> {
        let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
        let document: Self =
            serde_path_to_error::deserialize(deserializer).map_err(|e| DocumentError::Parse(e.to_string()))?;
        document.check()?;
        Ok(document)
    }

    /// Rules serde cannot express: unique ids, apps that read as Applications.
    fn check(&self) -> Result<(), DocumentError> {
        let invalid = |member: String, message: &str| DocumentError::Invalid {
            member,
            message: message.to_string(),
        };
        let mut seen = std::collections::HashSet::new();
        for (i, zone) in self.shield_zones.iter().enumerate() {
            if !seen.insert(zone.id) {
                return Err(invalid(format!("shieldZones[{i}].id"), "duplicate Shield Zone id"));
            }
            let mut configurations = std::collections::HashSet::new();
            for (j, list) in zone.access_lists.iter().enumerate() {
                if !configurations.insert(list.item.configuration_id) {
                    return Err(invalid(
                        format!("shieldZones[{i}].accessLists[{j}].configurationId"),
                        "duplicate configuration id in this zone",
                    ));
                }
            }
        }
        seen.clear();
        for (i, zone) in self.pull_zones.iter().enumerate() {
            if !seen.insert(zone.id) {
                return Err(invalid(format!("pullZones[{i}].id"), "duplicate Pull Zone id"));
            }
        }
        let mut app_ids = std::collections::HashSet::new();
        for (i, app) in self.apps.iter().enumerate() {
            let parsed: Application =
                serde_json::from_value(app.clone()).map_err(|e| invalid(format!("apps[{i}]"), &e.to_string()))?;
            if parsed.id.is_empty() {
                return Err(invalid(format!("apps[{i}].id"), "must be a non-empty string"));
            }
            if !app_ids.insert(parsed.id) {
                return Err(invalid(format!("apps[{i}].id"), "duplicate application id"));
            }
        }
        Ok(())
    }
}

/// The live state: the document plus the searchable events and CDN logs.
#[derive(Debug, Default)]
pub struct World {
    pub document: SimDocument,
    pub events: HashMap<i64, EventStore>,
    pub logs: HashMap<i64, Vec<LogEntry>>,
}

impl World {
    pub fn new(document: SimDocument) -> Self {
        Self {
            document,
            ..Self::default()
        }
    }

    pub fn shield_zone(&self, id: i64) -> Option<&ShieldZone> {
        self.document.shield_zones.iter().find(|z| z.id == id)
    }

    pub fn shield_zone_mut(&mut self, id: i64) -> Option<&mut ShieldZone> {
        self.document.shield_zones.iter_mut().find(|z| z.id == id)
    }

    pub fn pull_zone(&self, id: i64) -> Option<&PullZone> {
        self.document.pull_zones.iter().find(|z| z.id == id)
    }

    pub fn pull_zone_mut(&mut self, id: i64) -> Option<&mut PullZone> {
        self.document.pull_zones.iter_mut().find(|z| z.id == id)
    }

    pub fn app(&self, id: &str) -> Option<&serde_json::Value> {
        self.document.apps.iter().find(|app| has_id(app, id))
    }

    pub fn app_mut(&mut self, id: &str) -> Option<&mut serde_json::Value> {
        self.document.apps.iter_mut().find(|app| has_id(app, id))
    }

    pub fn hostname_mut(&mut self, hostname: &str) -> Option<&mut Hostname> {
        self.document
            .pull_zones
            .iter_mut()
            .flat_map(|z| z.hostnames.iter_mut())
            .find(|h| h.hostname.eq_ignore_ascii_case(hostname))
    }
}

fn has_id(app: &serde_json::Value, id: &str) -> bool {
    app.get("id").and_then(|v| v.as_str()) == Some(id)
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
