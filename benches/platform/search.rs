//! Event search: N generated events, three queries, medians, memory per event, and the
//! same queries in DuckDB (hack/bench/duckdb_search.py) on the same events, with
//! identical results.

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use chrono::{DateTime, Utc};
use edge_operator::api::models::shield::{
    Dimension, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, FilterOp,
};
use edge_operator::sim::events::{EventStore, execute, validate};
use edge_operator::sim::generator;
use serde_json::{Value, json};

use crate::Settings;
use crate::report::Report;

const SUITE: &str = "search";
const GROUPED_TARGET_MS: f64 = 15.0;
const FLAT_TARGET_MS: f64 = 5.0;
const RATIO_TARGET: f64 = 1.0;
const BYTES_PER_EVENT_TARGET: f64 = 150.0;

fn rss_bytes() -> u64 {
    procfs::process::Process::myself()
        .and_then(|process| process.status())
        .ok()
        .and_then(|status| status.vmrss)
        .map_or(0, |kb| kb * 1024)
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

/// Runs the same queries in DuckDB; answers its medians and normalised results.
fn duckdb(python: &str, store: &EventStore, spec: &Value) -> Result<Value, String> {
    let dir = std::env::temp_dir().join(format!("edge-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .and_then(|()| write_csv(store, &dir.join("events.csv")))
        .and_then(|()| std::fs::write(dir.join("queries.json"), spec.to_string()))
        .map_err(|e| format!("cannot write the events for DuckDB: {e}"))?;
    // Cargo's package root at run time: a benchmark binary reused from another checkout
    // of the same sources (a shared target directory) runs this checkout's script.
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").into());
    let script = format!("{root}/hack/bench/duckdb_search.py");
    let output = Command::new(python).arg(script).arg(&dir).output();
    let _ = std::fs::remove_dir_all(&dir);
    let output = output.map_err(|e| format!("cannot run {python}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "DuckDB side failed (hack/bench/run.sh installs duckdb): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("DuckDB side answered no JSON: {e}"))
}

pub(crate) fn run(settings: &Settings, report: &mut Report) -> Result<(), String> {
    let (count, runs) = (settings.events, settings.runs);
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
    // Each query with the median it must not exceed, where one is gated.
    let queries = [
        (
            "flat, 2 filters",
            window
                .clone()
                .filter(EventLogsFilter::new(Dimension::Country, FilterOp::In, ["US", "DE"]))
                .filter(EventLogsFilter::new(Dimension::Url, FilterOp::Contains, ["login"])),
            Some(FLAT_TARGET_MS),
        ),
        (
            "groupBy [ruleId, ip], buckets 100",
            window.clone().group_by([Dimension::RuleId, Dimension::Ip]).buckets(100),
            Some(GROUPED_TARGET_MS),
        ),
        ("groupBy [country]", window.clone().group_by([Dimension::Country]), None),
    ];

    let mut ours = Vec::new();
    let mut results = Vec::new();
    for (name, request, _) in &queries {
        let search = validate(request, now_ms).map_err(|e| format!("{name}: {e}"))?;
        let mut samples = Vec::new();
        let mut last = None;
        for _ in 0..runs {
            let started = Instant::now();
            let response = execute(&search, &store);
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            last = Some(response);
        }
        ours.push(crate::median(&samples));
        results.push(last.as_ref().map(normalise).unwrap_or(Value::Null));
    }
    let spec = json!({
        "runs": runs, "from": now_ms - 24 * 3_600_000, "to": now_ms,
        "queries": queries.iter().map(|(_, r, _)| serde_json::to_value(r).unwrap_or(Value::Null)).collect::<Vec<_>>(),
    });
    let duck = duckdb(&settings.python, &store, &spec)?;

    report.info(SUITE, "events loaded", format!("{count} in {load_s:.2} s"));
    report.check_at_scale(
        SUITE,
        "memory per event (RSS)",
        format!("{rss_per_event:.0} B ({heap_per_event:.0} B accounted)"),
        &format!("<= {BYTES_PER_EVENT_TARGET:.0} B"),
        rss_per_event <= BYTES_PER_EVENT_TARGET,
    );
    for (i, (name, _, target_ms)) in queries.iter().enumerate() {
        let duck_ms = duck["medians_ms"][i].as_f64().unwrap_or(f64::NAN);
        let ratio = ours[i] / duck_ms;
        let same = duck["results"][i] == results[i];
        report.check(
            SUITE,
            &format!("{name}: result vs DuckDB"),
            same_or_not(same),
            "identical",
            same,
        );
        if !same {
            eprintln!("edge-sim: {}\nduckdb:   {}", results[i], duck["results"][i]);
        }
        report.check_at_scale(
            SUITE,
            &format!("{name}: median, edge-sim / DuckDB"),
            format!("{:.1} ms / {duck_ms:.1} ms = {ratio:.2}", ours[i]),
            &format!("ratio <= {RATIO_TARGET}"),
            ratio <= RATIO_TARGET,
        );
        if let Some(target_ms) = target_ms {
            report.check_at_scale(
                SUITE,
                &format!("{name}: median"),
                format!("{:.1} ms", ours[i]),
                &format!("<= {target_ms} ms"),
                ours[i] <= *target_ms,
            );
        }
    }
    Ok(())
}

fn same_or_not(same: bool) -> String {
    if same { "identical" } else { "DIFFERENT" }.to_string()
}
