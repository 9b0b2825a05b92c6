//! AccessListConfig end to end: real apiserver, edge-sim, the operator as a process.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, eventually, wait_for_condition};
use crate::support::sim::{await_journal, example_fixtures, journal_count, start};
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::sim::RunningSim;
use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

async fn ready_with_reason(api: &Api<AccessListConfig>, name: &str, status: &str, reason: &str) -> AccessListConfig {
    wait_for_condition(api, name, "Ready", Some(status), reason, WAIT).await
}

fn patches(sim: &RunningSim, configuration: i64) -> usize {
    sim.sim
        .journal()
        .iter()
        .filter(|e| e.method == "PATCH" && e.path.ends_with(&format!("/configurations/{configuration}")))
        .count()
}

fn platform_list(sim: &RunningSim, configuration: i64) -> (bool, i32) {
    let (enabled, action) = crate::support::sim::platform_list(sim, configuration).expect("configuration");
    (enabled, i32::try_from(action).expect("an int32 action"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_by_id_and_by_name_with_one_patch_and_none_when_in_sync() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("alc");
    let operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);

    cluster().apply(Manifest::access_list(
        &namespace.name,
        "by-id",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": "Challenge"}),
    ));
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "by-name",
        json!({"shieldZoneId": 1001, "listName": "Tor exit nodes", "enabled": false}),
    ));
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "in-sync",
        json!({"shieldZoneId": 1001, "configurationId": 9201, "enabled": true, "action": "Allow"}),
    ));
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "observer",
        json!({"shieldZoneId": 1001, "configurationId": 9201, "enabled": false, "managementPolicy": "Observe"}),
    ));

    let by_id = ready_with_reason(&api, "by-id", "True", "InSync").await;
    let at_provider = by_id
        .status
        .as_ref()
        .and_then(|s| s.at_provider.clone())
        .expect("atProvider");
    assert_eq!(
        (at_provider.is_enabled, at_provider.action.as_str(), at_provider.list_id),
        (true, "Challenge", 11)
    );
    assert_eq!(at_provider.list_type, "IP");
    ready_with_reason(&api, "by-name", "True", "InSync").await;
    ready_with_reason(&api, "in-sync", "True", "InSync").await;
    let observer = ready_with_reason(&api, "observer", "False", "Drifted").await;
    let synced = observer.condition("Synced").expect("Synced");
    assert_eq!(synced.reason, "Observed");

    operator
        .look_again(&namespace.name, "accesslistconfigs", "AccessListConfig", 4)
        .await;
    assert_eq!(patches(&sim, 9101), 1, "exactly one PATCH for the generation");
    assert_eq!(patches(&sim, 9102), 1, "by name: one PATCH (9102 is the Tor list)");
    assert_eq!(platform_list(&sim, 9101), (true, 3));
    assert_eq!(platform_list(&sim, 9102), (false, 3));
    assert_eq!(patches(&sim, 9201), 0, "already in sync: no PATCH");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_never_patches() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("observe");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--resync", "1s"]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "watcher",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": "Log", "managementPolicy": "Observe"}),
    ));
    let object = ready_with_reason(&api, "watcher", "False", "Drifted").await;
    let message = object.condition("Ready").map(|c| c.message).unwrap_or_default();
    assert!(
        message.contains("isEnabled should be true") && message.contains("action should be Log"),
        "{message}"
    );
    // Two resyncs read the zone again: still no write.
    await_journal(
        &sim,
        "GET",
        "/access-lists",
        journal_count(&sim, "GET", "/access-lists"),
        2,
    )
    .await;
    assert_eq!(patches(&sim, 9101), 0);
    assert_eq!(platform_list(&sim, 9101), (false, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_corrected_at_the_resync_with_an_event() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("drift");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--resync", "2s"]);
    let client = cluster().client().await;
    let api: Api<AccessListConfig> = Api::namespaced(client.clone(), &namespace.name);
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "guarded",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true}),
    ));
    ready_with_reason(&api, "guarded", "True", "InSync").await;
    assert!(platform_list(&sim, 9101).0);

    let response = reqwest::Client::new()
        .patch(format!("{}/_sim/shield-zones/1001/access-lists/9101", sim.base_url()))
        .json(&json!({"isEnabled": false}))
        .send()
        .await
        .expect("admin patch");
    assert!(response.status().is_success());
    let corrected = eventually("drift corrected", WAIT, || async {
        let object = api.get("guarded").await.ok()?;
        (object.status.as_ref()?.drift_corrections == 1).then_some(object)
    })
    .await;
    assert_eq!(
        corrected.status.and_then(|s| s.at_provider).map(|p| p.is_enabled),
        Some(true)
    );
    assert!(platform_list(&sim, 9101).0);
    assert_eq!(patches(&sim, 9101), 2, "the first write and the correction");
    let events: Api<Event> = Api::namespaced(client, &namespace.name);
    let reasons = eventually("a DriftCorrected Event", WAIT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let reasons: Vec<String> = list.items.iter().filter_map(|e| e.reason.clone()).collect();
        reasons.iter().any(|r| r == "DriftCorrected").then_some(reasons)
    })
    .await;
    assert!(reasons.contains(&"DriftCorrected".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_on_delete_puts_back_the_earlier_values() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("restore");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    assert_eq!(platform_list(&sim, 9101), (false, 2));
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "temporary",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": "Challenge", "deletionPolicy": "Restore"}),
    ));
    let object = ready_with_reason(&api, "temporary", "True", "InSync").await;
    assert!(
        object
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == "edgeplatform.io/restore-access-list")
    );
    assert_eq!(platform_list(&sim, 9101), (true, 3));

    api.delete("temporary", &DeleteParams::default()).await.expect("delete");
    eventually("the object to be gone", WAIT, || async {
        api.get_opt("temporary").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(
        platform_list(&sim, 9101),
        (false, 2),
        "values before the first write are back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_restores_what_the_claim_recorded_whatever_the_status_says() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("aimed");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let client = cluster().client().await;
    let api: Api<AccessListConfig> = Api::namespaced(client.clone(), &namespace.name);
    cluster().apply(Manifest::access_list(
        &namespace.name,
        "aimed",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": "Challenge", "deletionPolicy": "Restore"}),
    ));
    let object = ready_with_reason(&api, "aimed", "True", "InSync").await;
    assert_eq!(
        object
            .status
            .and_then(|s| s.restore_point)
            .map(|p| (p.shield_zone_id, p.is_enabled, p.action)),
        Some((Some(1001), false, 2)),
        "status mirrors the values the claim recorded before the first write"
    );
    // Whoever may patch the status aims the restore at another zone, with other values.
    let (ok, _, err) = cluster().kubectl(
        &[
            "patch",
            "accesslistconfig",
            "aimed",
            "-n",
            &namespace.name,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"restorePoint":{"shieldZoneId":1002,"isEnabled":true,"action":5}}}"#,
        ],
        None,
    );
    assert!(ok, "{err}");

    api.delete("aimed", &DeleteParams::default()).await.expect("delete");
    eventually("the object to be gone", WAIT, || async {
        api.get_opt("aimed").await.ok()?.is_none().then_some(())
    })
    .await;
    let aimed: Vec<String> = sim
        .sim
        .journal()
        .iter()
        .filter(|e| e.method == "PATCH" && e.path.contains("/shield-zone/1002/"))
        .map(|e| e.path.clone())
        .collect();
    assert!(aimed.is_empty(), "a write to the other zone: {aimed:?}");
    assert_eq!(platform_list(&sim, 9101), (false, 2), "the recorded values, restored");
    let events: Api<Event> = Api::namespaced(client, &namespace.name);
    let restored = eventually("a Restored Event", WAIT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("Restored"))
    })
    .await;
    assert!(
        restored
            .message
            .as_deref()
            .is_some_and(|m| m.contains("isEnabled=false action=Block") && m.contains("Shield Zone 1001")),
        "{:?}",
        restored.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_objects_are_left_alone_until_resumed() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("paused");
    let operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    let with_paused = |paused: &str| {
        Manifest::access_list(
            &namespace.name,
            "held",
            json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true}),
        )
        .annotated("edgeplatform.io/paused", paused)
    };
    cluster().apply(with_paused("true"));
    eventually("Synced=False Paused", WAIT, || async {
        let held = api.get("held").await.ok()?;
        held.condition("Synced")
            .is_some_and(|c| c.reason == "Paused")
            .then_some(())
    })
    .await;
    operator
        .look_again(&namespace.name, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    assert_eq!(patches(&sim, 9101), 0, "paused: no write");
    cluster().apply(with_paused("false"));
    ready_with_reason(&api, "held", "True", "InSync").await;
    assert_eq!(patches(&sim, 9101), 1);
}
