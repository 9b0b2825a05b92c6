//! `edgectl export access-lists`: a zone's lists as AccessListConfig manifests.

use super::resource::{AccessListConfig, AccessListConfigSpec, ManagementPolicy};
use crate::api::models::shield::{AccessListAction, AccessListsResponse};

/// A DNS-1123 name from a list name: lower case, runs of other characters as `-`, at
/// most 63 characters; `list-<configurationId>` when nothing is left.
fn object_name(list_name: &str, configuration_id: i64) -> String {
    let mut name = String::new();
    for c in list_name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name: String = name.trim_matches('-').chars().take(63).collect();
    let name = name.trim_end_matches('-').to_string();
    if name.is_empty() {
        format!("list-{configuration_id}")
    } else {
        name
    }
}

/// One AccessListConfig per list of the zone, holding its current values as the desired
/// state: `Observe` unless `manage`. Names are unique (a repeated name gets the
/// configuration id appended).
pub(crate) fn export_access_lists(
    zone: i64,
    lists: &AccessListsResponse,
    manage: bool,
    namespace: Option<&str>,
) -> Vec<AccessListConfig> {
    let mut seen = std::collections::HashSet::new();
    lists
        .all_lists()
        .map(|item| {
            let mut name = object_name(&item.name, item.configuration_id);
            if !seen.insert(name.clone()) {
                name = format!(
                    "{}-{}",
                    name.chars().take(50).collect::<String>(),
                    item.configuration_id
                );
                seen.insert(name.clone());
            }
            let spec = AccessListConfigSpec {
                shield_zone_id: zone,
                configuration_id: Some(item.configuration_id),
                list_name: None,
                enabled: item.is_enabled,
                action: AccessListAction::from_code(item.action),
                management_policy: if manage {
                    ManagementPolicy::Manage
                } else {
                    ManagementPolicy::Observe
                },
                deletion_policy: Default::default(),
                access_key_secret_ref: None,
                rollout: None,
            };
            let mut object = AccessListConfig::new(&name, spec);
            object.metadata.namespace = namespace.map(str::to_string);
            object
        })
        .collect()
}

/// The objects as a multi-document YAML stream, with a header naming the zone.
pub(crate) fn to_yaml_stream(zone: i64, objects: &[AccessListConfig]) -> Result<String, serde_yaml::Error> {
    let mut out = format!(
        "# Access lists of Shield Zone {zone}, exported by edgectl: their current values as the desired state.\n"
    );
    for object in objects {
        let mut value = serde_json::to_value(object).map_err(<serde_yaml::Error as serde::ser::Error>::custom)?;
        if let Some(members) = value.as_object_mut() {
            members.remove("status");
        }
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&value)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_1123_and_unique() {
        assert_eq!(object_name("Known bad actors", 1), "known-bad-actors");
        assert_eq!(object_name("  Tor exit nodes!! ", 1), "tor-exit-nodes");
        assert_eq!(object_name("日本", 9101), "list-9101");
        assert_eq!(object_name(&"a".repeat(80), 1).len(), 63);
        let lists: AccessListsResponse = serde_json::from_value(serde_json::json!({
            "managedLists": [{"configurationId": 1, "name": "dup", "isEnabled": true, "action": 2}],
            "customLists": [{"configurationId": 2, "name": "dup", "isEnabled": false, "action": 9}]
        }))
        .expect("lists");
        let objects = export_access_lists(7, &lists, false, Some("team"));
        let names: Vec<String> = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["dup", "dup-2"]);
        assert_eq!(
            objects[1].spec.action, None,
            "an unknown action code is left to the platform"
        );
        assert_eq!(objects[0].spec.management_policy, ManagementPolicy::Observe);
    }
}
