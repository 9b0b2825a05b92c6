//! Rate discipline: ContainerAppWatches that all summarise the CDN logs of one Pull
//! Zone, polling at the shortest interval, must never draw a 429 from the logging API
//! (30 requests per 10 s per Pull Zone), and every watch must get its summary. Twice:
//! all over the same window (the operator shares one summary), then each over its own
//! window (every summary is read, more than the quota allows: the limiter decides).

use std::time::Duration;

use anyhow::Context as _;
use edge_operator::controller::kinds::ContainerAppWatch;
use edge_operator::sim::{JournalEntry, spawn};
use kube::api::PostParams;
use serde_json::json;

use crate::Settings;
use crate::harness::{Cluster, check_logging_quota, logging_pull_zone};
use crate::report::Report;

const SUITE: &str = "rate discipline";
const PULL_ZONE: i64 = 501;
/// Three pages of 1,000 per summary: each poll costs three logging requests.
const LOG_ENTRIES: usize = 2_500;
const INTERVAL: &str = "10s";

fn watch(index: usize, window: &str) -> anyhow::Result<ContainerAppWatch> {
    let object = json!({
        "apiVersion": "edgeplatform.io/v1alpha1",
        "kind": "ContainerAppWatch",
        "metadata": {"name": format!("caw-{index:02}")},
        "spec": {
            "appId": format!("app-{index:02}"),
            "interval": INTERVAL,
            "cdn": {"pullZoneId": PULL_ZONE, "window": window},
        },
    });
    serde_json::from_value(object).context("building a ContainerAppWatch")
}

fn cdn_synced(object: &ContainerAppWatch) -> bool {
    object.status.as_ref().is_some_and(|s| {
        s.cdn.is_some()
            && s.conditions
                .iter()
                .any(|c| c.type_ == "CdnLogsSynced" && c.reason == "Synced")
    })
}

pub(crate) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    scenario(cluster, settings, report, "same window", |_| "24h".to_string()).await?;
    // 1h to 20h of logs spread over 24 h: one to three pages each.
    scenario(cluster, settings, report, "own windows", |i| format!("{}h", i + 1)).await
}

async fn scenario(
    cluster: &Cluster,
    settings: &Settings,
    report: &mut Report,
    name: &str,
    window: fn(usize) -> String,
) -> anyhow::Result<()> {
    let watches = settings.watches;
    let sim = spawn(logging_pull_zone(
        PULL_ZONE,
        (0..watches).map(|i| format!("app-{i:02}")),
    ))
    .await?;
    sim.sim.generate(0, LOG_ENTRIES, 7)?;
    let (namespace, api) = cluster
        .namespace::<ContainerAppWatch>(&format!("rate-{}", name.replace(' ', "-")))
        .await?;
    // The operator's defaults: what a user runs.
    let mut operator = cluster.start_operator(&sim.base_url(), &namespace, &[])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    operator.ensure_running()?;
    sim.sim.clear_journal();
    for i in 0..watches {
        api.create(&PostParams::default(), &watch(i, &window(i))?).await?;
    }
    tokio::time::sleep(settings.rate_duration).await;
    operator.ensure_running()?;
    let journal = sim.sim.journal();
    let logging: Vec<&JournalEntry> = journal
        .iter()
        .filter(|e| e.path.starts_with("/v2/pullzones/"))
        .collect();
    let throttled = logging.iter().filter(|e| e.status == 429).count();
    let synced = api
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|o| cdn_synced(o))
        .count();

    let label = format!(
        "{watches} watches, one Pull Zone, {name}, every {INTERVAL} for {}",
        humantime::format_duration(settings.rate_duration)
    );
    report.info(SUITE, &format!("{label}: logging requests"), logging.len().to_string());
    report.check(
        SUITE,
        &format!("{label}: 429 answers"),
        throttled.to_string(),
        "0",
        throttled == 0,
    );
    check_logging_quota(report, SUITE, &label, &sim.sim);
    report.check(
        SUITE,
        &format!("{label}: watches with a CDN summary"),
        format!("{synced}/{watches}"),
        &format!("{watches}/{watches}"),
        synced == watches,
    );
    Ok(())
}
