//! Paused objects with the largest status the operator caches: a tenant creates many
//! paused ContainerAppWatches and a status writer fills each status to just under the
//! most a watch cache keeps of one (80 KiB: the most the operator writes, with its
//! conditions); a new operator starts on them. Its peak RSS must stay within the memory
//! sizing table of docs/operations.md.

use edge_operator::controller::kinds::ContainerAppWatch;
use edge_operator::controller::kinds::app_watch::resource::{ContainerAppWatchStatus, RateLimitSummary};
use edge_operator::resources::ANNOTATION_PAUSED;
use edge_operator::sim::{SimDocument, spawn};
use futures::{StreamExt, TryStreamExt, stream};
use kube::api::PostParams;
use serde_json::json;

use super::*;
use crate::access_lists::deletion_time;
use crate::harness::ACCESS_KEY;

/// The status each object carries: 79 KiB serialized, under the 80 KiB a watch cache
/// keeps of a status (`CACHED_STATUS_BYTES`, src/controller/framework/object.rs).
const STATUS_BYTES: usize = 79 << 10;
/// Rate-limit rules in it: the most the schema admits.
const RULES: usize = 200;
/// docs/operations.md, Memory sizing: peak RSS at 1,000 objects, and about 3.8 KB per
/// object above 1,000.
const RSS_AT_1000_MB: f64 = 25.4;
const BYTES_PER_OBJECT_ABOVE_1000: f64 = 3_800.0;
/// Room above the table for the process's variation between runs.
const SLACK_MB: f64 = 10.0;
const KIND: &str = "ContainerAppWatch";
/// Creates and status writes in flight at once.
const CONCURRENCY: usize = 32;

/// The status a status writer leaves: [`RULES`] rules whose names fill it to exactly
/// [`STATUS_BYTES`] once serialized, as the operator serializes it.
fn largest_cached_status() -> anyhow::Result<ContainerAppWatchStatus> {
    let rule = |id: usize, name_bytes: usize| RateLimitSummary {
        id: id as i64,
        name: "x".repeat(name_bytes),
        action: "RateLimit".to_string(),
        ..RateLimitSummary::default()
    };
    let mut status = ContainerAppWatchStatus {
        rate_limits: Some((0..RULES).map(|id| rule(id, 0)).collect()),
        ..ContainerAppWatchStatus::default()
    };
    let room = STATUS_BYTES
        .checked_sub(serde_json::to_vec(&status)?.len())
        .context("the rules alone exceed the status size")?;
    status.rate_limits = Some(
        (0..RULES)
            .map(|id| rule(id, room / RULES + usize::from(id < room % RULES)))
            .collect(),
    );
    anyhow::ensure!(
        serde_json::to_vec(&status)?.len() == STATUS_BYTES,
        "the status is not {STATUS_BYTES} bytes"
    );
    Ok(status)
}

/// The peak RSS the sizing table allows `objects` objects, with [`SLACK_MB`].
fn target_mb(objects: usize) -> f64 {
    RSS_AT_1000_MB + BYTES_PER_OBJECT_ABOVE_1000 * objects.saturating_sub(1000) as f64 / (1024.0 * 1024.0) + SLACK_MB
}

pub(super) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let objects = settings.paused_watches;
    let sim = spawn(SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        ..SimDocument::default()
    })
    .await?;
    let (namespace, api) = cluster.namespace::<ContainerAppWatch>("paused").await?;
    let status = json!({ "status": largest_cached_status()? });
    stream::iter(0..objects)
        .map(|i| {
            let (api, status) = (&api, &status);
            async move {
                let name = format!("paused-{i:04}");
                let object: ContainerAppWatch = serde_json::from_value(json!({
                    "apiVersion": "edgeplatform.io/v1alpha1",
                    "kind": "ContainerAppWatch",
                    "metadata": {"name": name, "annotations": {ANNOTATION_PAUSED: "true"}},
                    "spec": {"appId": "app-paused"},
                }))?;
                api.create(&PostParams::default(), &object)
                    .await
                    .with_context(|| format!("creating {name}"))?;
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await
                    .with_context(|| format!("writing the status of {name}"))?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await?;
    let mut operator = cluster.start_operator(&sim.base_url(), &namespace, &[])?;
    // Each reconcile writes the operator's conditions into a status of 79 KiB.
    let within = Duration::from_secs(60) + Duration::from_millis(100 * objects as u64);
    let start_up = match operator.reconciles_within(KIND, objects, within).await? {
        Some(time) => format!("each reconciled once after {:.1} s", time.as_secs_f64()),
        None => format!(
            "{:.0} reconciled within {} s",
            operator.reconciles(KIND).await.unwrap_or_default(),
            within.as_secs()
        ),
    };
    let (peak, after) = (operator.peak_rss_mb()?, operator.rss_mb()?);
    drop(operator);
    let target = target_mb(objects);
    report.check_at_scale(
        SUITE,
        &format!(
            "{objects} paused ContainerAppWatches with statuses of {} KiB ({RULES} rate-limit rules) from a \
             status writer: operator peak RSS at a start on them ({start_up})",
            STATUS_BYTES >> 10,
        ),
        format!("{peak:.1} MB ({after:.1} MB then)"),
        &format!(
            "<= {target:.1} MB (docs/operations.md sizing: {RSS_AT_1000_MB} MB at 1,000 objects + 3.8 KB per \
             object above, + {SLACK_MB} MB)"
        ),
        peak <= target,
    );
    cluster.delete_namespace(&namespace, deletion_time(objects)).await
}
