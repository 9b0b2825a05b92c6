//! Observe-only polls under the global platform quota: many ContainerAppWatches, each
//! polling four endpoints per interval, once with a quota that covers the demand and
//! once with one that does not. On time when it suffices; when it does not, the lag is
//! shared and no watch starves.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use edge_operator::crd::ContainerAppWatch;
use edge_operator::sim::state::ShieldZone;
use edge_operator::sim::{SimDocument, spawn};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::PostParams;
use serde_json::json;

use crate::Settings;
use crate::harness::{ACCESS_KEY, Cluster};
use crate::report::Report;

const SUITE: &str = "rate discipline";
const SHIELD_ZONE: i64 = 1001;
/// Requests per poll: the app, the rate-limit rules, two event searches.
const REQUESTS_PER_POLL: f64 = 4.0;
const ON_TIME_P99: Duration = Duration::from_secs(5);

fn document(watches: usize) -> SimDocument {
    SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        shield_zones: vec![ShieldZone {
            id: SHIELD_ZONE,
            pull_zone_id: None,
            access_lists: Vec::new(),
            rate_limits: Vec::new(),
        }],
        apps: (0..watches)
            .map(|i| json!({"id": format!("app-{i:04}"), "name": format!("app-{i:04}"), "status": "Active"}))
            .collect(),
        ..SimDocument::default()
    }
}

fn watch(index: usize, interval: &str) -> anyhow::Result<ContainerAppWatch> {
    serde_json::from_value(json!({
        "apiVersion": "edgeplatform.io/v1alpha1",
        "kind": "ContainerAppWatch",
        "metadata": {"name": format!("poll-{index:04}")},
        "spec": {
            "appId": format!("app-{index:04}"),
            "interval": interval,
            "shieldZoneId": SHIELD_ZONE,
            "rateLimits": {"enabled": true},
            "securityEvents": {"window": "1h"},
        },
    }))
    .context("building a ContainerAppWatch")
}

/// The q-quantile of sorted values.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

struct Polls {
    /// Time between consecutive polls of one watch, beyond the interval (measured after
    /// the start-up burst).
    lags: Vec<Duration>,
    longest_gap: Duration,
    /// Watches polled fewer than twice after the start-up burst.
    starved: usize,
    late_in_status: usize,
}

/// Runs `watches` watches every `interval` for `duration` under `quota` requests/s.
async fn run_with_quota(
    cluster: &Cluster,
    watches: usize,
    interval: Duration,
    duration: Duration,
    quota: u32,
) -> anyhow::Result<Polls> {
    let sim = spawn(document(watches)).await?;
    let (namespace, api) = cluster
        .namespace::<ContainerAppWatch>(&format!("polls-{quota}"))
        .await?;
    let mut operator = cluster.start_operator(&sim.base_url(), &namespace, &["--platform-rate", &quota.to_string()])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    operator.ensure_running()?;
    let interval_text = humantime::format_duration(interval).to_string();
    let started = chrono::Utc::now().timestamp_millis();
    stream::iter(0..watches)
        .map(|i| {
            let (api, interval_text) = (&api, &interval_text);
            async move {
                api.create(&PostParams::default(), &watch(i, interval_text)?)
                    .await
                    .map(drop)
                    .context("creating")
            }
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await?;
    tokio::time::sleep(duration).await;
    operator.ensure_running()?;

    // The start-up burst (every watch's first poll at once) is over after one and a
    // half intervals, plus the time the quota needs to serve it.
    let burst = Duration::from_secs_f64(watches as f64 * REQUESTS_PER_POLL / f64::from(quota));
    let measured_from = started + (interval.mul_f64(1.5) + burst).as_millis() as i64;
    let mut polls: HashMap<String, Vec<i64>> = HashMap::new();
    for entry in sim.sim.journal() {
        if entry.method == "GET"
            && let Some(app) = entry.path.strip_prefix("/mc/apps/")
        {
            polls.entry(app.to_string()).or_default().push(entry.time_ms);
        }
    }
    let mut lags = Vec::new();
    let mut longest_gap = Duration::ZERO;
    let mut polled_twice = 0;
    for times in polls.values_mut() {
        times.sort_unstable();
        let after: Vec<i64> = times.iter().copied().filter(|t| *t >= measured_from).collect();
        if after.len() >= 2 {
            polled_twice += 1;
        }
        for pair in after.windows(2) {
            let gap = Duration::from_millis(u64::try_from(pair[1] - pair[0]).unwrap_or_default());
            longest_gap = longest_gap.max(gap);
            lags.push(gap.saturating_sub(interval));
        }
    }
    lags.sort_unstable();
    let late_in_status = api
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|o| {
            o.status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().any(|c| c.reason == "PolledLate"))
        })
        .count();
    Ok(Polls {
        lags,
        longest_gap,
        starved: watches - polled_twice,
        late_in_status,
    })
}

pub async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let (watches, interval, duration) = (settings.poll_watches, settings.poll_interval, settings.poll_duration);
    let demand = watches as f64 * REQUESTS_PER_POLL / interval.as_secs_f64();
    let label = format!(
        "{watches} watches every {}, {demand:.0} requests/s wanted",
        humantime::format_duration(interval)
    );
    report.info(
        SUITE,
        &format!("{label}: run length"),
        humantime::format_duration(duration).to_string(),
    );

    let sufficient = (demand * 1.5).ceil() as u32;
    let polls = run_with_quota(cluster, watches, interval, duration, sufficient).await?;
    let p99 = quantile(&polls.lags, 0.99);
    report.check(
        SUITE,
        &format!(
            "{label}, quota {sufficient}/s: poll lag p99 ({} gaps)",
            polls.lags.len()
        ),
        format!("{:.1} s", p99.as_secs_f64()),
        &format!("<= {} s", ON_TIME_P99.as_secs()),
        !polls.lags.is_empty() && p99 <= ON_TIME_P99,
    );
    report.info(
        SUITE,
        &format!("{label}, quota {sufficient}/s: watches PolledLate at the end"),
        polls.late_in_status.to_string(),
    );

    let short = (demand * 0.6).floor().max(1.0) as u32;
    let polls = run_with_quota(cluster, watches, interval, duration, short).await?;
    let bound = interval.mul_f64(2.0 * demand / f64::from(short));
    report.check(
        SUITE,
        &format!("{label}, quota {short}/s: longest time between polls of a watch"),
        format!("{:.1} s", polls.longest_gap.as_secs_f64()),
        &format!("<= {:.0} s (2 x interval x demand/quota)", bound.as_secs_f64()),
        !polls.lags.is_empty() && polls.longest_gap <= bound,
    );
    report.check(
        SUITE,
        &format!("{label}, quota {short}/s: watches polled fewer than twice after start-up"),
        polls.starved.to_string(),
        "0",
        polls.starved == 0,
    );
    report.check(
        SUITE,
        &format!("{label}, quota {short}/s: watches whose status says PolledLate"),
        format!("{}/{watches}", polls.late_in_status),
        "> 0",
        polls.late_in_status > 0,
    );
    Ok(())
}
