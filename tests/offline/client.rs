//! The typed client against a real edge-sim: every operation, every error body shape,
//! pagination, retries with Retry-After, rate discipline and credential hygiene.

use std::time::Duration;

use crate::support::sim::{ACCESS_KEY, NOW, client_of, fixtures_at, http, lenient_client_of, now_ms, start};
use chrono::{DateTime, Utc};
use edge_operator::api::models::apps::AppStatus;
use edge_operator::api::models::logging::SortOrder;
use edge_operator::api::models::shield::{
    AccessListConfigurationPatch, Dimension, EventLogsFilter, EventLogsSearchRequest, FilterOp,
};
use edge_operator::api::{
    ApiError, ApiFailure, ClientConfig, Credentials, EdgeClient, Hooks, LogQuery, Operation, RequestObserver,
    RetryPolicy, SecretValue, WriteGate,
};
use futures::TryStreamExt;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        ..RetryPolicy::default()
    }
}

async fn admin(base: &str, method: &str, path: &str, body: Value) -> Value {
    let response = http()
        .request(method.parse().expect("method"), format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .expect("admin request");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    response.json().await.unwrap_or(Value::Null)
}

async fn journal(base: &str) -> Vec<Value> {
    http()
        .get(format!("{base}/_sim/requests"))
        .send()
        .await
        .expect("journal")
        .json()
        .await
        .expect("json")
}

fn log_entry(i: i64) -> Value {
    let t: DateTime<Utc> = NOW.parse().expect("valid");
    json!({"timestamp": t - chrono::Duration::minutes(i + 1), "requestId": format!("r{i:03}"), "statusCode": 200,
           "cacheStatus": "HIT", "url": "https://cdn.example.com/x", "remoteIp": "203.0.113.1"})
}

#[tokio::test]
async fn shield_operations_search_access_lists_and_every_rate_limit_page() {
    let mut document = fixtures_at();
    document.shield_zones[0].rate_limits = (1..=25)
        .map(|id| serde_json::from_value(json!({"id": id, "ruleName": format!("r{id}"), "ruleConfiguration": {"actionType": 1, "requestCount": id, "timeframe": 60, "blockTime": 300, "unknownMember": true}})).expect("rule"))
        .collect();
    let sim = start(document).await;
    let client = client_of(&sim, RetryPolicy::none());
    let base = sim.base_url();
    admin(&base, "POST", "/_sim/shield-zones/1001/events", json!([
        {"timestamp": now_ms() - 10, "feature": "waf", "ruleId": "942100", "ip": "192.0.2.1", "ja4": "j", "ua": "curl", "url": "/login", "asn": "1", "country": "DE", "action": "block"},
        {"timestamp": now_ms() - 20, "feature": "waf", "ruleId": "942100", "ip": "192.0.2.2", "ja4": "j", "ua": "curl", "url": "/login", "asn": "1", "country": "US", "action": "log"}
    ])).await;

    let request = EventLogsSearchRequest::window(now_ms() - 3_600_000, now_ms())
        .query("login")
        .filter(EventLogsFilter::new(Dimension::Ip, FilterOp::Cidr, ["192.0.2.0/24"]))
        .group_by([Dimension::RuleId])
        .buckets(4)
        .page(0)
        .page_size(10);
    let response = client.search_events(1001, &request).await.expect("search");
    let group = &response.groups.expect("grouped")[0];
    assert_eq!(group.count, 2);
    assert_eq!(group.context.as_ref().map(|c| (c.blocked, c.logged)), Some((1, 1)));
    assert_eq!(group.sparkline.as_ref().map(|s| s.iter().sum::<i64>()), Some(2));

    let lists = client.access_lists(1001).await.expect("lists");
    assert_eq!(lists.all_lists().count(), 3);
    let updated = client
        .update_access_list(
            1001,
            9101,
            &AccessListConfigurationPatch {
                is_enabled: Some(true),
                action: None,
            },
        )
        .await
        .expect("patch");
    assert_eq!((updated.is_enabled, updated.action), (Some(true), Some(2)));

    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    // The rules carry a member the platform does not publish: only a lenient read takes them.
    let strict = client.all_rate_limits(1001).await;
    assert!(
        matches!(&strict, Err(ApiError::Decode(message)) if message.contains("unknownMember")),
        "{strict:?}"
    );
    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    let rules = lenient_client_of(&sim, RetryPolicy::none())
        .all_rate_limits(1001)
        .await
        .expect("all pages");
    assert_eq!(rules.len(), 25);
    assert_eq!(rules[24].rule_configuration.request_count, Some(25));
    let pages: Vec<String> = journal(&base)
        .await
        .iter()
        .filter_map(|e| e["query"].as_str().map(str::to_string))
        .collect();
    assert_eq!(pages, ["page=1&perPage=10", "page=2&perPage=10", "page=3&perPage=10"]);
}

#[tokio::test]
async fn certificates_apps_and_logs_including_every_log_page_and_the_v1_file() {
    let sim = start(fixtures_at()).await;
    let client = client_of(&sim, RetryPolicy::none());
    let base = sim.base_url();
    client
        .complete_external_http_certificate("shop.example.com")
        .await
        .expect("issued");

    let app = client.get_app("app-shop").await.expect("app");
    assert_eq!(app.status, AppStatus::Active, "\"Active\" matches case-insensitively");
    assert_eq!(app.public_hosts(), ["shop.example.com"]);
    assert_eq!(app.endpoint_pull_zone_id(), Some(501));
    assert_eq!(app.container_templates[0].image_tag, "1.8.2");
    admin(
        &base,
        "PATCH",
        "/_sim/apps/app-shop",
        json!({"status": "FAILING", "autoScaling": null, "newMember": {"x": 1}}),
    )
    .await;
    let app = lenient_client_of(&sim, RetryPolicy::none())
        .get_app("app-shop")
        .await
        .expect("lenient read");
    assert_eq!(app.status, AppStatus::Failing);
    assert_eq!(app.auto_scaling.max, 0, "a missing member takes its default");

    admin(
        &base,
        "POST",
        "/_sim/pullzones/501/logs",
        Value::Array((0..250).map(log_entry).collect()),
    )
    .await;
    let query = LogQuery {
        limit: Some(100),
        order: Some(SortOrder::Asc),
        status: vec!["2xx".into()],
        ..LogQuery::default()
    };
    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    let entries: Vec<_> = client.logs(501, query).try_collect().await.expect("all pages");
    assert_eq!(entries.len(), 250);
    assert_eq!(entries[0].request_id, "r249", "ascending order");
    let offsets: Vec<String> = journal(&base)
        .await
        .iter()
        .filter_map(|e| e["query"].as_str().map(str::to_string))
        .collect();
    assert_eq!(offsets.len(), 3, "{offsets:?}");
    assert!(offsets[2].contains("offset=200"), "{offsets:?}");

    let day = NOW.parse::<DateTime<Utc>>().expect("valid").date_naive();
    let file = client.log_file(501, day).await.expect("v1 file");
    assert_eq!(file.len(), 250);
    assert_eq!(file[0].request_id, "r249", "oldest first");
    assert_eq!(file[0].cache_status, "HIT");
}

#[tokio::test]
async fn every_error_body_shape_is_classified_with_the_platforms_words() {
    let mut document = fixtures_at();
    document
        .pull_zones
        .push(serde_json::from_value(json!({"id": 503, "suspended": true})).expect("zone"));
    let sim = start(document).await;
    let client = client_of(&sim, RetryPolicy::none());
    let window = EventLogsSearchRequest::window(now_ms(), now_ms() - 1);

    let error = client.search_events(1001, &window).await.expect_err("bad window");
    let ApiError::Validation { status: 400, message } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(message.field.as_deref(), Some("to"));
    assert!(message.message.contains("after"), "{message:?}");

    let error = client
        .complete_external_http_certificate("new.example.com")
        .await
        .expect_err("pending");
    let ApiError::Validation { message, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(message.field.as_deref(), Some("Hostname"));
    assert_eq!(
        message.error_key.as_deref(),
        Some("pullzone.domain_verification_failed")
    );
    let error = client
        .complete_external_http_certificate("nowhere.example.org")
        .await
        .expect_err("unknown");
    assert!(
        matches!(&error, ApiError::NotFound(m) if m.error_key.as_deref() == Some("pullzone.hostname_not_found")),
        "{error:?}"
    );

    let error = client.get_app("missing-app.v2").await.expect_err("missing");
    assert!(
        matches!(&error, ApiError::NotFound(m) if m.message.contains("missing-app.v2")),
        "{error:?}"
    );
    let error = client.get_app("missing app/..").await.expect_err("refused");
    assert!(
        matches!(&error, ApiError::InvalidInput(_)),
        "refused before any request: {error:?}"
    );

    let error = client
        .rate_limits_page(1001, 1, 5_000)
        .await
        .expect_err("perPage too large");
    assert_eq!(error.status(), Some(400));
    assert!(
        client
            .rate_limits_page(1001, 0, 10)
            .await
            .is_err_and(|e| e.reason() == ApiFailure::InvalidInput)
    );

    let error = client
        .query_logs(502, &LogQuery::default())
        .await
        .expect_err("logging disabled");
    assert!(
        matches!(&error, ApiError::NotFound(m) if m.error_key.as_deref() == Some("logging_disabled")),
        "{error:?}"
    );
    let error = client
        .query_logs(503, &LogQuery::default())
        .await
        .expect_err("suspended");
    assert!(
        matches!(&error, ApiError::Forbidden(m) if m.error_key.as_deref() == Some("forbidden")),
        "{error:?}"
    );
    let bad = LogQuery {
        limit: Some(0),
        ..LogQuery::default()
    };
    let error = client.query_logs(501, &bad).await.expect_err("bad limit");
    assert!(
        matches!(&error, ApiError::Validation { message, .. } if message.error_key.as_deref() == Some("invalid_request"))
    );

    let mut config = client.config().clone();
    config.credentials = Some(Credentials::AccessKey(SecretValue::new("wrong-key")));
    let wrong = EdgeClient::new(config).expect("config");
    let error = wrong.get_app("app-shop").await.expect_err("unauthorized");
    assert_eq!(error.reason(), ApiFailure::Unauthorized);
    assert!(!error.is_retryable());
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(Operation, &'static str)>>);

impl RequestObserver for Recorder {
    fn record(&self, operation: Operation, status_class: &'static str, _elapsed: Duration) {
        self.0.lock().expect("lock").push((operation, status_class));
    }
}

#[tokio::test]
async fn every_exchange_is_reported_by_operation_and_status_class() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let recorder = Arc::new(Recorder::default());
    let mut config = ClientConfig::new(
        base.clone(),
        base.clone(),
        Credentials::AccessKey(SecretValue::new(ACCESS_KEY)),
    );
    config.retry = fast_retries(3);
    let hooks = Hooks {
        observer: Some(recorder.clone()),
        write_gate: None,
    };
    let client = EdgeClient::with_hooks(config, hooks).expect("config");
    admin(
        &base,
        "POST",
        "/_sim/faults",
        json!({"pathPrefix": "/mc/apps/", "status": 503, "count": 2}),
    )
    .await;
    client.get_app("app-shop").await.expect("third attempt succeeds");
    client.access_lists(4242).await.expect_err("unknown zone");
    let seen = recorder.0.lock().expect("lock").clone();
    assert_eq!(
        seen,
        [
            (Operation::GetApp, "5xx"),
            (Operation::GetApp, "5xx"),
            (Operation::GetApp, "2xx"),
            (Operation::ListAccessLists, "4xx")
        ]
    );
    assert_eq!(Operation::GetApp.as_str(), "get_app");
}

struct Gate(AtomicBool);

impl WriteGate for Gate {
    fn may_write(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_closed_write_gate_withholds_writes_but_not_reads() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let gate = Arc::new(Gate(AtomicBool::new(false)));
    let config = ClientConfig::new(
        base.clone(),
        base.clone(),
        Credentials::AccessKey(SecretValue::new(ACCESS_KEY)),
    );
    let hooks = Hooks {
        observer: None,
        write_gate: Some(gate.clone()),
    };
    let client = EdgeClient::with_hooks(config, hooks).expect("config");
    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    let lists = client.access_lists(1001).await.expect("reads pass a closed gate");
    let item = lists.custom_lists.first().expect("a custom list");
    let patch = AccessListConfigurationPatch {
        is_enabled: Some(!item.is_enabled),
        action: None,
    };
    let withheld = client
        .update_access_list(1001, item.configuration_id, &patch)
        .await
        .expect_err("withheld");
    assert!(matches!(withheld, ApiError::WriteWithheld), "{withheld:?}");
    let sent: Vec<String> = journal(&base)
        .await
        .iter()
        .map(|entry| entry["method"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(sent, ["GET"], "the withheld PATCH never reached the platform");
    gate.0.store(true, Ordering::SeqCst);
    client
        .update_access_list(1001, item.configuration_id, &patch)
        .await
        .expect("an open gate lets the write through");
}

#[tokio::test]
async fn retryable_failures_back_off_and_honour_retry_after() {
    let mut document = fixtures_at();
    document.clock = None;
    let sim = start(document).await;
    let base = sim.base_url();
    let client = client_of(&sim, fast_retries(3));
    admin(
        &base,
        "POST",
        "/_sim/faults",
        json!({"pathPrefix": "/mc/apps/", "status": 500, "count": 3}),
    )
    .await;
    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    client
        .get_app("app-shop")
        .await
        .expect("succeeds on the fourth attempt");
    let statuses: Vec<u64> = journal(&base)
        .await
        .iter()
        .filter_map(|e| e["status"].as_u64())
        .collect();
    assert_eq!(statuses, [500, 500, 500, 200]);

    admin(
        &base,
        "POST",
        "/_sim/faults",
        json!({"pathPrefix": "/mc/apps/", "status": 500, "count": 10}),
    )
    .await;
    let error = client.get_app("app-shop").await.expect_err("retries are bounded");
    assert_eq!(error.reason(), ApiFailure::ServerError);
    admin(&base, "DELETE", "/_sim/faults", json!(null)).await;

    admin(
        &base,
        "POST",
        "/_sim/faults",
        json!({"pathPrefix": "/mc/apps/", "status": 429, "count": 1, "retryAfter": 1}),
    )
    .await;
    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    let started = std::time::Instant::now();
    client.get_app("app-shop").await.expect("succeeds after Retry-After");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        started.elapsed()
    );
    let times: Vec<i64> = journal(&base)
        .await
        .iter()
        .filter_map(|e| e["timeMs"].as_i64())
        .collect();
    assert_eq!(times.len(), 2);
    assert!(
        times[1] - times[0] >= 1000,
        "the retry came {} ms after the 429",
        times[1] - times[0]
    );

    admin(&base, "DELETE", "/_sim/requests", json!(null)).await;
    let error = client.get_app("nope").await.expect_err("404");
    assert_eq!(error.reason(), ApiFailure::NotFound);
    assert_eq!(journal(&base).await.len(), 1, "non-retryable errors are not retried");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_hundred_log_requests_for_one_pull_zone_see_no_429() {
    let mut document = fixtures_at();
    document.clock = None;
    let sim = start(document).await;
    let mut config = ClientConfig::new(
        sim.base_url(),
        sim.base_url(),
        Credentials::AccessKey(SecretValue::new(ACCESS_KEY)),
    );
    config.retry = RetryPolicy::none();
    config.timeout = Duration::from_secs(24 * 3600);
    let client = EdgeClient::new(config).expect("config");
    let started = tokio::time::Instant::now();
    for i in 0..100 {
        client
            .query_logs(
                501,
                &LogQuery {
                    limit: Some(1),
                    ..LogQuery::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("request {i}: {e}"));
    }
    let limiter_time = started.elapsed();
    println!("100 logging requests: {limiter_time:?} of limiter time");
    assert!(
        limiter_time >= Duration::from_secs(30),
        "100 requests took {limiter_time:?} of limiter time"
    );
    let answers: Vec<u16> = sim.sim.journal().iter().map(|e| e.status).collect();
    assert_eq!(answers.len(), 100);
    assert!(answers.iter().all(|&s| s == 200), "{answers:?}");
}

#[tokio::test]
async fn the_access_key_never_appears_in_debug_output_or_errors() {
    let secret = "sk-live-very-secret-0123456789";
    let config = ClientConfig::new(
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        Credentials::AccessKey(SecretValue::new(secret)),
    );
    let client = EdgeClient::new(ClientConfig {
        retry: RetryPolicy::none(),
        ..config.clone()
    })
    .expect("config");
    for text in [
        format!("{config:?}"),
        format!("{client:?}"),
        format!("{:?}", config.credentials),
    ] {
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("redacted"), "{text}");
    }
    let error = client.get_app("app").await.expect_err("nothing listens on port 9");
    assert_eq!(error.reason(), ApiFailure::TransportError);
    for text in [error.to_string(), format!("{error:?}")] {
        assert!(!text.contains(secret), "{text}");
    }

    let sim = start(fixtures_at()).await;
    let wrong = EdgeClient::new(ClientConfig {
        retry: RetryPolicy::none(),
        ..ClientConfig::new(
            sim.base_url(),
            sim.base_url(),
            Credentials::AccessKey(SecretValue::new(secret)),
        )
    })
    .expect("config");
    for error in [
        wrong.get_app("app-shop").await.expect_err("401"),
        wrong.query_logs(501, &LogQuery::default()).await.expect_err("403"),
    ] {
        for text in [error.to_string(), format!("{error:?}")] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
