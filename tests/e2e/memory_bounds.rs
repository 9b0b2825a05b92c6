//! What a tenant or the platform can make the operator hold at rest: endless answers to
//! many polls, statuses filled to what the schema admits (what it holds while loading:
//! loading_flood.rs). The operator's memory stays within its bound and other tenants
//! are served.

use std::time::Duration;

use edge_operator::controller::kinds::ContainerAppWatch;
use kube::Api;
use serde_json::{Value, json};

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{Operator, eventually, wait_for_condition};
use crate::support::sim::{example_fixtures, start};

const WAIT: Duration = Duration::from_secs(60);

/// The most memory (`VmHWM`) the operator may reach while every poll reads an endless
/// answer: the chart's limit is 256 MiB.
const OPERATOR_PEAK_LIMIT_KIB: u64 = 160 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_answers_to_many_polls_keep_the_operator_within_its_memory_bound() {
    use crate::support::hostile_server::{hostile, peak_kib_until, serve};
    let base = serve(hostile("http://127.0.0.1:9".into())).await;
    let namespace = TestNamespace::create("endless");
    let operator = Operator::start(&namespace.name, &format!("{base}/endless"), &[]);
    let watches = 40;
    cluster().apply(stream((0..watches).map(|i| {
        Manifest::app_watch(
            &namespace.name,
            &format!("app-{i}"),
            json!({"appId": format!("app-{i}"), "interval": "10s"}),
        )
    })));
    let api: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, &namespace.name);
    let started = std::time::Instant::now();
    let peak_kib = peak_kib_until(operator.pid(), || started.elapsed() > Duration::from_secs(25)).await;
    let objects = api.list(&Default::default()).await.expect("list").items;
    let refused = objects
        .iter()
        .filter(|o| {
            o.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.reason == "DecodeError" && c.message.contains("longer than"))
            })
        })
        .count();
    assert_eq!(refused, watches, "every poll ends in a bounded read");
    assert!(
        peak_kib <= OPERATOR_PEAK_LIMIT_KIB,
        "peak memory {peak_kib} KiB over {OPERATOR_PEAK_LIMIT_KIB} KiB"
    );
    eprintln!("operator with {watches} polls of endless answers: peak memory {peak_kib} KiB");
}

/// How much more memory the operator may hold once 40 statuses of 1.2 MB written by
/// another are in its caches.
const FLOOD_GROWTH_LIMIT_KIB: u64 = 10 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_flood_is_not_cached_and_the_operator_writes_its_own_over_it() {
    use crate::support::hostile_server::memory_kib;
    use kube::api::{Patch, PatchParams};
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("status-flood");
    let ns = namespace.name.as_str();
    let operator = Operator::start(ns, &sim.base_url(), &[]);
    let watches: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, ns);
    let objects: u64 = 40;
    for i in 0..objects {
        let watch: ContainerAppWatch = serde_json::from_value(json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
            "metadata": {"name": format!("flood-{i}"), "annotations": {"edgeplatform.io/paused": "true"}},
            "spec": {"appId": "app-shop"},
        }))
        .expect("a ContainerAppWatch");
        watches.create(&Default::default(), &watch).await.expect("created");
    }
    for i in 0..objects {
        wait_for_condition(&watches, &format!("flood-{i}"), "Synced", Some("False"), "Paused", WAIT).await;
    }
    let before_kib = memory_kib(operator.pid(), "VmRSS").expect("the operator runs");

    // The most the schema admits: 200 rules and 200 notes of 2 KiB texts, 1.2 MB a status.
    let text = "x".repeat(2048);
    let rules: Vec<Value> = (0..200)
        .map(|id| json!({"id": id, "name": text, "action": text}))
        .collect();
    let forged = json!({"status": {"rateLimits": rules, "truncated": vec![text.clone(); 200]}});
    for i in 0..objects {
        let name = format!("flood-{i}");
        watches
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&forged))
            .await
            .expect("a status writer fills the status");
        let look_again =
            json!({"metadata": {"annotations": {"edgeplatform.io/reconcile-requested-at": "after-the-flood"}}});
        watches
            .patch(&name, &PatchParams::default(), &Patch::Merge(&look_again))
            .await
            .expect("annotated");
    }
    for i in 0..objects {
        let name = format!("flood-{i}");
        eventually("the operator's own status over the forged one", WAIT, || async {
            let status = watches.get(&name).await.ok()?.status?;
            (status.rate_limits.is_none() && status.truncated.is_empty()).then_some(())
        })
        .await;
    }
    let growth_kib = memory_kib(operator.pid(), "VmRSS")
        .expect("the operator runs")
        .saturating_sub(before_kib);
    eprintln!(
        "operator with {objects} statuses of 1.2 MB written by another: resident {before_kib} KiB, then +{growth_kib} KiB"
    );
    assert!(
        growth_kib <= FLOOD_GROWTH_LIMIT_KIB,
        "the operator grew by {growth_kib} KiB (limit {FLOOD_GROWTH_LIMIT_KIB} KiB)"
    );
}
