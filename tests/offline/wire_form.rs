//! Applications in the platform's wire form (api-supplement.md): every app edge-sim
//! serves, from the shipped fixtures, a minimal one and one written in the published
//! capitals, reads in a decoder that models the enums strictly in lower camelCase (no
//! fallback for an unknown value, as clients written against recorded answers do) and
//! checks what the vendor's own client refuses (a probe timing below 1, an exposed port
//! on a CDN endpoint), and validates against the published schema with the wire form.

use std::num::NonZeroU32;

use edge_operator::api::contract::{BodyValidator, Document, Required};
use edge_operator::sim::SimDocument;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::sim::{example_fixtures, http, start};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Status {
    Unknown,
    Active,
    Progressing,
    Inactive,
    Failing,
    Suspended,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum RuntimeType {
    Shared,
    Reserved,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum ProvisioningType {
    Static,
    Dynamic,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum PullPolicy {
    Always,
    IfNotPresent,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
enum EndpointType {
    Cdn,
    Anycast,
    PublicIp,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // read to be checked, not used
struct Application {
    id: String,
    status: Status,
    runtime_type: RuntimeType,
    region_settings: RegionSettings,
    container_templates: Vec<Template>,
    display_endpoint: Option<DisplayEndpoint>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct RegionSettings {
    provisioning_type: Option<ProvisioningType>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct DisplayEndpoint {
    r#type: EndpointType,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Template {
    image_pull_policy: PullPolicy,
    probes: Probes,
    endpoints: Vec<Endpoint>,
}

/// Each probe is sent, `null` when not configured (`deserialize_with` makes the
/// member required).
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Probes {
    #[serde(deserialize_with = "Option::deserialize")]
    startup: Option<Probe>,
    #[serde(deserialize_with = "Option::deserialize")]
    readiness: Option<Probe>,
    #[serde(deserialize_with = "Option::deserialize")]
    liveness: Option<Probe>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Probe {
    initial_delay_seconds: NonZeroU32,
    period_seconds: NonZeroU32,
    timeout_seconds: NonZeroU32,
    failure_threshold: NonZeroU32,
    success_threshold: NonZeroU32,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Endpoint {
    r#type: EndpointType,
    port_mappings: Vec<PortMapping>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PortMapping {
    container_port: u16,
    exposed_port: Option<u16>,
    protocols: Vec<Protocol>,
}

/// The strict decoder's verdict on one answer.
fn read_strictly(answer: &Value) -> Result<Application, String> {
    let app: Application = serde_json::from_value(answer.clone()).map_err(|e| e.to_string())?;
    for endpoint in app.container_templates.iter().flat_map(|t| &t.endpoints) {
        if endpoint.r#type == EndpointType::Cdn && endpoint.port_mappings.iter().any(|m| m.exposed_port.is_some()) {
            return Err("There should be no exposed port configured for this endpoint type".into());
        }
    }
    Ok(app)
}

/// An app in the published capitals, with every enum, a CDN endpoint with an exposed
/// port, a probe of some timings and two probes left out.
const PUBLISHED_CAPITALS: &str = r#"
accessKeys: [capitals-key]
apps:
  - id: app-capitals
    status: Progressing
    runtimeType: Reserved
    regionSettings: {allowedRegionIds: [DE], requiredRegionIds: [], provisioningType: Static}
    containerTemplates:
      - id: tpl
        name: api
        packageId: pkg
        image: registry.example.com/api:2
        imageName: api
        imageNamespace: example
        imageTag: "2"
        imageRegistryId: "7"
        imageDigest: "sha256:00"
        imagePullPolicy: Always
        probes:
          liveness: {failureThreshold: 5, tcpSocket: {request: {portNumber: 9000}}}
        endpoints:
          - {displayName: web, publicHost: api.example.com, type: CDN, isSslEnabled: true, pullZoneId: "9",
             portMappings: [{containerPort: 9000, exposedPort: 443, protocols: [Tcp]}]}
          - {displayName: dns, publicHost: dns.example.com, type: PublicIp, isSslEnabled: false, pullZoneId: "9",
             portMappings: [{containerPort: 53, exposedPort: 53, protocols: [Udp, Tcp]}]}
    displayEndpoint: {id: d, address: api.example.com, type: Anycast}
"#;

/// Every app of `document`, as edge-sim answers it.
async fn answers(document: SimDocument) -> Vec<Value> {
    let key = document.access_keys.first().cloned().expect("an access key");
    let ids: Vec<String> = document
        .apps
        .iter()
        .filter_map(|app| app["id"].as_str().map(str::to_string))
        .collect();
    let sim = start(document).await;
    let mut answers = Vec::new();
    for id in ids {
        let response = http()
            .get(format!("{}/mc/apps/{id}", sim.base_url()))
            .header("AccessKey", &key)
            .send()
            .await
            .expect("app read");
        assert_eq!(response.status(), 200, "{id}");
        answers.push(response.json().await.expect("JSON"));
    }
    answers
}

#[tokio::test]
async fn every_app_served_reads_in_a_decoder_strict_to_the_wire_form() {
    let wire_form = BodyValidator::new(Document::MagicContainers, "Application", Required::AlwaysSent)
        .unwrap_or_else(|e| panic!("{e}"));
    let documents = [
        ("shipped", example_fixtures()),
        (
            "minimal",
            SimDocument::from_yaml(crate::contract::MINIMAL_FIXTURES).expect("minimal fixtures"),
        ),
        (
            "published capitals",
            SimDocument::from_yaml(PUBLISHED_CAPITALS).expect("fixtures in the published capitals"),
        ),
    ];
    let mut read = 0;
    for (what, document) in documents {
        for answer in answers(document).await {
            if let Err(e) = read_strictly(&answer) {
                panic!("{what}: {e}\n{answer:#}");
            }
            assert_eq!(
                wire_form.violations(&answer),
                Vec::<String>::new(),
                "{what}: {answer:#}"
            );
            read += 1;
        }
    }
    assert_eq!(read, 3, "one app in each document");
}

#[tokio::test]
async fn published_capitals_are_answered_in_the_wire_form() {
    let document = SimDocument::from_yaml(PUBLISHED_CAPITALS).expect("fixtures");
    let answer = answers(document).await.remove(0);
    assert_eq!(
        (
            &answer["status"],
            &answer["runtimeType"],
            &answer["regionSettings"]["provisioningType"]
        ),
        (&json!("progressing"), &json!("reserved"), &json!("static"))
    );
    assert_eq!(answer["displayEndpoint"]["type"], "anycast");
    let template = &answer["containerTemplates"][0];
    assert_eq!(template["imagePullPolicy"], "always");
    assert_eq!(
        template["probes"],
        json!({"startup": null, "readiness": null, "liveness": {
            "failureThreshold": 5, "initialDelaySeconds": 10, "periodSeconds": 10,
            "timeoutSeconds": 7, "successThreshold": 1, "tcpSocket": {"request": {"portNumber": 9000}}}})
    );
    let endpoints = &template["endpoints"];
    assert_eq!(endpoints[0]["type"], "cdn");
    assert_eq!(
        endpoints[0]["portMappings"],
        json!([{"containerPort": 9000, "protocols": ["tcp"]}])
    );
    assert_eq!(endpoints[1]["type"], "publicIp");
    assert_eq!(
        endpoints[1]["portMappings"],
        json!([{"containerPort": 53, "exposedPort": 53, "protocols": ["udp", "tcp"]}])
    );
}

#[test]
fn the_strict_decoder_refuses_what_clients_of_the_wire_form_refuse() {
    let app = |template: Value| {
        json!({"id": "a", "status": "active", "runtimeType": "shared", "regionSettings": {},
               "containerTemplates": [template], "displayEndpoint": null})
    };
    let no_probes = json!({"startup": null, "readiness": null, "liveness": null});
    let good = json!({"imagePullPolicy": "ifNotPresent", "probes": no_probes, "endpoints": []});
    assert!(read_strictly(&app(good.clone())).is_ok());
    let mut capitals = good.clone();
    capitals["imagePullPolicy"] = json!("IfNotPresent");
    let mut zero = good.clone();
    zero["probes"]["readiness"] = json!({"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 7,
                                          "failureThreshold": 3, "successThreshold": 1});
    let mut left_out = good.clone();
    left_out["probes"] = json!({"startup": null, "readiness": null});
    let mut exposed = good;
    exposed["endpoints"] =
        json!([{"type": "cdn", "portMappings": [{"containerPort": 80, "exposedPort": 443, "protocols": ["tcp"]}]}]);
    for (what, template) in [
        ("published capitals", capitals),
        ("a timing of 0", zero),
        ("a probe left out", left_out),
        ("an exposed port on a CDN endpoint", exposed),
    ] {
        assert!(read_strictly(&app(template)).is_err(), "{what} read");
    }
}

#[test]
fn a_probe_timing_below_one_is_refused_with_the_member_named() {
    let text = PUBLISHED_CAPITALS.replace("failureThreshold: 5", "failureThreshold: 0");
    let refused = SimDocument::from_yaml(&text).map(|_| ()).map_err(|e| e.to_string());
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("apps[0].containerTemplates[0].probes.liveness")),
        "{refused:?}"
    );
}
