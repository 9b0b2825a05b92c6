//! A hostile platform and cluster: long and huge Retry-After, credentials deleted or
//! revoked during deletion, namespace deletion, a configuration gone, platform stalls,
//! two objects claiming one configuration, tiny poll intervals, a 72 h CDN window over
//! many pages. Each test asserts that no object stays stuck, no desired state is lost,
//! nothing flip-flops, platform calls stay bounded, and status says what is happening.

use std::time::Duration;

use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::controller::kinds::access_list::{FINALIZER, SECRET_IN_USE_FINALIZER};
use edge_operator::controller::kinds::{ContainerAppWatch, PullZoneCertificate};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, events_of, eventually, wait_for_condition};
use crate::support::sim::{
    ACCESS_KEY, add_fault, await_journal, example_fixtures, http, journal_count, platform_list, start,
};

const WAIT: Duration = Duration::from_secs(60);

/// An AccessListConfig of Shield Zone 1001.
pub(crate) fn access_list(namespace: &str, name: &str, configuration: i64, enabled: bool) -> Manifest {
    Manifest::access_list(
        namespace,
        name,
        json!({"shieldZoneId": 1001, "configurationId": configuration, "enabled": enabled}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_and_huge_retry_after_become_a_requeue_with_a_condition_not_a_sleep() {
    let sim = start(example_fixtures()).await;
    for retry_after in [3600, 100_000] {
        add_fault(
            &sim,
            json!({"method": "GET", "pathPrefix": "/shield/shield-zone/1001/access-lists", "status": 429, "retryAfter": retry_after, "count": 1}),
        );
    }
    let namespace = TestNamespace::create("retry-after");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    for (name, configuration) in [("a", 9101), ("b", 9102), ("c", 9201)] {
        cluster().apply(access_list(&namespace.name, name, configuration, true));
    }
    for name in ["a", "b", "c"] {
        let object = wait_for_condition(
            &api,
            name,
            "Synced",
            Some("False"),
            "RateLimited",
            Duration::from_secs(20),
        )
        .await;
        let synced = object.condition("Synced").expect("Synced");
        assert!(synced.message.contains("next attempt at"), "{}", synced.message);
    }
    assert_eq!(
        journal_count(&sim, "GET", "/access-lists"),
        1,
        "one read answered 429; the zone's other objects were told without asking again"
    );
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_restores_with_credentials_that_outlive_their_users() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("teardown");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    cluster().apply(Manifest::key_secret(&namespace.name, "platform-key", ACCESS_KEY));
    let restoring = access_list(&namespace.name, "restoring", 9101, true).with_spec(json!({
        "deletionPolicy": "Restore",
        "accessKeySecretRef": {"name": "platform-key", "key": "accessKey"},
    }));
    cluster().apply(restoring);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    wait_for_condition(&api, "restoring", "Ready", Some("True"), "InSync", WAIT).await;
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)));
    let secrets: Api<Secret> = Api::namespaced(cluster().client().await, &namespace.name);
    let secret = secrets.get("platform-key").await.expect("secret");
    assert!(
        secret
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == "edgeplatform.io/credentials-in-use"),
        "the Secret is protected while an object needs it to restore"
    );
    let (ok, _, stderr) = cluster().kubectl(&["delete", "namespace", &namespace.name, "--wait=false"], None);
    assert!(ok, "{stderr}");
    let namespaces: Api<Namespace> = Api::all(cluster().client().await);
    eventually("the namespace to be gone", Duration::from_secs(90), || async {
        namespaces
            .get_opt(&namespace.name)
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await;
    assert_eq!(
        platform_list(&sim, 9101),
        Some((false, 2)),
        "restored before the namespace went away"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_holds_the_restore_stalled_until_the_key_is_fixed_and_a_gone_configuration_releases() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("revoked");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    cluster().apply(Manifest::key_secret(&namespace.name, "own-key", "own-key-value"));
    let mut document = example_fixtures();
    document.access_keys.push("own-key-value".into());
    sim.sim.replace(document);
    let revoked = access_list(&namespace.name, "revoked", 9101, true).with_spec(json!({
        "deletionPolicy": "Restore",
        "accessKeySecretRef": {"name": "own-key", "key": "accessKey"},
    }));
    cluster().apply(revoked);
    let gone = access_list(&namespace.name, "gone", 9102, false).with_spec(json!({"deletionPolicy": "Restore"}));
    cluster().apply(gone);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    for name in ["revoked", "gone"] {
        wait_for_condition(&api, name, "Ready", Some("True"), "InSync", WAIT).await;
    }
    let secrets: Api<Secret> = Api::namespaced(cluster().client().await, &namespace.name);
    let in_use = || async {
        let secret = secrets.get("own-key").await.ok()?;
        Some(secret.finalizers().iter().any(|f| f == SECRET_IN_USE_FINALIZER))
    };
    eventually("the Secret protected while the object may restore", WAIT, || async {
        in_use().await.filter(|&protected| protected)
    })
    .await;
    {
        let mut world = sim.sim.world_mut();
        world.document.access_keys.retain(|k| k != "own-key-value");
        world.document.shield_zones[0]
            .access_lists
            .retain(|l| l.configuration_id() != Some(9102));
    }
    for name in ["revoked", "gone"] {
        let (ok, _, stderr) = cluster().kubectl(
            &[
                "delete",
                "accesslistconfig",
                name,
                "-n",
                &namespace.name,
                "--wait=false",
            ],
            None,
        );
        assert!(ok, "{stderr}");
    }
    eventually("the gone configuration released", WAIT, || async {
        api.get_opt("gone").await.ok()?.is_none().then_some(())
    })
    .await;
    let nothing = events_of(&namespace.name, "NothingToRestore").await;
    assert!(nothing.iter().any(|n| n.contains("9102")), "{nothing:?}");

    // The rejected key keeps the object, stalled, saying what a person can do.
    let stalled = wait_for_condition(&api, "revoked", "Stalled", Some("True"), "RestoreHeld", WAIT).await;
    let stalled = stalled.condition("Stalled").expect("Stalled");
    assert!(
        stalled.message.starts_with("Unauthorized holds the restore")
            && stalled.message.contains("fix the credentials")
            && stalled.message.contains("Orphan")
            && stalled.message.contains("it is released without restoring"),
        "{}",
        stalled.message
    );
    let object = api.get("revoked").await.expect("still there");
    assert!(
        object.finalizers().iter().any(|f| f == FINALIZER),
        "the restore is pending"
    );
    assert_eq!(in_use().await, Some(true), "its Secret stays protected");
    let held = events_of(&namespace.name, "RestoreHeld").await;
    assert!(
        held.iter()
            .any(|n| n.starts_with("Unauthorized holds") && n.contains("Orphan") && n.contains("at 20")),
        "the hold has a Warning Event of its own, with its deadline and both ways out: {held:?}"
    );

    // A new cause of the same hold is told too.
    let (ok, _, stderr) = cluster().kubectl(
        &[
            "patch",
            "secret",
            "own-key",
            "-n",
            &namespace.name,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/data/accessKey"}]"#,
        ],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("a RestoreHeld Event for the new cause", WAIT, || async {
        let held = events_of(&namespace.name, "RestoreHeld").await;
        held.iter()
            .any(|n| n.starts_with("CredentialsUnavailable holds"))
            .then_some(())
    })
    .await;

    // Rotating the Secret to a key the platform accepts is picked up at once.
    sim.sim.world_mut().document.access_keys.push("rotated-key".into());
    cluster().apply(Manifest::key_secret(&namespace.name, "own-key", "rotated-key"));
    eventually("restored with the rotated key and released", WAIT, || async {
        api.get_opt("revoked").await.ok()?.is_none().then_some(())
    })
    .await;
    let restored = events_of(&namespace.name, "Restored").await;
    assert!(restored.iter().any(|n| n.contains("9101")), "{restored:?}");
    eventually("the Secret released with the last object needing it", WAIT, || async {
        in_use().await.filter(|&protected| !protected)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_key_is_refused_outside_the_listed_namespaces_and_a_refused_object_claims_nothing() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("nodefault");
    let _operator = Operator::start(
        &namespace.name,
        &sim.base_url(),
        &["--default-key-namespaces", "platform-team"],
    );
    cluster().apply(access_list(&namespace.name, "squatter", 9101, false));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    let refused = wait_for_condition(
        &api,
        "squatter",
        "Stalled",
        Some("True"),
        "CredentialsUnavailable",
        WAIT,
    )
    .await;
    let message = refused.condition("Ready").map(|c| c.message).unwrap_or_default();
    assert!(message.contains("may not be used in namespace"), "{message}");
    assert_eq!(
        journal_count(&sim, "PATCH", "/shield/"),
        0,
        "nothing was written with the default key"
    );

    // A newer object with its own working key manages the list the refused one names.
    cluster().apply(Manifest::key_secret(&namespace.name, "own-key", "own-key-value"));
    sim.sim.world_mut().document.access_keys.push("own-key-value".into());
    let owner = access_list(&namespace.name, "owner", 9101, true)
        .with_spec(json!({"accessKeySecretRef": {"name": "own-key", "key": "accessKey"}}));
    cluster().apply(owner);
    wait_for_condition(&api, "owner", "Ready", Some("True"), "InSync", WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_policy_switched_to_orphan_while_terminating_is_honoured() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("orphan");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let switch = access_list(&namespace.name, "switch", 9101, true).with_spec(json!({"deletionPolicy": "Restore"}));
    cluster().apply(switch);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    wait_for_condition(&api, "switch", "Ready", Some("True"), "InSync", WAIT).await;
    // The platform fails every write while the object terminates.
    add_fault(
        &sim,
        json!({"method": "PATCH", "pathPrefix": "/shield/shield-zone/1001/access-lists/configurations/9101", "status": 503, "count": 1000}),
    );
    let (ok, _, stderr) = cluster().kubectl(
        &[
            "delete",
            "accesslistconfig",
            "switch",
            "-n",
            &namespace.name,
            "--wait=false",
        ],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("a failed restore attempt", WAIT, || async {
        sim.sim
            .journal()
            .iter()
            .any(|e| e.method == "PATCH" && e.status == 503)
            .then_some(())
    })
    .await;
    let switch = access_list(&namespace.name, "switch", 9101, true).with_spec(json!({"deletionPolicy": "Orphan"}));
    cluster().apply(switch);
    eventually("the object released", WAIT, || async {
        api.get_opt("switch").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(
        platform_list(&sim, 9101),
        Some((true, 2)),
        "Orphan leaves the platform as it is"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_objects_on_one_configuration_do_not_fight() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("claims");
    let with_poll = |name: &str, enabled: bool| {
        access_list(&namespace.name, name, 9101, enabled).annotated("edgeplatform.io/poll-interval", "5s")
    };
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    let operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    cluster().apply(with_poll("first", true));
    wait_for_condition(&api, "first", "Ready", Some("True"), "InSync", WAIT).await;
    cluster().apply(with_poll("second", false));
    let second = wait_for_condition(&api, "second", "Ready", Some("False"), "ConfigurationClaimed", WAIT).await;
    let ready = second.condition("Ready").expect("Ready");
    assert!(
        ready.message.contains("AccessListConfig \"first\""),
        "{}",
        ready.message
    );
    for _ in 0..2 {
        operator
            .look_again(&namespace.name, "accesslistconfigs", "AccessListConfig", 2)
            .await;
    }
    assert_eq!(
        platform_list(&sim, 9101),
        Some((true, 2)),
        "the older object's value stays"
    );
    assert_eq!(
        journal_count(&sim, "PATCH", "/configurations/9101"),
        1,
        "no flip-flop over two more looks at both"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_poll_intervals_are_floored_and_a_refused_key_is_not_hammered() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("tiny-poll");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    cluster().apply(Manifest::key_secret(&namespace.name, "bad-key", "not-a-key"));
    let tiny = ("edgeplatform.io/poll-interval", "1ms");
    cluster().apply(access_list(&namespace.name, "fast", 9101, true).annotated(tiny.0, tiny.1));
    let refused = Manifest::certificate(
        &namespace.name,
        "refused",
        json!({"hostname": "shop.example.com", "accessKeySecretRef": {"name": "bad-key", "key": "accessKey"}}),
    );
    cluster().apply(refused.annotated(tiny.0, tiny.1));
    let certificates: Api<PullZoneCertificate> = Api::namespaced(cluster().client().await, &namespace.name);
    wait_for_condition(&certificates, "refused", "Ready", Some("False"), "Unauthorized", WAIT).await;
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    wait_for_condition(&api, "fast", "Ready", Some("True"), "InSync", WAIT).await;
    let (reads, completions) = (
        journal_count(&sim, "GET", "/access-lists"),
        journal_count(&sim, "POST", "/completeExternalHttpCertificate"),
    );
    // Two more reads of the zone: each at least the 5 s floor after the one before.
    await_journal(&sim, "GET", "/access-lists", reads, 2).await;
    let read_at: Vec<i64> = sim
        .sim
        .journal()
        .iter()
        .filter(|e| e.method == "GET" && e.path.contains("/access-lists"))
        .map(|e| e.time_ms)
        .collect();
    let gaps: Vec<i64> = read_at[reads.saturating_sub(1)..]
        .windows(2)
        .map(|w| w[1] - w[0])
        .collect();
    assert!(
        gaps.iter().all(|gap| *gap >= 4_500),
        "a 5 s floor: reads {gaps:?} ms apart"
    );
    assert_eq!(
        journal_count(&sim, "POST", "/completeExternalHttpCertificate") - completions,
        0,
        "a refused key waits 10 min"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_platform_call_times_out_without_holding_up_other_objects() {
    let sim = start(example_fixtures()).await;
    add_fault(
        &sim,
        json!({"method": "GET", "pathPrefix": "/mc/apps/app-shop", "delayMs": 40_000, "count": 1}),
    );
    let namespace = TestNamespace::create("stall");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let watch =
        |name: &str, app: &str| Manifest::app_watch(&namespace.name, name, json!({"appId": app, "interval": "10s"}));
    cluster().apply(watch("stalled", "app-shop"));
    eventually("the stalled call to have started", WAIT, || async {
        sim.sim.faults().is_empty().then_some(())
    })
    .await;
    cluster().apply(watch("other", "missing-app"));
    let api: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, &namespace.name);
    wait_for_condition(
        &api,
        "other",
        "AppReady",
        Some("False"),
        "NotFound",
        Duration::from_secs(10),
    )
    .await;
    let stalled = api.get("stalled").await.expect("object");
    assert!(stalled.status.is_none(), "still waiting on the stalled call");
    wait_for_condition(&api, "stalled", "AppReady", Some("True"), "Active", WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_cdn_window_is_summarised_over_several_polls_and_says_it_is_partial_until_then() {
    let sim = start(example_fixtures()).await;
    let now = chrono::Utc::now();
    let entries: Vec<Value> = (0..3_500)
        .map(|i| {
            let age = chrono::Duration::seconds(i64::from(i) * 70 + 1);
            json!({"timestamp": now - age, "requestId": format!("r{i}"), "statusCode": 200, "cacheStatus": if i % 2 == 0 { "HIT" } else { "MISS" }, "url": "https://cdn.example.com/x"})
        })
        .collect();
    let seeded = http()
        .post(format!("{}/_sim/pullzones/501/logs", sim.base_url()))
        .json(&entries)
        .send()
        .await
        .expect("seed");
    assert!(seeded.status().is_success());
    let times: Vec<chrono::DateTime<chrono::Utc>> = entries
        .iter()
        .map(|e| serde_json::from_value(e["timestamp"].clone()).expect("time"))
        .collect();
    let exact = |summary: &edge_operator::controller::kinds::app_watch::resource::CdnSummary| {
        let from: chrono::DateTime<chrono::Utc> = summary.from.parse().expect("from");
        let to: chrono::DateTime<chrono::Utc> = summary.to.parse().expect("to");
        times.iter().filter(|t| **t >= from && **t < to).count() as i64
    };
    let namespace = TestNamespace::create("cdnbusy");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--cdn-pages-per-poll", "2"]);
    cluster().apply(Manifest::app_watch(
        &namespace.name,
        "busy",
        json!({"appId": "app-shop", "interval": "10s", "cdn": {"pullZoneId": 501, "window": "72h"}}),
    ));
    let api: Api<ContainerAppWatch> = Api::namespaced(cluster().client().await, &namespace.name);
    let partial = wait_for_condition(&api, "busy", "CdnLogsSynced", Some("False"), "Partial", WAIT).await;
    let condition = partial.condition("CdnLogsSynced").expect("condition");
    let status = partial.status.expect("status");
    let summary = status.cdn.expect("cdn");
    assert_eq!(
        summary.requests, 2_000,
        "two pages, newest first (the first poll reads no older logs)"
    );
    assert_eq!(summary.requests, exact(&summary), "exact over the span it states");
    let coverage: f64 = summary.coverage.parse().expect("a decimal");
    assert!(coverage > 0.5 && coverage < 0.6, "{}", summary.coverage);
    assert!(condition.message.starts_with("covers 5"), "{}", condition.message);

    let complete = wait_for_condition(&api, "busy", "CdnLogsSynced", Some("True"), "Synced", WAIT).await;
    let status = complete.status.expect("status");
    let summary = status.cdn.expect("cdn");
    assert_eq!(summary.coverage, "1");
    assert_eq!(summary.requests, exact(&summary));
    let start: chrono::DateTime<chrono::Utc> = summary.from.parse().expect("from");
    let end: chrono::DateTime<chrono::Utc> = summary.to.parse().expect("to");
    let longest = edge_operator::controller::kinds::app_watch::cdn_tail::LONGEST_WINDOW;
    let asked = end - chrono::Duration::from_std(longest).expect("a duration");
    assert!(
        start <= asked && asked - start <= chrono::Duration::from_std(longest / 360).expect("a duration"),
        "the window's start rounded down to 1/360 of it: {start}"
    );
    let pages = || sim.sim.journal().iter().filter(|e| e.path.starts_with("/v2/")).count();
    let read_once = pages();
    assert!(read_once <= 7, "{read_once} pages for 3,500 entries in pages of 1,000");
    assert!(sim.sim.journal().iter().all(|e| e.status < 400), "no page refused");
    // Each poll reads the app first; the pages between two such reads are one poll's.
    let polls = || journal_count(&sim, "GET", "/mc/apps/");
    let complete_polls = polls();
    eventually("two more polls", WAIT, || async {
        (polls() >= complete_polls + 2).then_some(())
    })
    .await;
    let journal = sim.sim.journal();
    let starts: Vec<usize> = journal
        .iter()
        .enumerate()
        .filter(|(_, e)| e.method == "GET" && e.path.contains("/mc/apps/"))
        .map(|(i, _)| i)
        .collect();
    let (from, to) = (starts[complete_polls], starts[complete_polls + 1]);
    assert_eq!(
        journal[from..to].iter().filter(|e| e.path.starts_with("/v2/")).count(),
        1,
        "a poll after the window is complete reads only the new logs"
    );
}
