//! The platform's contract, checked in both directions against its published schemas
//! (never against our own models):
//! - every answer edge-sim gives for the five operations with a published schema,
//!   success and each documented error, validates against that schema;
//! - the requests the client sends validate against the request schemas;
//! - bodies generated from the schemas (hundreds per operation, nulls included, plus
//!   enum values in any case or unknown and unknown members) decode in the client,
//!   and `edgectl -o json` shows their identifiers.

mod generate;

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::sim::{
    ACCESS_KEY, TEAM_B_KEY, add_fault, client_of, fixtures_at, http, insert_events, lenient_client_of, now_ms, start,
    two_accounts,
};
use edge_operator::api::contract::{BodyValidator, Document, Required, schema};
use edge_operator::api::models::shield::{
    AccessListConfigurationPatch, Dimension, EventLogsFilter, EventLogsSearchRequest, FilterOp,
};
use edge_operator::api::{ApiError, EdgeClient, RetryPolicy};
use edge_operator::sim::RunningSim;
use futures::future::BoxFuture;
use generate::{Mode, body};
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// Generated bodies per operation and mode.
const CASES: u32 = 256;
/// Of those, how many also go through the `edgectl` binary.
const CLI_CASES: usize = 16;

/// Answers must carry what the platform always sends, in its form, beyond the
/// published `required` (api-supplement.md).
fn validator(document: Document, name: &str) -> BodyValidator {
    BodyValidator::new(document, name, Required::AlwaysSent).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_valid(document: Document, name: &str, body: &Value, what: &str) {
    let violations = validator(document, name).violations(body);
    assert!(
        violations.is_empty(),
        "{what} violates {name}: {violations:?}\n{body:#}"
    );
}

#[test]
fn the_embedded_schemas_are_the_published_ones() {
    let published = crate::support::cluster::repo_root().join("../shared/spec/platform-schemas");
    if !published.is_dir() {
        eprintln!("{} is not here; nothing to compare", published.display());
        return;
    }
    for document in [Document::Shield, Document::MagicContainers] {
        let text = std::fs::read_to_string(published.join(document.file_name())).expect("published schema");
        let published: Value = serde_json::from_str(&text).expect("JSON");
        let embedded: Value = serde_json::from_str(document.published()).expect("JSON");
        assert_eq!(
            embedded,
            published,
            "{} differs from the published document",
            document.file_name()
        );
    }
}

async fn send(base: &str, method: reqwest::Method, path: &str, key: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let mut request = http().request(method, format!("{base}{path}"));
    if let Some(key) = key {
        request = request.header("AccessKey", key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A request (method, path, access key, body), the status it must get, and the
/// document and schema its answer must validate against.
type Exchange<'a> = (
    reqwest::Method,
    &'a str,
    Option<&'a str>,
    Option<Value>,
    u16,
    Document,
    &'a str,
);

#[tokio::test]
async fn every_emulator_answer_validates_against_the_published_schema() {
    use reqwest::Method;
    let mut document = fixtures_at();
    document.shield_zones[0].rate_limits = vec![
        json!({"id": 1, "shieldZoneId": 1001, "ruleName": "login", "ruleConfiguration":
            {"actionType": 1, "requestCount": 20, "timeframe": 60, "blockTime": 300, "counterKeyType": 0,
             "transformationTypes": null, "value": null}}),
        json!({"id": 2, "shieldZoneId": 1001, "userId": null, "ruleName": null, "ruleConfiguration":
            {"actionType": 5, "operatorType": 17, "severityType": 2, "variableTypes": {"REQUEST_URI": "x"},
             "chainedRuleConditions": [{"operatorType": 0, "value": null, "isNegated": null}]}}),
    ];
    let sim = start(document).await;
    let base = sim.base_url();
    let key = Some(ACCESS_KEY);
    let events: Vec<Value> = (0..30)
        .map(|i| {
            let action = ["block", "Blocked", "challenged", "log"][i as usize % 4];
            json!({"logId": format!("e{i}"), "timestamp": now_ms() - 1000 * (i + 1), "feature": "waf",
                   "ruleId": "942100", "ip": format!("192.0.2.{}", i % 4), "ja4": "j", "ua": "curl",
                   "url": "/login", "asn": "64500", "country": "DE",
                   "action": action,
                   "ruleName": "SQL injection", "log": {"method": "POST", "headers": {"a": "b"}}})
        })
        .collect();
    insert_events(&base, 1001, &Value::from(events)).await;

    let search = "/shield/event-logs/1001/search";
    let window = json!({"from": now_ms() - 3_600_000, "to": now_ms()});
    let grouped = json!({"from": now_ms() - 3_600_000, "to": now_ms(), "groupBy": ["ip", "action"], "buckets": 12});
    let lists = "/shield/shield-zone/1001/access-lists";
    let configuration = "/shield/shield-zone/1001/access-lists/configurations/9101";
    let shield = Document::Shield;
    let containers = Document::MagicContainers;
    let zones = Document::ShieldZones;
    #[rustfmt::skip]
    let cases: Vec<Exchange> = vec![
        (Method::POST, search, key, Some(window.clone()), 200, shield, "EventLogsSearchResponse"),
        (Method::POST, search, key, Some(grouped), 200, shield, "EventLogsSearchResponse"),
        (Method::POST, search, key, Some(json!({"from": 2, "to": 1})), 400, shield, "ProblemDetails"),
        (Method::POST, search, key, Some(json!({"from": 1, "to": 2, "colour": 1})), 400, shield, "ProblemDetails"),
        (Method::POST, search, None, Some(window.clone()), 401, shield, "ProblemDetails"),
        (Method::POST, search, Some("wrong"), Some(window), 401, shield, "ProblemDetails"),
        (Method::GET, lists, key, None, 200, shield, "AccessListsDetailsResponse"),
        (Method::GET, "/shield/shield-zone/1002/access-lists", key, None, 200, shield, "AccessListsDetailsResponse"),
        (Method::GET, lists, None, None, 401, shield, "ProblemDetails"),
        (Method::PATCH, configuration, key, Some(json!({"isEnabled": true})), 200, shield, "UpdateAccessListConfigurationResponse"),
        (Method::PATCH, configuration, key, Some(json!({"isEnabled": null, "action": 3})), 200, shield, "UpdateAccessListConfigurationResponse"),
        (Method::PATCH, configuration, key, Some(json!({"action": 9})), 400, shield, "UpdateAccessListConfigurationResponse"),
        (Method::PATCH, configuration, key, Some(json!({"isEnabled": "yes"})), 400, shield, "UpdateAccessListConfigurationResponse"),
        (Method::PATCH, configuration, None, Some(json!({"isEnabled": true})), 401, shield, "ProblemDetails"),
        (Method::PATCH, "/shield/shield-zone/1001/access-lists/configurations/1", key, Some(json!({})), 404, shield, "ProblemDetails"),
        (Method::GET, "/shield/rate-limits/1001", key, None, 200, shield, "GetCustomWafRulesResponse"),
        (Method::GET, "/shield/rate-limits/1001?page=2&perPage=1", key, None, 200, shield, "GetCustomWafRulesResponse"),
        (Method::GET, "/shield/rate-limits/1001", None, None, 401, shield, "UnauthorizedResult"),
        (Method::GET, "/shield/rate-limits/1001", Some("wrong"), None, 401, shield, "UnauthorizedResult"),
        (Method::GET, "/mc/apps/app-shop", key, None, 200, containers, "Application"),
        (Method::GET, "/mc/apps/app-shop", None, None, 401, containers, "ProblemDetails"),
        (Method::GET, "/mc/apps/nope", key, None, 404, containers, "ErrorDetails"),
        (Method::GET, "/shield/shield-zone/1001", key, None, 200, zones, "GetShieldZoneResponse"),
        (Method::GET, "/shield/shield-zone/get-by-pullzone/501", key, None, 200, zones, "GetShieldZoneResponse"),
        (Method::GET, "/shield/shield-zones", key, None, 200, zones, "GetShieldZonesResponse"),
        (Method::GET, "/shield/shield-zones?page=2&perPage=1", key, None, 200, zones, "GetShieldZonesResponse"),
        (Method::GET, "/shield/shield-zone/999999", key, None, 404, shield, "ProblemDetails"),
        (Method::GET, "/shield/shield-zone/get-by-pullzone/999999", key, None, 404, shield, "ProblemDetails"),
        (Method::GET, "/shield/shield-zones?perPage=0", key, None, 400, shield, "ProblemDetails"),
        (Method::GET, "/shield/shield-zone/1001", None, None, 401, shield, "ProblemDetails"),
    ];
    let mut validated = 0;
    for (method, path, key, request, status, document, schema_name) in cases {
        let what = format!("{method} {path} (expecting {status})");
        let (got, answer) = send(&base, method, path, key, request).await;
        assert_eq!(got, status, "{what}: {answer}");
        assert_valid(document, schema_name, &answer, &what);
        validated += 1;
    }
    let (_, refused) = send(
        &base,
        reqwest::Method::PATCH,
        configuration,
        key,
        Some(json!({"action": 9})),
    )
    .await;
    assert_eq!(
        (refused["data"].clone(), refused["error"]["statusCode"].clone()),
        (Value::Null, json!(400))
    );
    eprintln!("contract: {validated} emulator answers validated, 0 violations");
}

/// The members of a published schema of the Shield Zone reads.
fn published_members(name: &str) -> Vec<String> {
    let document: Value = serde_json::from_str(Document::ShieldZones.published()).expect("JSON");
    document["components"]["schemas"][name]["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn shield_zone_reads_answer_every_published_member_from_fixtures_and_defaults() {
    let mut document = two_accounts();
    document.shield_zones[0].settings =
        json!({"planType": 2, "blockTor": true, "wafEngineConfig": [{"name": "x", "valueEncoded": "eQ=="}]})
            .as_object()
            .cloned()
            .expect("settings");
    let sim = start(document).await;
    let base = sim.base_url();
    let members = published_members("ShieldZoneResponse");
    assert_eq!(members.len(), 25, "{members:?}");
    let read = |path: &'static str, key: &'static str| send(&base, reqwest::Method::GET, path, Some(key), None);
    let (_, by_id) = read("/shield/shield-zone/1001", ACCESS_KEY).await;
    let (_, by_pull_zone) = read("/shield/shield-zone/get-by-pullzone/501", ACCESS_KEY).await;
    let (_, listed) = read("/shield/shield-zones", ACCESS_KEY).await;
    assert_eq!(by_id, by_pull_zone, "one zone, one answer");
    assert_eq!(
        listed["data"].as_array().map(Vec::len),
        Some(1),
        "the other account's zone is not listed: {listed}"
    );
    assert_eq!(listed["data"][0], by_id["data"]);
    assert_eq!(
        listed["page"],
        json!({"totalCount": 1, "totalPages": 1, "currentPage": 1, "nextPage": null, "pageSize": 10})
    );
    let zone = &by_id["data"];
    for member in &members {
        assert!(zone.get(member).is_some(), "{member} is missing: {zone:#}");
    }
    assert_eq!(
        (
            zone["shieldZoneId"].clone(),
            zone["pullZoneId"].clone(),
            zone["planType"].clone(),
            zone["blockTor"].clone()
        ),
        (json!(1001), json!(501), json!(2), json!(true)),
        "the fixture's settings over the defaults"
    );
    assert_eq!(zone["wafEnabled"], json!(true), "a default");
    let (status, _) = read("/shield/shield-zone/1002", ACCESS_KEY).await;
    assert_eq!(status, 404, "another account's zone");
    let (status, other) = read("/shield/shield-zone/1002", TEAM_B_KEY).await;
    assert_eq!((status, other["data"]["pullZoneId"].clone()), (200, json!(502)));
}

#[test]
fn fixture_settings_of_another_type_or_naming_the_ids_are_refused() {
    for (settings, member) in [
        (json!({"planType": 7}), "shieldZones[0].settings.planType"),
        (json!({"colour": "red"}), "shieldZones[0].settings"),
        (json!({"shieldZoneId": 5}), "shieldZones[0].settings.shieldZoneId"),
    ] {
        let mut document = crate::support::sim::example_fixtures();
        document.shield_zones[0].settings = settings.as_object().cloned().expect("object");
        let yaml = serde_yaml::to_string(&document).expect("YAML");
        let error = edge_operator::sim::document::SimDocument::from_yaml(&yaml).expect_err("refused");
        assert!(error.to_string().contains(member), "{settings}: {error}");
    }
}

#[test]
fn the_example_fixtures_use_the_published_types() {
    let document = crate::support::sim::example_fixtures();
    let raw = serde_json::to_value(&document).expect("JSON");
    for app in raw["apps"].as_array().expect("apps") {
        assert_valid(Document::MagicContainers, "Application", app, "an example app");
    }
    for zone in raw["shieldZones"].as_array().expect("zones") {
        for list in zone["accessLists"].as_array().into_iter().flatten() {
            let mut details = list.clone();
            details.as_object_mut().expect("object").remove("managed");
            assert_valid(
                Document::Shield,
                "AccessListDetails",
                &details,
                "an example access list",
            );
        }
        let rules = json!({"data": zone["rateLimits"].clone()});
        assert_valid(
            Document::Shield,
            "GetCustomWafRulesResponse",
            &rules,
            "the example rate limits",
        );
    }
}

/// Identities only: each object of the fixture names itself and nothing else it need
/// not (a rate-limit rule's counts have no honest default).
pub(crate) const MINIMAL_FIXTURES: &str = r#"
clock: 2026-11-20T12:00:00Z
accessKeys: [minimal-key]
shieldZones:
  - id: 7
    pullZoneId: 70
    accessLists: [{configurationId: 700}]
    rateLimits:
      - {id: 1, ruleConfiguration: {actionType: 1, requestCount: 5, timeframe: 10, blockTime: 30}}
      - {id: 2, ruleConfiguration: {actionType: 3}}
pullZones: [{id: 70}]
apps: [{id: app-min}]
"#;

/// Every operation with a published schema, read by the strict client (which fails on
/// anything the platform always sends and the answer lacks), and each raw answer
/// checked against the schema with the always-sent members.
async fn every_operation_answers_in_the_platform_form(
    sim: &RunningSim,
    key: &str,
    (zone, configuration, app): (i64, i64, &str),
    now_ms: i64,
) {
    let mut config = edge_operator::api::ClientConfig::new(
        sim.base_url(),
        sim.base_url(),
        edge_operator::api::Credentials::AccessKey(edge_operator::api::SecretValue::new(key)),
    );
    config.retry = RetryPolicy::none();
    config.answer_check = Some(edge_operator::api::contract::check_answer);
    let client = EdgeClient::new(config).expect("client");
    let window = EventLogsSearchRequest::window(now_ms - 3_600_000, now_ms);
    client.search_events(zone, &window).await.expect("search");
    client
        .search_events(zone, &window.clone().group_by([Dimension::Ip]).buckets(6))
        .await
        .expect("grouped search");
    client.access_lists(zone).await.expect("access lists");
    let patch = AccessListConfigurationPatch {
        is_enabled: Some(true),
        action: None,
    };
    client
        .update_access_list(zone, configuration, &patch)
        .await
        .expect("PATCH");
    client.all_rate_limits(zone).await.expect("every rate-limit page");
    client.get_app(app).await.expect("app");
    let base = sim.base_url();
    #[rustfmt::skip]
    let raw = [
        (reqwest::Method::GET, format!("/shield/shield-zone/{zone}/access-lists"), None, Document::Shield, "AccessListsDetailsResponse"),
        (reqwest::Method::GET, format!("/shield/rate-limits/{zone}?perPage=1"), None, Document::Shield, "GetCustomWafRulesResponse"),
        (reqwest::Method::PATCH, format!("/shield/shield-zone/{zone}/access-lists/configurations/{configuration}"),
            Some(json!({"action": 2})), Document::Shield, "UpdateAccessListConfigurationResponse"),
        (reqwest::Method::GET, format!("/mc/apps/{app}"), None, Document::MagicContainers, "Application"),
    ];
    for (method, path, request, document, name) in raw {
        let (status, answer) = send(&base, method, &path, Some(key), request).await;
        assert_eq!(status, 200, "{path}: {answer}");
        assert_valid(document, name, &answer, &path);
    }
}

#[tokio::test]
async fn minimal_and_shipped_fixtures_answer_what_the_platform_always_sends() {
    let minimal = edge_operator::sim::SimDocument::from_yaml(MINIMAL_FIXTURES).expect("minimal fixtures");
    let sim = start(minimal).await;
    every_operation_answers_in_the_platform_form(&sim, "minimal-key", (7, 700, "app-min"), now_ms()).await;
    let (status, found) = send(
        &sim.base_url(),
        reqwest::Method::GET,
        "/shield/shield-zone/get-by-pullzone/70",
        Some("minimal-key"),
        None,
    )
    .await;
    assert_eq!(
        (
            status,
            found["data"]["shieldZoneId"].clone(),
            found["data"]["pullZoneId"].clone()
        ),
        (200, json!(7), json!(70))
    );
    assert_valid(Document::ShieldZones, "GetShieldZoneResponse", &found, "a minimal zone");

    // The shipped fixtures: the demo's, edge-sim's built-in document and the chart's
    // default, with the demo's generated events and logs.
    let sim = start(crate::support::sim::example_fixtures()).await;
    sim.sim.generate(2_000, 500, 7).expect("generated data");
    let real_now = chrono::Utc::now().timestamp_millis();
    every_operation_answers_in_the_platform_form(&sim, ACCESS_KEY, (1001, 9101, "app-shop"), real_now).await;
}

#[tokio::test]
async fn the_strict_client_fails_on_a_missing_always_sent_member() {
    let sim = start(fixtures_at()).await;
    let rule_without_operator = json!({"data": [{"id": 1, "shieldZoneId": 1001, "ruleConfiguration":
        {"actionType": 1, "severityType": 0, "requestCount": 5, "counterKeyType": 0, "timeframe": 10, "blockTime": 30}}],
        "page": {"totalCount": 1, "totalPages": 1, "currentPage": 1, "nextPage": null, "pageSize": 10}});
    for _ in 0..2 {
        add_fault(
            &sim,
            json!({"method": "GET", "pathPrefix": "/shield/rate-limits/1001", "status": 200, "body": rule_without_operator, "count": 1}),
        );
    }
    let strict = client_of(&sim, RetryPolicy::none()).all_rate_limits(1001).await;
    assert!(
        matches!(&strict, Err(ApiError::Decode(message)) if message.contains("operatorType")),
        "{strict:?}"
    );
    let lenient = lenient_client_of(&sim, RetryPolicy::none()).all_rate_limits(1001).await;
    assert_eq!(
        lenient.expect("a lenient read").len(),
        1,
        "the operator's own reads stay lenient"
    );
}

#[test]
fn fixtures_without_what_no_default_can_stand_for_are_refused_with_the_member_named() {
    let cases = [
        (
            "shieldZones: [{id: 1, rateLimits: [{id: 1, ruleConfiguration: {actionType: 1, timeframe: 60, blockTime: 30}}]}]",
            "shieldZones[0].rateLimits[0].ruleConfiguration",
            "requestCount",
        ),
        (
            "shieldZones: [{id: 1, rateLimits: [{id: 1}]}]",
            "shieldZones[0].rateLimits[0]",
            "ruleConfiguration",
        ),
        (
            "apps: [{id: a, volumes: [{name: v, size: 2.5}]}]",
            "apps[0].volumes[0].size",
            "integer",
        ),
        (
            "apps: [{id: a, containerTemplates: [{id: t, name: web, packageId: p, image: i, imageName: i, imageNamespace: n, imageTag: '1', imageDigest: d, imageRegistryId: registry-1}]}]",
            "apps[0].containerTemplates[0].imageRegistryId",
            "^[0-9]+$",
        ),
        (
            "apps: [{id: a, containerTemplates: [{id: t, name: web}]}]",
            "apps[0].containerTemplates[0]",
            "required",
        ),
    ];
    for (yaml, member, words) in cases {
        let refused = edge_operator::sim::SimDocument::from_yaml(yaml)
            .expect_err(yaml)
            .to_string();
        assert!(
            refused.starts_with(member) && refused.contains(words),
            "{yaml}: {refused}"
        );
    }
}

#[test]
fn fixtures_in_our_old_types_are_refused_with_the_member_named() {
    let bad = r#"
shieldZones:
  - id: 1
    accessLists:
      - {configurationId: 5, name: x, category: threat-intel}
"#;
    let error = edge_operator::sim::SimDocument::from_yaml(bad)
        .expect_err("string category")
        .to_string();
    assert!(error.starts_with("shieldZones[0].accessLists[0].category:"), "{error}");
    let bad_app = r#"apps: [{id: a, name: b, volumes: [{name: v, size: big}]}]"#;
    let error = edge_operator::sim::SimDocument::from_yaml(bad_app)
        .expect_err("size")
        .to_string();
    assert!(error.starts_with("apps[0].volumes[0].size:"), "{error}");
}

#[test]
fn the_requests_the_client_sends_validate_against_the_request_schemas() {
    let requests = [
        EventLogsSearchRequest::window(1, 2),
        EventLogsSearchRequest::window(1, 2)
            .query("login")
            .filter(EventLogsFilter::new(Dimension::Ip, FilterOp::Cidr, ["10.0.0.0/8"]))
            .group_by(Dimension::ALL)
            .buckets(500)
            .page(3)
            .page_size(500),
    ];
    for request in &requests {
        let body = serde_json::to_value(request).expect("JSON");
        assert_valid(Document::Shield, "EventLogsSearchRequest", &body, "a search request");
    }
    for (is_enabled, action) in [(Some(true), None), (None, Some(5)), (Some(false), Some(0))] {
        let body = serde_json::to_value(AccessListConfigurationPatch { is_enabled, action }).expect("JSON");
        assert_valid(
            Document::Shield,
            "UpdateAccessListConfigurationRequest",
            &body,
            "a PATCH body",
        );
    }
}

type Check = fn(&EdgeClient, Value) -> BoxFuture<'_, Result<(), String>>;

/// One operation with a published response schema: where to fault it, how the client
/// reads it, and how `edgectl` shows it.
struct Operation {
    document: Document,
    schema: &'static str,
    method: &'static str,
    path: &'static str,
    /// Decodes `generated` through the client and compares what the product uses.
    check: Check,
    cli: &'static [&'static str],
    /// Compares `edgectl -o json` output with the generated body.
    cli_check: fn(&Value, &Value) -> Result<(), String>,
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: decoded {got:?}, generated {want:?}"))
    }
}

fn ids(generated: &Value, list: &str, member: &str) -> Vec<Value> {
    generated[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item[member].clone())
        .collect()
}

fn null_as(value: &Value, default: Value) -> Value {
    if value.is_null() { default } else { value.clone() }
}

fn operations() -> Vec<Operation> {
    vec![
        Operation {
            document: Document::Shield,
            schema: "AccessListsDetailsResponse",
            method: "GET",
            path: "/shield/shield-zone/1001/access-lists",
            check: |client, generated| {
                Box::pin(async move {
                    let lists = client.access_lists(1001).await.map_err(|e| e.to_string())?;
                    let decoded: Vec<Value> = lists.all_lists().map(|l| json!(l.configuration_id)).collect();
                    let mut wanted = ids(&generated, "managedLists", "configurationId");
                    wanted.extend(ids(&generated, "customLists", "configurationId"));
                    same("configuration ids", decoded, wanted)
                })
            },
            cli: &["access-lists", "list", "--zone", "1001"],
            cli_check: |output, generated| {
                same(
                    "managed list ids",
                    ids(output, "managedLists", "listId"),
                    ids(generated, "managedLists", "listId"),
                )
            },
        },
        Operation {
            document: Document::Shield,
            schema: "UpdateAccessListConfigurationResponse",
            method: "PATCH",
            path: "/shield/shield-zone/1001/access-lists/configurations/9101",
            check: |client, generated| {
                Box::pin(async move {
                    let patch = AccessListConfigurationPatch {
                        is_enabled: Some(true),
                        action: None,
                    };
                    let written = client
                        .update_access_list(1001, 9101, &patch)
                        .await
                        .map_err(|e| e.to_string())?;
                    let data = &generated["data"];
                    same(
                        "isEnabled",
                        json!(written.is_enabled),
                        null_as(&data["isEnabled"], Value::Null),
                    )?;
                    same("action", json!(written.action), null_as(&data["action"], Value::Null))
                })
            },
            cli: &[
                "access-lists",
                "set",
                "--zone",
                "1001",
                "--configuration",
                "9101",
                "--enabled",
                "true",
            ],
            cli_check: |output, generated| {
                let reported = null_as(&generated["data"]["isEnabled"], json!(true));
                same("after.isEnabled", output["after"]["isEnabled"].clone(), reported)
            },
        },
        Operation {
            document: Document::Shield,
            schema: "GetCustomWafRulesResponse",
            method: "GET",
            path: "/shield/rate-limits/1001",
            check: |client, generated| {
                Box::pin(async move {
                    let page = client.rate_limits_page(1001, 1, 10).await.map_err(|e| e.to_string())?;
                    let decoded: Vec<Value> = page.data.iter().map(|r| json!(r.id)).collect();
                    let wanted: Vec<Value> = ids(&generated, "data", "id")
                        .iter()
                        .map(|v| null_as(v, json!(0)))
                        .collect();
                    same("rule ids", decoded, wanted)?;
                    same(
                        "next page",
                        json!(page.page.next_page),
                        null_as(&generated["page"]["nextPage"], Value::Null),
                    )
                })
            },
            cli: &["rate-limits", "list", "--zone", "1001"],
            cli_check: |output, generated| {
                let decoded: Vec<Value> = output
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r["id"].clone())
                    .collect();
                let wanted: Vec<Value> = ids(generated, "data", "id")
                    .iter()
                    .map(|v| null_as(v, json!(0)))
                    .collect();
                same("rule ids", decoded, wanted)
            },
        },
        Operation {
            document: Document::MagicContainers,
            schema: "Application",
            method: "GET",
            path: "/mc/apps/",
            check: |client, generated| {
                Box::pin(async move {
                    let app = client.get_app("any").await.map_err(|e| e.to_string())?;
                    same("id", json!(app.id), generated["id"].clone())?;
                    let status = generated["status"].as_str().unwrap_or_default();
                    same(
                        "status",
                        app.status.as_str().to_ascii_lowercase(),
                        status.to_ascii_lowercase(),
                    )
                })
            },
            cli: &["app", "get", "any"],
            cli_check: |output, generated| same("id", output["id"].clone(), generated["id"].clone()),
        },
        Operation {
            document: Document::Shield,
            schema: "EventLogsSearchResponse",
            method: "POST",
            path: "/shield/event-logs/1001/search",
            check: |client, generated| {
                Box::pin(async move {
                    let request = EventLogsSearchRequest::window(now_ms() - 1000, now_ms());
                    let response = client.search_events(1001, &request).await.map_err(|e| e.to_string())?;
                    let rows: Vec<Value> = response.rows.iter().flatten().map(|r| json!(r.log_id)).collect();
                    same("row log ids", rows, ids(&generated, "rows", "logId"))?;
                    let counts: Vec<Value> = response.groups.iter().flatten().map(|g| json!(g.count)).collect();
                    let wanted: Vec<Value> = ids(&generated, "groups", "count")
                        .iter()
                        .map(|v| null_as(v, json!(0)))
                        .collect();
                    same("group counts", counts, wanted)
                })
            },
            cli: &["events", "search", "--zone", "1001", "--since", "1h"],
            cli_check: |output, generated| {
                same(
                    "row log ids",
                    ids(output, "rows", "logId"),
                    ids(generated, "rows", "logId"),
                )
            },
        },
    ]
}

fn fault(sim: &RunningSim, operation: &Operation, body: &Value) {
    add_fault(
        sim,
        json!({"method": operation.method, "pathPrefix": operation.path, "status": 200, "count": 1, "body": body}),
    );
}

async fn edgectl(base: &str, args: &[&str]) -> Result<Value, String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(args)
        .args(["-o", "json"])
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .output()
        .await
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!("edgectl failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("edgectl printed no JSON: {e}"))
}

/// Generates `CASES` bodies for `operation`, serves each through edge-sim's fault
/// injection and checks that the client (and for some, `edgectl`) reads them.
fn decode_generated(sim: &RunningSim, runtime: &tokio::runtime::Runtime, operation: &Operation, mode: Mode) -> usize {
    // Everything the published schema allows, beyond what edge-sim answers.
    let root = schema(operation.document, operation.schema, Required::Enforced);
    let strict =
        BodyValidator::new(operation.document, operation.schema, Required::Enforced).unwrap_or_else(|e| panic!("{e}"));
    // Generated bodies carry unknown members and enum values in any case on purpose.
    let client = lenient_client_of(sim, RetryPolicy::none());
    let base = sim.base_url();
    let decoded = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&body(&root, mode), |mut generated| {
        if mode == Mode::Strict {
            let violations = strict.violations(&generated);
            if !violations.is_empty() {
                return Err(TestCaseError::fail(format!(
                    "the generator broke the schema: {violations:?}"
                )));
            }
        }
        if operation.schema == "GetCustomWafRulesResponse" {
            // The CLI walks every page: make each generated page the last one.
            generated["page"] = json!({"nextPage": null});
        }
        let n = decoded.fetch_add(1, Ordering::Relaxed);
        runtime.block_on(async {
            fault(sim, operation, &generated);
            (operation.check)(&client, generated.clone())
                .await
                .map_err(TestCaseError::fail)?;
            if n < CLI_CASES {
                fault(sim, operation, &generated);
                let output = edgectl(&base, operation.cli).await.map_err(TestCaseError::fail)?;
                (operation.cli_check)(&output, &generated).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
    });
    if let Err(error) = result {
        panic!("{} ({mode:?}): {error}", operation.schema);
    }
    decoded.into_inner()
}

#[test]
fn bodies_generated_from_the_published_schemas_decode_in_the_client_and_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sim = runtime.block_on(start(fixtures_at()));
    for operation in operations() {
        for mode in [Mode::Strict, Mode::Tolerant] {
            let count = decode_generated(&sim, &runtime, &operation, mode);
            eprintln!(
                "contract: {} ({mode:?}): {count} generated bodies decoded by the client, {} by edgectl",
                operation.schema,
                count.min(CLI_CASES)
            );
        }
    }
}

#[tokio::test]
async fn every_error_body_shape_maps_to_its_typed_error() {
    let sim = start(fixtures_at()).await;
    let client = client_of(&sim, RetryPolicy::none());
    let cases = [
        (
            "GET",
            "/shield/rate-limits/",
            401,
            json!({"statusCode": 401}),
            "Unauthorized",
        ),
        (
            "PATCH",
            "/shield/shield-zone/",
            400,
            json!({"data": null, "error": {"statusCode": 400, "success": false, "message": "action: bad", "errorKey": "validation_error"}}),
            "Rejected",
        ),
        (
            "GET",
            "/mc/apps/",
            404,
            json!({"title": "Not Found", "status": 404, "detail": null, "instance": null, "errors": null}),
            "NotFound",
        ),
        (
            "GET",
            "/mc/apps/",
            500,
            json!({"title": "Oops", "status": 500, "errors": [{"field": null, "message": "down"}]}),
            "ServerError",
        ),
        (
            "GET",
            "/shield/shield-zone/",
            401,
            json!({"type": null, "title": null, "status": 401, "detail": null, "instance": null, "extra": [1]}),
            "Unauthorized",
        ),
    ];
    for (method, prefix, status, body, reason) in cases {
        add_fault(
            &sim,
            json!({"method": method, "pathPrefix": prefix, "status": status, "count": 1, "body": body.clone()}),
        );
        let error: ApiError = match (method, prefix) {
            ("GET", "/shield/rate-limits/") => client.rate_limits_page(1001, 1, 10).await.map(drop),
            ("PATCH", _) => client
                .update_access_list(
                    1001,
                    9101,
                    &AccessListConfigurationPatch {
                        is_enabled: Some(true),
                        action: None,
                    },
                )
                .await
                .map(drop),
            ("GET", "/mc/apps/") => client.get_app("x").await.map(drop),
            _ => client.access_lists(1001).await.map(drop),
        }
        .expect_err("faulted");
        assert_eq!(error.reason(), reason, "{body}");
        if reason == "Rejected" {
            assert_eq!(
                error.platform_message().map(|m| m.message.as_str()),
                Some("action: bad")
            );
        }
    }
}
