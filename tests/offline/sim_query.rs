//! edge-sim, optional query parameters on every route that has them: sent empty, as a
//! client generated from the platform's schemas sends them, they answer exactly as when
//! left out; a malformed value still answers 400 naming the parameter.

use std::collections::BTreeSet;

use crate::sim_logging::{entry, seed_logs};
use crate::support::sim::{ACCESS_KEY, NOW, fixtures_at, http, start};
use chrono::{DateTime, Duration, Utc};
use edge_operator::api::LogQuery;
use edge_operator::sim::RunningSim;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How a route answers a malformed parameter.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    /// The Shield listings: ProblemDetails, the member in `errors`.
    Problem,
    /// The rate-limit list: the platform's `{statusCode: 400}`, which names nothing.
    StatusCode,
    /// The logging API: `{"error": {"code": "invalid_request", "message"}}`.
    Logging,
}

/// A route with optional query parameters, as the API reference and its supplement list
/// them; each parameter with a malformed value where its type has one (free text has
/// none).
struct Route {
    path: &'static str,
    refusal: Refusal,
    parameters: &'static [(&'static str, Option<&'static str>)],
}

const PAGING: &[(&str, Option<&str>)] = &[("page", Some("first")), ("perPage", Some("0"))];

const ROUTES: [Route; 4] = [
    Route {
        path: "/shield/rate-limits/1001",
        refusal: Refusal::StatusCode,
        parameters: PAGING,
    },
    Route {
        path: "/shield/shield-zones",
        refusal: Refusal::Problem,
        parameters: PAGING,
    },
    Route {
        path: "/v2/pullzones/501/logs",
        refusal: Refusal::Logging,
        parameters: &[
            ("from", Some("yesterday")),
            ("to", Some("2026-13-01")),
            ("status", Some("teapot")),
            ("cacheStatus", Some("LUKEWARM")),
            ("country", None),
            ("edgeLocation", None),
            ("remoteIp", None),
            ("urlContains", None),
            ("userAgentContains", None),
            ("refererContains", None),
            ("search", Some("a b c d e f g h i j k l m n o p q")),
            ("requestId", None),
            ("includeOriginShield", Some("maybe")),
            ("limit", Some("0")),
            ("offset", Some("-1")),
            ("order", Some("sideways")),
        ],
    },
    Route {
        path: "/11-20-26/501.log",
        refusal: Refusal::Logging,
        parameters: &[
            ("start", Some("first")),
            ("end", Some("-1")),
            ("order", Some("sideways")),
            ("sort", Some("sideways")),
            ("status", Some("404")),
            ("search", None),
            ("download", Some("maybe")),
        ],
    },
];

fn now() -> DateTime<Utc> {
    NOW.parse().expect("valid")
}

/// Status and body of `GET path?query`; a JSON body as JSON, any other as text.
async fn answer(sim: &RunningSim, path: &str, query: &str) -> (StatusCode, Value) {
    let separator = if query.is_empty() { "" } else { "?" };
    let response = http()
        .get(format!("{}{path}{separator}{query}", sim.base_url()))
        .header("AccessKey", ACCESS_KEY)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// Each case of a route runs in a logging rate-limit window of its own (30 requests a
/// Pull Zone in 10 s; the emulator's clock is fixed): the clock moves on 11 s a case.
fn next_window(sim: &RunningSim, case: &mut i64) {
    *case += 1;
    sim.sim.clock.set(Some(now() + Duration::seconds(11 * *case)));
}

async fn seeded() -> RunningSim {
    let sim = start(fixtures_at()).await;
    let entries = (0..5)
        .map(|i| entry(i, Duration::minutes(10 * (i + 1)), 200, "HIT"))
        .collect();
    seed_logs(&sim.base_url(), 501, entries).await;
    sim
}

#[tokio::test]
async fn every_optional_parameter_sent_empty_answers_as_when_left_out() {
    let sim = seeded().await;
    let mut case = 0;
    for route in &ROUTES {
        next_window(&sim, &mut case);
        let absent = answer(&sim, route.path, "").await;
        assert_eq!(absent.0, StatusCode::OK, "{}: {}", route.path, absent.1);
        let all_empty: Vec<String> = route.parameters.iter().map(|(name, _)| format!("{name}=")).collect();
        let empty = answer(&sim, route.path, &all_empty.join("&")).await;
        assert_eq!(empty, absent, "{}?{}", route.path, all_empty.join("&"));
        let bare: Vec<&str> = route.parameters.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            answer(&sim, route.path, &bare.join("&")).await,
            absent,
            "{}",
            route.path
        );
    }
}

#[tokio::test]
async fn the_generated_client_call_of_the_legacy_log_answers_its_lines() {
    let sim = seeded().await;
    let without = answer(&sim, "/11-20-26/501.log", "").await;
    let with = answer(&sim, "/11-20-26/501.log", "end=&order=&search=&start=&status=").await;
    assert_eq!(with.0, StatusCode::OK, "{}", with.1);
    assert_eq!(with.1.as_str().map(|text| text.lines().count()), Some(5));
    assert_eq!(with, without);
}

#[tokio::test]
async fn a_malformed_value_still_answers_400_naming_its_parameter() {
    let sim = seeded().await;
    let mut case = 0;
    for route in &ROUTES {
        for (name, malformed) in route.parameters {
            let Some(value) = malformed else { continue };
            next_window(&sim, &mut case);
            let query = format!("{name}={}", urlencoding(value));
            let (status, body) = answer(&sim, route.path, &query).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{}?{query}: {body}", route.path);
            match route.refusal {
                Refusal::StatusCode => assert_eq!(body, json!({"statusCode": 400}), "{}?{query}", route.path),
                Refusal::Problem => {
                    assert!(body["errors"].get(*name).is_some(), "{}?{query}: {body}", route.path);
                    assert!(body["detail"].as_str().is_some_and(|d| d.contains(name)), "{body}");
                }
                Refusal::Logging => {
                    assert_eq!(
                        body["error"]["code"], "invalid_request",
                        "{}?{query}: {body}",
                        route.path
                    );
                    let message = body["error"]["message"].as_str().unwrap_or_default();
                    assert!(
                        message.contains(&format!("`{name}`")),
                        "{}?{query}: {message}",
                        route.path
                    );
                }
            }
        }
    }
}

#[test]
fn the_v2_parameters_are_those_the_client_sends() {
    let every = LogQuery {
        from: Some(now()),
        to: Some(now()),
        status: vec!["5xx".into()],
        cache_status: vec!["HIT".into()],
        country: Some("DE".into()),
        edge_location: Some("DE".into()),
        remote_ip: Some("203.0.113.7".into()),
        url_contains: Some("a".into()),
        user_agent_contains: Some("a".into()),
        referer_contains: Some("a".into()),
        search: Some("a".into()),
        request_id: Some("a".into()),
        include_origin_shield: Some(true),
        limit: Some(1),
        offset: Some(1),
        order: Some(edge_operator::api::models::logging::SortOrder::Asc),
    };
    let sent: BTreeSet<&str> = every.params().into_iter().map(|(name, _)| name).collect();
    let listed: BTreeSet<&str> = ROUTES[2].parameters.iter().map(|(name, _)| *name).collect();
    assert_eq!(sent, listed);
}

fn urlencoding(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
