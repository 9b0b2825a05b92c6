//! Fixtures in the platform's published types, and answers that carry what the platform
//! always sends.

use super::*;

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
