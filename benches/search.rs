//! Event-search benchmark: 1,000,000 generated events, three queries, medians, memory
//! per event, and the same queries in DuckDB on the same events with identical results.
//!
//! Run through `hack/bench/search.sh`, which provides a Python with `duckdb`.
//! Environment: EDGE_BENCH_EVENTS (default 1000000), EDGE_BENCH_RUNS (default 15),
//! EDGE_BENCH_PYTHON (default python3).

use std::io::Write;
use std::process::{Command, ExitCode};
use std::time::Instant;

use chrono::{DateTime, Utc};
use edge_operator::api::models::shield::{
    Dimension, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, FilterOp,
};
use edge_operator::sim::events::{EventStore, execute, validate};
use edge_operator::sim::generator;
use serde_json::{Value, json};

const GROUPED_TARGET_MS: f64 = 50.0;
const RATIO_TARGET: f64 = 1.0;
const BYTES_PER_EVENT_TARGET: f64 = 150.0;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The comparable part of a response: what both engines must agree on.
fn normalise(response: &EventLogsSearchResponse) -> Value {
    match (&response.rows, &response.groups) {
        (Some(rows), _) => json!({
            "total": response.total,
            "rows": rows.iter().map(|r| json!([r.log_id, r.timestamp])).collect::<Vec<_>>(),
        }),
        (_, Some(groups)) => json!({
            "total": response.total,
            "groups": groups.iter().map(|g| {
                let c = g.context.clone().unwrap_or_default();
                json!({
                    "key": g.key, "count": g.count, "firstSeen": g.first_seen, "lastSeen": g.last_seen,
                    "sparkline": g.sparkline,
                    "context": [c.country, c.asn, c.blocked, c.challenged, c.logged, c.features, c.rule_ids],
                })
            }).collect::<Vec<_>>(),
        }),
        _ => Value::Null,
    }
}

fn csv_field(value: &str) -> String {
    format!("\"{}\"", value.replace('"', "\"\""))
}

fn write_csv(store: &EventStore, path: &std::path::Path) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "logId,ts,feature,ruleId,ip,ja4,ua,url,asn,country,action,ruleName")?;
    for e in store.events() {
        let fields = [
            &e.feature,
            &e.rule_id,
            &e.ip,
            &e.ja4,
            &e.ua,
            &e.url,
            &e.asn,
            &e.country,
            &e.action,
            &e.rule_name,
        ];
        let text: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        writeln!(
            out,
            "{},{},{}",
            csv_field(e.log_id.as_deref().unwrap_or_default()),
            e.timestamp,
            text.join(",")
        )?;
    }
    out.flush()
}

fn main() -> ExitCode {
    let count: usize = env_or("EDGE_BENCH_EVENTS", 1_000_000);
    let runs: usize = env_or("EDGE_BENCH_RUNS", 15);
    let python = std::env::var("EDGE_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let now: DateTime<Utc> = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let now_ms = now.timestamp_millis();

    let baseline = rss_bytes();
    let load = Instant::now();
    let mut store = EventStore::default();
    store.insert(generator::events(count, 42, now));
    let load_s = load.elapsed().as_secs_f64();
    let rss_per_event = rss_bytes().saturating_sub(baseline) as f64 / count as f64;
    let heap_per_event = store.heap_bytes() as f64 / count as f64;

    let window = EventLogsSearchRequest::window(now_ms - 24 * 3_600_000, now_ms);
    let queries = [
        (
            "flat, 2 filters",
            window
                .clone()
                .filter(EventLogsFilter::new(Dimension::Country, FilterOp::In, ["US", "DE"]))
                .filter(EventLogsFilter::new(Dimension::Url, FilterOp::Contains, ["login"])),
        ),
        (
            "groupBy [ruleId, ip], buckets 100",
            window.clone().group_by([Dimension::RuleId, Dimension::Ip]).buckets(100),
        ),
        ("groupBy [country]", window.clone().group_by([Dimension::Country])),
    ];

    let dir = std::env::temp_dir().join(format!("edge-bench-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&dir).and_then(|()| write_csv(&store, &dir.join("events.csv"))) {
        eprintln!("cannot write the events for DuckDB: {error}");
        return ExitCode::FAILURE;
    }

    let mut ours = Vec::new();
    let mut results = Vec::new();
    for (name, request) in &queries {
        let search = match validate(request, now_ms) {
            Ok(search) => search,
            Err(error) => {
                eprintln!("{name}: {error}");
                return ExitCode::FAILURE;
            }
        };
        let mut samples = Vec::new();
        let mut last = None;
        for _ in 0..runs {
            let started = Instant::now();
            let response = execute(&search, &store);
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            last = Some(response);
        }
        ours.push(median_ms(samples));
        results.push(last.as_ref().map(normalise).unwrap_or(Value::Null));
    }
    let spec = json!({
        "runs": runs, "from": now_ms - 24 * 3_600_000, "to": now_ms,
        "queries": queries.iter().map(|(_, r)| serde_json::to_value(r).unwrap_or(Value::Null)).collect::<Vec<_>>(),
    });
    let written = std::fs::write(dir.join("queries.json"), spec.to_string());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/hack/bench/duckdb_search.py");
    let output = written.and_then(|()| Command::new(&python).arg(script).arg(&dir).output());
    let _ = std::fs::remove_dir_all(&dir);
    let duck: Value = match output {
        Ok(out) if out.status.success() => serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        Ok(out) => {
            eprintln!(
                "DuckDB side failed (run hack/bench/search.sh, which installs duckdb):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            return ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!("cannot run {python}: {error}");
            return ExitCode::FAILURE;
        }
    };

    let mut failed = false;
    println!(
        "event search, {count} events, {runs} runs per query, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "load: {load_s:.2} s; memory: {rss_per_event:.0} B/event RSS ({heap_per_event:.0} B/event accounted); target <= {BYTES_PER_EVENT_TARGET:.0}"
    );
    failed |= rss_per_event > BYTES_PER_EVENT_TARGET;
    println!(
        "{:<36} {:>10} {:>10} {:>7} {:>9}  result",
        "query", "edge-sim", "duckdb", "ratio", "target"
    );
    for (i, (name, _)) in queries.iter().enumerate() {
        let duck_ms = duck["medians_ms"][i].as_f64().unwrap_or(f64::NAN);
        let ratio = ours[i] / duck_ms;
        let same = duck["results"][i] == results[i];
        let time_ok = i != 1 || ours[i] <= GROUPED_TARGET_MS;
        let ok = same && ratio <= RATIO_TARGET && time_ok;
        failed |= !ok;
        let target = if i == 1 {
            format!("<={GROUPED_TARGET_MS:.0}ms")
        } else {
            "ratio<=1".into()
        };
        println!(
            "{name:<36} {:>8.2}ms {:>8.2}ms {ratio:>7.2} {target:>9}  {} {}",
            ours[i],
            duck_ms,
            if same { "identical" } else { "DIFFERENT" },
            if ok { "PASS" } else { "FAIL" }
        );
        if !same {
            eprintln!("edge-sim: {}\nduckdb:   {}", results[i], duck["results"][i]);
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
