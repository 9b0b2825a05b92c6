//! Two tenants in two platform accounts share one operator: squatters of one cannot
//! block, steer or rewrite what the other manages.

use std::time::Duration;

use edge_operator::controller::kinds::access_list::claim_resource::AccessListClaim;
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::sim::SimDocument;
use edge_operator::sim::document::Account;
use kube::Api;
use serde_json::json;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{Operator, events_of, wait_for_condition};
use crate::support::sim::{ACCESS_KEY, TEAM_B_KEY, example_fixtures, journal_count, platform_list, start};

const WAIT: Duration = Duration::from_secs(60);

/// Zone 1001 (its lists, Pull Zone 501 and app-shop) belongs to team-b; the example key
/// is the default account's, which owns zone 1002 only.
fn team_b_owns_zone_1001() -> SimDocument {
    let mut document = example_fixtures();
    document.accounts = vec![Account {
        name: "team-b".into(),
        access_keys: vec![TEAM_B_KEY.into()],
        shield_zones: vec![1001],
        pull_zones: vec![501],
        apps: vec!["app-shop".into()],
    }];
    document
}

fn kubectl(args: &[&str], stdin: Option<&str>) {
    let (ok, _, stderr) = cluster().kubectl(args, stdin);
    assert!(ok, "kubectl {args:?}: {stderr}");
}

/// An AccessListConfig of zone 1001 carrying the test's label.
fn access_list(namespace: &str, name: &str, label: &str, spec: serde_json::Value) -> Manifest {
    Manifest::access_list(namespace, name, json!({"shieldZoneId": 1001}))
        .with_spec(spec)
        .labelled("edge-tenants", label)
}

/// Writes `status` as someone granted `accesslistconfigs/status` could.
fn forge_status(namespace: &str, name: &str, status: serde_json::Value) {
    cluster().patch_status(namespace, &format!("accesslistconfig/{name}"), status);
}

/// What a squatter's status claims: that it wrote configuration 9101 and may restore it.
fn claims_9101() -> serde_json::Value {
    json!({
        "atProvider": {"configurationId": 9101, "listId": 11, "name": "Known bad actors", "isEnabled": false,
                       "action": "Block", "type": "IP", "managed": true},
        "restorePoint": {"shieldZoneId": 1001, "configurationId": 9101, "isEnabled": false, "action": 0},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squatters_block_nothing_and_a_forged_restore_point_writes_nothing() {
    let sim = start(team_b_owns_zone_1001()).await;
    let (a, b) = (TestNamespace::create("tenant-a"), TestNamespace::create("tenant-b"));
    let label = a.name.clone();
    cluster().apply(stream([
        Manifest::key_secret(&a.name, "refused-key", "not-a-key"),
        Manifest::key_secret(&a.name, "own-account-key", ACCESS_KEY),
        Manifest::key_secret(&b.name, "team-b-key", TEAM_B_KEY),
    ]));
    let squat = |reference: Option<&str>| {
        let mut spec = json!({"configurationId": 9101, "enabled": false, "action": "Block"});
        if let Some(reference) = reference {
            spec["accessKeySecretRef"] = json!({"name": reference, "key": "accessKey"});
        }
        spec
    };
    // Tenant A: older than B's object, each claiming 9101 in a forged status.
    for (name, reference, paused) in [
        ("paused", None, true),
        ("refused", Some("refused-key"), false),
        ("other-account", Some("own-account-key"), false),
    ] {
        let squatter = access_list(&a.name, name, &label, squat(reference));
        cluster().apply(if paused {
            squatter.annotated("edgeplatform.io/paused", "true")
        } else {
            squatter
        });
        forge_status(&a.name, name, claims_9101());
    }
    let selector = format!("edge-tenants={label}");
    let secret_namespaces = format!("{},{}", a.name, b.name);
    let lease = format!("edge-operator-{label}");
    let _operator = Operator::start_across_namespaces(
        &sim.base_url(),
        &[
            "--watch-label-selector",
            &selector,
            "--secret-namespaces",
            &secret_namespaces,
            "--default-key-namespaces",
            "nobody",
            "--lease-name",
            &lease,
        ],
    );
    let tenant_a: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &a.name);
    wait_for_condition(&tenant_a, "refused", "Synced", Some("False"), "Unauthorized", WAIT).await;
    wait_for_condition(&tenant_a, "other-account", "Synced", Some("False"), "NotFound", WAIT).await;

    // Tenant B's object, the newest, is Ready and writes.
    let wanted = json!({
        "configurationId": 9101, "enabled": true, "action": "Challenge",
        "accessKeySecretRef": {"name": "team-b-key", "key": "accessKey"},
    });
    cluster().apply(access_list(&b.name, "owner", &label, wanted));
    let tenant_b: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &b.name);
    wait_for_condition(&tenant_b, "owner", "Ready", Some("True"), "InSync", WAIT).await;
    assert_eq!(
        platform_list(&sim, 9101),
        Some((true, 3)),
        "B's values are on the platform"
    );
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9101"), 1, "only B wrote");

    // A restore point forged on another of B's objects aims at 9101: a deletion writes
    // what the forger's claim recorded (nothing: it never changed 9102), never the status.
    let forger = json!({
        "configurationId": 9102, "enabled": true, "deletionPolicy": "Restore",
        "accessKeySecretRef": {"name": "team-b-key", "key": "accessKey"},
    });
    cluster().apply(access_list(&b.name, "forger", &label, forger));
    let forger = wait_for_condition(&tenant_b, "forger", "Ready", Some("True"), "InSync", WAIT).await;
    assert!(
        forger
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f.contains("restore")),
        "a Restore object carries the restore finalizer"
    );
    forge_status(
        &b.name,
        "forger",
        json!({"restorePoint": {"shieldZoneId": 1001, "configurationId": 9101, "isEnabled": false, "action": 0}}),
    );
    kubectl(
        &["delete", "accesslistconfig", "forger", "-n", &b.name, "--timeout=60s"],
        None,
    );
    assert_eq!(platform_list(&sim, 9101), Some((true, 3)), "9101 keeps B's values");
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9101"), 1);
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9102"), 0);
}

/// Both tenants may use the operator's default key: A pauses an object on the
/// configuration B then writes, forges a status saying it wrote it (and what to
/// restore), and resumes. B keeps writing; A is `ConfigurationClaimed`; B's deletion
/// writes what B's claim recorded before B's first write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_status_in_a_default_key_namespace_changes_nothing() {
    let sim = start(example_fixtures()).await;
    let (a, b) = (TestNamespace::create("forge-a"), TestNamespace::create("forge-b"));
    let label = a.name.clone();
    let _operator = Operator::start_for_tenants(&sim.base_url(), &format!("edge-tenants={label}"), &[&a.name, &b.name]);
    let early = access_list(
        &a.name,
        "early",
        &label,
        json!({"configurationId": 9101, "enabled": false, "action": "Log"}),
    );
    cluster().apply(early.clone().annotated("edgeplatform.io/paused", "true"));
    let tenant_a: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &a.name);
    wait_for_condition(&tenant_a, "early", "Synced", Some("False"), "Paused", WAIT).await;

    let owner = json!({"configurationId": 9101, "enabled": true, "action": "Block", "deletionPolicy": "Restore"});
    cluster().apply(access_list(&b.name, "owner", &label, owner));
    let tenant_b: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &b.name);
    wait_for_condition(&tenant_b, "owner", "Ready", Some("True"), "InSync", WAIT).await;
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)), "B's values");

    forge_status(&a.name, "early", claims_9101());
    cluster().apply(early.annotated("edgeplatform.io/paused", "false"));
    wait_for_condition(&tenant_a, "early", "Ready", Some("False"), "ConfigurationClaimed", WAIT).await;
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)), "B's values stay");
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9101"), 1, "only B wrote");

    kubectl(
        &["delete", "accesslistconfig", "owner", "-n", &b.name, "--timeout=60s"],
        None,
    );
    assert_eq!(
        platform_list(&sim, 9101),
        Some((false, 2)),
        "B's deletion restored what B's claim recorded, not A's forged point"
    );
}

/// The operator's first start on a platform records that the owners of 0.2.0 were
/// carried over; at a later, ordinary start a status forged to read as 0.2.0's owner
/// (`Synced=True` on configuration 9101, a restore point that would turn the list into
/// Bypass) earns nothing from it: the forger claims as any object does, its record
/// never holds the forged values, and the forged restore point only costs the forger
/// its own restore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_status_at_an_ordinary_restart_earns_no_claim() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("carry-once");
    let ns = namespace.name.as_str();
    let record = format!("{ns}/edge-operator-carry-over");
    let flags = ["--carry-over-record", record.as_str()];
    let first = Operator::start(ns, &sim.base_url(), &flags);
    let client = cluster().client().await;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), ns);
    let marked = crate::support::operator::eventually("the carry-over recorded", WAIT, || async {
        let data = maps.get_opt("edge-operator-carry-over").await.ok()??.data?;
        (data.len() == 1).then_some(data)
    })
    .await;
    assert!(
        marked.values().all(|value| value.starts_with("0 owners recorded at ")),
        "{marked:?}"
    );
    drop(first);

    let spec = json!({"configurationId": 9101, "enabled": true, "action": "Block", "deletionPolicy": "Restore"});
    cluster().apply(Manifest::access_list(ns, "forger", json!({"shieldZoneId": 1001})).with_spec(spec));
    let mut forged = claims_9101();
    forged["restorePoint"] = json!({"shieldZoneId": 1001, "configurationId": 9101, "isEnabled": true, "action": 5});
    forged["conditions"] = json!([{"type": "Synced", "status": "True", "reason": "Applied", "message": "",
                                    "lastTransitionTime": "2026-11-01T00:00:00Z"}]);
    forge_status(ns, "forger", forged);

    let _restarted = Operator::start(ns, &sim.base_url(), &flags);
    let objects: Api<AccessListConfig> = Api::namespaced(client.clone(), ns);
    let ready = wait_for_condition(&objects, "forger", "Ready", Some("True"), "InSync", WAIT).await;
    let claim_name = ready.status.and_then(|s| s.claim).expect("status names the claim");
    let claims: Api<AccessListClaim> = Api::all(client);
    let claim = claims.get(&claim_name).await.expect("the claim");
    assert!(
        claim.spec.proof.read_at.is_some(),
        "claimed by a read, not carried over"
    );
    assert_eq!(
        (claim.spec.restore_point, claim.spec.restore_point_lost),
        (None, true),
        "never the forged Bypass: a status showing a restore point with no record is a lost one"
    );
    let data = maps
        .get("edge-operator-carry-over")
        .await
        .expect("the record")
        .data
        .unwrap_or_default();
    assert_eq!(data, marked, "the restart carried nothing over");
    kubectl(
        &["delete", "accesslistconfig", "forger", "-n", ns, "--timeout=60s"],
        None,
    );
    assert_eq!(
        platform_list(&sim, 9101),
        Some((true, 2)),
        "nothing restored, Bypass never written"
    );
    assert_eq!(events_of(ns, "RestoreFailed").await.len(), 1, "and said so");
}
