//! Reconcile turns: namespace A keeps thousands of AccessListConfigs due, each read at
//! the poll-interval floor on a Shield Zone of its own (far more than the platform quota
//! serves), and one of them is touched every second (`reconcile-requested-at`);
//! namespace B's one access list is changed meanwhile, and each change must reach the
//! platform within 5 s. One operator, its defaults, serves both.

use std::time::Instant;

use edge_operator::controller::kinds::AccessListConfig;
use edge_operator::resources::ANNOTATION_RECONCILE_REQUESTED_AT;
use edge_operator::resources::time::rfc3339;
use edge_operator::sim::spawn;
use serde_json::json;

use super::*;
use crate::access_lists::{deletion_time, is_in_sync};
use crate::harness::ready_waiter;
use crate::poll_quota::{
    CHANGES, PATCH_WAIT, POLL_FLOOR, busy_name, create_busy_access_lists, document, median_and_max, time_patches,
    with_busy_zones,
};

/// B's change reaches the platform within this, however many of A's objects are due.
const WRITE_TARGET: Duration = Duration::from_secs(5);
/// The operator's default platform quota (requests/s), which A's objects want many
/// times over.
const DEFAULT_QUOTA: f64 = 50.0;
/// B's changes begin once the re-reads of A's objects in sync alone want this many
/// times the quota.
const SATURATION: f64 = 2.0;

pub(super) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let objects = settings.tenant_objects;
    let sim = spawn(with_busy_zones(document(0), objects)).await?;
    let tenants = cluster
        .tenants::<AccessListConfig, AccessListConfig>(&sim.base_url(), ["turns-busy", "turns-other"], &[])
        .await?;
    let (mut operator, labels) = (tenants.operator, tenants.labels);
    let ((busy, busy_api), (other, _)) = (tenants.first, tenants.second);
    // A's objects ask for what the platform holds: each is in sync after one read. B's
    // changes begin once A saturates the quota with the re-reads of its objects in sync
    // alone (all of them, when fewer), or at the bound with those that are.
    let saturating = objects.min((SATURATION * DEFAULT_QUOTA * 5.0) as usize);
    let mut in_sync_waiter = ready_waiter(busy_api.clone(), saturating, is_in_sync);
    let created = Instant::now();
    create_busy_access_lists(&busy_api, &labels, objects, false).await?;
    let within = Duration::from_secs(60) + Duration::from_secs_f64(3.0 * saturating as f64 / DEFAULT_QUOTA);
    let in_sync = match tokio::time::timeout(within, &mut in_sync_waiter).await {
        Ok(at) => format!(
            "{saturating} in sync after {:.0} s",
            (at??).duration_since(created).as_secs_f64()
        ),
        Err(_) => {
            in_sync_waiter.abort();
            let listed = busy_api.list(&Default::default()).await?.items;
            let count = listed.iter().filter(|o| is_in_sync(o)).count();
            format!("{count} in sync at the bound of {} s", within.as_secs())
        }
    };
    operator.ensure_running()?;
    let names: Vec<String> = (0..objects).map(busy_name).collect();
    let touches = EverySecond::start(
        busy_api,
        names,
        1,
        |_| json!({"metadata": {"annotations": {ANNOTATION_RECONCILE_REQUESTED_AT: rfc3339(chrono::Utc::now())}}}),
    );
    let latencies = time_patches(cluster, &other, json!(labels), &sim).await;
    let touched = touches.stop().await?;
    let latencies = latencies?;
    operator.ensure_running()?;
    drop(operator);
    let demand = objects as f64 / 5.0;
    report.check(
        SUITE,
        &format!(
            "reconcile turns: {objects} access lists in namespace A read every {POLL_FLOOR} ({demand:.0} requests/s \
             wanted, quota {DEFAULT_QUOTA}/s; {in_sync}), one touched every second ({touched} touches): B's \
             spec change -> its PATCH on the platform, median / max of {CHANGES} changes"
        ),
        if latencies.len() < CHANGES {
            format!(
                "{} (change {} of {CHANGES} not on the platform within {} s: the changes ended)",
                median_and_max(&latencies, 2),
                latencies.len(),
                PATCH_WAIT.as_secs()
            )
        } else {
            median_and_max(&latencies, 2)
        },
        &format!("max <= {} s", WRITE_TARGET.as_secs()),
        latencies.len() == CHANGES && latencies.last().is_some_and(|max| *max <= WRITE_TARGET),
    );
    delete_namespaces(cluster, &[&busy, &other], deletion_time(objects)).await?;
    cluster.delete_claims(&sim.base_url()).await
}
