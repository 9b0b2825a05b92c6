//! edge-sim admin API: state, seeding with validation, changes behind the client's
//! back, clock, faults, the request journal, and the token that guards it.

use std::time::Instant;

use crate::support::sim::{ACCESS_KEY, fixtures_at, http, start};
use edge_operator::api::SecretFile;
use edge_operator::sim::{ADMIN_TOKEN_HEADER, AdminAccess, Sim, spawn_sim_with};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn admin(method: &str, url: String, body: Option<Value>) -> (StatusCode, Value) {
    let mut request = http().request(method.parse().expect("method"), url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn platform_get(base: &str, path: &str) -> reqwest::Response {
    http()
        .get(format!("{base}{path}"))
        .header("AccessKey", ACCESS_KEY)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn state_round_trips_and_reset_empties_it() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let (status, state) = admin("GET", format!("{base}/_sim/state"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["clock"], "2026-11-20T12:00:00Z");
    assert_eq!(
        (state["accessKeys"].clone(), state["jwtSecret"].clone()),
        (json!(["<redacted>"]), json!("<redacted>")),
        "the admin API never answers credentials"
    );
    assert!(!state.to_string().contains(ACCESS_KEY));
    let mut changed = state.clone();
    changed["accessKeys"] = json!(["rotated-key"]);
    let (status, _) = admin("PUT", format!("{base}/_sim/state"), Some(changed.clone())).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, read_back) = admin("GET", format!("{base}/_sim/state"), None).await;
    changed["accessKeys"] = json!(["<redacted>"]);
    assert_eq!(read_back, changed);
    assert_eq!(
        platform_get(&base, "/mc/apps/app-shop").await.status(),
        StatusCode::UNAUTHORIZED
    );

    let (status, problem) = admin(
        "PUT",
        format!("{base}/_sim/state"),
        Some(json!({"shieldZones": [{"id": 1}, {"id": 1}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("shieldZones[1].id")),
        "{problem}"
    );
    let (status, problem) = admin(
        "PUT",
        format!("{base}/_sim/state"),
        Some(json!({"pullZones": [{"id": 1, "colour": 2}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().is_some_and(|d| d.contains("colour")),
        "{problem}"
    );

    let (status, _) = admin("POST", format!("{base}/_sim/reset"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, empty) = admin("GET", format!("{base}/_sim/state"), None).await;
    assert_eq!(
        empty,
        json!({"accessKeys": [], "shieldZones": [], "pullZones": [], "apps": []})
    );
}

#[tokio::test]
async fn seeding_validates_and_names_the_bad_index_and_member() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let good = json!({"timestamp": 1, "feature": "waf", "ruleId": "r", "ip": "1.1.1.1", "ja4": "j", "ua": "u",
                      "url": "/", "asn": "1", "country": "DE", "action": "block"});
    let mut missing = good.clone();
    missing.as_object_mut().expect("object").remove("ip");
    let mut wrong_type = good.clone();
    wrong_type["timestamp"] = json!("noon");
    let mut unknown = good.clone();
    unknown["colour"] = json!("red");
    for (bad, member) in [
        (missing, "events[1].ip"),
        (wrong_type, "events[1].timestamp"),
        (unknown, "events[1]"),
    ] {
        let (status, problem) = admin(
            "POST",
            format!("{base}/_sim/shield-zones/1001/events"),
            Some(json!([good, bad])),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            problem["detail"].as_str().is_some_and(|d| d.starts_with(member)),
            "{member}: {problem}"
        );
    }
    let (status, body) = admin(
        "POST",
        format!("{base}/_sim/shield-zones/1001/events"),
        Some(json!([good, good])),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"inserted": 2})));
    let (status, _) = admin(
        "POST",
        format!("{base}/_sim/shield-zones/4242/events"),
        Some(json!([good])),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, problem) = admin(
        "POST",
        format!("{base}/_sim/pullzones/501/logs"),
        Some(json!([{"timestamp": "x"}])),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("logs[0].timestamp")),
        "{problem}"
    );
    let (status, body) = admin(
        "POST",
        format!("{base}/_sim/pullzones/501/logs"),
        Some(json!([{"timestamp": "2026-11-20T11:00:00Z"}])),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"inserted": 1})));
}

#[tokio::test]
async fn platform_changes_behind_the_clients_back() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let (status, _) = admin(
        "PATCH",
        format!("{base}/_sim/apps/app-shop"),
        Some(json!({"status": "failing"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let app: Value = platform_get(&base, "/mc/apps/app-shop")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(app["status"], "failing");
    assert_eq!(app["name"], "shop-frontend", "a merge patch keeps the other members");
    let (status, _) = admin(
        "PATCH",
        format!("{base}/_sim/apps/app-shop"),
        Some(json!({"id": "other"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, list) = admin(
        "PATCH",
        format!("{base}/_sim/shield-zones/1001/access-lists/9101"),
        Some(json!({"isEnabled": true, "action": 4})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (list["isEnabled"].clone(), list["action"].clone()),
        (json!(true), json!(4))
    );
    let lists: Value = platform_get(&base, "/shield/shield-zone/1001/access-lists")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(lists["managedLists"][0]["action"], 4);

    let complete = || {
        http()
            .post(format!("{base}/pullzone/completeExternalHttpCertificate"))
            .header("AccessKey", ACCESS_KEY)
            .json(&json!({"Hostname": "new.example.com"}))
            .send()
    };
    assert_eq!(complete().await.expect("request").status(), StatusCode::BAD_REQUEST);
    let (status, _) = admin(
        "PATCH",
        format!("{base}/_sim/pullzones/501/hostnames/new.example.com"),
        Some(json!({"challenge": "ready"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(complete().await.expect("request").status(), StatusCode::OK);
    let (status, _) = admin(
        "PATCH",
        format!("{base}/_sim/pullzones/501/hostnames/new.example.com"),
        Some(json!({"challenge": "maybe"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn clock_can_be_fixed_and_released() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let (_, clock) = admin(
        "PUT",
        format!("{base}/_sim/clock"),
        Some(json!({"now": "2026-11-21T00:00:00Z"})),
    )
    .await;
    assert_eq!(clock, json!({"now": "2026-11-21T00:00:00Z", "fixed": true}));
    let (_, clock) = admin("DELETE", format!("{base}/_sim/clock"), None).await;
    assert_eq!(clock["fixed"], false);
    let real: chrono::DateTime<chrono::Utc> = serde_json::from_value(clock["now"].clone()).expect("time");
    assert!((chrono::Utc::now() - real).num_seconds().abs() < 5);
    let (status, _) = admin("PUT", format!("{base}/_sim/clock"), Some(json!({"now": "tomorrow"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn faults_answer_the_next_matching_requests_and_the_journal_records_them() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let fault = json!({"method": "GET", "pathPrefix": "/mc/apps/", "status": 503, "count": 2, "retryAfter": 7,
                       "body": {"title": "maintenance"}});
    let (status, _) = admin("POST", format!("{base}/_sim/faults"), Some(fault)).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = admin(
        "POST",
        format!("{base}/_sim/faults"),
        Some(json!({"pathPrefix": "/shield/rate-limits", "count": 1, "delayMs": 300})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = admin(
        "POST",
        format!("{base}/_sim/faults"),
        Some(json!({"pathPrefix": "/", "count": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a fault needs a status or a delay");
    admin("DELETE", format!("{base}/_sim/requests"), None).await;

    for _ in 0..2 {
        let response = platform_get(&base, "/mc/apps/app-shop").await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "7");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({"title": "maintenance"})
        );
    }
    assert_eq!(
        platform_get(&base, "/mc/apps/app-shop").await.status(),
        StatusCode::OK,
        "count is used up"
    );
    let started = Instant::now();
    assert_eq!(
        platform_get(&base, "/shield/rate-limits/1001").await.status(),
        StatusCode::OK
    );
    assert!(started.elapsed().as_millis() >= 300, "delayed then answered normally");

    let (_, journal) = admin("GET", format!("{base}/_sim/requests"), None).await;
    let statuses: Vec<(String, u64)> = journal
        .as_array()
        .expect("journal")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap_or_default().to_string(),
                e["status"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("/mc/apps/app-shop".to_string(), 503),
            ("/mc/apps/app-shop".to_string(), 503),
            ("/mc/apps/app-shop".to_string(), 200),
            ("/shield/rate-limits/1001".to_string(), 200),
        ]
    );
    assert!(journal[0]["method"] == "GET" && journal[0]["time"].is_string() && journal[0]["timeMs"].is_i64());
    admin("DELETE", format!("{base}/_sim/requests"), None).await;
    let (_, journal) = admin("GET", format!("{base}/_sim/requests"), None).await;
    assert_eq!(journal, json!([]), "admin requests are not journaled");
    let (status, _) = admin("DELETE", format!("{base}/_sim/faults"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_guarded_admin_api_needs_the_token_and_follows_its_file() {
    let dir = tempfile::tempdir().expect("a directory for the token");
    let file = dir.path().join("token");
    std::fs::write(&file, "first-token\n").expect("token file");
    let access = AdminAccess::Token(SecretFile::open(file.clone(), "admin token").expect("token file"));
    let sim = spawn_sim_with(Sim::new(fixtures_at()), access, None)
        .await
        .expect("edge-sim starts");
    let base = sim.base_url();
    let clock = |header: Option<(&'static str, String)>| {
        let mut request = http().get(format!("{base}/_sim/clock"));
        if let Some((name, value)) = header {
            request = request.header(name, value);
        }
        async move { request.send().await.expect("request") }
    };

    let missing = clock(None).await;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert!(missing.headers().contains_key("www-authenticate"));
    assert_eq!(
        clock(Some(("Authorization", "Bearer wrong".into()))).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let refused = clock(Some((ADMIN_TOKEN_HEADER, "first-token-but-longer".into())))
        .await
        .text()
        .await
        .expect("body");
    assert!(
        !refused.contains("first-token"),
        "a refusal never echoes a token: {refused}"
    );
    assert_eq!(
        clock(Some(("Authorization", "Bearer first-token".into())))
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        clock(Some((ADMIN_TOKEN_HEADER, "first-token".into()))).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        platform_get(&base, "/shield/shield-zone/1001/access-lists")
            .await
            .status(),
        StatusCode::OK,
        "the platform API keeps its own AccessKey authentication"
    );

    // A rotated Secret replaces the mounted file: the new token is taken, the old refused.
    std::fs::write(&file, "second-token-of-another-length").expect("token file");
    assert_eq!(
        clock(Some(("Authorization", "Bearer first-token".into())))
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        clock(Some(("Authorization", "Bearer second-token-of-another-length".into())))
            .await
            .status(),
        StatusCode::OK
    );

    // A token that cannot be read refuses everyone rather than opening the API.
    std::fs::remove_file(&file).expect("remove token file");
    assert_eq!(
        clock(Some(("Authorization", "Bearer second-token-of-another-length".into())))
            .await
            .status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
}
