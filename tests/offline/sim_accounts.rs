//! edge-sim accounts: a key sees only its account's zones, Pull Zones, hostnames and
//! apps; another account's resource answers exactly as a missing one does.

use crate::support::sim::{ACCESS_KEY, TEAM_B_KEY, http, start, two_accounts};
use edge_operator::sim::SimDocument;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Status and body of a request, with every `id` in the body replaced by `ID`.
async fn answer(
    base: &str,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
    id: &str,
) -> (StatusCode, String) {
    let mut request = http()
        .request(method.parse().expect("method"), format!("{base}{path}"))
        .header("AccessKey", key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let text = response.text().await.expect("body");
    (status, text.replace(id, "ID"))
}

/// (method, path, body) of every read and write that names `id`.
fn requests(zone: &str, pull_zone: &str, hostname: &str) -> Vec<(&'static str, String, Option<Value>)> {
    vec![
        ("GET", format!("/shield/shield-zone/{zone}/access-lists"), None),
        (
            "PATCH",
            format!("/shield/shield-zone/{zone}/access-lists/configurations/9101"),
            Some(json!({"isEnabled": true})),
        ),
        ("GET", format!("/shield/rate-limits/{zone}"), None),
        (
            "POST",
            format!("/shield/event-logs/{zone}/search"),
            Some(json!({"filters": {"timestamp": {"gte": 1, "lte": 2}}})),
        ),
        ("GET", format!("/shield/shield-zone/get-by-pullzone/{pull_zone}"), None),
        ("GET", format!("/v2/pullzones/{pull_zone}/logs"), None),
        (
            "POST",
            "/pullzone/completeExternalHttpCertificate".to_string(),
            Some(json!({"Hostname": hostname})),
        ),
    ]
}

#[tokio::test]
async fn another_accounts_resources_answer_as_missing_ones() {
    let sim = start(two_accounts()).await;
    let base = sim.base_url();
    // (key, a resource of the other account, a resource nobody has)
    let cases = [
        (
            ACCESS_KEY,
            ("1002", "502", "static.example.com"),
            ("4242", "4343", "missing.example.com"),
        ),
        (
            TEAM_B_KEY,
            ("1001", "501", "shop.example.com"),
            ("4242", "4343", "missing.example.com"),
        ),
    ];
    for (key, theirs, missing) in cases {
        let hidden = requests(theirs.0, theirs.1, theirs.2);
        let absent = requests(missing.0, missing.1, missing.2);
        for ((method, path, body), (_, missing_path, missing_body)) in hidden.into_iter().zip(absent) {
            let seen = answer(&base, key, method, &path, body, theirs.0).await;
            let seen = (seen.0, seen.1.replace(theirs.1, "ID").replace(theirs.2, "HOST"));
            let nothing = answer(&base, key, method, &missing_path, missing_body, missing.0).await;
            let nothing = (nothing.0, nothing.1.replace(missing.1, "ID").replace(missing.2, "HOST"));
            assert!(seen.0.is_client_error(), "{method} {path}: {seen:?}");
            assert_eq!(seen, nothing, "{method} {path} with the other account's key");
        }
    }
    let app = answer(&base, TEAM_B_KEY, "GET", "/mc/apps/app-shop", None, "app-shop").await;
    let missing = answer(&base, TEAM_B_KEY, "GET", "/mc/apps/app-none", None, "app-none").await;
    assert_eq!(app.0, StatusCode::NOT_FOUND);
    assert_eq!(app, missing);
}

#[tokio::test]
async fn each_account_sees_and_writes_its_own_resources() {
    let sim = start(two_accounts()).await;
    let base = sim.base_url();
    for (key, zone, pull_zone) in [(ACCESS_KEY, 1001, 501), (TEAM_B_KEY, 1002, 502)] {
        let lists = answer(
            &base,
            key,
            "GET",
            &format!("/shield/shield-zone/{zone}/access-lists"),
            None,
            "-",
        )
        .await;
        assert_eq!(lists.0, StatusCode::OK, "{key} reads zone {zone}: {lists:?}");
        let by_pull_zone = answer(
            &base,
            key,
            "GET",
            &format!("/shield/shield-zone/get-by-pullzone/{pull_zone}"),
            None,
            "-",
        )
        .await;
        assert_eq!(by_pull_zone.0, StatusCode::OK, "{by_pull_zone:?}");
    }
    let patched = answer(
        &base,
        ACCESS_KEY,
        "PATCH",
        "/shield/shield-zone/1001/access-lists/configurations/9101",
        Some(json!({"isEnabled": true})),
        "-",
    )
    .await;
    assert_eq!(patched.0, StatusCode::OK, "{patched:?}");
    let certificate = answer(
        &base,
        TEAM_B_KEY,
        "POST",
        "/pullzone/completeExternalHttpCertificate",
        Some(json!({"Hostname": "static.example.com"})),
        "-",
    )
    .await;
    assert_eq!(certificate.0, StatusCode::OK, "{certificate:?}");
}

#[tokio::test]
async fn account_keys_are_redacted_from_the_state() {
    let sim = start(two_accounts()).await;
    let state = http()
        .get(format!("{}/_sim/state", sim.base_url()))
        .send()
        .await
        .expect("state")
        .text()
        .await
        .expect("body");
    assert!(!state.contains(TEAM_B_KEY), "{state}");
    assert!(state.contains("team-b"), "{state}");
}

#[test]
fn documents_with_inconsistent_accounts_are_refused() {
    let yaml = |accounts: &str| {
        format!("accessKeys: [a]\nshieldZones: [{{id: 1}}]\npullZones: [{{id: 2}}]\naccounts:\n{accounts}")
    };
    let cases = [
        ("  - {name: default, accessKeys: [b]}", "accounts[0].name"),
        ("  - {name: x, accessKeys: [a]}", "accounts[0].accessKeys[0]"),
        (
            "  - {name: x, shieldZones: [9]}",
            "Shield Zone 9 is not in the document",
        ),
        (
            "  - {name: x, pullZones: [2]}\n  - {name: y, pullZones: [2]}",
            "Pull Zone 2 already belongs to another account",
        ),
        ("  - {name: x}\n  - {name: x}", "accounts[1].name"),
    ];
    for (accounts, expected) in cases {
        let error = SimDocument::from_yaml(&yaml(accounts)).expect_err(accounts).to_string();
        assert!(error.contains(expected), "{accounts}: {error}");
    }
    SimDocument::from_yaml(&yaml(
        "  - {name: x, accessKeys: [b], shieldZones: [1], pullZones: [2]}",
    ))
    .expect("valid");
}
