//! The chart's Pods on a node: install, examples reconciled against the in-cluster
//! emulator, upgrade, failover of the leader Pod, SIGTERM, uninstall.

use std::time::{Duration, Instant};

use edge_operator::controller::kinds::AccessListConfig;
use kube::Api;

use super::release::{Release, is_ready};
use crate::support::cluster::{cluster, repo_root};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, eventually, wait_for_condition};

const WAIT: Duration = Duration::from_secs(90);

pub(super) fn access_list(namespace: &str, name: &str, configuration: i64, enabled: bool) -> Manifest {
    Manifest::access_list(
        namespace,
        name,
        serde_json::json!({"shieldZoneId": 1001, "configurationId": configuration, "enabled": enabled}),
    )
}

/// Waits until the object is InSync with its current generation.
pub(super) async fn in_sync_with_spec(api: &Api<AccessListConfig>, name: &str, what: &str) {
    eventually(what, WAIT, || async {
        let object = api.get(name).await.ok()?;
        object
            .condition("Ready")
            .is_some_and(|c| c.reason == "InSync" && c.observed_generation == object.metadata.generation)
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_pod_runs_restricted_with_its_own_token_and_reconciles_the_examples() {
    let release = Release::install("node-install", "emulator", &[]);
    println!("helm install to Pods Ready: {:?}", release.ready_after);
    let namespace = release.namespace.name.clone();

    let pods = release.operator_pods().await;
    assert_eq!(pods.len(), 1);
    let pod = &pods[0];
    assert!(is_ready(pod), "the readiness probe passed");
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.service_account_name.as_deref(), Some(release.fullname().as_str()));
    assert_ne!(spec.automount_service_account_token, Some(false));
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    assert!(
        volumes.iter().any(|v| v.projected.is_some()),
        "the ServiceAccount token is mounted: {volumes:?}"
    );

    let (ok, _, err) = cluster().kubectl(&["apply", "-n", &namespace, "-k", "examples/"], None);
    assert!(ok, "{err}");
    for (kind, condition) in [
        ("accesslistconfig", "Ready"),
        ("pullzonecertificate", "Ready"),
        ("containerappwatch", "Ready"),
    ] {
        let (ok, _, err) = cluster().kubectl(
            &[
                "wait",
                "-n",
                &namespace,
                &format!("--for=condition={condition}"),
                kind,
                "--all",
                "--timeout=90s",
            ],
            None,
        );
        assert!(ok, "{kind} {condition}: {err}");
    }
    assert!(
        release.journal_count("GET", "/shield-zone/1001/access-lists").await > 0,
        "the operator read the in-cluster emulator"
    );
    let emulator = format!("{}-emulator", release.fullname());
    let (opened, _, refusal) = release.try_service_get("https", &emulator, "http", "/_sim/requests");
    // kubectl reports a 401 as "You must be logged in to the server"; its own
    // credentials work for every other request of this test.
    assert!(
        !opened && refusal.contains("must be logged in"),
        "the admin API refuses a client without the token: {refusal}"
    );
    release.kubectl(&["get", "networkpolicy", &emulator]);
    // A passing test Pod is deleted at once (hook-succeeded); a failing one stays for
    // `kubectl logs`.
    let (ok, out, err) = tokio::task::block_in_place(|| release.helm("test", &["--timeout=120s"]));
    assert!(ok && out.contains("Phase:          Succeeded"), "helm test: {out}{err}");
    let operator = format!("system:serviceaccount:{namespace}:{}", release.fullname());
    for (verb, scope, granted) in [
        ("get", namespace.as_str(), true),
        ("patch", namespace.as_str(), true),
        ("get", "kube-system", false),
        ("list", "*", false),
        ("update", namespace.as_str(), false),
    ] {
        assert_eq!(
            cluster().can_i(&operator, verb, "secrets", scope),
            granted,
            "the running release's operator: {verb} secrets in {scope}"
        );
    }
    let reporters = release.kubectl(&[
        "get",
        "events.events.k8s.io",
        "-o",
        "jsonpath={range .items[*]}{.reportingController} {.reason}{\"\\n\"}{end}",
    ]);
    assert!(
        reporters.lines().any(|l| l == "edge-operator Issued"),
        "the operator wrote Events: {reporters}"
    );

    let pod_name = pod.metadata.name.clone().expect("name");
    let metrics = release.service_get(&format!("{}-metrics", release.fullname()), "metrics", "/metrics");
    let rss: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
        .and_then(|v| v.parse().ok())
        .expect("the operator's RSS in its metrics");
    println!("operator RSS in its Pod: {:.1} MiB", rss / 1048576.0);
    assert!(rss < 256.0 * 1048576.0, "within the chart's 256 MiB limit");

    let pod = release.pods().await.get(&pod_name).await.expect("the Pod");
    let restarts: i32 = pod
        .status
        .and_then(|s| s.container_statuses)
        .unwrap_or_default()
        .iter()
        .map(|c| c.restart_count)
        .sum();
    assert_eq!(restarts, 0, "the liveness probe never failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_leader_election_an_upgrade_replaces_the_single_operator_without_two_ever_running() {
    let release = Release::install("node-upgrade", "emulator", &["--set=leaderElection.enabled=false"]);
    let before = release.operator_pods().await;
    assert_eq!(before.len(), 1);
    let old_name = before[0].metadata.name.clone().expect("a Pod name");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = release.sample_rollout(old_name.clone(), stop.clone());
    let (ok, _, err) = tokio::task::block_in_place(|| {
        release.helm(
            "upgrade",
            &["--reuse-values", "--set=resync=5m", "--wait", "--timeout=120s"],
        )
    });
    assert!(ok, "{err}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rollout = sampler.await.expect("sampler");
    let after = release.operator_pods().await;
    assert!(
        after.len() == 1 && after[0].metadata.name.as_deref() != Some(old_name.as_str()),
        "the upgrade replaced the Pod"
    );
    assert!(rollout.samples > 10, "{rollout:?}");
    assert_eq!(
        rollout.most_running, 1,
        "never two operators running at once: {rollout:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_operator_takes_over_from_a_deleted_leader_without_a_duplicate_write_and_uninstall_cleans_up() {
    let mut release = Release::install("node-failover", "leader-election", &[]);
    let namespace = release.namespace.name.clone();
    let lease = Duration::from_secs(6);
    let leader = eventually("a leader", WAIT, || release.leader()).await;
    let pods = release.operator_pods().await;
    assert_eq!(pods.len(), 2);
    assert!(pods.iter().all(is_ready), "the standby is Ready too (its probes pass)");

    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace);
    cluster().apply(access_list(&namespace, "failover", 9101, true));
    wait_for_condition(&api, "failover", "Ready", Some("True"), "InSync", WAIT).await;
    let patches = release.journal_count("PATCH", "/configurations/9101").await;
    assert_eq!(patches, 1);

    let deleted = Instant::now();
    release.kubectl(&["delete", "pod", &leader, "--wait=false"]);
    let pods_api = release.pods().await;
    let mut exit_code = None;
    let mut took_over = None;
    let mut gone = None;
    while (took_over.is_none() || gone.is_none()) && deleted.elapsed() < Duration::from_secs(40) {
        if took_over.is_none() {
            // The standby, or the Pod replacing the deleted one, whichever locks first.
            took_over = release
                .leader()
                .await
                .filter(|holder| *holder != leader)
                .map(|holder| (deleted.elapsed(), holder));
        }
        match pods_api.get_opt(&leader).await {
            Ok(Some(pod)) => {
                let terminated = pod
                    .status
                    .and_then(|s| s.container_statuses)
                    .unwrap_or_default()
                    .into_iter()
                    .find_map(|c| c.state.and_then(|s| s.terminated));
                if let Some(terminated) = terminated {
                    exit_code = Some(terminated.exit_code);
                }
            }
            Ok(None) if gone.is_none() => gone = Some(deleted.elapsed()),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (took_over, new_leader) = took_over.expect("another operator took the Lease");
    let gone = gone.expect("the deleted leader's Pod went away");
    println!(
        "leader Pod deleted: {new_leader} leads after {took_over:?}; old Pod gone after {gone:?}, exit code {exit_code:?}"
    );
    // The standby locks when the renewal it last saw expires, at most one Lease after
    // the deletion; the margin covers the API round trips and this loop's sampling.
    let margin = Duration::from_secs(1);
    assert!(
        took_over <= lease + margin,
        "handover in {took_over:?}, within the {lease:?} Lease (+{margin:?})"
    );
    assert!(
        gone < Duration::from_secs(15),
        "SIGTERM ended the operator in {gone:?}, well within the 30 s grace period"
    );
    if let Some(code) = exit_code {
        assert_eq!(code, 0, "a clean exit on SIGTERM");
    }

    cluster().apply(access_list(&namespace, "failover", 9101, false));
    in_sync_with_spec(&api, "failover", "the new leader applies the change").await;
    assert_eq!(
        release.journal_count("PATCH", "/configurations/9101").await,
        patches + 1,
        "one PATCH per change across the handover"
    );

    // A rolling update (leader election: surge, then replace) while a change arrives.
    let change = tokio::task::spawn_blocking({
        let manifest = access_list(&namespace, "failover", 9101, true);
        move || cluster().apply(manifest)
    });
    let (ok, _, err) = tokio::task::block_in_place(|| {
        release.helm(
            "upgrade",
            &["--reuse-values", "--set=resync=5m", "--wait", "--timeout=120s"],
        )
    });
    assert!(ok, "{err}");
    change.await.expect("the change is applied");
    in_sync_with_spec(&api, "failover", "the change is applied across the rolling update").await;
    assert_eq!(
        release.journal_count("PATCH", "/configurations/9101").await,
        patches + 2,
        "one PATCH per change across the rolling update: never two active operators"
    );

    // Uninstall: the objects' finalizers are released first, as the README says.
    let (ok, _, err) = cluster().kubectl(
        &["delete", "accesslistconfig", "--all", "-n", &namespace, "--timeout=60s"],
        None,
    );
    assert!(ok, "{err}");
    let fullname = release.fullname();
    release.uninstall();
    eventually("the release's Pods are gone", WAIT, || async {
        release
            .pods()
            .await
            .list(&Default::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    let left = release.kubectl(&[
        "get",
        "deployments,replicasets,services,endpoints,secrets,configmaps,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets,networkpolicies",
        "-o",
        "name",
    ]);
    let left: Vec<&str> = left
        .lines()
        .filter(|l| *l != "configmap/kube-root-ca.crt" && *l != "serviceaccount/default")
        .collect();
    assert!(left.is_empty(), "left behind in the namespace: {left:?}");
    let (_, cluster_wide, _) = cluster().kubectl(&["get", "clusterroles,clusterrolebindings", "-o", "name"], None);
    assert!(
        !cluster_wide.lines().any(|l| l.contains(&fullname)),
        "cluster-wide RBAC left behind"
    );
    for crd in std::fs::read_dir(repo_root().join("crds")).expect("crds/").flatten() {
        let (ok, _, err) = cluster().kubectl(&["get", "-f", &crd.path().display().to_string()], None);
        assert!(
            ok,
            "the CRDs applied apart stay: the release does not manage them: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_keeps_what_the_operator_wrote_on_its_volume_across_a_new_pod() {
    let release = Release::install("node-state", "emulator", &["--set=emulator.persistence.enabled=true"]);
    let namespace = release.namespace.name.clone();
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace);
    cluster().apply(access_list(&namespace, "kept", 9101, true));
    in_sync_with_spec(&api, "kept", "the operator enabled configuration 9101").await;
    assert_eq!(release.journal_count("PATCH", "/configurations/9101").await, 1);

    let emulator = format!("{}-emulator", release.fullname());
    let selector = "app.kubernetes.io/name=edge-sim";
    let old: Vec<String> = release
        .pods()
        .await
        .list(&kube::api::ListParams::default().labels(selector))
        .await
        .expect("emulator Pods")
        .items
        .into_iter()
        .filter_map(|pod| pod.metadata.name)
        .collect();
    assert_eq!(old.len(), 1, "{old:?}");
    release.kubectl(&["delete", "pod", &old[0], "--wait=true"]);
    eventually("a new emulator Pod is Ready", WAIT, || async {
        let pods = release
            .pods()
            .await
            .list(&kube::api::ListParams::default().labels(selector))
            .await
            .ok()?;
        pods.items
            .iter()
            .any(|pod| pod.metadata.name.as_ref() != Some(&old[0]) && is_ready(pod))
            .then_some(())
    })
    .await;

    let state: serde_json::Value =
        serde_json::from_str(&release.emulator_admin_get("/_sim/state").await).expect("the state is JSON");
    let list = state["shieldZones"][0]["accessLists"]
        .as_array()
        .and_then(|lists| lists.iter().find(|list| list["configurationId"] == 9101))
        .cloned()
        .expect("configuration 9101");
    assert_eq!(
        list["isEnabled"], true,
        "the new {emulator} Pod started from the state on its volume, not from the fixtures"
    );
}
