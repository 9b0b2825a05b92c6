//! `edgectl access-lists set`: read the zone's lists, pick one, PATCH only what differs.

use serde::Serialize;

use super::CommandError;
use crate::api::EdgeClient;
use crate::api::models::shield::{AccessListAction, AccessListConfigurationPatch, ListSelector};

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SetRequest {
    pub zone: i64,
    pub selector: ListSelector,
    pub enabled: Option<bool>,
    pub action: Option<AccessListAction>,
    /// Show the change without sending it.
    pub dry_run: bool,
}

/// The two members the configuration PATCH changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Configuration {
    pub is_enabled: bool,
    pub action: i32,
}

/// What `set` found, and what the list is afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Change {
    pub shield_zone_id: i64,
    pub configuration_id: i64,
    pub name: String,
    pub before: Configuration,
    pub after: Configuration,
    /// Whether a PATCH was sent.
    pub applied: bool,
    pub dry_run: bool,
}

impl Change {
    pub(crate) fn changes_anything(&self) -> bool {
        self.before != self.after
    }
}

/// The PATCH that takes `before` to what was asked: only the members that differ.
pub(crate) fn difference(
    before: Configuration,
    enabled: Option<bool>,
    action: Option<AccessListAction>,
) -> AccessListConfigurationPatch {
    AccessListConfigurationPatch {
        is_enabled: enabled.filter(|&e| e != before.is_enabled),
        action: action.map(AccessListAction::code).filter(|&a| a != before.action),
    }
}

pub(crate) async fn set(client: &EdgeClient, request: &SetRequest) -> Result<Change, CommandError> {
    if request.enabled.is_none() && request.action.is_none() {
        return Err(CommandError::Usage(
            "nothing to set: pass --enabled and/or --action".into(),
        ));
    }
    let lists = client.access_lists(request.zone).await?;
    let (item, _) = lists
        .find(&request.selector)
        .map_err(|e| CommandError::Refused(format!("Shield Zone {}: {e}", request.zone)))?;
    let before = Configuration {
        is_enabled: item.is_enabled,
        action: item.action,
    };
    let patch = difference(before, request.enabled, request.action);
    let requested = Configuration {
        is_enabled: patch.is_enabled.unwrap_or(before.is_enabled),
        action: patch.action.unwrap_or(before.action),
    };
    let mut change = Change {
        shield_zone_id: request.zone,
        configuration_id: item.configuration_id,
        name: item.name.clone(),
        before,
        after: requested,
        applied: false,
        dry_run: request.dry_run,
    };
    if patch.is_empty() || request.dry_run {
        return Ok(change);
    }
    let written = client
        .update_access_list(request.zone, item.configuration_id, &patch)
        .await?
        .or_requested(&patch);
    change.after = Configuration {
        is_enabled: written.is_enabled.unwrap_or(requested.is_enabled),
        action: written.action.unwrap_or(requested.action),
    };
    change.applied = true;
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_members_that_differ_are_sent() {
        let before = Configuration {
            is_enabled: false,
            action: AccessListAction::Block.code(),
        };
        let patch = difference(before, Some(true), Some(AccessListAction::Block));
        assert_eq!(patch.is_enabled, Some(true));
        assert_eq!(patch.action, None);
        assert!(difference(before, Some(false), None).is_empty());
        assert_eq!(difference(before, None, Some(AccessListAction::Log)).action, Some(4));
    }
}
