//! The platform's published structural schemas (`shield-v1.json`, Shield API v1;
//! `magic-containers-v1.json`, Magic Containers Public API 1.0; `shield-zone-v1.json`,
//! the Shield Zone reads of Shield API v1), as JSON Schema.
//!
//! `shield-v1.json` and `magic-containers-v1.json` are verbatim copies of the OpenAPI
//! 3.0 `components/schemas` the platform publishes, as `platform-schemas/` holds them;
//! `shield-zone-v1.json` is transcribed from the same Shield document, whose Shield
//! Zone models `platform-schemas/` leaves out. [`schema`] turns one of them into a
//! JSON Schema (draft 2020-12): `nullable` becomes a `null` type, `int32`/`int64`
//! become bounds, `$ref`s point into `$defs`.
//!
//! Precedence: where the main spec speaks explicitly it decides what the emulator
//! answers; where it says "not shown" the published schemas decide; the client accepts
//! both. [`schema`] therefore applies the few places where the main spec or the
//! supplement widen a published schema ([`SPEC_OVERLAYS`]). Every overlay only widens:
//! a body the published schema accepts is still accepted.

mod translate;
mod validator;

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

pub use self::translate::openapi_to_json_schema;
pub use self::validator::BodyValidator;
use super::operation::Operation;

/// One of the platform's published API documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Document {
    /// Shield API v1: event-log search, access lists, rate limits.
    Shield,
    /// Magic Containers Public API 1.0: `GET /mc/apps/{appId}`.
    MagicContainers,
    /// Shield API v1, the Shield Zone reads (`GET /shield/shield-zone/{id}`,
    /// `/shield/shield-zone/get-by-pullzone/{pullZoneId}`, `/shield/shield-zones`).
    ShieldZones,
}

impl Document {
    pub fn file_name(self) -> &'static str {
        match self {
            Document::Shield => "shield-v1.json",
            Document::MagicContainers => "magic-containers-v1.json",
            Document::ShieldZones => "shield-zone-v1.json",
        }
    }

    /// The published document, verbatim.
    pub fn published(self) -> &'static str {
        match self {
            Document::Shield => include_str!("shield-v1.json"),
            Document::MagicContainers => include_str!("magic-containers-v1.json"),
            Document::ShieldZones => include_str!("shield-zone-v1.json"),
        }
    }

    fn components(self) -> &'static Map<String, Value> {
        static SHIELD: OnceLock<Map<String, Value>> = OnceLock::new();
        static CONTAINERS: OnceLock<Map<String, Value>> = OnceLock::new();
        static SHIELD_ZONES: OnceLock<Map<String, Value>> = OnceLock::new();
        let cell = match self {
            Document::Shield => &SHIELD,
            Document::MagicContainers => &CONTAINERS,
            Document::ShieldZones => &SHIELD_ZONES,
        };
        cell.get_or_init(|| {
            let document: Value = serde_json::from_str(self.published()).unwrap_or_default();
            let mut schemas = document
                .pointer("/components/schemas")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for overlay in SPEC_OVERLAYS.iter().filter(|o| o.document == self) {
                if let Some(target) = pointer_in(&mut schemas, overlay.pointer) {
                    (overlay.widen)(target);
                }
            }
            if self == Document::MagicContainers {
                for name in WIRE_FORM_ENUMS {
                    if let Some(schema) = schemas.get_mut(name) {
                        add_wire_values(schema);
                    }
                }
            }
            schemas
                .into_iter()
                .map(|(name, schema)| (name, openapi_to_json_schema(&schema)))
                .collect()
        })
    }
}

/// A place where the main spec or the supplement widen a published schema.
pub struct SpecOverlay {
    pub document: Document,
    /// JSON pointer inside `components/schemas`.
    pub pointer: &'static str,
    /// Why, in the contract's own words.
    pub reason: &'static str,
    widen: fn(&mut Value),
}

/// The Magic Containers enums the platform answers in the wire form, the published
/// values in lower camelCase (`Active` → `active`, `IfNotPresent` → `ifNotPresent`,
/// `CDN` → `cdn`, `PublicIp` → `publicIp`), as an answer recorded from the real
/// platform reads (api-supplement.md, "wire form"). The main spec's lower-case status
/// and runtime type are this form too. Schemas accept both spellings; answers in the
/// platform's form ([`Required::AlwaysSent`]) carry the wire form only.
pub const WIRE_FORM_ENUMS: [&str; 6] = [
    "ApplicationStatus",
    "ApplicationRuntimeType",
    "RegionProvisioningType",
    "ImagePullPolicy",
    "EndpointType",
    "Protocol",
];

/// A published enum value in the wire form: leading capitals lowered, the last of a run
/// kept where a lower-case letter follows it (`IMUsed` → `imUsed`).
pub fn wire_spelling(published: &str) -> String {
    let chars: Vec<char> = published.chars().collect();
    let mut lowered = chars.len();
    for (i, c) in chars.iter().enumerate() {
        let next_is_lower = chars.get(i + 1).is_some_and(|n| !n.is_uppercase());
        if !c.is_uppercase() || (i > 0 && next_is_lower) {
            lowered = i;
            break;
        }
    }
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| if i < lowered { c.to_ascii_lowercase() } else { *c })
        .collect()
}

/// A published schema of the Magic Containers document, as published (OpenAPI).
fn published_container_schema(name: &str) -> Option<&'static Value> {
    static PUBLISHED: OnceLock<Value> = OnceLock::new();
    PUBLISHED
        .get_or_init(|| serde_json::from_str(Document::MagicContainers.published()).unwrap_or_default())
        .pointer(&format!("/components/schemas/{name}"))
}

/// The published `default` of a member of a Magic Containers schema.
pub fn published_default(schema: &str, member: &str) -> Option<&'static Value> {
    published_container_schema(schema)?.pointer(&format!("/properties/{member}/default"))
}

/// The values of a published enum of the Magic Containers document.
fn published_values(name: &str) -> Vec<&'static str> {
    published_container_schema(name)
        .and_then(|schema| schema.get("enum"))
        .and_then(Value::as_array)
        .map(|values| values.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `raw`, a value of the enum `name` (of [`WIRE_FORM_ENUMS`]) in any case, in the wire
/// form; `None` if the enum has no such value.
pub fn wire_value(name: &str, raw: &str) -> Option<String> {
    published_values(name)
        .into_iter()
        .find(|value| value.eq_ignore_ascii_case(raw))
        .map(wire_spelling)
}

fn add_wire_values(schema: &mut Value) {
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
        let wire: Vec<Value> = values
            .iter()
            .filter_map(Value::as_str)
            .map(wire_spelling)
            .filter(|wire| !values.iter().any(|v| v == wire))
            .map(Value::String)
            .collect();
        values.extend(wire);
    }
}

fn only_wire_values(schema: &mut Value) {
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut) {
        let spellings: Vec<String> = values.iter().filter_map(Value::as_str).map(str::to_string).collect();
        values.retain(|v| {
            v.as_str()
                .is_none_or(|v| spellings.iter().any(|s| wire_spelling(s) == v))
        });
    }
}

/// Every overlay, in one place (the wire-form enums beside: [`WIRE_FORM_ENUMS`]).
pub const SPEC_OVERLAYS: [SpecOverlay; 6] = [
    SpecOverlay {
        document: Document::MagicContainers,
        pointer: "/ContainerProbes/properties",
        reason: "a probe that is not configured is `null` (a recorded answer)",
        widen: |probes| {
            if let Some(probes) = probes.as_object_mut() {
                for probe in probes.values_mut() {
                    *probe = json!({"anyOf": [probe.clone(), {"type": "null"}]});
                }
            }
        },
    },
    SpecOverlay {
        document: Document::MagicContainers,
        pointer: "/EndpointPortMapping/required",
        reason: "a CDN endpoint's port mapping names the container port only (api-supplement.md)",
        widen: |required| {
            if let Some(required) = required.as_array_mut() {
                required.retain(|member| member != "exposedPort");
            }
        },
    },
    SpecOverlay {
        document: Document::MagicContainers,
        pointer: "/ErrorDetails/properties",
        reason: "the main spec's application error bodies carry `id`",
        widen: |properties| {
            if let Some(properties) = properties.as_object_mut() {
                properties.insert("id".into(), json!({"type": "string", "nullable": true}));
            }
        },
    },
    SpecOverlay {
        document: Document::MagicContainers,
        pointer: "/ContainerEndpoint/properties",
        reason: "the main spec's template endpoints carry `id`",
        widen: |properties| {
            if let Some(properties) = properties.as_object_mut() {
                properties.insert("id".into(), json!({"type": "string"}));
            }
        },
    },
    SpecOverlay {
        document: Document::Shield,
        pointer: "/UpdateAccessListConfigurationResponse/properties/data",
        reason: "a rejected configuration PATCH answers `data: null` (supplement)",
        widen: |data| {
            *data = json!({"anyOf": [data.clone(), {"type": "null"}]});
        },
    },
    SpecOverlay {
        document: Document::Shield,
        pointer: "/GetCustomWafRulesResponse/properties/data/items",
        reason: "rate-limit list items are `CustomWafRule` or the spec's `RateLimitRule`",
        widen: |items| {
            *items = json!({"anyOf": [
                {"$ref": "#/components/schemas/CustomWafRule"},
                {"$ref": "#/components/schemas/RateLimitRule"},
            ]});
        },
    },
];

/// What the platform always sends, or the form of what it sends, where its published
/// schemas leave more open (api-supplement.md). Applied by [`Required::AlwaysSent`];
/// edge-sim fills or requires each in its fixtures.
pub struct PlatformForm {
    pub document: Document,
    /// JSON pointer inside `components/schemas`.
    pub pointer: &'static str,
    /// What the platform does, in the contract's own words.
    pub reason: &'static str,
    narrow: fn(&mut Value),
}

fn require(schema: &mut Value, members: &[&str]) {
    if let Some(object) = schema.as_object_mut() {
        let required = object.entry("required").or_insert_with(|| json!([]));
        if let Some(required) = required.as_array_mut() {
            for member in members {
                if !required.iter().any(|r| r == member) {
                    required.push(json!(member));
                }
            }
        }
    }
}

/// Members of a rate-limit rule's `ruleConfiguration` the platform always sends.
const RATE_LIMIT_CONFIGURATION_MEMBERS: [&str; 7] = [
    "actionType",
    "operatorType",
    "severityType",
    "requestCount",
    "counterKeyType",
    "timeframe",
    "blockTime",
];

/// Members only a rate-limit rule's `ruleConfiguration` has: a listed rule with any of
/// them is a rate-limit rule, else a custom WAF rule.
pub const RATE_LIMIT_ONLY_MEMBERS: [&str; 4] = ["requestCount", "timeframe", "blockTime", "counterKeyType"];

/// The published schema of an operation's successful answer, if it has one.
pub fn answer_schema(operation: Operation) -> Option<(Document, &'static str)> {
    match operation {
        Operation::SearchEvents => Some((Document::Shield, "EventLogsSearchResponse")),
        Operation::ListAccessLists => Some((Document::Shield, "AccessListsDetailsResponse")),
        Operation::UpdateAccessList => Some((Document::Shield, "UpdateAccessListConfigurationResponse")),
        Operation::ListRateLimits => Some((Document::Shield, "GetCustomWafRulesResponse")),
        Operation::GetApp => Some((Document::MagicContainers, "Application")),
        Operation::CompleteCertificate | Operation::QueryLogs | Operation::GetLogFile => None,
    }
}

/// Whether a successful answer of `operation` has the platform's form
/// ([`Required::AlwaysSent`]); the first violations otherwise.
pub fn check_answer(operation: Operation, body: &[u8]) -> Result<(), String> {
    static VALIDATORS: OnceLock<Result<Vec<(&'static str, BodyValidator)>, String>> = OnceLock::new();
    let Some((_, name)) = answer_schema(operation) else {
        return Ok(());
    };
    let validators = VALIDATORS
        .get_or_init(|| {
            Operation::ALL
                .iter()
                .filter_map(|&operation| answer_schema(operation))
                .map(|(document, name)| BodyValidator::new(document, name, Required::AlwaysSent).map(|v| (name, v)))
                .collect()
        })
        .as_ref()
        .map_err(Clone::clone)?;
    let Some((_, validator)) = validators.iter().find(|(n, _)| *n == name) else {
        return Ok(());
    };
    let body: Value =
        serde_json::from_slice(body).map_err(|e| format!("{} answer is not JSON: {e}", operation.as_str()))?;
    let violations = validator.violations(&body);
    if violations.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} answer is not in the platform's form ({name}): {}",
        operation.as_str(),
        violations.into_iter().take(3).collect::<Vec<_>>().join("; ")
    ))
}

/// The operations whose answers have a published schema.
/// The members of a configured probe, each at least 1.
pub const PROBE_TIMINGS: [&str; 5] = [
    "initialDelaySeconds",
    "periodSeconds",
    "timeoutSeconds",
    "failureThreshold",
    "successThreshold",
];

/// Every platform form, in one place (the wire-form enums beside: [`WIRE_FORM_ENUMS`]).
pub const PLATFORM_FORMS: [PlatformForm; 10] = [
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/ContainerProbes",
        reason: "a template's probes carry startup, readiness and liveness, `null` when not configured",
        narrow: |probes| require(probes, &["startup", "readiness", "liveness"]),
    },
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/ContainerProbe",
        reason: "a configured probe's delays, period, timeout and thresholds are integers of at least 1 (the platform's defaults when not given)",
        narrow: |probe| {
            require(probe, &PROBE_TIMINGS);
            for member in PROBE_TIMINGS {
                if let Some(timing) = probe.pointer_mut(&format!("/properties/{member}")) {
                    timing["type"] = json!("integer");
                }
            }
        },
    },
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/ContainerEndpoint",
        reason: "a CDN endpoint's port mappings name the container port only; the others name the exposed port too",
        narrow: |endpoint| {
            endpoint["if"] = json!({"properties": {"type": {"const": "cdn"}}, "required": ["type"]});
            endpoint["then"] =
                json!({"properties": {"portMappings": {"items": {"not": {"required": ["exposedPort"]}}}}});
            endpoint["else"] = json!({"properties": {"portMappings": {"items": {"required": ["exposedPort"]}}}});
        },
    },
    PlatformForm {
        document: Document::Shield,
        pointer: "/GetCustomWafRulesResponse/properties/data/items",
        reason: "a listed rule whose configuration carries a request count, timeframe, block time or counter key is a rate-limit rule, in full",
        narrow: |items| {
            let rate_limit_member: Vec<Value> = RATE_LIMIT_ONLY_MEMBERS
                .iter()
                .map(|member| json!({"required": [member]}))
                .collect();
            *items = json!({
                "if": {"properties": {"ruleConfiguration": {"anyOf": rate_limit_member}}},
                "then": {"$ref": "#/$defs/RateLimitRule"},
                "else": {"$ref": "#/$defs/CustomWafRule"},
            });
        },
    },
    PlatformForm {
        document: Document::Shield,
        pointer: "/RateLimitRule",
        reason: "every listed rate-limit rule carries id, shieldZoneId and ruleConfiguration",
        narrow: |rule| require(rule, &["id", "shieldZoneId", "ruleConfiguration"]),
    },
    PlatformForm {
        document: Document::Shield,
        pointer: "/CustomWafRule",
        reason: "every listed rule carries id, shieldZoneId and ruleConfiguration",
        narrow: |rule| require(rule, &["id", "shieldZoneId", "ruleConfiguration"]),
    },
    PlatformForm {
        document: Document::Shield,
        pointer: "/CreateWafRateLimitRuleModel",
        reason: "a rate-limit rule's configuration always carries its action, operator, severity, request count, counter key, timeframe and block time",
        narrow: |configuration| require(configuration, &RATE_LIMIT_CONFIGURATION_MEMBERS),
    },
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/VolumeTemplate/properties/size",
        reason: "volume sizes are whole numbers",
        narrow: |size| size["type"] = json!("integer"),
    },
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/ContainerTemplate/properties/imageRegistryId",
        reason: "imageRegistryId is a numeric string",
        narrow: |id| id["pattern"] = json!("^[0-9]+$"),
    },
    PlatformForm {
        document: Document::MagicContainers,
        pointer: "/ContainerEntryPoint",
        reason: "entryPoint.arguments, a string, stands beside argumentsArray",
        narrow: |entry_point| entry_point["dependentRequired"] = json!({"argumentsArray": ["arguments"]}),
    },
];

fn pointer_in<'a>(schemas: &'a mut Map<String, Value>, pointer: &str) -> Option<&'a mut Value> {
    let (name, rest) = pointer
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((pointer.trim_start_matches('/'), ""));
    let root = schemas.get_mut(name)?;
    if rest.is_empty() {
        Some(root)
    } else {
        root.pointer_mut(&format!("/{rest}"))
    }
}

/// What a recorded answer of the real platform holds where the published document
/// does not allow it: the recording wins (api-supplement.md).
enum RecordedForm {
    /// `""` where at least one character is published.
    Empty,
    /// `null` where the published type is not nullable.
    Null,
}

const RECORDED_FORMS: [(Document, &str, RecordedForm); 2] = [
    (
        Document::MagicContainers,
        "/ContainerTemplate/properties/imageDigest",
        RecordedForm::Empty,
    ),
    (
        Document::MagicContainers,
        "/Application/properties/displayEndpoint",
        RecordedForm::Null,
    ),
];

/// Whether `required` members must be present: answers must carry them; the
/// emulator's fixtures may leave them out (it fills them in). `AlwaysSent` also asks
/// for what the platform always sends beyond the published `required`, in the form
/// it sends it ([`PLATFORM_FORMS`]): what clients written against the real platform
/// rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Required {
    Enforced,
    Relaxed,
    AlwaysSent,
}

/// A JSON Schema whose root is the named component of `document`.
pub fn schema(document: Document, name: &str, required: Required) -> Value {
    let mut defs = document.components().clone();
    for (_, pointer, form) in RECORDED_FORMS.iter().filter(|(d, _, _)| *d == document) {
        if let Some(member) = pointer_in(&mut defs, pointer) {
            match form {
                RecordedForm::Empty => {
                    if let Value::Object(member) = member {
                        member.remove("minLength");
                    }
                }
                RecordedForm::Null => *member = json!({"anyOf": [member.take(), {"type": "null"}]}),
            }
        }
    }
    match required {
        Required::Relaxed => defs.values_mut().for_each(strip_required),
        Required::AlwaysSent => {
            for form in PLATFORM_FORMS.iter().filter(|f| f.document == document) {
                if let Some(target) = pointer_in(&mut defs, form.pointer) {
                    (form.narrow)(target);
                }
            }
            if document == Document::MagicContainers {
                for name in WIRE_FORM_ENUMS {
                    if let Some(schema) = defs.get_mut(name) {
                        only_wire_values(schema);
                    }
                }
            }
        }
        Required::Enforced => {}
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "$ref": format!("#/$defs/{name}"),
    })
}

fn strip_required(node: &mut Value) {
    match node {
        Value::Object(members) => {
            members.remove("required");
            members.values_mut().for_each(strip_required);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_required),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
