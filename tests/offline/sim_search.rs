//! edge-sim's event-log search over HTTP: members and windows refused by name, rows,
//! groups, clamps and pagination.

use crate::sim_platform::{HOUR, assert_problem, event, post_json};
use crate::support::sim::{fixtures_at, insert_events, now_ms, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn search_rejects_unknown_members_and_bad_windows_naming_the_member() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let now = now_ms();
    let cases = [
        (json!({"from": now - HOUR, "to": now, "colour": "red"}), "colour"),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "op": "eq", "value": ["1.1.1.1"], "x": 1}]}),
            "filters[0].x",
        ),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "colour", "op": "eq", "value": ["a"]}]}),
            "filters[0].field",
        ),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "op": "near", "value": ["a"]}]}),
            "filters[0].op",
        ),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "url", "op": "cidr", "value": ["10.0.0.0/8"]}]}),
            "filters[0].op",
        ),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "op": "cidr", "value": ["10.0.0.0/33"]}]}),
            "filters[0].value[0]",
        ),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "op": "in", "value": []}]}),
            "filters[0].value",
        ),
        (
            json!({"from": now - HOUR, "to": now, "groupBy": ["ip", "colour"]}),
            "groupBy[1]",
        ),
        (
            json!({"from": now - HOUR, "to": now, "groupBy": ["ip", "ip"]}),
            "groupBy[1]",
        ),
        (json!({"from": now, "to": now}), "to"),
        (json!({"from": now - HOUR, "to": now + 6 * 60_000}), "to"),
        (json!({"from": now - 80 * HOUR, "to": now - 73 * HOUR}), "to"),
        (json!({"from": now - HOUR, "to": now, "page": -1}), "page"),
        (json!({"from": now - HOUR, "to": now, "buckets": -1}), "buckets"),
        (json!({"from": now - HOUR}), "to"),
        (
            json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "value": ["a"]}]}),
            "filters[0].op",
        ),
        (json!({"from": "yesterday", "to": now}), "from"),
    ];
    for (body, member) in cases {
        let response = post_json(&base, "/shield/event-logs/1001/search", &body).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let problem: Value = response.json().await.expect("ProblemDetails");
        assert_problem(&problem, 400);
        assert!(
            problem["errors"].get(member).is_some(),
            "{body} should name `{member}`: {problem}"
        );
    }
    let response = post_json(
        &base,
        "/shield/event-logs/99/search",
        &json!({"from": now - HOUR, "to": now}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = post_json(
        &base,
        "/shield/event-logs/abc/search",
        &json!({"from": now - HOUR, "to": now}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn search_rows_groups_clamps_and_pagination_over_http() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let now = now_ms();
    let events: Vec<Value> = (0..620)
        .map(|i| {
            let ip = if i % 2 == 0 {
                format!("192.0.2.{}", i % 50)
            } else {
                format!("2001:db8::{:x}", i % 50)
            };
            event(
                &format!("e{i:04}"),
                now - 1 - i * 1000,
                &ip,
                if i % 3 == 0 { "942100" } else { "941100" },
            )
        })
        .collect();
    insert_events(&base, 1001, &Value::Array(events)).await;

    let flat: Value = post_json(
        &base,
        "/shield/event-logs/1001/search",
        &json!({"from": now - HOUR, "to": now, "pageSize": 1000}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(
        flat["rows"].as_array().expect("rows").len(),
        500,
        "pageSize clamps to 500"
    );
    assert_eq!(
        (flat["total"].as_i64(), flat["totalPages"].as_i64()),
        (Some(620), Some(2))
    );
    assert!(flat["groups"].is_null());
    let first = &flat["rows"][0];
    assert_eq!(first["logId"], "e0000");
    assert_eq!(first["fields"]["ruleName"], "SQL injection");
    assert_eq!(first["fields"].as_object().expect("fields").len(), 10);
    assert_eq!(first["log"]["method"], "POST");

    let default_page: Value = post_json(
        &base,
        "/shield/event-logs/1001/search",
        &json!({"from": now - HOUR, "to": now, "page": 12}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(
        default_page["rows"].as_array().expect("rows").len(),
        20,
        "pageSize defaults to 50: 620 = 12*50 + 20"
    );
    assert_eq!(default_page["totalPages"], 13);
    let past: Value = post_json(
        &base,
        "/shield/event-logs/1001/search",
        &json!({"from": now - HOUR, "to": now, "page": 13}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(past["rows"].as_array().map(Vec::len), Some(0));

    let v6: Value = post_json(
        &base,
        "/shield/event-logs/1001/search",
        &json!({"from": now - HOUR, "to": now, "filters": [{"field": "ip", "op": "cidr", "value": ["2001:db8::/64"]}]}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(v6["total"], 310);

    let grouped: Value = post_json(
        &base,
        "/shield/event-logs/1001/search",
        &json!({"from": now - 620_000, "to": now, "groupBy": ["ruleId"], "buckets": 9999}),
    )
    .await
    .json()
    .await
    .expect("json");
    assert!(grouped["rows"].is_null());
    let groups = grouped["groups"].as_array().expect("groups");
    assert_eq!(groups[0]["key"]["ruleId"], "941100");
    assert_eq!(groups[0]["count"], 413);
    let sparkline = groups[0]["sparkline"].as_array().expect("sparkline");
    assert_eq!(sparkline.len(), 500, "buckets clamp to 500");
    assert_eq!(sparkline.iter().filter_map(Value::as_i64).sum::<i64>(), 413);
    assert_eq!(groups[0]["context"]["blocked"], 413);
    assert_eq!(groups[0]["context"]["features"], "waf");
}
