//! Observe-only polls under the global platform quota: many ContainerAppWatches, each
//! polling four endpoints per interval, once with a quota that covers the demand and
//! once with one that does not. On time when it suffices; when it does not, the lag is
//! shared and no watch starves. Then the write line: one tenant's access lists, read
//! at the poll-interval floor, want the whole quota, and another tenant's change and
//! watch are served on time all the same.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use edge_operator::controller::kinds::AccessListConfig;
use edge_operator::controller::kinds::ContainerAppWatch;
use edge_operator::sim::document::{ShieldZone, SimAccessList};
use edge_operator::sim::{RunningSim, SimDocument, spawn};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::PostParams;
use serde_json::json;

use crate::Settings;
use crate::harness::{ACCESS_KEY, Cluster, Tenants};
use crate::report::Report;

mod fairness;

pub(crate) use self::fairness::{busy_name, create_busy_access_lists, with_busy_zones};
use self::fairness::{fair_share, write_line};

const SUITE: &str = "rate discipline";
const SHIELD_ZONE: i64 = 1001;
/// Requests per poll: the app, the rate-limit rules, two event searches.
const REQUESTS_PER_POLL: f64 = 4.0;
pub(crate) const ON_TIME_P99: Duration = Duration::from_secs(5);
/// The access list changed while the polls saturate the quota.
const CONFIGURATION: i64 = 9101;
/// Spec changes whose PATCH is timed.
pub(crate) const CHANGES: usize = 5;
/// A change waits for the changes before it and at most one poll, never the poll queue.
const PATCH_LATENCY_TARGET: Duration = Duration::from_secs(1);
/// The busy tenant's first Shield Zone and configuration in the write-line run.
const BUSY_ZONE: i64 = 5000;
const BUSY_CONFIGURATION: i64 = 50_000;
/// The shortest poll interval an object may ask for, which the busy tenant asks for.
pub(crate) const POLL_FLOOR: &str = "5s";
/// Another tenant's change reaches the platform within this, however busy the quota.
const FAIR_PATCH_TARGET: Duration = Duration::from_secs(5);

pub(crate) fn document(watches: usize) -> SimDocument {
    SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        shield_zones: vec![ShieldZone {
            id: SHIELD_ZONE,
            pull_zone_id: None,
            access_lists: vec![SimAccessList::new(CONFIGURATION, "bench-list", false, 0)],
            rate_limits: Vec::new(),
            ..ShieldZone::default()
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

/// Creates `watches`, 32 at a time.
pub(crate) async fn create_all(
    api: &kube::Api<ContainerAppWatch>,
    watches: impl Iterator<Item = anyhow::Result<ContainerAppWatch>>,
) -> anyhow::Result<()> {
    stream::iter(watches)
        .map(|watch| async move {
            api.create(&PostParams::default(), &watch?)
                .await
                .map(drop)
                .context("creating")
        })
        .buffer_unordered(32)
        .try_collect::<()>()
        .await
}

/// "median s / max s" of sorted durations, with `decimals` digits.
pub(crate) fn median_and_max(sorted: &[Duration], decimals: usize) -> String {
    let median = quantile(sorted, 0.5).as_secs_f64();
    let max = sorted.last().copied().unwrap_or_default().as_secs_f64();
    format!("{median:.decimals$} s / {max:.decimals$} s")
}

/// The q-quantile of sorted values.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Until the start-up is over: every watch's first poll at once, served by the quota,
/// then the first polls on the watches' phases (at most one and a half intervals).
fn start_up(watches: usize, interval: Duration, quota: u32) -> Duration {
    Duration::from_secs_f64(watches as f64 * REQUESTS_PER_POLL / f64::from(quota)) + interval.mul_f64(1.5)
}

struct Polls {
    /// Time between consecutive polls of one watch beyond the interval, after the
    /// start-up.
    lags: Vec<Duration>,
    longest_gap: Duration,
    /// Watches not polled at all after the start-up.
    starved: usize,
    late_in_status: usize,
    /// Status writes after the start-up.
    status_writes: usize,
    /// The most status writes of one watch within one refresh period (less a second
    /// for the time a reconcile takes) after the start-up, whose polls may still turn
    /// late and on time again.
    most_writes_per_refresh: usize,
    /// From each access-list spec change to its PATCH reaching the platform, sorted.
    patch_latencies: Vec<Duration>,
}

/// When each ContainerAppWatch's status was written (the timed access list left out).
fn watch_status_writes(
    cluster: &Cluster,
    namespace: &str,
) -> anyhow::Result<HashMap<String, Vec<chrono::DateTime<chrono::Utc>>>> {
    let mut writes = cluster.status_write_times(namespace)?;
    writes.retain(|name, _| name.starts_with("poll-"));
    Ok(writes)
}

/// PATCHes of the timed configuration the platform answered so far, with their times.
fn patch_times(sim: &RunningSim) -> Vec<i64> {
    let path = format!("/configurations/{CONFIGURATION}");
    sim.sim
        .journal()
        .iter()
        .filter(|e| e.method == "PATCH" && e.path.ends_with(&path))
        .map(|e| e.time_ms)
        .collect()
}

/// How long [`time_patches`] waits for a change to reach the platform.
pub(crate) const PATCH_WAIT: Duration = Duration::from_secs(30);

/// Changes an AccessListConfig carrying `labels` [`CHANGES`] times (created enabled,
/// then toggled) and answers how long each took to reach the platform as a PATCH,
/// sorted. A change not there within [`PATCH_WAIT`] counts as that long and ends the
/// changes (fewer than [`CHANGES`] answered).
pub(crate) async fn time_patches(
    cluster: &Cluster,
    namespace: &str,
    labels: serde_json::Value,
    sim: &RunningSim,
) -> anyhow::Result<Vec<Duration>> {
    let api: kube::Api<AccessListConfig> = kube::Api::namespaced(cluster.client.clone(), namespace);
    let mut latencies = Vec::new();
    for change in 0..CHANGES {
        let object: AccessListConfig = serde_json::from_value(json!({
            "apiVersion": "edgeplatform.io/v1alpha1",
            "kind": "AccessListConfig",
            "metadata": {"name": "patch-latency", "labels": labels},
            "spec": {"shieldZoneId": SHIELD_ZONE, "configurationId": CONFIGURATION, "enabled": change % 2 == 0},
        }))?;
        let seen = patch_times(sim).len();
        let changed_at = chrono::Utc::now().timestamp_millis();
        api.patch(
            "patch-latency",
            &kube::api::PatchParams::apply("edge-bench").force(),
            &kube::api::Patch::Apply(&object),
        )
        .await
        .context("changing the AccessListConfig")?;
        let deadline = tokio::time::Instant::now() + PATCH_WAIT;
        let patched_at = loop {
            if let Some(at) = patch_times(sim).get(seen) {
                break *at;
            }
            if tokio::time::Instant::now() >= deadline {
                latencies.push(PATCH_WAIT);
                latencies.sort_unstable();
                return Ok(latencies);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        latencies.push(Duration::from_millis(
            u64::try_from(patched_at - changed_at).unwrap_or_default(),
        ));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    latencies.sort_unstable();
    Ok(latencies)
}

/// Runs `watches` watches every `interval` under `quota` requests/s, their status
/// refreshed every `status_refresh`: through the start-up burst, then for `measured`
/// more, in which an access list is changed and its PATCHes timed.
async fn run_with_quota(
    cluster: &Cluster,
    watches: usize,
    (interval, status_refresh): (Duration, Duration),
    measured: Duration,
    quota: u32,
) -> anyhow::Result<Polls> {
    let sim = spawn(document(watches)).await?;
    let (namespace, api) = cluster
        .namespace::<ContainerAppWatch>(&format!("polls-{quota}"))
        .await?;
    let refresh = humantime::format_duration(status_refresh).to_string();
    let mut operator = cluster.start_operator(
        &sim.base_url(),
        &namespace,
        &["--platform-rate", &quota.to_string(), "--status-refresh", &refresh],
    )?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    operator.ensure_running()?;
    let interval_text = humantime::format_duration(interval).to_string();
    let started = chrono::Utc::now().timestamp_millis();
    create_all(&api, (0..watches).map(|i| watch(i, &interval_text))).await?;
    let start_up = start_up(watches, interval, quota);
    tokio::time::sleep(start_up).await;
    let writes_at_start_up = watch_status_writes(cluster, &namespace)?
        .values()
        .map(Vec::len)
        .sum::<usize>();
    let measured_until = tokio::time::Instant::now() + measured;
    let patch_latencies = time_patches(cluster, &namespace, json!({}), &sim).await?;
    tokio::time::sleep_until(measured_until).await;
    operator.ensure_running()?;
    let status_writes_by_watch = watch_status_writes(cluster, &namespace)?;
    let status_writes = status_writes_by_watch
        .values()
        .map(Vec::len)
        .sum::<usize>()
        .saturating_sub(writes_at_start_up);
    let window = chrono::Duration::from_std(status_refresh.saturating_sub(Duration::from_secs(1)))?;
    let measured_from_time =
        chrono::DateTime::from_timestamp_millis(started).unwrap_or_default() + chrono::Duration::from_std(start_up)?;
    let most_writes_per_refresh = status_writes_by_watch
        .values()
        .flat_map(|times| {
            let measured: Vec<chrono::DateTime<chrono::Utc>> =
                times.iter().copied().filter(|t| *t >= measured_from_time).collect();
            measured
                .iter()
                .map(|end| measured.iter().filter(|t| *t <= end && *end - **t < window).count())
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or_default();
    let ended = chrono::Utc::now().timestamp_millis();
    let measured_from = started + start_up.as_millis() as i64;
    let mut polls = poll_times(&sim);
    let mut lags = Vec::new();
    let mut longest_gap = Duration::ZERO;
    let mut refreshed = 0;
    let millis = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or_default());
    for times in polls.values_mut() {
        times.sort_unstable();
        if times.iter().any(|t| *t >= measured_from) {
            refreshed += 1;
        }
        // The longest wait counts gaps that end after the start-up, and the one still
        // open at the end; the lag counts gaps wholly after it.
        for pair in times.windows(2).filter(|pair| pair[1] >= measured_from) {
            let gap = millis(pair[1] - pair[0]);
            longest_gap = longest_gap.max(gap);
            if pair[0] >= measured_from {
                lags.push(gap.saturating_sub(interval));
            }
        }
        if let Some(last) = times.last() {
            longest_gap = longest_gap.max(millis(ended - last));
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
        starved: watches - refreshed,
        late_in_status,
        status_writes,
        most_writes_per_refresh,
        patch_latencies,
    })
}

/// When each app was polled (its GET), by app id, in Unix ms.
fn poll_times(sim: &RunningSim) -> HashMap<String, Vec<i64>> {
    let mut polls: HashMap<String, Vec<i64>> = HashMap::new();
    for entry in sim.sim.journal() {
        if entry.method == "GET"
            && let Some(app) = entry.path.strip_prefix("/mc/apps/")
        {
            polls.entry(app.to_string()).or_default().push(entry.time_ms);
        }
    }
    polls
}

/// Lags (gap beyond the interval) of the polls of each app after `from` (Unix ms).
fn lags_by_app(sim: &RunningSim, interval: Duration, from: i64) -> HashMap<String, Vec<Duration>> {
    poll_times(sim)
        .into_iter()
        .map(|(app, mut times)| {
            times.sort_unstable();
            let lags = times
                .windows(2)
                .filter(|pair| pair[0] >= from)
                .map(|pair| Duration::from_millis(u64::try_from(pair[1] - pair[0]).unwrap_or_default()))
                .map(|gap| gap.saturating_sub(interval))
                .collect();
            (app, lags)
        })
        .collect()
}

pub(crate) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let (watches, interval) = (settings.poll_watches, settings.poll_interval);
    let demand = watches as f64 * REQUESTS_PER_POLL / interval.as_secs_f64();
    let label = format!(
        "{watches} watches every {}, {demand:.0} requests/s wanted",
        humantime::format_duration(interval)
    );

    let sufficient = (demand * 1.5).ceil() as u32;
    // The refresh is shortened to fit the run; per refresh period is per hour at the
    // default --status-refresh of 1 h.
    let (measured, refresh) = (interval * 4, interval * 2);
    let polls = run_with_quota(cluster, watches, (interval, refresh), measured, sufficient).await?;
    let p99 = quantile(&polls.lags, 0.99);
    report.info(
        SUITE,
        &format!("{label}, quota {sufficient}/s: poll lag median / max"),
        median_and_max(&polls.lags, 1),
    );
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
        &format!("{label}, quota {sufficient}/s: PATCH latency, median / max of {CHANGES} changes"),
        median_and_max(&polls.patch_latencies, 2),
    );
    report.info(
        SUITE,
        &format!("{label}, quota {sufficient}/s: watches PolledLate at the end"),
        polls.late_in_status.to_string(),
    );
    let per_refresh = polls.status_writes as f64 / watches as f64 * refresh.as_secs_f64() / measured.as_secs_f64();
    let scaled = format!(
        "--status-refresh {} for a run of {}, scaled to its default of 1 h",
        humantime::format_duration(refresh),
        humantime::format_duration(measured)
    );
    report.info(
        SUITE,
        &format!(
            "{label}, unchanged data: status writes per watch per hour, mean ({} writes; {scaled})",
            polls.status_writes
        ),
        format!("{per_refresh:.2}"),
    );
    report.check(
        SUITE,
        &format!("{label}, unchanged data: status writes per watch per hour, most of any watch ({scaled})"),
        polls.most_writes_per_refresh.to_string(),
        "<= 1",
        polls.most_writes_per_refresh <= 1,
    );

    let short = (demand * 0.6).floor().max(1.0) as u32;
    let bound = interval.mul_f64(2.0 * demand / f64::from(short));
    let polls = run_with_quota(cluster, watches, (interval, Duration::from_secs(3600)), bound, short).await?;
    report.check(
        SUITE,
        &format!("{label}, quota {short}/s: longest time a watch waited for a poll"),
        format!("{:.1} s", polls.longest_gap.as_secs_f64()),
        &format!("<= {:.0} s (2 x interval x demand/quota)", bound.as_secs_f64()),
        !polls.lags.is_empty() && polls.longest_gap <= bound,
    );
    report.check(
        SUITE,
        &format!(
            "{label}, quota {short}/s: watches never polled in the {:.0} s after start-up",
            bound.as_secs_f64()
        ),
        polls.starved.to_string(),
        "0",
        polls.starved == 0,
    );
    report.check(
        SUITE,
        &format!(
            "{label}, quota {short}/s: PATCH latency while the polls saturate the quota, median / max of {CHANGES} changes"
        ),
        median_and_max(&polls.patch_latencies, 2),
        &format!("max <= {} s", PATCH_LATENCY_TARGET.as_secs()),
        polls.patch_latencies.len() == CHANGES
            && polls.patch_latencies.last().is_some_and(|max| *max <= PATCH_LATENCY_TARGET),
    );
    report.check(
        SUITE,
        &format!("{label}, quota {short}/s: watches whose status says PolledLate"),
        format!("{}/{watches}", polls.late_in_status),
        "> 0",
        polls.late_in_status > 0,
    );

    let (lone, busy) = fair_share(cluster, watches, interval, short).await?;
    let fair = format!("fair share, quota {short}/s: {label} in one namespace, 1 watch in another");
    report.info(
        SUITE,
        &format!("{fair}: the busy namespace's poll lag median / max"),
        median_and_max(&busy, 1),
    );
    report.check(
        SUITE,
        &format!("{fair}: the lone watch's poll lag, max of {} polls", lone.len()),
        format!("{:.1} s", lone.last().copied().unwrap_or_default().as_secs_f64()),
        &format!("<= {} s", ON_TIME_P99.as_secs()),
        lone.len() >= 2 && lone.last().is_some_and(|max| *max <= ON_TIME_P99),
    );

    let (zones, quota) = (settings.busy_zones, settings.busy_zones.div_ceil(5).max(1) as u32);
    let (latencies, lags) = write_line(cluster, zones, interval, quota).await?;
    let busy = format!("write line, quota {quota}/s: {zones} access lists read every {POLL_FLOOR} in one namespace");
    report.check(
        SUITE,
        &format!("{busy}: another namespace's PATCH latency, median / max of {CHANGES} changes"),
        median_and_max(&latencies, 2),
        &format!("max <= {} s", FAIR_PATCH_TARGET.as_secs()),
        latencies.len() == CHANGES && latencies.last().is_some_and(|max| *max <= FAIR_PATCH_TARGET),
    );
    report.check(
        SUITE,
        &format!(
            "{busy}: another namespace's watch poll lag, max of {} polls",
            lags.len()
        ),
        format!("{:.1} s", lags.last().copied().unwrap_or_default().as_secs_f64()),
        &format!("<= {} s", ON_TIME_P99.as_secs()),
        lags.len() >= 2 && lags.last().is_some_and(|max| *max <= ON_TIME_P99),
    );
    Ok(())
}
