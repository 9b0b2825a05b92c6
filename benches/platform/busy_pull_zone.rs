//! A busy Pull Zone: 1,000,000 CDN requests an hour, logged as they happen, summarised
//! by one ContainerAppWatch. With the default page budget: how many logging requests a
//! poll makes once the window is covered (new traffic only, not the window), how long
//! the first coverage of the window takes, how far the summary is from the exact
//! counts, and the operator's memory. With a budget below the traffic: the summary
//! says it is partial, and its counts are exact over the span it states.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use edge_operator::controller::kinds::ContainerAppWatch;
use edge_operator::controller::kinds::app_watch::resource::CdnSummary;
use edge_operator::sim::generator;
use edge_operator::sim::{Sim, spawn};
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::Settings;
use crate::harness::{Cluster, check_logging_quota, logging_pull_zone};
use crate::report::Report;

const SUITE: &str = "busy Pull Zone";
const PULL_ZONE: i64 = 501;
const INTERVAL: Duration = Duration::from_secs(10);
const PAGE_SIZE: f64 = 1000.0;
const DEFAULT_PAGES_PER_POLL: usize = 20;

fn watch(name: &str, window: Duration) -> anyhow::Result<ContainerAppWatch> {
    serde_json::from_value(json!({
        "apiVersion": "edgeplatform.io/v1alpha1",
        "kind": "ContainerAppWatch",
        "metadata": {"name": name},
        "spec": {
            "appId": "app-busy",
            "interval": humantime::format_duration(INTERVAL).to_string(),
            "cdn": {"pullZoneId": PULL_ZONE, "window": humantime::format_duration(window).to_string()},
        },
    }))
    .context("building a ContainerAppWatch")
}

/// Logs requests to `pull_zone` at `per_hour` as they happen: every 100 ms, the requests
/// due so far, stamped with the moment they become readable (so none is readable late).
pub(crate) fn feed(sim: std::sync::Arc<Sim>, pull_zone: i64, per_hour: usize) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let started = Instant::now();
        let mut fed = 0usize;
        let mut seed = 1u64;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let due = (started.elapsed().as_secs_f64() * per_hour as f64 / 3600.0) as usize;
            let now = Utc::now();
            let batch = generator::logs(
                due - fed,
                seed,
                pull_zone,
                (now, now + chrono::Duration::milliseconds(1)),
            );
            sim.world_mut().pull_zone_logs_mut(pull_zone).insert(batch);
            fed = due;
            seed += 1;
        }
    })
}

/// A summary as a poll left it, and the exact count over the span it states.
struct Sample {
    at: Instant,
    summary: CdnSummary,
    reason: String,
    message: String,
    exact_in_span: usize,
    exact_in_window: usize,
}

impl Sample {
    fn span_error(&self) -> i64 {
        self.summary.requests - self.exact_in_span as i64
    }

    fn window_error(&self) -> f64 {
        (self.summary.requests - self.exact_in_window as i64) as f64 / self.exact_in_window.max(1) as f64
    }

    fn complete(&self) -> bool {
        self.summary.coverage == "1"
    }
}

fn parse_time(raw: &str) -> anyhow::Result<DateTime<Utc>> {
    raw.parse().with_context(|| format!("`{raw}` is not RFC 3339"))
}

/// Records every poll's summary of `name` until `done` says so or `deadline` passes.
async fn sample(
    api: &Api<ContainerAppWatch>,
    name: &str,
    sim: &Sim,
    window: Duration,
    deadline: Instant,
    done: impl Fn(&[Sample]) -> bool,
) -> anyhow::Result<Vec<Sample>> {
    let mut samples: Vec<Sample> = Vec::new();
    let mut last_seen = None;
    while Instant::now() < deadline && !done(&samples) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Some(status) = api.get(name).await?.status else {
            continue;
        };
        let (Some(summary), Some(observed)) = (status.cdn, status.observed_at) else {
            continue;
        };
        if last_seen.as_ref() == Some(&observed) {
            continue;
        }
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == "CdnLogsSynced")
            .context("no CdnLogsSynced condition")?;
        let (from, to) = (parse_time(&summary.from)?, parse_time(&summary.to)?);
        let window_start = to - chrono::Duration::from_std(window)?;
        let logs = sim.world().pull_zone_logs(PULL_ZONE);
        samples.push(Sample {
            at: Instant::now(),
            reason: condition.reason.clone(),
            message: condition.message.clone(),
            exact_in_span: logs.range(from, to).len(),
            exact_in_window: logs.range(window_start, to).len(),
            summary,
        });
        last_seen = Some(observed);
    }
    Ok(samples)
}

/// Logging requests of each poll: those after one app read and before the next.
fn requests_per_poll(sim: &Sim, since_ms: i64) -> Vec<usize> {
    let mut polls: Vec<usize> = Vec::new();
    for entry in sim.journal().iter().filter(|e| e.time_ms >= since_ms) {
        if entry.path.starts_with("/mc/apps/") {
            polls.push(0);
        } else if entry.path.starts_with("/v2/pullzones/")
            && let Some(poll) = polls.last_mut()
        {
            *poll += 1;
        }
    }
    polls
}

pub(crate) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let (per_hour, window) = (settings.cdn_per_hour, settings.cdn_window);
    let new_per_poll = per_hour as f64 * INTERVAL.as_secs_f64() / 3600.0;
    let in_window = (per_hour as f64 * window.as_secs_f64() / 3600.0) as usize;
    let label = format!(
        "{per_hour} requests/h, window {}, polled every {}",
        humantime::format_duration(window),
        humantime::format_duration(INTERVAL)
    );
    let sim = spawn(logging_pull_zone(PULL_ZONE, ["app-busy".to_string()])).await?;
    let now = Utc::now();
    let history = generator::logs(
        in_window,
        0,
        PULL_ZONE,
        (now - chrono::Duration::from_std(window)?, now),
    );
    sim.sim.world_mut().pull_zone_logs_mut(PULL_ZONE).insert(history);
    let feeder = feed(sim.sim.clone(), PULL_ZONE, per_hour);
    let (namespace, api) = cluster.namespace::<ContainerAppWatch>("busy-pull-zone").await?;

    // The default budget: what a user runs.
    let mut operator = cluster.start_operator(&sim.base_url(), &namespace, &[])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    operator.ensure_running()?;
    let created = Instant::now();
    let created_ms = Utc::now().timestamp_millis();
    api.create(&PostParams::default(), &watch("busy", window)?).await?;
    let spare = DEFAULT_PAGES_PER_POLL as f64 - (new_per_poll / PAGE_SIZE).ceil() - 1.0;
    let warm_up_bound = INTERVAL.mul_f64(2.0 * (in_window as f64 / PAGE_SIZE / spare).ceil() + 2.0);
    let steady_polls = settings.cdn_steady_polls;
    let samples = sample(
        &api,
        "busy",
        &sim.sim,
        window,
        created + warm_up_bound + INTERVAL * (steady_polls as u32 + 1),
        |s| s.iter().filter(|s| s.complete()).count() > steady_polls,
    )
    .await?;
    operator.ensure_running()?;
    let rss = operator.peak_rss_mb()?;
    drop(operator);
    let Some(covered) = samples.iter().position(Sample::complete) else {
        bail!(
            "the summary never covered its window within {:.0} s ({} polls sampled)",
            warm_up_bound.as_secs_f64(),
            samples.len()
        );
    };
    let first = &samples[0];
    report.info(
        SUITE,
        &format!("{label}: first poll, share of the window covered (newest first)"),
        format!("{} ({})", first.summary.coverage, first.reason),
    );
    let time_to_cover = samples[covered].at - created;
    report.check_at_scale(
        SUITE,
        &format!("{label}: time until the summary covers its window ({in_window} entries already logged)"),
        format!("{:.0} s", time_to_cover.as_secs_f64()),
        &format!("<= {:.0} s", warm_up_bound.as_secs_f64()),
        time_to_cover <= warm_up_bound,
    );
    let partial_errors: Vec<i64> = samples[..covered].iter().map(Sample::span_error).collect();
    report.info(
        SUITE,
        &format!("{label}: while partial, counted minus exact over the stated span"),
        format!("{partial_errors:?}"),
    );
    let steady = &samples[covered + 1..];
    let polls = requests_per_poll(&sim.sim, created_ms);
    let steady_polls: Vec<(usize, usize)> = {
        let logs = sim.sim.world().pull_zone_logs(PULL_ZONE);
        let mut measured = Vec::new();
        for (index, pair) in samples.windows(2).enumerate().skip(covered) {
            let (previous, this) = (parse_time(&pair[0].summary.to)?, parse_time(&pair[1].summary.to)?);
            if let Some(requests) = polls.get(index + 1) {
                measured.push((*requests, logs.range(previous, this).len()));
            }
        }
        measured
    };
    // New entries since the previous poll (an interval's worth, or up to one and a half
    // when the schedule moves a poll to its phase), then one request that finds no more.
    let within = |(requests, new): &(usize, usize)| *requests <= (*new as f64 / PAGE_SIZE).ceil() as usize + 1;
    let shown: Vec<String> = steady_polls.iter().map(|(r, n)| format!("{r} for {n}")).collect();
    report.check(
        SUITE,
        &format!(
            "{label}: logging requests per poll once covered, for the entries new since the previous poll ({} polls)",
            steady_polls.len()
        ),
        shown.join(", "),
        &format!(
            "<= new/1000 + 1 each; re-reading the window would take {}",
            (in_window as f64 / PAGE_SIZE).ceil()
        ),
        !steady_polls.is_empty() && steady_polls.iter().all(within),
    );
    let worst_span = steady.iter().map(|s| s.span_error().abs()).max().unwrap_or(i64::MAX);
    report.check(
        SUITE,
        &format!(
            "{label}: summary minus exact count over its stated span, worst of {} polls",
            steady.len()
        ),
        worst_span.to_string(),
        "0",
        !steady.is_empty() && worst_span == 0,
    );
    let worst_window = steady.iter().map(|s| s.window_error().abs()).fold(0.0, f64::max);
    report.check(
        SUITE,
        &format!(
            "{label}: summary against the exact count of the last {}",
            humantime::format_duration(window)
        ),
        format!("{:.3}%", worst_window * 100.0),
        "<= 0.5% (the window's start is rounded down to 1/360 of it)",
        !steady.is_empty() && worst_window <= 0.005,
    );
    check_logging_quota(report, SUITE, &label, &sim.sim);
    report.check_at_scale(
        SUITE,
        &format!("{label}: operator peak RSS"),
        format!("{rss:.1} MB"),
        "<= 64 MB",
        rss <= 64.0,
    );

    // A budget below the traffic: one page per poll for more than a page of new entries.
    let operator = cluster.start_operator(&sim.base_url(), &namespace, &["--cdn-pages-per-poll", "1"])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    api.create(&PostParams::default(), &watch("short-budget", window)?)
        .await?;
    let short = sample(
        &api,
        "short-budget",
        &sim.sim,
        window,
        Instant::now() + INTERVAL * 8,
        |s| s.len() >= 5,
    )
    .await?;
    drop(operator);
    feeder.abort();
    // The first poll finds nothing newer than its start and reads older logs.
    let partial = short
        .iter()
        .skip(1)
        .filter(|s| s.reason == "Partial" && s.message.contains("newest logs are not read yet"))
        .count();
    report.check(
        SUITE,
        &format!("{label}, 1 request per poll: polls after the first whose status says Partial, newest logs unread"),
        format!("{partial}/{}", short.len().saturating_sub(1)),
        "all, at least 3",
        short.len() >= 4 && partial == short.len() - 1,
    );
    let last = short.last().map(|s| s.summary.coverage.clone()).unwrap_or_default();
    report.info(
        SUITE,
        &format!("{label}, 1 request per poll: coverage after {} polls", short.len()),
        last,
    );
    let worst = short.iter().map(|s| s.span_error().abs()).max().unwrap_or(i64::MAX);
    report.info(
        SUITE,
        &format!("{label}, 1 request per poll: summary minus exact count over its stated span, worst"),
        format!("{worst} (entries sharing the millisecond of an edge)"),
    );
    Ok(())
}
