//! The platform's contract, checked in both directions against its published schemas
//! (never against our own models):
//! - every answer edge-sim gives for the five operations with a published schema,
//!   success and each documented error, validates against that schema;
//! - the requests the client sends validate against the request schemas;
//! - bodies generated from the schemas (hundreds per operation, nulls included, plus
//!   enum values in any case or unknown and unknown members) decode in the client,
//!   and `edgectl -o json` shows their identifiers.

mod decode;
mod fixtures;

pub(crate) use fixtures::MINIMAL_FIXTURES;
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
        assert_eq!(error.reason().to_string(), reason, "{body}");
        if reason == "Rejected" {
            assert_eq!(
                error.platform_message().map(|m| m.message.as_str()),
                Some("action: bad")
            );
        }
    }
}
