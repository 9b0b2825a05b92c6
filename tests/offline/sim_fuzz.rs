//! 10,000 random and mutated request bodies and query strings: the emulator answers
//! every one with a 2xx or 4xx, never a 5xx, and never panics.

use crate::support::sim::{ACCESS_KEY, fixtures_at, http, now_ms, start};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

const CASES: usize = 10_000;

fn random_scalar(rng: &mut StdRng) -> Value {
    match rng.random_range(0..10) {
        0 => Value::Null,
        1 => json!(rng.random::<bool>()),
        2 => json!(i64::MIN),
        3 => json!(i64::MAX),
        4 => json!(rng.random_range(-1_000..1_000)),
        5 => json!(rng.random::<f64>() * 1e300),
        6 => json!(
            [
                "ip",
                "ruleId",
                "eq",
                "cidr",
                "wildcard",
                "*",
                "10.0.0.0/8",
                "::/0",
                "",
                "ü*🦀"
            ][rng.random_range(0..10)]
        ),
        7 => json!("x".repeat(rng.random_range(0..3000))),
        8 => json!(now_ms() - rng.random_range(-600_000..300_000_000)),
        _ => json!(format!("{:x}", rng.random::<u64>())),
    }
}

fn random_value(rng: &mut StdRng, depth: u32) -> Value {
    if depth == 0 || rng.random_range(0..3) == 0 {
        return random_scalar(rng);
    }
    if rng.random::<bool>() {
        Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        )
    } else {
        let keys = [
            "from",
            "to",
            "query",
            "filters",
            "groupBy",
            "buckets",
            "page",
            "pageSize",
            "field",
            "op",
            "value",
            "isEnabled",
            "action",
            "Hostname",
            "extra",
        ];
        Value::Object(
            (0..rng.random_range(0..5))
                .map(|_| {
                    (
                        keys[rng.random_range(0..keys.len())].to_string(),
                        random_value(rng, depth - 1),
                    )
                })
                .collect(),
        )
    }
}

fn mutated_search(rng: &mut StdRng) -> Value {
    let now = now_ms();
    let mut body = json!({
        "from": now - 3_600_000, "to": now,
        "query": "login 10.",
        "filters": [{"field": "ip", "op": "cidr", "value": ["10.0.0.0/8"]}, {"field": "url", "op": "wildcard", "value": ["*a*"]}],
        "groupBy": ["ruleId", "ip"], "buckets": 10, "page": 0, "pageSize": 20
    });
    let members = [
        "from", "to", "query", "filters", "groupBy", "buckets", "page", "pageSize",
    ];
    for _ in 0..rng.random_range(1..4) {
        let member = members[rng.random_range(0..members.len())];
        match rng.random_range(0..4) {
            0 => body[member] = random_scalar(rng),
            1 => body[member] = random_value(rng, 3),
            2 => {
                body.as_object_mut().map(|o| o.remove(member));
            }
            _ => {
                let member = ["field", "op", "value"][rng.random_range(0..3)];
                let value = random_value(rng, 2);
                if let Some(filter) = body
                    .get_mut("filters")
                    .and_then(|f| f.get_mut(0))
                    .and_then(Value::as_object_mut)
                {
                    filter.insert(member.to_string(), value);
                }
            }
        }
    }
    body
}

fn random_query(rng: &mut StdRng) -> String {
    let names = [
        "from",
        "to",
        "status",
        "cacheStatus",
        "limit",
        "offset",
        "order",
        "search",
        "page",
        "perPage",
        "includeOriginShield",
        "x",
    ];
    (0..rng.random_range(0..4))
        .map(|_| {
            let value = match random_scalar(rng) {
                Value::String(s) => s,
                other => other.to_string(),
            };
            format!("{}={}", names[rng.random_range(0..names.len())], urlencode(&value))
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn urlencode(raw: &str) -> String {
    raw.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn random_requests_never_cause_a_server_error() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let events: Vec<Value> = (0..300)
        .map(|i| json!({"timestamp": now_ms() - i * 10_000, "feature": "waf", "ruleId": format!("r{}", i % 7),
                        "ip": format!("10.0.{}.{}", i % 3, i % 200), "ja4": "j", "ua": "curl", "url": format!("/p{}", i % 5),
                        "asn": "1", "country": "DE", "action": "block"}))
        .collect();
    http()
        .post(format!("{base}/_sim/shield-zones/1001/events"))
        .json(&events)
        .send()
        .await
        .expect("seed");
    let client = http();
    let mut rng = StdRng::seed_from_u64(0xED6E);
    let mut by_class = [0usize; 6];
    for case in 0..CASES {
        let (method, path, body): (&str, String, Option<Vec<u8>>) = match case % 8 {
            0..=2 => (
                "POST",
                "/shield/event-logs/1001/search".into(),
                Some(mutated_search(&mut rng).to_string().into_bytes()),
            ),
            3 => (
                "POST",
                "/shield/event-logs/1001/search".into(),
                Some(random_value(&mut rng, 4).to_string().into_bytes()),
            ),
            4 => (
                "PATCH",
                "/shield/shield-zone/1001/access-lists/configurations/9101".into(),
                Some(random_value(&mut rng, 2).to_string().into_bytes()),
            ),
            5 => (
                "POST",
                "/pullzone/completeExternalHttpCertificate".into(),
                Some(random_value(&mut rng, 2).to_string().into_bytes()),
            ),
            6 => {
                let query = random_query(&mut rng);
                if rng.random::<bool>() {
                    ("GET", format!("/v2/pullzones/501/logs?{query}"), None)
                } else {
                    ("GET", format!("/shield/rate-limits/1001?{query}"), None)
                }
            }
            _ => {
                let mut bytes: Vec<u8> = (0..rng.random_range(0..64)).map(|_| rng.random::<u8>()).collect();
                bytes.insert(0, b'{');
                ("POST", "/shield/event-logs/1001/search".into(), Some(bytes))
            }
        };
        // Keep the logging API under its rate limit: 429 is covered elsewhere.
        sim.sim.limiter.clear();
        let mut request = client
            .request(method.parse().expect("method"), format!("{base}{path}"))
            .header("AccessKey", ACCESS_KEY)
            .header("content-type", "application/json");
        if let Some(body) = body.clone() {
            request = request.body(body);
        }
        let response = request.send().await.expect("the emulator answers");
        let status = response.status().as_u16();
        by_class[usize::from(status / 100)] += 1;
        assert!(
            status < 500,
            "case {case}: {method} {path} answered {status} for body {:?}",
            body.map(|b| String::from_utf8_lossy(&b).into_owned())
        );
    }
    assert!(
        by_class[2] > 1_000 && by_class[4] > 1_000,
        "both valid and invalid inputs were exercised: {by_class:?}"
    );
}

fn rss_mb() -> f64 {
    procfs::process::Process::myself()
        .and_then(|process| process.status())
        .ok()
        .and_then(|status| status.vmrss)
        .map_or(0.0, |kb| kb as f64 / 1024.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sizes_and_terms_are_refused_and_memory_stays_bounded() {
    let sim = start(fixtures_at()).await;
    let base = sim.base_url();
    let client = http();
    // 30,000 events with 30,000 distinct URLs, IPs and user agents: large dictionaries.
    for batch in 0..3 {
        let events: Vec<Value> = (0..10_000)
            .map(|i| {
                let n = batch * 10_000 + i;
                json!({"timestamp": now_ms() - 1 - n, "feature": "waf", "ruleId": format!("r{}", n % 97),
                       "ip": format!("10.{}.{}.{}", n / 65_536, (n / 256) % 256, n % 256), "ja4": "j", "ua": format!("agent-{n}"),
                       "url": format!("/path/{n}"), "asn": "1", "country": "DE", "action": "block"})
            })
            .collect();
        let seeded = client
            .post(format!("{base}/_sim/shield-zones/1001/events"))
            .json(&events)
            .send()
            .await
            .expect("seed");
        assert!(seeded.status().is_success());
    }
    let search = |body: Vec<u8>| {
        let client = client.clone();
        let base = base.clone();
        async move {
            let response = client
                .post(format!("{base}/shield/event-logs/1001/search"))
                .header("AccessKey", ACCESS_KEY)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .expect("answer");
            let status = response.status().as_u16();
            (status, response.text().await.unwrap_or_default())
        }
    };
    let window = |extra: Value| {
        let mut body = json!({"from": now_ms() - 3_600_000, "to": now_ms()});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        body.to_string().into_bytes()
    };
    let terms = (0..10_000).map(|i| format!("t{i}")).collect::<Vec<_>>().join(" ");
    let filters: Vec<Value> = (0..1_000)
        .map(|_| json!({"field": "ip", "op": "contains", "value": ["1"]}))
        .collect();
    let values: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    let refused = [
        (window(json!({"query": terms})), 400, "query"),
        (window(json!({"query": "x".repeat(5_000)})), 400, "query"),
        (window(json!({"filters": filters})), 400, "filters"),
        (
            window(json!({"filters": [{"field": "url", "op": "wildcard", "value": values}]})),
            400,
            "filters[0].value",
        ),
        (vec![b' '; 2 << 20], 413, ""),
    ];
    for (body, status, member) in refused {
        let (got, text) = search(body).await;
        assert_eq!(got, status, "{text}");
        assert!(text.contains(member), "{text}");
    }
    // The 413 arrives even while the client is still sending (the body is drained).
    for _ in 0..20 {
        let (got, text) = search(vec![b' '; 4 << 20]).await;
        assert_eq!(got, 413, "{text}");
    }
    let before = rss_mb();
    let started = std::time::Instant::now();
    for round in 0..10 {
        let terms: Vec<String> = (0..16)
            .map(|i| format!("{}{}", ["path", "agent", "10.", "r"][i % 4], round * 16 + i))
            .collect();
        let filters = vec![json!({"field": "url", "op": "wildcard", "value": ["*1*2*3*", "/path/*9"]})];
        let (status, text) = search(window(
            json!({"query": terms.join(" "), "filters": filters, "groupBy": ["ip", "url"], "buckets": 500}),
        ))
        .await;
        assert_eq!(status, 200, "{text}");
    }
    let after = rss_mb();
    eprintln!(
        "fuzz: 10 searches of 16 terms and wildcard filters over 30,000 events with 30,000-value dictionaries: {:.1} s, RSS {before:.0} MB -> {after:.0} MB",
        started.elapsed().as_secs_f64()
    );
    assert!(after - before < 256.0, "RSS grew from {before:.0} MB to {after:.0} MB");
    for i in 0..1_001 {
        let fault = json!({"pathPrefix": "/never", "status": 500, "count": 1});
        let response = client
            .post(format!("{base}/_sim/faults"))
            .json(&fault)
            .send()
            .await
            .expect("fault");
        let expected = if i < 1_000 { 201 } else { 400 };
        assert_eq!(response.status().as_u16(), expected, "fault {i}");
    }
}
