//! Reconcile turns: namespace A keeps thousands of AccessListConfigs due, each read at
//! the poll-interval floor on a Shield Zone of its own (far more than the platform quota
//! serves), and one of them is touched every second (`reconcile-requested-at`);
//! namespace B's one access list is changed meanwhile, and each change must reach the
//! platform within 5 s. One operator, its defaults, serves both.

use std::time::Instant;

use edge_operator::controller::framework::status::time::rfc3339;
use edge_operator::controller::kinds::AccessListConfig;
use edge_operator::crd::ANNOTATION_RECONCILE_REQUESTED_AT;
use edge_operator::sim::spawn;
use serde_json::json;

use super::*;
use crate::access_lists::{deletion_time, is_in_sync};
use crate::harness::ready_waiter;
use crate::poll_quota::{
    CHANGES, POLL_FLOOR, busy_name, create_busy_access_lists, document, median_and_max, time_patches, with_busy_zones,
};

/// B's change reaches the platform within this, however many of A's objects are due.
const WRITE_TARGET: Duration = Duration::from_secs(5);
/// The operator's default platform quota (requests/s), which A's objects want many
/// times over.
const DEFAULT_QUOTA: f64 = 50.0;

pub(super) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) -> anyhow::Result<()> {
    let objects = settings.tenant_objects;
    let sim = spawn(with_busy_zones(document(0), objects)).await?;
    let tenants = cluster
        .tenants::<AccessListConfig, AccessListConfig>(&sim.base_url(), ["turns-busy", "turns-other"], &[])
        .await?;
    let (mut operator, labels) = (tenants.operator, tenants.labels);
    let ((busy, busy_api), (other, _)) = (tenants.first, tenants.second);
    // A's objects ask for what the platform holds: each is in sync after one read.
    let all_in_sync = ready_waiter(busy_api.clone(), objects, is_in_sync);
    let created = Instant::now();
    create_busy_access_lists(&busy_api, &labels, objects, false).await?;
    // Each wants a read at its first reconcile, under a quota its re-reads keep full.
    let within = Duration::from_secs(60) + Duration::from_secs_f64(3.0 * objects as f64 / DEFAULT_QUOTA);
    let in_sync_at = tokio::time::timeout(within, all_in_sync)
        .await
        .with_context(|| format!("A's {objects} objects were not all in sync within {within:?}"))???;
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
             wanted, quota {DEFAULT_QUOTA}/s; all in sync after {:.0} s), one touched every second ({touched} \
             touches): B's spec change -> its PATCH on the platform, median / max of {CHANGES} changes",
            in_sync_at.duration_since(created).as_secs_f64()
        ),
        median_and_max(&latencies, 2),
        &format!("max <= {} s", WRITE_TARGET.as_secs()),
        latencies.len() == CHANGES && latencies.last().is_some_and(|max| *max <= WRITE_TARGET),
    );
    delete_namespaces(cluster, &[&busy, &other], deletion_time(objects)).await?;
    cluster.delete_claims(&sim.base_url()).await
}
