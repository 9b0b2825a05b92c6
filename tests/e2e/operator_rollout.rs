//! spec.rollout end to end: a staged list writes Log once, its evidence in status
//! matches the events edge-sim holds, and it is promoted, held, approved or rolled back
//! as edge-sim's clock moves; kstatus, Argo CD and `kubectl wait` judge every stage.

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::Api;
use serde_json::{Value, json};

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::gitops::{Verdict, judge};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, events_of, eventually, wait_for_condition};
use crate::support::sim::{example_fixtures, http, journal_count, platform_list, start};
use edge_operator::controller::kinds::access_list::resource::{AccessListConfig, RolloutStage, RolloutStatus};
use edge_operator::sim::RunningSim;

const WAIT: Duration = Duration::from_secs(45);
/// Configuration 9101 of Shield Zone 1001: list 11, disabled and Block in the fixtures.
const CONFIGURATION: i64 = 9101;
const LIST: i64 = 11;
const LOG: i64 = 4;
const BLOCK: i64 = 2;

fn staged(namespace: &str, name: &str, rollout: Value) -> Manifest {
    Manifest::access_list(
        namespace,
        name,
        json!({"shieldZoneId": 1001, "configurationId": CONFIGURATION, "enabled": true, "rollout": rollout}),
    )
}

fn patches(sim: &RunningSim) -> usize {
    journal_count(sim, "PATCH", &format!("/configurations/{CONFIGURATION}"))
}

/// Requests list 11 matches at `at`, `count` from each `(ip, country)`.
async fn traffic(sim: &RunningSim, at: DateTime<Utc>, clients: &[(&str, &str, u64)]) -> u64 {
    let at = at.timestamp_millis();
    let body: Vec<Value> = clients
        .iter()
        .map(|(ip, country, count)| {
            json!({"listId": LIST, "ip": ip, "country": country, "url": "/login", "count": count, "at": at})
        })
        .collect();
    let response = http()
        .post(format!("{}/_sim/shield-zones/1001/access-list-traffic", sim.base_url()))
        .json(&body)
        .send()
        .await
        .expect("request");
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap_or_default()
    );
    let inserted: Value = response.json().await.expect("json");
    inserted["inserted"].as_u64().expect("inserted")
}

/// `edgectl` with the test cluster's kubeconfig: whether it succeeded, its standard
/// output and its standard error.
fn run_edgectl(args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(args)
        .env("KUBECONFIG", &cluster().kubeconfig)
        .output()
        .expect("edgectl runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// `edgectl`'s standard output, once it succeeded.
fn edgectl(args: &[&str]) -> String {
    let (ok, stdout, stderr) = run_edgectl(args);
    assert!(ok, "edgectl {args:?}: {stdout}{stderr}");
    stdout
}

fn minutes(start: DateTime<Utc>, minutes: i64) -> DateTime<Utc> {
    start + chrono::Duration::minutes(minutes)
}

async fn rollout_of(api: &Api<AccessListConfig>, name: &str) -> Option<RolloutStatus> {
    api.get_opt(name).await.ok().flatten()?.status?.rollout
}

/// Waits until the object's rollout satisfies `check`; returns it.
async fn rollout_where(
    api: &Api<AccessListConfig>,
    name: &str,
    what: &str,
    check: impl Fn(&RolloutStatus) -> bool,
) -> RolloutStatus {
    eventually(what, WAIT, || async {
        rollout_of(api, name).await.filter(|r| check(r))
    })
    .await
}

/// The window's start, once the platform logs for the object.
async fn window_start(api: &Api<AccessListConfig>, name: &str) -> DateTime<Utc> {
    let rollout = rollout_where(api, name, "the window's start", |r| r.window_start.is_some()).await;
    rollout
        .window_start
        .as_deref()
        .and_then(|at| at.parse().ok())
        .expect("an RFC 3339 window start")
}

fn verdict(namespace: &str, name: &str, kstatus: &str, argocd: &str, kubectl_wait: bool) {
    let timeout = if kubectl_wait { "20s" } else { "2s" };
    let expected = Verdict {
        kstatus: kstatus.into(),
        argocd: argocd.into(),
        kubectl_wait,
    };
    assert_eq!(judge(namespace, &format!("accesslistconfig/{name}"), timeout), expected);
}

/// An object `staged` in a namespace of its own, with the operator and edge-sim, once
/// its window started (bound in this order, they drop operator first, edge-sim last).
struct Staged {
    sim: RunningSim,
    namespace: TestNamespace,
    operator: Operator,
    api: Api<AccessListConfig>,
    /// The window's start.
    start: DateTime<Utc>,
}

async fn stage(prefix: &str, rollout: Value) -> Staged {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create(prefix);
    let operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(staged(&namespace.name, "staged", rollout));
    let start = window_start(&api, "staged").await;
    Staged {
        sim,
        namespace,
        operator,
        api,
        start,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_list_logs_shows_its_evidence_is_promoted_after_the_window_and_rolls_back_once_on_probation() {
    let Staged {
        sim,
        namespace,
        operator,
        api,
        start,
    } = stage(
        "rollout",
        json!({"action": "Block", "window": "1h", "maxMatches": 10, "maxDistinctIps": 3, "rollbackAboveSources": 2}),
    )
    .await;
    let ns = namespace.name.as_str();

    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, LOG)));
    assert_eq!(patches(&sim), 1, "enabled and set to Log in one PATCH");
    wait_for_condition(&api, "staged", "Ready", Some("False"), "RolloutLogging", WAIT).await;
    verdict(ns, "staged", "InProgress", "Progressing", false);
    assert_eq!(events_of(ns, "RolloutStarted").await.len(), 1);

    sim.sim.set_clock(Some(minutes(start, 10)));
    let logged = traffic(
        &sim,
        minutes(start, 9),
        &[("192.0.2.1", "DE", 4), ("192.0.2.2", "US", 3)],
    )
    .await;
    assert_eq!(logged, 7, "a list set to Log logs every request it matches");
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let seen = rollout_where(&api, "staged", "7 matches in the evidence", |r| {
        r.evidence.as_ref().is_some_and(|e| e.matches == 7)
    })
    .await;
    let evidence = seen.evidence.expect("evidence");
    assert_eq!(evidence.distinct_ips, 2);
    let top: Vec<(&str, i64)> = evidence.top_ips.iter().map(|t| (t.value.as_str(), t.count)).collect();
    assert_eq!(top, [("192.0.2.1", 4), ("192.0.2.2", 3)]);
    let countries: Vec<(&str, i64)> = evidence
        .top_countries
        .iter()
        .map(|t| (t.value.as_str(), t.count))
        .collect();
    assert_eq!(countries, [("DE", 4), ("US", 3)]);
    assert_eq!(evidence.sparkline.iter().sum::<i64>(), 7);
    assert_eq!(seen.stage, RolloutStage::Logging);
    assert_eq!(patches(&sim), 1, "logging writes nothing more");

    sim.sim.set_clock(Some(minutes(start, 61)));
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    wait_for_condition(&api, "staged", "Ready", Some("True"), "Promoted", WAIT).await;
    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, BLOCK)));
    assert_eq!(patches(&sim), 2, "one PATCH to the rollout's action");
    assert_eq!(events_of(ns, "Promoted").await.len(), 1);
    let promoted_events = r#"edge_operator_events_total{kind="AccessListConfig",reason="Promoted",type="Normal"}"#;
    assert_eq!(operator.sample(promoted_events).await, Some(1.0));
    let decided = r#"edge_operator_decided_on_sum{kind="AccessListConfig",reason="Promoted"}"#;
    assert_eq!(operator.sample(decided).await, Some(7.0));
    verdict(ns, "staged", "Current", "Healthy", true);
    let promoted = rollout_of(&api, "staged").await.expect("rollout");
    assert_eq!(promoted.evidence.map(|e| e.matches), Some(7), "the evidence stays");

    sim.sim.set_clock(Some(minutes(start, 70)));
    let one_source = traffic(&sim, minutes(start, 68), &[("192.0.2.9", "FR", 300)]).await;
    assert_eq!(one_source, 300, "a promoted list blocks what it matches");
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let counted = rollout_where(&api, "staged", "300 blocked from 1 source", |r| r.blocked == Some(300)).await;
    assert_eq!(
        (counted.stage, counted.blocked_sources),
        (RolloutStage::Promoted, Some(1)),
        "many requests from one source are no signal"
    );
    let sources = [("192.0.2.10", "FR", 1), ("192.0.2.11", "FR", 1)];
    assert_eq!(traffic(&sim, minutes(start, 69), &sources).await, 2);
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let rolled_back = wait_for_condition(&api, "staged", "Ready", Some("False"), "RolledBack", WAIT).await;
    let rollout = rolled_back.status.and_then(|s| s.rollout).expect("a rollout");
    assert_eq!(
        (rollout.blocked, rollout.blocked_sources),
        (Some(302), Some(3)),
        "the evidence of the rollback"
    );
    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, LOG)));
    assert_eq!(patches(&sim), 3, "one PATCH back to Log");
    verdict(ns, "staged", "Failed", "Degraded", false);
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    assert_eq!(patches(&sim), 3, "rolled back once");
    assert_eq!(events_of(ns, "RolledBack").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_exceeded_holds_the_list_in_log_and_writes_nothing_else() {
    let Staged {
        sim,
        namespace,
        operator,
        api,
        start,
    } = stage(
        "rollout-held",
        json!({"action": "Challenge", "window": "30m", "maxMatches": 10}),
    )
    .await;
    let ns = namespace.name.as_str();

    sim.sim.set_clock(Some(minutes(start, 5)));
    assert_eq!(
        traffic(&sim, minutes(start, 4), &[("198.51.100.7", "NL", 11)]).await,
        11
    );
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let held = wait_for_condition(&api, "staged", "Ready", Some("False"), "RolloutHeld", WAIT).await;
    let ready = held
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready").cloned());
    let message = ready.map(|c| c.message).unwrap_or_default();
    assert!(message.contains("11 matches exceed maxMatches 10 by 1"), "{message}");
    verdict(ns, "staged", "Failed", "Degraded", false);

    sim.sim.set_clock(Some(minutes(start, 40)));
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    assert_eq!(
        platform_list(&sim, CONFIGURATION),
        Some((true, LOG)),
        "held in Log after the window"
    );
    assert_eq!(patches(&sim), 1, "nothing written but Log");

    cluster().apply(staged(
        ns,
        "staged",
        json!({"action": "Challenge", "window": "30m", "maxMatches": 50}),
    ));
    let again = rollout_where(&api, "staged", "a new window for the new spec", |r| {
        r.observed_generation == Some(2) && r.window_start.is_some()
    })
    .await;
    assert_eq!(again.stage, RolloutStage::Logging);
    let restarted: DateTime<Utc> = again
        .window_start
        .as_deref()
        .and_then(|at| at.parse().ok())
        .expect("a start");
    assert!(
        restarted >= minutes(start, 40) && restarted < minutes(start, 41),
        "the new window starts at edge-sim's time, {restarted}"
    );
    if let Some(evidence) = &again.evidence {
        assert_eq!(
            (evidence.from.as_str(), evidence.matches),
            (again.window_start.as_deref().unwrap_or_default(), 0),
            "the evidence is the new window's"
        );
    }
    assert_eq!(patches(&sim), 1, "the list logs already");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_rollout_is_promoted_by_the_digest_shown_and_not_by_a_stale_one() {
    let Staged {
        sim,
        namespace,
        operator,
        api,
        start,
    } = stage(
        "rollout-manual",
        json!({"action": "Block", "window": "1h", "promotion": "Manual"}),
    )
    .await;
    let ns = namespace.name.as_str();

    sim.sim.set_clock(Some(minutes(start, 61)));
    assert_eq!(traffic(&sim, minutes(start, 30), &[("192.0.2.1", "DE", 2)]).await, 2);
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    wait_for_condition(&api, "staged", "Ready", Some("False"), "AwaitingApproval", WAIT).await;
    verdict(ns, "staged", "InProgress", "Progressing", false);
    let shown = rollout_of(&api, "staged")
        .await
        .and_then(|r| r.evidence)
        .map(|e| e.digest)
        .expect("a digest");

    let annotate = |digest: &str| {
        let value = format!("edgeplatform.io/promote={digest}");
        let (ok, _, stderr) = cluster().kubectl(
            &["annotate", "--overwrite", "-n", ns, "accesslistconfig/staged", &value],
            None,
        );
        assert!(ok, "{stderr}");
    };
    annotate("0000000000");
    eventually("a StaleApproval Event", WAIT, || async {
        (!events_of(ns, "StaleApproval").await.is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        platform_list(&sim, CONFIGURATION),
        Some((true, LOG)),
        "a stale digest promotes nothing"
    );
    assert_eq!(patches(&sim), 1);

    let status = edgectl(&["rollout", "status", "staged", "-n", ns]);
    // The same cluster named by flags alone, $KUBECONFIG pointing nowhere.
    let (_, context, _) = cluster().kubectl(&["config", "current-context"], None);
    let kubeconfig = cluster().kubeconfig.display().to_string();
    let by_flags = std::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(["rollout", "status", "staged", "-n", ns, "--kubeconfig", &kubeconfig])
        .args(["--context", context.trim()])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .expect("edgectl runs");
    assert_eq!(
        String::from_utf8_lossy(&by_flags.stdout),
        status,
        "{}",
        String::from_utf8_lossy(&by_flags.stderr)
    );
    for expected in [
        "AwaitingApproval",
        "Matches        2 from 1 IPs",
        "Top IPs        192.0.2.1 2",
        &shown,
    ] {
        assert!(status.contains(expected), "{expected:?} in\n{status}");
    }
    let approved = edgectl(&["rollout", "promote", "staged", "-n", ns]);
    assert!(
        approved.contains(&format!("approved for evidence {shown}")),
        "{approved}"
    );
    wait_for_condition(&api, "staged", "Ready", Some("True"), "Promoted", WAIT).await;
    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, BLOCK)));
    assert_eq!(patches(&sim), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_logged_right_after_the_write_to_log_are_evidence_and_hold_the_gate() {
    let Staged {
        sim,
        namespace,
        operator,
        api,
        ..
    } = stage(
        "rollout-first-requests",
        json!({"action": "Block", "window": "1m", "maxMatches": 3}),
    )
    .await;
    let ns = namespace.name.as_str();
    let written_ms = sim
        .sim
        .journal()
        .iter()
        .find(|entry| entry.method == "PATCH" && entry.path.contains(&format!("/configurations/{CONFIGURATION}")))
        .map(|entry| entry.time_ms)
        .expect("the write to Log");
    let written = DateTime::from_timestamp_millis(written_ms).expect("a time");
    // 8 requests from 4 sources, logged 100 ms after the platform answered the write.
    let clients = [
        ("198.51.100.1", "NL", 2),
        ("198.51.100.2", "NL", 2),
        ("198.51.100.3", "DE", 2),
        ("198.51.100.4", "DE", 2),
    ];
    assert_eq!(
        traffic(&sim, written + chrono::Duration::milliseconds(100), &clients).await,
        8
    );

    // The window ends; the evidence covers it from the write on.
    sim.sim.set_clock(Some(written + chrono::Duration::minutes(2)));
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let held = wait_for_condition(&api, "staged", "Ready", Some("False"), "RolloutHeld", WAIT).await;
    let rollout = held.status.and_then(|s| s.rollout).expect("a rollout");
    let evidence = rollout.evidence.expect("evidence");
    assert_eq!((evidence.matches, evidence.distinct_ips), (8, 4), "{evidence:?}");
    let from: DateTime<Utc> = evidence.from.parse().expect("a time");
    assert!(from <= written, "the evidence starts at the write, {from} > {written}");
    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, LOG)), "held in Log");
    assert_eq!(patches(&sim), 1, "nothing written but Log");

    // A person who read the evidence promotes the held rollout by hand.
    let approved = edgectl(&["rollout", "promote", "staged", "-n", ns]);
    assert!(approved.contains(&evidence.digest), "{approved}");
    wait_for_condition(&api, "staged", "Ready", Some("True"), "Promoted", WAIT).await;
    assert_eq!(platform_list(&sim, CONFIGURATION), Some((true, BLOCK)));
    assert_eq!(patches(&sim), 2);
}

/// Writes `rollout` into the object's `status.rollout`, as anyone granted
/// `accesslistconfigs/status` could.
fn forge_rollout(namespace: &str, rollout: Value) {
    cluster().patch_status(namespace, "accesslistconfig/staged", json!({ "rollout": rollout }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_status_rollout_changes_no_action_and_edgectl_refuses_to_approve_it() {
    let staged = stage(
        "rollout-forged",
        json!({"action": "Block", "window": "1h", "promotion": "Manual"}),
    )
    .await;
    let (sim, operator, api) = (&staged.sim, &staged.operator, &staged.api);
    let (start, ns) = (staged.start, staged.namespace.name.as_str());
    sim.sim.set_clock(Some(minutes(start, 5)));

    forge_rollout(
        ns,
        json!({"stage": "Promoted", "observedGeneration": 1, "promotedAt": start.to_rfc3339()}),
    );
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let rewritten = rollout_where(api, "staged", "the operator's rollout shown again", |r| {
        r.stage == RolloutStage::Logging
    })
    .await;
    assert!(rewritten.window_start.is_some(), "{rewritten:?}");
    assert_eq!(
        platform_list(sim, CONFIGURATION),
        Some((true, LOG)),
        "a forged stage promotes nothing"
    );
    assert_eq!(patches(sim), 1);

    // The window ends: the evidence the operator recorded awaits approval.
    sim.sim.set_clock(Some(minutes(start, 61)));
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    wait_for_condition(api, "staged", "Ready", Some("False"), "AwaitingApproval", WAIT).await;
    let forged_digest = "0123456789abcdef0123456789abcdef";
    forge_rollout(
        ns,
        json!({"stage": "AwaitingApproval", "observedGeneration": 1, "windowStart": start.to_rfc3339(),
               "evidence": {"from": start.to_rfc3339(), "to": minutes(start, 60).to_rfc3339(),
                            "matches": 0, "distinctIps": 0, "digest": forged_digest}}),
    );
    let (ok, stdout, stderr) = run_edgectl(&["rollout", "promote", "staged", "-n", ns]);
    assert!(!ok, "approved forged evidence: {stdout}");
    assert!(stderr.contains("not what the operator recorded"), "{stderr}");
    let annotations = api.get("staged").await.expect("the object").metadata.annotations;
    assert!(
        annotations.is_none_or(|a| !a.contains_key("edgeplatform.io/promote")),
        "nothing approved"
    );

    let value = format!("edgeplatform.io/promote={forged_digest}");
    let (ok, _, stderr) = cluster().kubectl(
        &["annotate", "--overwrite", "-n", ns, "accesslistconfig/staged", &value],
        None,
    );
    assert!(ok, "{stderr}");
    eventually("a StaleApproval Event", WAIT, || async {
        (!events_of(ns, "StaleApproval").await.is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        platform_list(sim, CONFIGURATION),
        Some((true, LOG)),
        "an approval of forged evidence promotes nothing"
    );
    assert_eq!(patches(sim), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_list_after_probation_still_blocks_ten_thousand_requests_from_five_hundred_sources() {
    let staged = stage(
        "rollout-probation",
        json!({"action": "Block", "window": "1m", "maxMatches": 1000, "rollbackAboveSources": 10}),
    )
    .await;
    let (sim, operator, api) = (&staged.sim, &staged.operator, &staged.api);
    let (start, ns) = (staged.start, staged.namespace.name.as_str());
    sim.sim.set_clock(Some(minutes(start, 2)));
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    wait_for_condition(api, "staged", "Ready", Some("True"), "Promoted", WAIT).await;
    let promoted = rollout_of(api, "staged").await.expect("a rollout");
    let ends: DateTime<Utc> = promoted
        .probation_ends
        .as_deref()
        .and_then(|at| at.parse().ok())
        .expect("probation ends");

    sim.sim.set_clock(Some(ends + chrono::Duration::minutes(5)));
    let sources: Vec<String> = (0..500)
        .map(|i| format!("198.18.{}.{}", i / 250, i % 250 + 1))
        .collect();
    let clients: Vec<(&str, &str, u64)> = sources.iter().map(|ip| (ip.as_str(), "NL", 20)).collect();
    let blocked = traffic(sim, ends + chrono::Duration::minutes(1), &clients).await;
    assert_eq!(blocked, 10_000);
    operator
        .look_again(ns, "accesslistconfigs", "AccessListConfig", 1)
        .await;
    let after = wait_for_condition(api, "staged", "Ready", Some("True"), "Promoted", WAIT).await;
    let ready = after.condition("Ready").map(|c| c.message).unwrap_or_default();
    assert!(ready.contains("probation ended"), "{ready}");
    assert_eq!(
        platform_list(sim, CONFIGURATION),
        Some((true, BLOCK)),
        "after probation the list keeps blocking"
    );
    assert_eq!(patches(sim), 2, "nothing written after the promotion");
    assert!(events_of(ns, "RolledBack").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_deleted_mid_rollout_that_restores_nothing_says_the_list_is_left_logging() {
    let staged = stage(
        "rollout-orphan",
        json!({"action": "Block", "window": "1h", "maxMatches": 10}),
    )
    .await;
    let (sim, ns) = (&staged.sim, staged.namespace.name.as_str());
    let (ok, _, stderr) = cluster().kubectl(
        &["delete", "accesslistconfig", "staged", "-n", ns, "--timeout=45s"],
        None,
    );
    assert!(ok, "the finalizer a rollout keeps is removed: {stderr}");
    let left = eventually("a LeftLogging Event", WAIT, || async {
        let events = events_of(ns, "LeftLogging").await;
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(
        platform_list(sim, CONFIGURATION),
        Some((true, LOG)),
        "deletionPolicy Orphan: the list is left as it is, logging"
    );
}
