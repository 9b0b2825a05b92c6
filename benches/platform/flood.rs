//! A tenant's objects carrying ~1 MB of foreign finalizers each: what the operator
//! holds of an object must not depend on what its tenant writes. The operator's RSS
//! before and after 40 such objects, and another tenant's object Ready meanwhile.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use edge_operator::controller::kinds::AccessListConfig;
use edge_operator::sim::document::{ShieldZone, SimAccessList};
use edge_operator::sim::{SimDocument, spawn};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::harness::{ACCESS_KEY, Cluster};
use crate::report::Report;

const SUITE: &str = "operator";
const ZONE: i64 = 1;
const CONFIGURATION: i64 = 9101;
const FLOODED: usize = 40;
/// Foreign finalizers per flooded object: 12,000 of 85 bytes, ~1 MB.
const FINALIZERS: usize = 12_000;
/// How much more the operator may hold with the flood in its caches.
const GROWTH_TARGET_MB: f64 = 10.0;
const WAIT: Duration = Duration::from_secs(60);

/// Waits until `api` holds `name` with a condition `type_` of `reason`.
async fn condition(api: &kube::Api<AccessListConfig>, name: &str, type_: &str, reason: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let object = api.get_opt(name).await?;
        let reached = object
            .and_then(|o| o.status)
            .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == type_ && c.reason == reason));
        if reached {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "{name}: no {type_} {reason} within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) async fn run(cluster: &Cluster, report: &mut Report) -> anyhow::Result<()> {
    let sim = spawn(SimDocument {
        access_keys: vec![ACCESS_KEY.to_string()],
        shield_zones: vec![ShieldZone {
            id: ZONE,
            pull_zone_id: None,
            access_lists: vec![SimAccessList::new(CONFIGURATION, "list", false, 0)],
            rate_limits: Vec::new(),
            ..ShieldZone::default()
        }],
        ..SimDocument::default()
    })
    .await?;
    let (flooder, flooded) = cluster.namespace::<AccessListConfig>("flood").await?;
    let (other, others) = cluster.namespace::<AccessListConfig>("flood-other").await?;
    let label = format!("edge-bench-flood={flooder}");
    let mut operator = cluster.start_operator_across(&sim.base_url(), &label, &[&flooder, &other], &[])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    operator.ensure_running()?;
    let before = operator.rss_mb()?;
    let finalizers: Vec<String> = (0..FINALIZERS)
        .map(|i| format!("f{i:05}.flood.tenant.example/{}", "x".repeat(60)))
        .collect();
    let labels = json!({ "edge-bench-flood": flooder });
    for i in 0..FLOODED {
        let object: AccessListConfig = serde_json::from_value(json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
            "metadata": {"name": format!("flood-{i}"), "labels": labels, "finalizers": finalizers,
                         "annotations": {"edgeplatform.io/paused": "true"}},
            "spec": {"shieldZoneId": ZONE, "configurationId": CONFIGURATION, "enabled": false},
        }))?;
        flooded
            .create(&PostParams::default(), &object)
            .await
            .context("creating a flooded object")?;
    }
    for i in 0..FLOODED {
        condition(&flooded, &format!("flood-{i}"), "Synced", "Paused").await?;
    }
    let served: AccessListConfig = serde_json::from_value(json!({
        "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
        "metadata": {"name": "served", "labels": labels},
        "spec": {"shieldZoneId": ZONE, "configurationId": CONFIGURATION, "enabled": true},
    }))?;
    others.create(&PostParams::default(), &served).await?;
    let served_ready = condition(&others, "served", "Ready", "InSync").await.is_ok();
    operator.ensure_running()?;
    let growth = operator.rss_mb()? - before;
    let bytes: usize = finalizers.iter().map(|f| f.len() + 3).sum();
    let flood = format!(
        "{FLOODED} paused objects of {} KB of foreign finalizers each",
        bytes / 1000
    );
    report.info(
        SUITE,
        &format!("{flood}: operator RSS before"),
        format!("{before:.1} MB"),
    );
    report.check(
        SUITE,
        &format!("{flood}: operator RSS growth"),
        format!("{growth:.1} MB"),
        &format!("<= {GROWTH_TARGET_MB} MB"),
        growth <= GROWTH_TARGET_MB,
    );
    report.check(
        SUITE,
        &format!("{flood}: another namespace's object Ready meanwhile"),
        served_ready.to_string(),
        "true",
        served_ready,
    );
    drop(operator);
    let release = json!({"metadata": {"finalizers": null}});
    for i in 0..FLOODED {
        flooded
            .patch(&format!("flood-{i}"), &PatchParams::default(), &Patch::Merge(&release))
            .await
            .context("clearing the flood's finalizers")?;
    }
    for namespace in [&flooder, &other] {
        cluster.delete_namespace(namespace, WAIT).await?;
    }
    cluster.delete_claims(&sim.base_url()).await
}
