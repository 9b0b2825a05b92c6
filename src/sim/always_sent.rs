//! What the platform always sends, whatever a fixture leaves out. Loading a document
//! fills what has an honest default (enums, empty collections, identifiers in the
//! platform's form), then checks every object edge-sim serves against the platform's
//! form ([`Required::AlwaysSent`]): a member no default can stand for (a rule's request
//! count, a template's image, a fractional volume size) refuses the fixture, named.
//!
//! | object | filled when absent | required of the fixture |
//! |---|---|---|
//! | rate-limit rule | `shieldZoneId` (its zone); `ruleConfiguration` `operatorType`, `severityType`, `counterKeyType` (0) | `id`, `actionType`, `requestCount`, `timeframe`, `blockTime` |
//! | custom WAF rule | `shieldZoneId` (its zone) | `id`, `ruleConfiguration` |
//! | application | `name` (its id), `status` (`unknown`), `runtimeType` (`shared`), `regionSettings` lists, `containerTemplates`, `containerInstances`, `volumes` (empty) | `id`; whole volume sizes |
//! | container template | `endpoints`, `environmentVariables`, `volumeMounts` (empty), `entryPoint` (empty), `imagePullPolicy` (`ifNotPresent`); `probes` in [`super::wire_form`], `entryPoint.arguments` (`argumentsArray` joined by spaces) | `id`, `name`, `packageId`, the image members, a numeric `imageRegistryId` |
//! | template endpoint | `id`: `<appId>-<displayName>-<n>`, `n` counting the app's endpoints from 1 | the other members |

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::api::contract::{BodyValidator, Document, RATE_LIMIT_ONLY_MEMBERS, Required};

/// The platform's defaults of a rate-limit rule's enum members.
const RULE_CONFIGURATION_DEFAULTS: [(&str, i64); 3] = [("operatorType", 0), ("severityType", 0), ("counterKeyType", 0)];

/// Fills a listed rule of Shield Zone `zone`; `rate_limit` tells a rate-limit rule
/// from a custom WAF rule.
pub(crate) fn fill_rule(rule: &mut Value, zone: i64, rate_limit: bool) {
    let Some(members) = rule.as_object_mut() else {
        return;
    };
    insert_absent(members, "shieldZoneId", json!(zone));
    if !rate_limit {
        return;
    }
    if let Some(configuration) = members.get_mut("ruleConfiguration").and_then(Value::as_object_mut) {
        for (member, default) in RULE_CONFIGURATION_DEFAULTS {
            insert_absent(configuration, member, json!(default));
        }
    }
}

/// Fills an application, its templates and their endpoints.
pub(crate) fn fill_app(app: &mut Value) {
    let Some(members) = app.as_object_mut() else {
        return;
    };
    let app_id = members
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    insert_absent(members, "name", json!(app_id));
    insert_absent(members, "status", json!("unknown"));
    insert_absent(members, "runtimeType", json!("shared"));
    insert_absent(members, "regionSettings", json!({}));
    if let Some(regions) = members.get_mut("regionSettings").and_then(Value::as_object_mut) {
        insert_absent(regions, "allowedRegionIds", json!([]));
        insert_absent(regions, "requiredRegionIds", json!([]));
    }
    for collection in ["containerTemplates", "containerInstances", "volumes"] {
        insert_absent(members, collection, json!([]));
    }
    let templates = members
        .get_mut("containerTemplates")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut);
    let mut endpoint_number = 0;
    for template in templates {
        for collection in ["endpoints", "environmentVariables", "volumeMounts"] {
            insert_absent(template, collection, json!([]));
        }
        insert_absent(template, "imagePullPolicy", json!("ifNotPresent"));
        insert_absent(template, "entryPoint", json!({}));
        if let Some(entry_point) = template.get_mut("entryPoint").and_then(Value::as_object_mut) {
            fill_arguments(entry_point);
        }
        let endpoints = template
            .get_mut("endpoints")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut);
        for endpoint in endpoints {
            endpoint_number += 1;
            let name = endpoint
                .get("displayName")
                .and_then(Value::as_str)
                .unwrap_or("endpoint");
            let id = format!("{app_id}-{name}-{endpoint_number}");
            insert_absent(endpoint, "id", json!(id));
        }
    }
}

/// `arguments`, the platform's one-string form of `argumentsArray`.
fn fill_arguments(entry_point: &mut Map<String, Value>) {
    let Some(arguments) = entry_point.get("argumentsArray").and_then(Value::as_array) else {
        return;
    };
    let joined: Vec<&str> = arguments.iter().filter_map(Value::as_str).collect();
    let joined = joined.join(" ");
    insert_absent(entry_point, "arguments", json!(joined));
}

/// Inserts `value` where `member` is absent or null.
fn insert_absent(members: &mut Map<String, Value>, member: &str, value: Value) {
    if members.get(member).is_none_or(Value::is_null) {
        members.insert(member.to_string(), value);
    }
}

/// Whether a listed rule is a rate-limit rule: its configuration carries a member only
/// rate-limit rules have.
pub(crate) fn is_rate_limit_rule(rule: &Value) -> bool {
    let configuration = &rule["ruleConfiguration"];
    RATE_LIMIT_ONLY_MEMBERS
        .iter()
        .any(|member| !configuration[member].is_null())
}

/// Validators of the platform's form of what edge-sim serves.
pub(crate) struct PlatformForm {
    pub rate_limit_rule: BodyValidator,
    pub custom_waf_rule: BodyValidator,
    pub application: BodyValidator,
}

/// The compiled validators ([`Required::AlwaysSent`]).
pub(crate) fn platform_form() -> Result<&'static PlatformForm, String> {
    static FORM: OnceLock<Result<PlatformForm, String>> = OnceLock::new();
    FORM.get_or_init(|| {
        Ok(PlatformForm {
            rate_limit_rule: BodyValidator::new(Document::Shield, "RateLimitRule", Required::AlwaysSent)?,
            custom_waf_rule: BodyValidator::new(Document::Shield, "CustomWafRule", Required::AlwaysSent)?,
            application: BodyValidator::new(Document::MagicContainers, "Application", Required::AlwaysSent)?,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_app_of_only_an_id_is_filled_to_the_platform_form() {
        let mut app = json!({"id": "app-1"});
        fill_app(&mut app);
        let form = platform_form().expect("validators");
        assert_eq!(form.application.violations(&app), Vec::<String>::new(), "{app:#}");
        assert_eq!(app["name"], "app-1");
        assert_eq!(app["status"], "unknown");
    }

    #[test]
    fn endpoints_get_ids_in_the_platform_form_and_arguments_their_string() {
        let mut app = json!({"id": "app-shop", "containerTemplates": [
            {"entryPoint": {"argumentsArray": ["--port", "8080"]},
             "endpoints": [{"displayName": "public"}, {"displayName": "admin", "id": "given"}]},
            {"endpoints": [{"displayName": "grpc"}]},
        ]});
        fill_app(&mut app);
        let templates = &app["containerTemplates"];
        assert_eq!(templates[0]["endpoints"][0]["id"], "app-shop-public-1");
        assert_eq!(templates[0]["endpoints"][1]["id"], "given");
        assert_eq!(templates[1]["endpoints"][0]["id"], "app-shop-grpc-3");
        assert_eq!(templates[0]["entryPoint"]["arguments"], "--port 8080");
        assert_eq!(templates[1]["imagePullPolicy"], "ifNotPresent");
    }

    #[test]
    fn a_rate_limit_rule_gets_its_enum_defaults_and_keeps_its_counts() {
        let mut rule = json!({"id": 1, "ruleConfiguration": {"actionType": 1, "requestCount": 10, "timeframe": 60, "blockTime": 300}});
        assert!(is_rate_limit_rule(&rule));
        fill_rule(&mut rule, 1001, true);
        let form = platform_form().expect("validators");
        assert_eq!(form.rate_limit_rule.violations(&rule), Vec::<String>::new(), "{rule:#}");
        assert_eq!(rule["shieldZoneId"], 1001);
        let mut countless = json!({"id": 2, "ruleConfiguration": {"actionType": 1, "timeframe": 60}});
        fill_rule(&mut countless, 1001, true);
        let violations = form.rate_limit_rule.violations(&countless);
        assert!(
            violations.iter().any(|v| v.contains("requestCount")),
            "no default stands for a request count: {violations:?}"
        );
    }
}
