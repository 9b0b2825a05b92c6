//! Processes stopped and killed: a leader stopped past its lease, kube-apiserver killed
//! mid-convergence, SIGTERM with the apiserver gone, the operator killed between a claim
//! and its write. No desired state is lost and no second writer acts.

use std::time::Duration;

use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use kube::Api;
use serde_json::json;

use crate::support::cluster::{PrivateCluster, TestNamespace, cluster};
use crate::support::operator::{Operator, eventually, wait_for_condition};
use crate::support::sim::{add_fault, example_fixtures, journal_count, platform_list, start};

const WAIT: Duration = Duration::from_secs(60);
use crate::hostile::access_list;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_past_its_lease_never_acts_after_it_resumes() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("sigstop");
    let lease = [
        "--leader-elect",
        "--lease-duration",
        "6s",
        "--lease-namespace",
        &namespace.name,
    ];
    let with_identity = |id: &str| {
        let mut args: Vec<String> = lease.iter().map(|s| s.to_string()).collect();
        args.extend(["--identity".to_string(), id.to_string()]);
        args
    };
    let first_args = with_identity("first");
    let mut first = Operator::start(
        &namespace.name,
        &sim.base_url(),
        &first_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(access_list(&namespace.name, "led", 9101, true));
    wait_for_condition(&api, "led", "Ready", Some("True"), "InSync", WAIT).await;
    let second_args = with_identity("second");
    let _second = Operator::start(
        &namespace.name,
        &sim.base_url(),
        &second_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let pid = first.pid().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .expect("kill")
            .success()
    );
    eventually("the leader to be stopped", WAIT, || async {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The state follows the command name, which is in parentheses.
        let state = stat.rsplit_once(") ")?.1.chars().next()?;
        (state == 'T').then_some(())
    })
    .await;
    cluster().apply(access_list(&namespace.name, "led", 9101, false));
    eventually("the standby to take over and apply the change", WAIT, || async {
        (platform_list(&sim, 9101) == Some((false, 2))).then_some(())
    })
    .await;
    let patches = journal_count(&sim, "PATCH", "/configurations/9101");
    assert!(
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !first.has_exited() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stopped leader did not exit after resuming"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        journal_count(&sim, "PATCH", "/configurations/9101"),
        patches,
        "the resumed process wrote nothing"
    );
    assert_eq!(platform_list(&sim, 9101), Some((false, 2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apiserver_killed_mid_convergence_loses_no_desired_state() {
    let private = tokio::task::spawn_blocking(|| PrivateCluster::up("apiserver-kill"))
        .await
        .expect("cluster");
    let sim = start(example_fixtures()).await;
    let (ok, _, stderr) = private.cluster.kubectl(&["create", "namespace", "team"], None);
    assert!(ok, "{stderr}");
    let _operator = Operator::start_with_kubeconfig("team", &sim.base_url(), &[], &private.cluster.kubeconfig);
    // The last object stages a rollout: it logs, awaiting an approval.
    let configurations = [9101, 9102, 9201];
    for (i, configuration) in configurations.iter().enumerate() {
        let object = access_list("team", &format!("list-{i}"), *configuration, i % 2 == 0);
        private.cluster.apply(if i == 2 {
            object.with_spec(json!({"rollout": {"action": "Block", "promotion": "Manual"}}))
        } else {
            object
        });
        if i == 0 {
            tokio::task::block_in_place(|| private.restart_apiserver());
        }
    }
    let api: Api<AccessListConfig> = Api::namespaced(private.cluster.client().await, "team");
    for (i, (status, reason)) in [("True", "InSync"), ("True", "InSync"), ("False", "RolloutLogging")]
        .into_iter()
        .enumerate()
    {
        wait_for_condition(
            &api,
            &format!("list-{i}"),
            "Ready",
            Some(status),
            reason,
            Duration::from_secs(90),
        )
        .await;
    }
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)));
    assert_eq!(platform_list(&sim, 9102), Some((false, 3)));
    assert_eq!(platform_list(&sim, 9201), Some((true, 4)), "the staged list logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sigterm_stops_the_leader_even_with_the_apiserver_gone() {
    let private = tokio::task::spawn_blocking(|| PrivateCluster::up("shutdown"))
        .await
        .expect("cluster");
    let sim = start(example_fixtures()).await;
    let (ok, _, stderr) = private.cluster.kubectl(&["create", "namespace", "team"], None);
    assert!(ok, "{stderr}");
    let mut operator = Operator::start_with_kubeconfig(
        "team",
        &sim.base_url(),
        &["--leader-elect", "--lease-namespace", "team", "--lease-duration", "6s"],
        &private.cluster.kubeconfig,
    );
    private.cluster.apply(access_list("team", "list", 9101, false));
    let api: Api<AccessListConfig> = Api::namespaced(private.cluster.client().await, "team");
    wait_for_condition(&api, "list", "Ready", Some("True"), "InSync", WAIT).await;

    drop(private);
    let (took, status) = tokio::task::block_in_place(|| operator.terminate(Duration::from_secs(20)))
        .expect("the operator exits on one SIGTERM");
    assert!(status.success(), "a requested stop is a clean exit: {status}");
    let bound = edge_operator::controller::runtime::shutdown::GRACE
        + edge_operator::controller::runtime::shutdown::LEASE_RELEASE_GRACE
        + Duration::from_secs(1);
    assert!(took <= bound, "stopped in {took:?}, more than {bound:?}");
    println!("SIGTERM to exit with the apiserver gone: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_between_claim_and_write_keeps_the_same_owner() {
    use edge_operator::controller::kinds::access_list::claim_resource::AccessListClaim;
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("claim-kill");
    let ns = namespace.name.as_str();
    // Every write fails: the first object claims 9101 and cannot write it yet.
    add_fault(
        &sim,
        json!({"method": "PATCH", "pathPrefix": "/shield/shield-zone/1001/access-lists/configurations/9101", "status": 503, "count": 1000}),
    );
    let mut operator = Operator::start(ns, &sim.base_url(), &[]);
    cluster().apply(access_list(ns, "first", 9101, true));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, ns);
    wait_for_condition(&api, "first", "Synced", Some("False"), "ServerError", WAIT).await;
    let claims: Api<AccessListClaim> = Api::all(cluster().client().await);
    let owned_by = |name: &'static str| {
        let claims = claims.clone();
        async move {
            claims
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|c| c.spec.owner.namespace == ns && c.spec.configuration_id == 9101)
                .filter(|c| c.spec.owner.name == name)
        }
    };
    let record = owned_by("first").await.expect("first's claim, before any write");
    operator.kill();

    cluster().apply(access_list(ns, "second", 9101, false));
    sim.sim.clear_faults();
    let _restarted = Operator::start(ns, &sim.base_url(), &[]);
    wait_for_condition(&api, "first", "Ready", Some("True"), "InSync", WAIT).await;
    wait_for_condition(&api, "second", "Ready", Some("False"), "ConfigurationClaimed", WAIT).await;
    let kept = owned_by("first").await.expect("first's claim");
    assert_eq!(kept.metadata.uid, record.metadata.uid, "the same record");
    assert_eq!(platform_list(&sim, 9101), Some((true, 2)), "first's value");
}
