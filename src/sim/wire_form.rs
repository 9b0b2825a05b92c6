//! Applications in the platform's wire form, whatever spelling a fixture uses
//! (api-supplement.md, "wire form"), as an answer recorded from the real platform reads:
//!
//! | member | fixture | answer |
//! |---|---|---|
//! | enums ([`WIRE_FORM_ENUMS`]): `status`, `runtimeType`, `regionSettings.provisioningType`, `imagePullPolicy`, endpoint and `displayEndpoint` `type`, port-mapping `protocols` | any case (`Active`, `IfNotPresent`, `CDN`, `Tcp`) | lower camelCase (`active`, `ifNotPresent`, `cdn`, `tcp`) |
//! | `probes.startup`, `readiness`, `liveness` | left out | `null` |
//! | a configured probe's delays, period, timeout and thresholds | left out or `null` | the published defaults (10, 10, 7, 3, 1) |
//! | a `cdn` endpoint's port mappings | `exposedPort` given or not | the container port only: a CDN endpoint is reached through its Pull Zone |

use serde_json::{Map, Value};

use crate::api::contract::{PROBE_TIMINGS, WIRE_FORM_ENUMS, published_default, wire_value};

const PROBES: [&str; 3] = ["startup", "readiness", "liveness"];

/// Puts a completed application in the wire form.
pub(crate) fn app_in_wire_form(app: &mut Value) {
    let Some(members) = app.as_object_mut() else {
        return;
    };
    in_wire_spelling(members, "status", "ApplicationStatus");
    in_wire_spelling(members, "runtimeType", "ApplicationRuntimeType");
    if let Some(regions) = members.get_mut("regionSettings").and_then(Value::as_object_mut) {
        in_wire_spelling(regions, "provisioningType", "RegionProvisioningType");
    }
    if let Some(display) = members.get_mut("displayEndpoint").and_then(Value::as_object_mut) {
        in_wire_spelling(display, "type", "EndpointType");
    }
    for template in objects_of(members, "containerTemplates") {
        in_wire_spelling(template, "imagePullPolicy", "ImagePullPolicy");
        probes_in_wire_form(template);
        for endpoint in objects_of(template, "endpoints") {
            endpoint_in_wire_form(endpoint);
        }
    }
}

fn endpoint_in_wire_form(endpoint: &mut Map<String, Value>) {
    in_wire_spelling(endpoint, "type", "EndpointType");
    let cdn = endpoint.get("type").and_then(Value::as_str) == Some("cdn");
    for mapping in objects_of(endpoint, "portMappings") {
        if cdn {
            mapping.remove("exposedPort");
        }
        let protocols = mapping.get_mut("protocols").and_then(Value::as_array_mut);
        for protocol in protocols.into_iter().flatten() {
            if let Some(wire) = protocol.as_str().and_then(|raw| wire_value("Protocol", raw)) {
                *protocol = Value::String(wire);
            }
        }
    }
}

fn probes_in_wire_form(template: &mut Map<String, Value>) {
    let probes = template.entry("probes").or_insert(Value::Null);
    if !probes.is_object() {
        *probes = Value::Object(Map::new());
    }
    let Some(probes) = probes.as_object_mut() else {
        return;
    };
    for name in PROBES {
        let probe = probes.entry(name).or_insert(Value::Null);
        let Some(probe) = probe.as_object_mut() else {
            continue;
        };
        for timing in PROBE_TIMINGS {
            if probe.get(timing).is_none_or(Value::is_null)
                && let Some(default) = published_default("ContainerProbe", timing)
            {
                probe.insert(timing.to_string(), default.clone());
            }
        }
    }
}

/// Rewrites `members[member]`, a value of the published enum `name` in any case, in
/// the wire form; a value the enum lacks is left as it is (fixtures are checked against
/// the published types before).
fn in_wire_spelling(members: &mut Map<String, Value>, member: &str, name: &str) {
    debug_assert!(WIRE_FORM_ENUMS.contains(&name), "{name}");
    let wire = members
        .get(member)
        .and_then(Value::as_str)
        .and_then(|raw| wire_value(name, raw));
    if let Some(wire) = wire {
        members.insert(member.to_string(), Value::String(wire));
    }
}

/// The objects of the array `members[member]`.
fn objects_of<'a>(
    members: &'a mut Map<String, Value>,
    member: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    members
        .get_mut(member)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn enums_in_any_case_are_answered_in_lower_camel_case() {
        let mut app = json!({
            "id": "a", "status": "Active", "runtimeType": "SHARED",
            "regionSettings": {"provisioningType": "Dynamic"},
            "displayEndpoint": {"id": "d", "address": "a.example", "type": "PublicIp"},
            "containerTemplates": [{"imagePullPolicy": "IfNotPresent", "endpoints": [
                {"type": "Anycast", "portMappings": [{"containerPort": 53, "exposedPort": 53, "protocols": ["Udp", "TCP"]}]}
            ]}]
        });
        app_in_wire_form(&mut app);
        assert_eq!(app["status"], "active");
        assert_eq!(app["runtimeType"], "shared");
        assert_eq!(app["regionSettings"]["provisioningType"], "dynamic");
        assert_eq!(app["displayEndpoint"]["type"], "publicIp");
        let template = &app["containerTemplates"][0];
        assert_eq!(template["imagePullPolicy"], "ifNotPresent");
        let endpoint = &template["endpoints"][0];
        assert_eq!(endpoint["type"], "anycast");
        assert_eq!(
            endpoint["portMappings"][0],
            json!({"containerPort": 53, "exposedPort": 53, "protocols": ["udp", "tcp"]})
        );
    }

    #[test]
    fn probes_not_configured_are_null_and_configured_ones_get_the_published_defaults() {
        let mut app = json!({"id": "a", "containerTemplates": [
            {"probes": {"readiness": {"periodSeconds": 5, "timeoutSeconds": null, "httpGet": {"request": {"path": "/"}}}}},
            {}
        ]});
        app_in_wire_form(&mut app);
        let probes = &app["containerTemplates"][0]["probes"];
        assert_eq!(probes["startup"], Value::Null);
        assert_eq!(probes["liveness"], Value::Null);
        assert_eq!(
            probes["readiness"],
            json!({"periodSeconds": 5, "timeoutSeconds": 7, "initialDelaySeconds": 10,
                   "failureThreshold": 3, "successThreshold": 1, "httpGet": {"request": {"path": "/"}}})
        );
        assert_eq!(
            app["containerTemplates"][1]["probes"],
            json!({"startup": null, "readiness": null, "liveness": null})
        );
    }

    #[test]
    fn a_cdn_endpoint_maps_the_container_port_only() {
        let mut app = json!({"id": "a", "containerTemplates": [{"endpoints": [
            {"type": "CDN", "portMappings": [{"containerPort": 8080, "exposedPort": 443, "protocols": ["Tcp"]}]}
        ]}]});
        app_in_wire_form(&mut app);
        assert_eq!(
            app["containerTemplates"][0]["endpoints"][0]["portMappings"][0],
            json!({"containerPort": 8080, "protocols": ["tcp"]})
        );
    }
}
