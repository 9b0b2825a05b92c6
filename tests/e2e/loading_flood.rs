//! What a tenant can make the operator hold while it loads: Secrets and objects carrying
//! as much foreign metadata as the apiserver stores, met at a start and at a restart,
//! on an apiserver that streams initial lists and on one that does not (WatchList off,
//! as Kubernetes 1.30, 1.31 and 1.33). The operator grows by a bounded amount and another
//! tenant's object is served meanwhile.

use std::time::Duration;

use edge_operator::api::USER_AGENT;
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::controller::runtime::LIST_PAGE_SIZE;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::{Value, json};

use crate::support::cluster::{Cluster, PrivateCluster, TestNamespace};
use crate::support::hostile_server::memory_kib;
use crate::support::manifest::Manifest;
use crate::support::operator::{Operator, eventually, wait_for_condition};
use crate::support::sim::{ACCESS_KEY, example_fixtures, start};

const WAIT: Duration = Duration::from_secs(120);

/// Secrets of the flooding tenant, each with ~1.4 MiB of foreign finalizers.
const SECRETS: usize = 150;
const SECRET_FINALIZERS: usize = 16_000;
/// AccessListConfigs of the flooding tenant, each with ~1 MB of foreign finalizers.
const OBJECTS: usize = 100;
const OBJECT_FINALIZERS: usize = 11_000;

/// How much more memory each flood may make the operator hold, once loaded and at a
/// restart on it.
const GROWTH_LIMIT_KIB: u64 = 16 << 10;

fn finalizers(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("f{i:05}.flood.tenant.example/{}", "x".repeat(60)))
        .collect()
}

fn resident_kib(operator: &Operator) -> u64 {
    memory_kib(operator.pid(), "VmRSS").expect("the operator runs")
}

/// Floods `of` with Secrets, then objects, while an operator runs; restarts it on the
/// flood. `initial_list` is how the operator must say it meets the objects.
async fn a_loading_flood_leaves_the_operator_small(of: &Cluster, initial_list: &str) {
    let sim = start(example_fixtures()).await;
    let (flooder, served) = (
        TestNamespace::create_in(of, "loading-flooder"),
        TestNamespace::create_in(of, "loading-served"),
    );
    let label = flooder.name.clone();
    let selector = format!("edge-loading={label}");
    let secret_namespaces = format!("{},{}", flooder.name, served.name);
    let start = || {
        Operator::start_for_tenants_of(
            of,
            &sim.base_url(),
            &selector,
            &[&served.name],
            &["--secret-namespaces", &secret_namespaces],
        )
    };
    let mut operator = start();
    let client = of.client().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &flooder.name);
    let flooded: Api<AccessListConfig> = Api::namespaced(client.clone(), &flooder.name);
    let other: Api<AccessListConfig> = Api::namespaced(client, &served.name);
    eventually("the operator's metrics", WAIT, || {
        operator.sample("process_resident_memory_bytes")
    })
    .await;
    let watching = format!("initial_list={initial_list}");
    eventually("the operator's watches", WAIT, || async {
        operator.log().contains(&watching).then_some(())
    })
    .await;
    let before_kib = resident_kib(&operator);
    let start_peak_kib = memory_kib(operator.pid(), "VmHWM").expect("the operator runs");

    // Secrets: the last one holds a key an object of the flooder's reads, so the
    // operator has met every Secret once that object is Ready.
    let secret_finalizers = finalizers(SECRET_FINALIZERS);
    create_flood(
        &secrets,
        SECRETS,
        &secret_finalizers,
        |name| json!({"metadata": {"name": name}, "stringData": {"accessKey": ACCESS_KEY}}),
    )
    .await;
    let last_secret = format!("flood-{}", SECRETS - 1);
    of.apply(
        Manifest::access_list(
            &flooder.name,
            "keyed",
            json!({"shieldZoneId": 1001, "configurationId": 9201, "enabled": true,
                   "accessKeySecretRef": {"name": last_secret, "key": "accessKey"}}),
        )
        .labelled("edge-loading", &label),
    );
    wait_for_condition(&flooded, "keyed", "Ready", Some("True"), "InSync", WAIT).await;
    let secrets_growth_kib = resident_kib(&operator).saturating_sub(before_kib);

    // Objects, paused: cached, never reconciled past their pause.
    let object_finalizers = finalizers(OBJECT_FINALIZERS);
    let after_secrets_kib = resident_kib(&operator);
    create_flood(&flooded, OBJECTS, &object_finalizers, |name| {
        json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig",
            "metadata": {"name": name, "labels": {"edge-loading": label},
                         "annotations": {"edgeplatform.io/paused": "true"}},
            "spec": {"shieldZoneId": 1001, "configurationId": 9101, "enabled": false},
        })
    })
    .await;
    for i in 0..OBJECTS {
        wait_for_condition(&flooded, &format!("flood-{i}"), "Synced", Some("False"), "Paused", WAIT).await;
    }
    of.apply(
        Manifest::access_list(
            &served.name,
            "served",
            json!({"shieldZoneId": 1001, "configurationId": 9102, "enabled": true}),
        )
        .labelled("edge-loading", &label),
    );
    wait_for_condition(&other, "served", "Ready", Some("True"), "InSync", WAIT).await;
    let objects_growth_kib = resident_kib(&operator).saturating_sub(after_secrets_kib);

    // A restart meets the whole flood again: streamed one at a time, or in pages of
    // the largest objects that fit.
    assert!(operator.terminate(WAIT).is_some(), "the operator stops when asked");
    let restarted = start();
    eventually("the restarted operator reconciled every object", WAIT, || async {
        (restarted.reconciles("AccessListConfig").await? > OBJECTS as u64).then_some(())
    })
    .await;
    wait_for_condition(&other, "served", "Ready", Some("True"), "InSync", WAIT).await;
    let restart_peak_kib = memory_kib(restarted.pid(), "VmHWM").expect("the operator runs");
    eprintln!(
        "initial lists {initial_list}: {SECRETS} Secrets of {} KB of finalizers +{secrets_growth_kib} KiB, \
         {OBJECTS} objects of {} KB +{objects_growth_kib} KiB (from {before_kib} KiB resident); \
         restart peak {restart_peak_kib} KiB, first start's {start_peak_kib} KiB",
        secret_finalizers.iter().map(|f| f.len() + 3).sum::<usize>() / 1000,
        object_finalizers.iter().map(|f| f.len() + 3).sum::<usize>() / 1000,
    );
    assert!(
        secrets_growth_kib <= GROWTH_LIMIT_KIB,
        "the Secrets grew the operator by {secrets_growth_kib} KiB (limit {GROWTH_LIMIT_KIB} KiB)"
    );
    assert!(
        objects_growth_kib <= GROWTH_LIMIT_KIB,
        "the objects grew the operator by {objects_growth_kib} KiB (limit {GROWTH_LIMIT_KIB} KiB)"
    );
    assert!(
        restart_peak_kib <= start_peak_kib + 2 * GROWTH_LIMIT_KIB,
        "a restart on both floods peaked at {restart_peak_kib} KiB, {start_peak_kib} KiB at a start without them"
    );

    secret_lists_were(of, initial_list);

    release_finalizers(&secrets, SECRETS).await;
    release_finalizers(&flooded, OBJECTS).await;
}

/// What the apiserver's audit log says of the operator's lists of Secrets (both starts):
/// `Streamed`, none (each watch streams its initial events); `Paged`, pages of
/// [`LIST_PAGE_SIZE`] only, enough of them to page through the flood (the restart met it
/// whole; the first start listed before it).
fn secret_lists_were(of: &Cluster, initial_list: &str) {
    let audit_log = of.kubeconfig.with_file_name("audit.log");
    let log = std::fs::read_to_string(&audit_log).expect("the apiserver's audit log");
    let secret_requests: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["userAgent"] == USER_AGENT && entry["objectRef"]["resource"] == "secrets")
        .collect();
    let lists: Vec<&str> = secret_requests
        .iter()
        .filter(|entry| entry["verb"] == "list" && entry["stage"] == "ResponseComplete")
        .filter_map(|entry| entry["requestURI"].as_str())
        .collect();
    let streamed_watches = secret_requests
        .iter()
        .filter_map(|entry| entry["requestURI"].as_str())
        .filter(|uri| uri.contains("sendInitialEvents=true"))
        .count();
    match initial_list {
        "Streamed" => {
            assert!(lists.is_empty(), "the operator listed Secrets: {lists:?}");
            assert!(
                streamed_watches >= 2,
                "one streamed watch per start: {streamed_watches}"
            );
        }
        _ => {
            let page = format!("limit={LIST_PAGE_SIZE}");
            let unpaged: Vec<&&str> = lists.iter().filter(|uri| !uri.contains(&page)).collect();
            assert!(
                unpaged.is_empty(),
                "lists of Secrets not in pages of {LIST_PAGE_SIZE}: {unpaged:?}"
            );
            let pages_of_the_flood = SECRETS.div_ceil(LIST_PAGE_SIZE as usize);
            assert!(
                lists.len() >= pages_of_the_flood,
                "{} lists of Secrets, fewer than the restart's {pages_of_the_flood} pages of the flood",
                lists.len()
            );
            assert_eq!(
                streamed_watches, 0,
                "a streamed watch on an apiserver without WatchList"
            );
        }
    }
}

/// Creates `flood-0` … `flood-{count - 1}`, each `object(name)` carrying `finalizers`.
async fn create_flood<K>(api: &Api<K>, count: usize, finalizers: &[String], object: impl Fn(String) -> Value)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    for i in 0..count {
        let mut flooded: K = serde_json::from_value(object(format!("flood-{i}"))).expect("a flooded object");
        flooded.meta_mut().finalizers = Some(finalizers.to_vec());
        api.create(&Default::default(), &flooded)
            .await
            .expect("a flooded object is created");
    }
}

/// Clears the tenant's finalizers of `flood-0` … so that its namespace can go.
async fn release_finalizers<K>(api: &Api<K>, count: usize)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let release = json!({"metadata": {"finalizers": null}});
    for i in 0..count {
        api.patch(
            &format!("flood-{i}"),
            &Default::default(),
            &kube::api::Patch::Merge(&release),
        )
        .await
        .expect("the tenant's finalizers are cleared");
    }
}

// Each flood runs on a control plane of its own: a failed run leaves its finalizers,
// and namespaces that cannot go, on no other test's cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loading_flood_on_an_apiserver_that_streams_lists() {
    let streamed = PrivateCluster::up("streamed-lists");
    a_loading_flood_leaves_the_operator_small(&streamed.cluster, "Streamed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loading_flood_on_an_apiserver_that_lists_in_pages() {
    let paged = PrivateCluster::with_feature_gates("paged-lists", "WatchList=false");
    a_loading_flood_leaves_the_operator_small(&paged.cluster, "Paged").await;
}
