//! Deterministic synthetic data for the demo and the benchmarks: security events with
//! skewed client IPs, a few attack bursts and many rules; CDN logs with every cache
//! status. The same seed gives the same data.

use chrono::{DateTime, Duration, Utc};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::events::EventInput;
use crate::api::models::logging::{CACHE_STATUSES, LogEntry};

const COUNTRIES: [&str; 12] = ["US", "DE", "FR", "GB", "NL", "BR", "IN", "CN", "RU", "JP", "SG", "CA"];
const ASNS: [&str; 8] = ["13335", "15169", "16509", "8075", "24940", "14061", "4134", "3320"];
const FEATURES: [&str; 5] = ["waf", "rate_limit", "bot_detection", "access_list", "ddos"];
const ACTIONS: [&str; 5] = ["block", "challenge", "log", "allow", "block"];
const PATHS: [&str; 10] = [
    "/",
    "/login",
    "/wp-login.php",
    "/api/v1/items",
    "/search",
    "/admin",
    "/cart",
    "/.env",
    "/xmlrpc.php",
    "/static/app.js",
];
const AGENTS: [&str; 6] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Version/17.5 Safari/605.1.15",
    "curl/8.8.0",
    "python-requests/2.32.3",
    "Go-http-client/2.0",
    "sqlmap/1.8 (https://sqlmap.org)",
];
const EDGES: [&str; 6] = ["DE", "NY", "LA", "SG", "UK", "SYD"];

/// A value from `0..n`, heavily skewed towards small values (a Zipf-like draw).
fn skewed(rng: &mut StdRng, n: usize) -> usize {
    let u: f64 = rng.random();
    ((n as f64 + 1.0).powf(u) - 1.0).floor().clamp(0.0, (n - 1) as f64) as usize
}

fn ip_of(index: usize) -> String {
    if index % 11 == 10 {
        format!("2001:db8:{:x}::{:x}", index / 256, index % 256 + 1)
    } else {
        format!(
            "{}.{}.{}.{}",
            11 + (index / 65_536) % 200,
            (index / 256) % 256,
            index % 256,
            1 + index % 250
        )
    }
}

/// `count` events over the 24 hours before `now`, with log ids unique per `seed`,
/// produced lazily so a large batch never sits in memory as one vector.
pub fn events(count: usize, seed: u64, now: DateTime<Utc>) -> impl Iterator<Item = EventInput> {
    let mut rng = StdRng::seed_from_u64(seed);
    let now_ms = now.timestamp_millis();
    let day_ms = 24 * 3_600_000;
    let bursts: Vec<(i64, usize, usize)> = (0..4)
        .map(|_| {
            (
                now_ms - rng.random_range(0..day_ms),
                rng.random_range(0..50_000),
                rng.random_range(0..40),
            )
        })
        .collect();
    (0..count).map(move |i| {
        let (timestamp, ip, rule) = if rng.random_range(0..10) < 3 {
            let (start, ip, rule) = bursts[rng.random_range(0..bursts.len())];
            (start + rng.random_range(0..600_000), ip, rule)
        } else {
            (
                now_ms - rng.random_range(1..day_ms),
                skewed(&mut rng, 50_000),
                skewed(&mut rng, 200),
            )
        };
        let rule_id = format!("{}", 900_000 + rule * 97 % 100_000);
        EventInput {
            log_id: Some(format!("{seed:x}-{i:08x}")),
            timestamp: timestamp.min(now_ms - 1),
            feature: FEATURES[rule % FEATURES.len()].to_string(),
            rule_name: format!("Rule {rule_id} ({})", FEATURES[rule % FEATURES.len()]),
            rule_id,
            ip: ip_of(ip),
            ja4: format!(
                "t13d{:02}11h2_{:012x}_{:012x}",
                ip % 20,
                ip * 7919 % 0xffff_ffff,
                rule * 104_729
            ),
            ua: AGENTS[skewed(&mut rng, AGENTS.len())].to_string(),
            url: format!("https://shop.example.com{}", PATHS[skewed(&mut rng, PATHS.len())]),
            asn: ASNS[(ip / 7) % ASNS.len()].to_string(),
            country: COUNTRIES[(ip / 3) % COUNTRIES.len()].to_string(),
            action: ACTIONS[rng.random_range(0..ACTIONS.len())].to_string(),
            log: None,
        }
    })
}

/// `count` CDN log entries for `pull_zone_id` over `[from, to)`, with request ids
/// unique per `seed`.
pub fn logs(count: usize, seed: u64, pull_zone_id: i64, (from, to): (DateTime<Utc>, DateTime<Utc>)) -> Vec<LogEntry> {
    let mut rng = StdRng::seed_from_u64(seed ^ (pull_zone_id as u64).rotate_left(17));
    let span_ms = (to - from).num_milliseconds().max(1);
    (0..count)
        .map(|i| {
            let path = PATHS[skewed(&mut rng, PATHS.len())];
            let status_code = match rng.random_range(0..100) {
                0..=84 => 200,
                85..=89 => 304,
                90..=95 => 404,
                96..=97 => 403,
                _ => 502,
            };
            let ip = ip_of(skewed(&mut rng, 20_000));
            LogEntry {
                timestamp: from + Duration::milliseconds(rng.random_range(0..span_ms)),
                pull_zone_id,
                request_id: format!("{seed:x}-{pull_zone_id}-{i:08x}"),
                cache_status: CACHE_STATUSES[skewed(&mut rng, CACHE_STATUSES.len())].to_string(),
                status_code,
                bytes_sent: rng.random_range(200..2_000_000),
                edge_location: EDGES[rng.random_range(0..EDGES.len())].to_string(),
                scheme: "https".to_string(),
                host: "cdn.example.com".to_string(),
                path: path.to_string(),
                url: format!("https://cdn.example.com{path}"),
                remote_ip: ip,
                country_code: COUNTRIES[rng.random_range(0..COUNTRIES.len())].to_string(),
                user_agent: AGENTS[skewed(&mut rng, AGENTS.len())].to_string(),
                referer: "-".to_string(),
                body_bytes_sent: rng.random_range(0..2_000_000),
                ja4_fingerprint: format!("t13d1516h2_{:012x}", rng.random_range(0..0xffff_ffffu64)),
                asn: ASNS[rng.random_range(0..ASNS.len())].parse().unwrap_or_default(),
                asn_organization: "Example Networks".to_string(),
                ..LogEntry::default()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_data_and_every_cache_status_appears() {
        let now = DateTime::from_timestamp(1_800_000_000, 0).expect("valid");
        assert!(events(500, 7, now).eq(events(500, 7, now)));
        assert!(!events(50, 7, now).eq(events(50, 8, now)));
        let hour = (now - Duration::hours(1), now);
        let entries = logs(5_000, 7, 1, hour);
        for status in CACHE_STATUSES {
            assert!(entries.iter().any(|e| e.cache_status == status), "{status} missing");
        }
        assert!(entries.iter().all(|e| e.timestamp >= hour.0 && e.timestamp < hour.1));
        assert_eq!(entries, logs(5_000, 7, 1, hour));
        assert!(events(2_000, 1, now).all(|e| e.timestamp < now.timestamp_millis()));
    }
}
