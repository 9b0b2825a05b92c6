//! edge-sim, platform API over HTTP: auth, media types, access lists, rate limits,
//! certificates, applications and Shield Zones, with every error status and body shape.

use crate::support::sim::{ACCESS_KEY, fixtures_at, http, now_ms, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

pub(crate) const HOUR: i64 = 3_600_000;

pub(crate) async fn post_json(base: &str, path: &str, body: &Value) -> reqwest::Response {
    http()
        .post(format!("{base}{path}"))
        .header("AccessKey", ACCESS_KEY)
        .json(body)
        .send()
        .await
        .expect("request")
}

pub(crate) async fn get(base: &str, path: &str) -> reqwest::Response {
    http()
        .get(format!("{base}{path}"))
        .header("AccessKey", ACCESS_KEY)
        .send()
        .await
        .expect("request")
}

pub(crate) fn event(id: &str, timestamp: i64, ip: &str, rule: &str) -> Value {
    json!({
        "logId": id, "timestamp": timestamp, "feature": "waf", "ruleId": rule, "ip": ip,
        "ja4": "t13d", "ua": "curl/8", "url": "https://shop.example.com/login", "asn": "64500",
        "country": "DE", "action": "block", "ruleName": "SQL injection", "log": {"method": "POST"}
    })
}

pub(crate) fn assert_problem(body: &Value, status: u16) {
    assert_eq!(body["status"], status, "{body}");
    assert!(body["title"].is_string(), "{body}");
    assert!(body["detail"].is_string(), "{body}");
}

#[tokio::test]
async fn every_platform_endpoint_requires_a_known_access_key() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let endpoints = [
        ("POST", "/shield/event-logs/1001/search"),
        ("GET", "/shield/shield-zone/1001/access-lists"),
        ("PATCH", "/shield/shield-zone/1001/access-lists/configurations/9101"),
        ("GET", "/shield/rate-limits/1001"),
        ("POST", "/pullzone/completeExternalHttpCertificate"),
        ("GET", "/mc/apps/app-shop"),
    ];
    for (method, path) in endpoints {
        for key in [None, Some("wrong-key")] {
            let mut request = http()
                .request(method.parse().expect("method"), format!("{base}{path}"))
                .header("content-type", "application/json")
                .body("{}");
            if let Some(key) = key {
                request = request.header("AccessKey", key);
            }
            let response = request.send().await.expect("request");
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {key:?}"
            );
            let body: Value = response.json().await.expect("JSON");
            if path.starts_with("/shield/rate-limits/") {
                assert_eq!(body, json!({"statusCode": 401}), "the published UnauthorizedResult");
            } else {
                assert_problem(&body, 401);
            }
            assert!(!body.to_string().contains("wrong-key"), "the key is never echoed");
        }
    }
}

#[tokio::test]
async fn request_and_response_media_types() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let body = json!({"from": now_ms() - HOUR, "to": now_ms()}).to_string();
    for (content_type, expected) in [
        ("application/json", StatusCode::OK),
        ("text/json", StatusCode::OK),
        ("application/problem+json; charset=utf-8", StatusCode::OK),
        ("text/plain", StatusCode::UNSUPPORTED_MEDIA_TYPE),
        ("application/xml", StatusCode::UNSUPPORTED_MEDIA_TYPE),
    ] {
        let response = http()
            .post(format!("{base}/shield/event-logs/1001/search"))
            .header("AccessKey", ACCESS_KEY)
            .header("content-type", content_type)
            .body(body.clone())
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), expected, "{content_type}");
        if expected == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            assert_problem(&response.json().await.expect("json"), 415);
        }
    }
    for (accept, expected) in [
        (None, "application/json"),
        (Some("text/plain"), "text/plain"),
        (Some("text/json"), "text/json"),
        (Some("text/html, text/json;q=0.5, text/plain;q=0.9"), "text/plain"),
        (Some("application/xml"), "application/json"),
    ] {
        let mut request = http()
            .get(format!("{base}/shield/rate-limits/1001"))
            .header("AccessKey", ACCESS_KEY);
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.headers()["content-type"], expected, "Accept: {accept:?}");
        let parsed: Value =
            serde_json::from_slice(&response.bytes().await.expect("body")).expect("JSON in any media type");
        assert!(parsed["data"].is_array());
    }
}

#[tokio::test]
async fn access_lists_read_and_patch_by_configuration_id() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let lists: Value = get(&base, "/shield/shield-zone/1001/access-lists")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(lists["managedLists"].as_array().map(Vec::len), Some(2));
    assert_eq!(lists["customLists"][0]["configurationId"], 9201);
    assert_eq!(
        (lists["customListCount"].as_i64(), lists["customEntryCount"].as_i64()),
        (Some(1), Some(4))
    );
    for member in [
        "listId",
        "configurationId",
        "name",
        "description",
        "isEnabled",
        "type",
        "category",
        "action",
        "requiredPlan",
        "entryCount",
        "updateFrequency",
        "lastUpdated",
    ] {
        assert!(lists["managedLists"][0].get(member).is_some(), "{member}");
    }

    let patch = |body: Value, path: &'static str| {
        let base = base.clone();
        async move {
            http()
                .patch(format!("{base}{path}"))
                .header("AccessKey", ACCESS_KEY)
                .json(&body)
                .send()
                .await
                .expect("request")
        }
    };
    let response = patch(
        json!({"isEnabled": true}),
        "/shield/shield-zone/1001/access-lists/configurations/9101",
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.expect("json");
    assert_eq!(
        body["data"],
        json!({"isEnabled": true, "action": 2}),
        "absent action is kept"
    );
    assert_eq!(body["error"]["success"], true);
    let body: Value = patch(
        json!({"isEnabled": null, "action": 3}),
        "/shield/shield-zone/1001/access-lists/configurations/9101",
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(
        body["data"],
        json!({"isEnabled": true, "action": 3}),
        "null isEnabled is kept"
    );

    let response = patch(
        json!({"action": 9}),
        "/shield/shield-zone/1001/access-lists/configurations/9101",
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let refused: Value = response.json().await.expect("json");
    assert_eq!(refused["data"], Value::Null, "{refused}");
    assert_eq!(
        (
            refused["error"]["statusCode"].clone(),
            refused["error"]["success"].clone()
        ),
        (json!(400), json!(false))
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("action:"))
    );
    let response = patch(
        json!({"isEnabled": "yes"}),
        "/shield/shield-zone/1001/access-lists/configurations/9101",
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let refused: Value = response.json().await.expect("json");
    assert_eq!(refused["error"]["statusCode"], 400, "{refused}");
    for path in [
        "/shield/shield-zone/1001/access-lists/configurations/11",
        "/shield/shield-zone/77/access-lists/configurations/9101",
    ] {
        let response = patch(json!({"isEnabled": true}), path).await;
        assert_eq!(
            response.status(),
            StatusCode::NOT_FOUND,
            "{path}: the listId is not a configuration id"
        );
        assert_problem(&response.json().await.expect("json"), 404);
    }
    let lists: Value = get(&base, "/shield/shield-zone/1001/access-lists")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        lists["managedLists"][0]["isEnabled"], true,
        "the PATCH is visible in the read"
    );
}

#[tokio::test]
async fn rate_limits_paginate_one_based() {
    let mut document = fixtures_at();
    document.shield_zones[0].rate_limits = (1..=25)
        .map(|id| {
            serde_json::from_value(json!({"id": id, "shieldZoneId": 1001, "ruleName": format!("rule-{id}")}))
                .expect("rule")
        })
        .collect();
    let sim = start(document).await;
    let base = sim.base_url();
    let page = |query: &'static str| {
        let base = base.clone();
        async move { get(&base, &format!("/shield/rate-limits/1001{query}")).await }
    };
    let first: Value = page("").await.json().await.expect("json");
    assert_eq!(
        first["data"].as_array().map(Vec::len),
        Some(10),
        "perPage defaults to 10"
    );
    assert_eq!(
        first["page"],
        json!({"totalCount": 25, "totalPages": 3, "currentPage": 1, "nextPage": 2, "pageSize": 10})
    );
    let last: Value = page("?page=3&perPage=10").await.json().await.expect("json");
    assert_eq!(last["data"].as_array().map(Vec::len), Some(5));
    assert_eq!(last["data"][0]["ruleName"], "rule-21");
    assert!(last["page"]["nextPage"].is_null());
    let past: Value = page("?page=4").await.json().await.expect("json");
    assert_eq!(past["data"].as_array().map(Vec::len), Some(0));
    for query in ["?page=0", "?page=-1", "?perPage=0", "?page=x"] {
        let response = page(query).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({"statusCode": 400})
        );
    }
    let response = get(&base, "/shield/rate-limits/4242").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        json!({"statusCode": 404})
    );
}

#[tokio::test]
async fn certificate_completion_answers_by_challenge_state() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let complete = |hostname: &'static str| {
        let base = base.clone();
        async move {
            post_json(
                &base,
                "/pullzone/completeExternalHttpCertificate",
                &json!({"Hostname": hostname}),
            )
            .await
        }
    };
    let response = complete("shop.example.com").await;
    assert_eq!(response.status(), StatusCode::OK);
    let state: Value = http()
        .get(format!("{base}/_sim/state"))
        .send()
        .await
        .expect("state")
        .json()
        .await
        .expect("json");
    assert_eq!(state["pullZones"][0]["hostnames"][0]["certificate"], "issued");

    let response = complete("new.example.com").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["Field"], "Hostname");
    assert!(
        body["ErrorKey"].as_str().is_some_and(|k| k.contains("verification")),
        "{body}"
    );
    assert!(body["Message"].is_string());

    let response = complete("unknown.example.org").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: Value = response.json().await.expect("json");
    assert!(
        body["ErrorKey"].as_str().is_some_and(|k| k.contains("not_found")),
        "{body}"
    );

    let response = complete("").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn applications_are_served_in_the_wire_form_and_404_has_the_errors_shape() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let app: Value = get(&base, "/mc/apps/app-shop").await.json().await.expect("json");
    assert_eq!(app["status"], "active");
    assert_eq!(app["containerTemplates"][0]["endpoints"][0]["pullZoneId"], "501");
    let response = get(&base, "/mc/apps/nope").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: Value = response.json().await.expect("json");
    for member in ["title", "status", "detail", "instance", "errors", "id"] {
        assert!(body.get(member).is_some(), "{member} in {body}");
    }
}

#[tokio::test]
async fn a_shield_zone_is_found_by_its_pull_zone() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let found = get(&base, "/shield/shield-zone/get-by-pullzone/501").await;
    assert_eq!(found.status(), StatusCode::OK);
    let body: Value = found.json().await.expect("JSON");
    assert_eq!(
        (body["data"]["shieldZoneId"].clone(), body["data"]["pullZoneId"].clone()),
        (json!(1001), json!(501))
    );
    assert_eq!(
        body["data"]["wafEnabled"],
        json!(true),
        "the whole configuration: {body}"
    );
    let unknown = get(&base, "/shield/shield-zone/get-by-pullzone/999").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    let body: Value = unknown.json().await.expect("JSON");
    assert_problem(&body, 404);
    assert!(body["detail"].as_str().is_some_and(|d| d.contains("999")), "{body}");
    let bad = get(&base, "/shield/shield-zone/get-by-pullzone/x").await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let anonymous = http()
        .get(format!("{base}/shield/shield-zone/get-by-pullzone/501"))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_a_problem_with_a_message() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let unknown = get(&base, "/shield/no-such-thing/1").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_problem(&unknown.json().await.expect("JSON"), 404);
    let method = http()
        .delete(format!("{base}/mc/apps/app-shop"))
        .header("AccessKey", ACCESS_KEY)
        .send()
        .await
        .expect("request");
    assert_eq!(method.status(), StatusCode::METHOD_NOT_ALLOWED);
    let body: Value = method.json().await.expect("a body, not an empty answer");
    assert_problem(&body, 405);
}
