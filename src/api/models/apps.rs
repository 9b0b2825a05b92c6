//! Container applications (`GET /mc/apps/{appId}`).
//!
//! The client types the members the product uses and keeps every other member as
//! given (`other`), so nothing the platform adds or changes can fail a read:
//! `null` reads as the default, enum strings match in any case (the published schema
//! capitalises them, the main spec does not) and an unknown status is kept verbatim.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::lenient::{match_case_insensitive, null_as_default};

/// Lifecycle status of an application. Its [`AppState`] names the state in a word
/// (`Active`, ...; `UnrecognizedStatus` for a value the documents do not list).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, strum::EnumDiscriminants)]
#[strum_discriminants(name(AppState), derive(Hash, strum::IntoStaticStr, strum::EnumString))]
pub enum AppStatus {
    #[default]
    Unknown,
    Active,
    Progressing,
    Inactive,
    Failing,
    Suspended,
    /// A value the platform's documents do not list, kept as sent.
    #[strum_discriminants(strum(serialize = "UnrecognizedStatus"))]
    Unrecognized(String),
}

impl AppStatus {
    const CASES: [(&'static str, AppStatus); 6] = [
        ("unknown", AppStatus::Unknown),
        ("active", AppStatus::Active),
        ("progressing", AppStatus::Progressing),
        ("inactive", AppStatus::Inactive),
        ("failing", AppStatus::Failing),
        ("suspended", AppStatus::Suspended),
    ];

    pub fn parse(raw: &str) -> Self {
        Self::CASES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(raw))
            .map_or_else(|| AppStatus::Unrecognized(raw.to_string()), |(_, s)| s.clone())
    }

    /// The main spec's spelling; an unrecognized value as the platform sent it.
    pub fn as_str(&self) -> &str {
        match self {
            AppStatus::Unrecognized(raw) => raw,
            known => Self::CASES
                .iter()
                .find(|(_, s)| s == known)
                .map_or("unknown", |(name, _)| name),
        }
    }
}

impl fmt::Display for AppStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AppStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AppStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Option::<String>::deserialize(d)?.unwrap_or_default();
        Ok(if raw.is_empty() {
            AppStatus::Unknown
        } else {
            AppStatus::parse(&raw)
        })
    }
}

macro_rules! lenient_struct {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident : $ty:ty,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($(#[$fmeta])* #[serde(default, deserialize_with = "null_as_default")] pub $field: $ty,)*
            /// Members the product does not interpret, as the platform sent them.
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }
    };
}

lenient_struct! {
    /// A container application.
    pub struct Application {
        pub id: String,
        pub name: String,
        pub status: AppStatus,
        /// `shared` or `reserved` (any case), kept as sent.
        pub runtime_type: String,
        pub region_settings: RegionSettings,
        pub container_templates: Vec<ContainerTemplate>,
        /// Counted, not interpreted.
        pub container_instances: Vec<Value>,
        pub auto_scaling: AutoScaling,
    }
}

lenient_struct! {
    pub struct RegionSettings {
        pub allowed_region_ids: Vec<String>,
    }
}

lenient_struct! {
    pub struct ContainerTemplate {
        pub name: String,
        pub image: String,
        pub image_tag: String,
        pub image_digest: String,
        pub endpoints: Vec<TemplateEndpoint>,
    }
}

lenient_struct! {
    pub struct TemplateEndpoint {
        pub public_host: String,
        pub pull_zone_id: String,
    }
}

lenient_struct! {
    pub struct AutoScaling {
        pub min: i64,
        pub max: i64,
    }
}

impl Application {
    /// Public hosts of every template endpoint, in template order.
    pub fn public_hosts(&self) -> Vec<String> {
        self.container_templates
            .iter()
            .flat_map(|t| &t.endpoints)
            .filter(|e| !e.public_host.is_empty())
            .map(|e| e.public_host.clone())
            .collect()
    }

    /// The Pull Zone of the first endpoint that has one.
    pub fn endpoint_pull_zone_id(&self) -> Option<i64> {
        self.container_templates
            .iter()
            .flat_map(|t| &t.endpoints)
            .find_map(|e| e.pull_zone_id.trim().parse().ok())
    }

    /// `shared` or `reserved` in the main spec's spelling; anything else as sent.
    pub fn runtime_type_name(&self) -> String {
        match_case_insensitive(&self.runtime_type, &[("shared", "shared"), ("reserved", "reserved")])
            .map_or_else(|| self.runtime_type.clone(), str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn published_and_main_spec_spellings_read_alike() {
        for (status, runtime) in [("Active", "Shared"), ("active", "shared"), ("ACTIVE", "SHARED")] {
            let app: Application = serde_json::from_value(json!({
                "id": "a", "name": "n", "status": status, "runtimeType": runtime,
                "volumes": [{"name": "data", "size": 1.5}]
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(app.status, AppStatus::Active);
            assert_eq!(app.runtime_type_name(), "shared");
            assert_eq!(app.other["volumes"][0]["size"], json!(1.5));
        }
    }

    #[test]
    fn unknown_status_is_kept_and_nulls_read_as_defaults() {
        let app: Application = serde_json::from_value(json!({
            "id": "a", "name": null, "status": "Hibernating", "runtimeType": null,
            "regionSettings": null, "containerTemplates": [{"endpoints": null, "image": null}],
            "autoScaling": {"min": null, "max": 3}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(app.status, AppStatus::Unrecognized("Hibernating".into()));
        assert_eq!(app.status.to_string(), "Hibernating");
        assert_eq!((app.auto_scaling.min, app.auto_scaling.max), (0, 3));
        assert!(app.container_templates[0].endpoints.is_empty());
    }
}
