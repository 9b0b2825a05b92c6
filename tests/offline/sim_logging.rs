//! edge-sim, CDN logging API over HTTP: auth by key or JWT, Pull Zone states, the
//! shared rate limit with Retry-After, v2 filters and pagination, retention, v1 files.

use crate::support::sim::{ACCESS_KEY, JWT_SECRET, NOW, bearer_token, fixtures_at, http, start};
use chrono::{DateTime, Duration, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn now() -> DateTime<Utc> {
    NOW.parse().expect("valid")
}

pub(crate) fn entry(i: i64, age: Duration, status: u16, cache: &str) -> Value {
    json!({
        "timestamp": now() - age, "requestId": format!("req-{i:04}"), "cacheStatus": cache,
        "statusCode": status, "bytesSent": 100 + i, "edgeLocation": "DE", "scheme": "https",
        "host": "cdn.example.com", "path": "/a", "url": format!("https://cdn.example.com/a?i={i}"),
        "remoteIp": "203.0.113.7", "countryCode": "DE", "userAgent": "curl/8", "referer": "-"
    })
}

pub(crate) async fn seed_logs(base: &str, pull_zone: i64, entries: Vec<Value>) {
    let response = http()
        .post(format!("{base}/_sim/pullzones/{pull_zone}/logs"))
        .json(&entries)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
}

async fn logs(base: &str, path: &str, auth: Option<(&str, String)>) -> reqwest::Response {
    let mut request = http().get(format!("{base}{path}"));
    if let Some((name, value)) = auth {
        request = request.header(name, value);
    }
    request.send().await.expect("request")
}

async fn error_code(response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    let body: Value = response.json().await.expect("error body");
    assert!(body["error"]["message"].is_string(), "{body}");
    (status, body["error"]["code"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn authentication_and_pull_zone_states() {
    let mut document = fixtures_at();
    document
        .pull_zones
        .push(serde_json::from_value(json!({"id": 503, "suspended": true})).expect("zone"));
    let sim = start(document).await;
    let base = sim.base_url();
    let path = "/v2/pullzones/501/logs";
    let key = || Some(("AccessKey", ACCESS_KEY.to_string()));
    let bearer = |t: String| Some(("Authorization", format!("Bearer {t}")));

    assert_eq!(
        error_code(logs(&base, path, None).await).await,
        (StatusCode::UNAUTHORIZED, "unauthorized".into())
    );
    let forbidden = (StatusCode::FORBIDDEN, "forbidden".to_string());
    assert_eq!(
        error_code(logs(&base, path, Some(("AccessKey", "nope".into()))).await).await,
        forbidden
    );
    let wrong_secret = bearer_token("other-secret", now() + Duration::hours(1));
    assert_eq!(
        error_code(logs(&base, path, bearer(wrong_secret)).await).await,
        forbidden
    );
    let expired = bearer_token(JWT_SECRET, now() - Duration::seconds(1));
    assert_eq!(error_code(logs(&base, path, bearer(expired)).await).await, forbidden);
    assert_eq!(
        error_code(logs(&base, path, bearer("not.a.jwt".into())).await).await,
        forbidden
    );

    assert_eq!(logs(&base, path, key()).await.status(), StatusCode::OK);
    let valid = bearer_token(JWT_SECRET, now() + Duration::hours(1));
    assert_eq!(logs(&base, path, bearer(valid)).await.status(), StatusCode::OK);

    assert_eq!(
        error_code(logs(&base, "/v2/pullzones/503/logs", key()).await).await,
        forbidden,
        "suspended"
    );
    assert_eq!(
        error_code(logs(&base, "/v2/pullzones/502/logs", key()).await).await,
        (StatusCode::NOT_FOUND, "logging_disabled".into())
    );
    assert_eq!(
        error_code(logs(&base, "/v2/pullzones/501/logs?limit=0", key()).await).await,
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    assert_eq!(
        error_code(logs(&base, "/v2/pullzones/501/logs?colour=red", key()).await).await,
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
}

#[tokio::test]
async fn rate_limit_is_shared_by_v1_and_v2_and_says_when_to_retry() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let key = || Some(("AccessKey", ACCESS_KEY.to_string()));
    for i in 0..30 {
        let path = if i % 2 == 0 {
            "/v2/pullzones/501/logs".to_string()
        } else {
            "/11-20-26/501.log".to_string()
        };
        assert_eq!(logs(&base, &path, key()).await.status(), StatusCode::OK, "request {i}");
    }
    for path in ["/v2/pullzones/501/logs", "/11-20-26/501.log"] {
        let response = logs(&base, path, key()).await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry_after: u64 = response.headers()["retry-after"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("seconds");
        assert_eq!(retry_after, 10, "the clock is frozen: the whole window remains");
        assert_eq!(error_code(response).await.1, "rate_limited");
    }
    let other = logs(&base, "/v2/pullzones/502/logs", key()).await;
    assert_eq!(
        other.status(),
        StatusCode::NOT_FOUND,
        "other Pull Zones have their own budget"
    );
    let moved = http()
        .put(format!("{base}/_sim/clock"))
        .json(&json!({"now": now() + Duration::seconds(10)}))
        .send()
        .await
        .expect("clock");
    assert_eq!(moved.status(), StatusCode::OK);
    assert_eq!(
        logs(&base, "/v2/pullzones/501/logs", key()).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn v2_filters_paginate_with_has_more_and_respect_retention() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let mut entries: Vec<Value> = (0..250)
        .map(|i| {
            let status = if i % 5 == 0 { 503 } else { 200 };
            let cache = if i % 2 == 0 { "HIT" } else { "MISS" };
            entry(i, Duration::minutes(i + 1), status, cache)
        })
        .collect();
    entries.push(entry(900, Duration::days(3) + Duration::minutes(1), 200, "HIT"));
    seed_logs(&base, 501, entries).await;
    let key = || Some(("AccessKey", ACCESS_KEY.to_string()));
    let get = |query: String| {
        let base = base.clone();
        async move {
            let response = logs(&base, &format!("/v2/pullzones/501/logs?{query}"), key()).await;
            assert_eq!(response.status(), StatusCode::OK, "{query}");
            response.json::<Value>().await.expect("json")
        }
    };

    let mut offset = 0;
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = get(format!("limit=100&offset={offset}&from=2026-11-17T12:00:00Z")).await;
        pages += 1;
        let data = page["data"].as_array().expect("data");
        seen.extend(
            data.iter()
                .map(|e| e["requestId"].as_str().unwrap_or_default().to_string()),
        );
        assert_eq!(page["pagination"]["returned"].as_u64(), Some(data.len() as u64));
        if !page["pagination"]["hasMore"].as_bool().expect("hasMore") {
            break;
        }
        offset += data.len();
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 250, "the entry past the 3-day retention is never returned");
    assert_eq!(seen[0], "req-0000", "newest first by default");

    let errors = get("status=5xx&cacheStatus=hit&from=2026-11-17T12:00:00Z&limit=1000".into()).await;
    let data = errors["data"].as_array().expect("data");
    assert_eq!(data.len(), 25);
    assert!(data.iter().all(|e| e["statusCode"] == 503 && e["cacheStatus"] == "HIT"));

    let asc = get("order=asc&limit=1".into()).await;
    assert_eq!(asc["query"]["order"], "asc");
    assert!(asc["query"]["from"].is_string() && asc["query"]["pullZoneId"] == 501);
    let day_default = get("limit=1000".into()).await;
    assert_eq!(
        day_default["data"].as_array().map(Vec::len),
        Some(250),
        "the default window is the last 24 h"
    );
    let searched = get("search=i%3D7+CURL&limit=1000".into()).await;
    let ids: Vec<&str> = searched["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|e| e["requestId"].as_str())
        .collect();
    assert!(ids.contains(&"req-0007") && ids.contains(&"req-0070"), "{ids:?}");
    assert!(
        ids.iter().all(|id| id.starts_with("req-007") || *id == "req-0007"),
        "{ids:?}"
    );
}

#[tokio::test]
async fn v1_day_file_has_twelve_pipe_fields_newest_first_and_honours_its_parameters() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    seed_logs(
        &base,
        501,
        vec![
            entry(1, Duration::hours(1), 200, "HIT"),
            entry(2, Duration::hours(2), 404, "MISS"),
            entry(3, Duration::hours(13), 200, "HIT"),
        ],
    )
    .await;
    let response = logs(&base, "/11-20-26/501.log", Some(("AccessKey", ACCESS_KEY.into()))).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .starts_with("text/plain")
    );
    let body = response.text().await.expect("text");
    let parsed = edge_operator::api::models::logging::parse_v1_file(&body).expect("parses");
    assert_eq!(parsed.len(), 2, "the entry of the previous day is in that day's file");
    assert_eq!(parsed[0].request_id, "req-0001", "newest first");
    assert_eq!(parsed[1].status_code, 404);
    assert!(body.lines().all(|l| l.split('|').count() == 12));
    let day_file = |query: &'static str| {
        let base = base.clone();
        async move {
            let response = logs(
                &base,
                &format!("/11-20-26/501.log?{query}"),
                Some(("AccessKey", ACCESS_KEY.into())),
            )
            .await;
            let status = response.status();
            let text = response.text().await.expect("text");
            let ids: Vec<String> = text
                .lines()
                .filter_map(|l| l.split('|').nth(10))
                .map(str::to_string)
                .collect();
            (status, ids, text)
        }
    };
    let (status, ids, _) = day_file("order=asc").await;
    assert_eq!(
        (status, ids),
        (StatusCode::OK, vec!["req-0002".to_string(), "req-0001".into()])
    );
    let (status, ids, _) = day_file("order=desc&status=400").await;
    assert_eq!((status, ids), (StatusCode::OK, vec!["req-0002".to_string()]));
    let (status, ids, _) = day_file("start=1&end=2").await;
    assert_eq!((status, ids), (StatusCode::OK, vec!["req-0002".to_string()]));
    for refused in ["bogus=1", "status=404", "order=sideways", "start=-1"] {
        let (status, _, text) = day_file(refused).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}: {text}");
        assert!(text.contains("invalid_request"), "{refused}: {text}");
    }
    let previous = logs(&base, "/11-19-26/501.log", Some(("AccessKey", ACCESS_KEY.into()))).await;
    assert_eq!(previous.text().await.expect("text").lines().count(), 1);
    let expired = logs(&base, "/11-10-26/501.log", Some(("AccessKey", ACCESS_KEY.into()))).await;
    assert_eq!(
        error_code(expired).await,
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
    let none = logs(&base, "/11-20-26/501.log", None).await;
    assert_eq!(error_code(none).await.0, StatusCode::UNAUTHORIZED);
}
