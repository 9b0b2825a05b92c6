//! ContainerAppWatch end to end: app mirror, every rate-limit page, security events
//! and CDN summary; a failing app turns AppReady False within the interval.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, eventually, wait_for_condition};
use crate::support::sim::{example_fixtures, set_app_status, start};
use edge_operator::controller::kinds::app_watch::resource::ContainerAppWatch;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

async fn post(base: &str, path: &str, body: Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .expect("admin");
    assert!(response.status().is_success(), "{path}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrors_the_app_rate_limits_security_events_and_cdn_traffic() {
    let mut document = example_fixtures();
    document.shield_zones[0].rate_limits = (1..=25)
        .map(|id| {
            serde_json::from_value(json!({"id": id, "shieldZoneId": 1001, "ruleName": format!("rule-{id:02}"),
                "ruleConfiguration": {"actionType": 1 + id % 3, "requestCount": id * 10, "timeframe": 60, "blockTime": 300}}))
            .expect("rule")
        })
        .collect();
    let sim = start(document).await;
    let base = sim.base_url();
    let now = chrono::Utc::now();
    let events: Vec<Value> = (0..150)
        .map(|i| {
            let (rule, ip) = if i < 100 { ("942100", "203.0.113.9") } else { ("941100", "198.51.100.4") };
            json!({"timestamp": now.timestamp_millis() - 1000 * (i + 1), "feature": "waf", "ruleId": rule, "ip": ip,
                   "ja4": "j", "ua": "sqlmap", "url": "/login", "asn": "64500", "country": "DE", "action": if i % 2 == 0 { "block" } else { "log" }})
        })
        .collect();
    post(&base, "/_sim/shield-zones/1001/events", Value::Array(events)).await;
    let logs: Vec<Value> = (0..40)
        .map(|i| {
            json!({"timestamp": now - chrono::Duration::seconds(10 * (i + 1)), "requestId": format!("r{i}"),
                   "statusCode": if i % 10 == 0 { 503 } else { 200 }, "cacheStatus": if i % 4 == 0 { "MISS" } else { "HIT" }})
        })
        .collect();
    post(&base, "/_sim/pullzones/501/logs", Value::Array(logs)).await;

    let namespace = TestNamespace::create("caw");
    let _operator = Operator::start(&namespace.name, &base, &[]);
    cluster().apply(Manifest::app_watch(
        &namespace.name,
        "shop",
        json!({
            "appId": "app-shop",
            "interval": "10s",
            "shieldZoneId": 1001,
            "rateLimits": {"enabled": true},
            "securityEvents": {"window": "1h", "top": 2, "warnThreshold": 120},
            "cdn": {"window": "1h"},
        }),
    ));
    let api: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, &namespace.name);

    let shop = eventually("the first poll", Duration::from_secs(30), || async {
        let shop = api.get("shop").await.ok()?;
        (shop.conditions().len() == 6).then_some(shop)
    })
    .await;
    let condition = |type_: &str| shop.condition(type_).expect(type_);
    let status = shop.status.clone().expect("status");
    let app = status.app.clone().expect("app");
    assert_eq!(
        (app.name.as_str(), app.status.as_str(), app.instances),
        ("shop-frontend", "active", 2)
    );
    assert_eq!(app.endpoints, ["shop.example.com"]);
    assert_eq!(app.images[0].tag, "1.8.2");
    assert!(app.images[0].digest.starts_with("sha256:"));
    assert_eq!((app.autoscaling_min, app.autoscaling_max), (1, 5));
    assert_eq!(condition("AppReady").reason, "Active");
    assert_eq!(
        (format!("{:?}", condition("Ready").status), condition("Ready").reason),
        ("True".to_string(), "AppActive".to_string()),
        "active, with every summary synced (Elevated events are a summary, not a failure)"
    );
    assert_eq!(condition("Synced").reason, "Polled", "on schedule");
    let observed_at = status.observed_at.as_deref().expect("observedAt");
    let age = chrono::Utc::now().fixed_offset() - chrono::DateTime::parse_from_rfc3339(observed_at).expect("RFC 3339");
    assert!(age < chrono::Duration::seconds(30), "{observed_at}");

    let rules = status.rate_limits.clone().expect("rate limits");
    assert_eq!(rules.len(), 25, "all three pages");
    assert_eq!(rules[24].name, "rule-25");
    assert_eq!(rules[0].action, "Log");
    assert_eq!(condition("RateLimitsSynced").reason, "Synced");

    let security = status.security_events.clone().expect("security events");
    assert_eq!(security.total, 150);
    assert_eq!(security.top.len(), 2);
    assert_eq!(security.top[0].key["ruleId"], "942100");
    assert_eq!(security.top[0].key["ip"], "203.0.113.9");
    assert_eq!(
        (security.top[0].count, security.top[0].blocked, security.top[0].logged),
        (100, 50, 50)
    );
    let events_condition = condition("SecurityEvents");
    assert_eq!(events_condition.reason, "Elevated");
    assert!(
        events_condition.message.contains("942100"),
        "{}",
        events_condition.message
    );

    let cdn = status.cdn.clone().expect("cdn");
    assert_eq!(cdn.pull_zone_id, 501, "defaults to the app's endpoint Pull Zone");
    assert_eq!(cdn.requests, 40);
    assert_eq!(cdn.by_status_class["5xx"], 4);
    assert_eq!(cdn.by_cache_status["MISS"], 10);
    assert_eq!(cdn.hit_ratio, "0.750");
    assert_eq!(cdn.coverage, "1", "a quiet Pull Zone is read whole at the first poll");
    let to = chrono::DateTime::parse_from_rfc3339(&cdn.to).expect("RFC 3339");
    let polled = chrono::DateTime::parse_from_rfc3339(observed_at).expect("RFC 3339");
    assert!(
        (to - polled).num_milliseconds().abs() < 1000,
        "the summary ends at the poll: {} vs {observed_at}",
        cdn.to
    );

    set_app_status(&base, "app-shop", "failing").await;
    let failing = eventually("AppReady False", Duration::from_secs(15), || async {
        let ready = api.get("shop").await.ok()?.condition("AppReady")?;
        (ready.reason == "Failing").then_some(ready)
    })
    .await;
    assert_eq!(format!("{:?}", failing.status), "False");
    let stalled = api.get("shop").await.expect("object");
    let stalled = stalled.condition("Stalled").expect("Stalled");
    assert_eq!(stalled.reason, "Failing", "a failing app waits for a person");
    assert!(
        sim.sim
            .journal()
            .iter()
            .all(|e| e.method == "GET" || e.path.contains("/search")),
        "observe only: nothing but reads and searches"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_fed_ten_thousand_rules_and_huge_event_keys_stays_under_its_cap() {
    let mut document = example_fixtures();
    let long_name = "n".repeat(1_000);
    document.shield_zones[0].rate_limits = (1..=10_000)
        .map(|id| {
            serde_json::from_value(
                json!({"id": id, "shieldZoneId": 1001, "ruleName": format!("{id}-{long_name}"),
                "ruleConfiguration": {"actionType": 1, "requestCount": 10, "timeframe": 60, "blockTime": 300}}),
            )
            .expect("rule")
        })
        .collect();
    let sim = start(document).await;
    let base = sim.base_url();
    let now = chrono::Utc::now().timestamp_millis();
    // Attacker traffic: 50 user agents and URLs of 10,000 characters each.
    let events: Vec<Value> = (0..50)
        .map(|i| {
            json!({"timestamp": now - 1000 * (i + 1), "feature": "waf", "ruleId": "942100", "ip": "203.0.113.9",
                   "ja4": "j", "ua": format!("{i}{}", "u".repeat(10_000)), "url": format!("/{i}{}", "p".repeat(10_000)),
                   "asn": "64500", "country": "DE", "action": "block"})
        })
        .collect();
    post(&base, "/_sim/shield-zones/1001/events", Value::Array(events)).await;
    let namespace = TestNamespace::create("caw-bounded");
    let _operator = Operator::start(&namespace.name, &base, &[]);
    cluster().apply(Manifest::app_watch(
        &namespace.name,
        "flooded",
        json!({
            "appId": "app-shop",
            "interval": "10s",
            "shieldZoneId": 1001,
            "rateLimits": {"enabled": true},
            "securityEvents": {"window": "1h", "groupBy": ["ua", "url"], "top": 50},
        }),
    ));
    let api: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, &namespace.name);
    let flooded = eventually("rules and events summarised", Duration::from_secs(60), || async {
        let flooded = api.get("flooded").await.ok()?;
        let synced = |type_: &str| {
            flooded
                .condition(type_)
                .is_some_and(|c| c.status == edge_operator::resources::ConditionStatus::True)
        };
        (synced("RateLimitsSynced") && synced("SecurityEvents")).then_some(flooded)
    })
    .await;
    let rules_synced = flooded.condition("RateLimitsSynced").expect("RateLimitsSynced");
    let status = flooded.status.expect("status");
    let bytes = serde_json::to_vec(&status).expect("JSON").len();
    assert!(bytes <= 64 << 10, "status of {bytes} bytes");
    let truncated = status.truncated.join("\n");
    assert!(truncated.contains("of 10000 rules kept"), "{truncated}");
    assert!(truncated.contains("group keys cut to 256 bytes"), "{truncated}");
    let rules = status.rate_limits.expect("rules");
    assert!(
        !rules.is_empty() && rules.iter().all(|r| r.name.len() <= 256),
        "{} rules, longest name {:?}; {truncated}",
        rules.len(),
        rules.iter().map(|r| r.name.len()).max()
    );
    assert!(
        status.conditions.iter().all(|c| c.message.len() <= 2048),
        "condition messages are bounded"
    );
    assert_eq!(rules_synced.message, "10000 rules", "the condition counts them all");

    // Paused, the object is cached with its conditions alone; its status keeps the
    // rest of what the operator wrote.
    let kept_rules = rules.len();
    let pause = json!({"metadata": {"annotations": {"edgeplatform.io/paused": "true"}}});
    api.patch("flooded", &PatchParams::default(), &Patch::Merge(&pause))
        .await
        .expect("paused");
    wait_for_condition(
        &api,
        "flooded",
        "Synced",
        Some("False"),
        "Paused",
        Duration::from_secs(60),
    )
    .await;
    let paused = api.get("flooded").await.expect("the object").status.expect("status");
    assert_eq!(
        paused.rate_limits.map(|r| r.len()),
        Some(kept_rules),
        "the mirror is kept"
    );
    assert!(paused.app.is_some(), "the app summary is kept");
}
