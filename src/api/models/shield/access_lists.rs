//! Shield access lists: the zone's lists, the configuration PATCH and its answer.

use serde::{Deserialize, Serialize};

use crate::api::models::GenericRequestResponse;
use crate::api::models::lenient::null_as_default;

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
    /// The same lists without the members kept as sent (`other`, `description`): what a
    /// reader that keeps many zones' lists holds.
    pub fn typed_only(mut self) -> Self {
        for item in self.managed_lists.iter_mut().chain(self.custom_lists.iter_mut()) {
            item.other = serde_json::Map::new();
            item.description = None;
        }
        self
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_only_keeps_the_typed_members_and_drops_the_rest() {
        let lists: AccessListsResponse = serde_json::from_value(serde_json::json!({
            "managedLists": [{"listId": 1, "configurationId": 11, "name": "bots", "isEnabled": true,
                              "type": 0, "action": 2, "entryCount": 5, "description": "long text",
                              "category": "threats", "lastUpdated": "2026-11-25T00:00:00Z"}],
            "customLists": [{"configurationId": 12, "name": "mine", "requiredPlan": null}],
            "customEntryCount": 3
        }))
        .expect("an answer");
        let kept = lists.clone().typed_only();
        let first = &kept.managed_lists[0];
        assert_eq!(
            (
                first.configuration_id,
                first.name.as_str(),
                first.is_enabled,
                first.action,
                first.entry_count
            ),
            (11, "bots", true, 2, 5)
        );
        assert!(
            kept.all_lists()
                .all(|item| item.other.is_empty() && item.description.is_none())
        );
        assert_eq!(kept.custom_entry_count, Some(3));
        assert!(lists.all_lists().any(|item| !item.other.is_empty()));
    }
}
