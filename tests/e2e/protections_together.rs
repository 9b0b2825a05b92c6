//! The safety features together, every protection on, as a new user meets them: a
//! namespace deleted with many restoring objects sharing one Secret, staged rollouts
//! among them (with the operator killed half-way), and several objects applied at once
//! that name one configuration.

use std::time::{Duration, Instant};

use edge_operator::controller::kinds::access_list::SECRET_IN_USE_FINALIZER;
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use edge_operator::sim::document::SimAccessList;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{HasConditions, Operator, eventually, within};
use crate::support::sim::{ACCESS_KEY, add_fault, example_fixtures, journal_count, platform_list, start};

const WAIT: Duration = Duration::from_secs(60);
/// How long a namespace deletion may take once nothing holds it.
const TEARDOWN_LIMIT: Duration = Duration::from_secs(30);
/// The first configuration of the test's own lists, each disabled with action Block.
const FIRST_CONFIGURATION: i64 = 9300;

/// The operator as a new user runs it: every namespace may use the default key and
/// reference Secrets, the in-use protection on (its default).
fn operator(namespace: &str, api_url: &str) -> Operator {
    Operator::start(
        namespace,
        api_url,
        &["--default-key-namespaces", "*", "--secret-namespaces", "*"],
    )
}

/// Every fourth object stages a rollout (it logs, awaiting an approval).
fn is_staged(index: i64) -> bool {
    index % 4 == 3
}

fn restoring_object(namespace: &str, index: i64) -> Manifest {
    let object = Manifest::access_list(
        namespace,
        &format!("restore-{index}"),
        json!({
            "shieldZoneId": 1001,
            "configurationId": FIRST_CONFIGURATION + index,
            "enabled": true,
            "deletionPolicy": "Restore",
            "accessKeySecretRef": {"name": "shared-key", "key": "accessKey"},
        }),
    );
    if is_staged(index) {
        return object.with_spec(json!({"rollout": {"action": "Block", "promotion": "Manual"}}));
    }
    object
}

/// The action the platform holds for a settled object: Log while staged, else Block.
fn settled_action(index: i64) -> i64 {
    if is_staged(index) { 4 } else { 2 }
}

/// Objects Ready, or logging in their rollout's window.
async fn settled_count(api: &Api<AccessListConfig>) -> usize {
    let objects = api.list(&Default::default()).await.map(|l| l.items).unwrap_or_default();
    objects
        .iter()
        .filter(|o| {
            let logging = o
                .status
                .as_ref()
                .and_then(|s| s.rollout.as_ref())
                .is_some_and(|r| r.window_start.is_some());
            logging
                || o.condition("Ready")
                    .is_some_and(|c| c.status == edge_operator::resources::ConditionStatus::True)
        })
        .count()
}

async fn namespace_gone(name: &str) -> bool {
    let namespaces: Api<Namespace> = Api::all(cluster().client().await);
    matches!(namespaces.get_opt(name).await, Ok(None))
}

/// `objects` Restore objects share one Secret; their namespace is deleted (the operator
/// killed and started again once some, not all, have restored when `restart`). Every
/// configuration is restored, every object released and the Secret's in-use finalizer
/// removed within [`TEARDOWN_LIMIT`] of the deletion (of the restart, with one), and
/// the namespace is gone. Returns the time from deletion to gone.
async fn teardown(objects: i64, restart: bool) -> Duration {
    let mut document = example_fixtures();
    for index in 0..objects {
        let list = SimAccessList::new(FIRST_CONFIGURATION + index, &format!("list {index}"), false, 2);
        document.shield_zones[0].access_lists.push(list);
    }
    let sim = start(document).await;
    let namespace = TestNamespace::create("teardown-together");
    let mut running = operator(&namespace.name, &sim.base_url());
    let secret = Manifest::key_secret(&namespace.name, "shared-key", ACCESS_KEY);
    let restoring = (0..objects).map(|index| restoring_object(&namespace.name, index));
    cluster().apply(stream(std::iter::once(secret).chain(restoring)));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    eventually("every object Ready or logging", WAIT, || async {
        (settled_count(&api).await == objects as usize).then_some(())
    })
    .await;
    for index in 0..objects {
        assert_eq!(
            platform_list(&sim, FIRST_CONFIGURATION + index),
            Some((true, settled_action(index)))
        );
    }
    // The objects of the second half cannot restore until the operator restarts.
    let held = if restart { objects / 2 } else { 0 };
    for index in objects - held..objects {
        add_fault(
            &sim,
            json!({"method": "PATCH", "pathPrefix": format!("/shield/shield-zone/1001/access-lists/configurations/{}", FIRST_CONFIGURATION + index), "status": 503, "count": 100_000}),
        );
    }
    let deleted_at = Instant::now();
    let (ok, _, stderr) = cluster().kubectl(&["delete", "namespace", &namespace.name, "--wait=false"], None);
    assert!(ok, "{stderr}");
    let mut limit_from = deleted_at;
    if restart {
        eventually("the first half restored and gone", WAIT, || async {
            let left = api.list(&Default::default()).await.ok()?.items.len() as i64;
            (left == held).then_some(())
        })
        .await;
        running.kill();
        sim.sim.clear_faults();
        running = operator(&namespace.name, &sim.base_url());
        limit_from = Instant::now();
    }
    // The operator's part: every object restored and released, and the Secret's in-use
    // finalizer removed. The namespace controller then removes what is left, on its
    // own backoff, which a loaded cluster stretches.
    let secrets: Api<Secret> = Api::namespaced(cluster().client().await, &namespace.name);
    let left = || async {
        let objects = api.list(&Default::default()).await.ok()?.items;
        let protected = secrets
            .get_opt("shared-key")
            .await
            .ok()?
            .is_some_and(|secret| secret.finalizers().iter().any(|f| f == SECRET_IN_USE_FINALIZER));
        Some((objects.iter().map(|o| o.name_any()).collect::<Vec<_>>(), protected))
    };
    let done = within(TEARDOWN_LIMIT, || async {
        left()
            .await
            .filter(|(objects, protected)| objects.is_empty() && !protected)
    })
    .await;
    assert!(
        done.is_some(),
        "the objects released and the Secret unprotected within {TEARDOWN_LIMIT:?}; left (objects, Secret protected): {:?}",
        left().await
    );
    let released = limit_from.elapsed();
    eventually("the namespace to be gone", WAIT, || async {
        namespace_gone(&namespace.name).await.then_some(())
    })
    .await;
    let took = deleted_at.elapsed();
    drop(running);
    for index in 0..objects {
        assert_eq!(
            platform_list(&sim, FIRST_CONFIGURATION + index),
            Some((false, 2)),
            "configuration {} restored",
            FIRST_CONFIGURATION + index
        );
    }
    eprintln!(
        "teardown of {objects} objects sharing a Secret{}: released {released:?} after the deletion (or the restart), namespace gone {took:?} after its deletion",
        if restart { ", operator restarted half-way" } else { "" },
    );
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_of_three_restoring_objects_sharing_a_secret_goes_away() {
    teardown(3, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_of_twenty_restoring_objects_sharing_a_secret_goes_away() {
    teardown(20, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_teardown_survives_an_operator_killed_half_way() {
    teardown(3, true).await;
    teardown(20, true).await;
}

/// `count` objects naming configuration 9101 (disabled, Block), applied in one request,
/// each asking for something else: exactly one writes, once, and only it is Ready.
async fn claimed_together(count: usize) {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("claims-together");
    let operator = operator(&namespace.name, &sim.base_url());
    let actions = ["Allow", "Challenge", "Log", "Bypass", "None"];
    cluster().apply(stream((0..count).map(|index| {
        Manifest::access_list(
            &namespace.name,
            &format!("rival-{index}"),
            json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": actions[index % actions.len()]}),
        )
        .annotated("edgeplatform.io/poll-interval", "5s")
    })));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    let reported = eventually("every object to report", WAIT, || async {
        let objects = api.list(&Default::default()).await.ok()?.items;
        let ready: Vec<(String, String)> = objects
            .iter()
            .filter_map(|o| {
                let ready = o.condition("Ready")?;
                Some((format!("{:?}", ready.status), ready.reason.clone()))
            })
            .collect();
        (ready.len() == count && ready.iter().filter(|(s, _)| s == "True").count() == 1).then_some(ready)
    })
    .await;
    let claimed = reported
        .iter()
        .filter(|(_, reason)| reason == "ConfigurationClaimed")
        .count();
    assert_eq!(claimed, count - 1, "{reported:?}");
    // Each object looked at again: nobody writes again.
    operator
        .look_again(&namespace.name, "accesslistconfigs", "AccessListConfig", count as u64)
        .await;
    let patches = journal_count(&sim, "PATCH", "/configurations/9101");
    assert_eq!(patches, 1, "one write to the configuration");
    let (enabled, _) = platform_list(&sim, 9101).expect("the configuration");
    assert!(enabled);
    eprintln!("{count} objects applied at once on one configuration: {patches} PATCH, 1 Ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_objects_applied_at_once_on_one_configuration_write_it_once() {
    claimed_together(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_objects_applied_at_once_on_one_configuration_write_it_once() {
    claimed_together(5).await;
}
