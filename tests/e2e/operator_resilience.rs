//! Faults: platform 500s, an operator restart mid-way, two replicas with leader
//! election and failover, and the metrics endpoint.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{Operator, eventually, free_port, wait_for_condition};
use crate::support::sim::{add_fault, example_fixtures, journal_count, start};
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use kube::Api;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(45);

fn apply_alc(namespace: &str, name: &str, configuration: i64, enabled: bool) {
    cluster().apply(Manifest::access_list(
        namespace,
        name,
        json!({"shieldZoneId": 1001, "configurationId": configuration, "enabled": enabled}),
    ));
}

/// Who holds the operator's Lease in `namespace` (empty when nobody does yet).
fn lease_holder(namespace: &str) -> String {
    let (_, holder, _) = cluster().kubectl(
        &[
            "get",
            "lease",
            "edge-operator",
            "-n",
            namespace,
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        None,
    );
    holder
}

async fn ready(api: &Api<AccessListConfig>, name: &str) {
    wait_for_condition(api, name, "Ready", None, "InSync", WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_then_success_converge_with_bounded_calls() {
    let sim = start(example_fixtures()).await;
    let fault =
        json!({"method": "GET", "pathPrefix": "/shield/shield-zone/1001/access-lists", "status": 500, "count": 3});
    add_fault(&sim, fault);
    let namespace = TestNamespace::create("faults");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    apply_alc(&namespace.name, "flaky", 9101, true);
    ready(&api, "flaky").await;
    let reads: Vec<u16> = sim
        .sim
        .journal()
        .iter()
        .filter(|e| e.path.ends_with("/access-lists"))
        .map(|e| e.status)
        .collect();
    assert_eq!(reads, [500, 500, 500, 200], "three failures, then one successful read");
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9101"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_converges_without_duplicate_writes() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("restart");
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    let mut first = Operator::start(&namespace.name, &sim.base_url(), &[]);
    apply_alc(&namespace.name, "one", 9101, true);
    ready(&api, "one").await;
    first.kill();
    apply_alc(&namespace.name, "two", 9102, false);
    apply_alc(&namespace.name, "three", 9201, false);
    let second = Operator::start(&namespace.name, &sim.base_url(), &[]);
    ready(&api, "two").await;
    ready(&api, "three").await;
    second
        .look_again(&namespace.name, "accesslistconfigs", "AccessListConfig", 3)
        .await;
    for configuration in [9101, 9102, 9201] {
        assert_eq!(
            journal_count(&sim, "PATCH", &format!("/configurations/{configuration}")),
            1,
            "configuration {configuration}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_replicas_only_the_leader_writes_and_a_standby_takes_over() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("leader");
    let election = |identity: &'static str| {
        vec![
            "--leader-elect",
            "--lease-namespace",
            namespace.name.as_str(),
            "--lease-duration",
            "4s",
            "--identity",
            identity,
        ]
    };
    let mut alpha = Operator::start(&namespace.name, &sim.base_url(), &election("alpha"));
    eventually("alpha to hold the Lease", WAIT, || async {
        (lease_holder(&namespace.name) == "alpha").then_some(())
    })
    .await;
    let mut beta = Operator::start(&namespace.name, &sim.base_url(), &election("beta"));
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    apply_alc(&namespace.name, "one", 9101, true);
    ready(&api, "one").await;
    eventually("beta to run as the standby", WAIT, || async {
        (beta.sample("edge_operator_leader").await? == 0.0).then_some(())
    })
    .await;
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9101"), 1, "one writer");
    assert_eq!(
        journal_count(&sim, "GET", "/access-lists"),
        1,
        "the standby does not even read"
    );

    let holder = lease_holder(&namespace.name);
    match holder.as_str() {
        "alpha" => alpha.kill(),
        "beta" => beta.kill(),
        other => panic!("unexpected lease holder {other:?}"),
    }
    apply_alc(&namespace.name, "two", 9102, false);
    ready(&api, "two").await;
    let new_holder = lease_holder(&namespace.name);
    assert_ne!(new_holder, holder, "the standby holds the lease now");
    assert_eq!(
        journal_count(&sim, "PATCH", "/configurations/9101"),
        1,
        "no duplicate write after failover"
    );
    assert_eq!(journal_count(&sim, "PATCH", "/configurations/9102"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_comes_back_when_forbidden_watches_are_allowed_even_with_no_objects() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("late-rbac");
    let (ok, _, err) = cluster().kubectl(&["create", "serviceaccount", "operator", "-n", &namespace.name], None);
    assert!(ok, "{err}");
    let user = format!("system:serviceaccount:{}:operator", namespace.name);
    let addr = format!("127.0.0.1:{}", free_port());
    let kubeconfig = cluster().kubeconfig_as(&user);
    let _operator = Operator::start_with_kubeconfig(
        &namespace.name,
        &sim.base_url(),
        &["--metrics-addr", &addr],
        kubeconfig.path(),
    );
    let http = reqwest::Client::new();
    let readyz = |expected: reqwest::StatusCode| {
        let (http, url) = (http.clone(), format!("http://{addr}/readyz"));
        async move {
            let status = http.get(url).send().await.ok()?.status();
            (status == expected).then_some(())
        }
    };
    eventually("/readyz fails while the watches are forbidden", WAIT, || {
        readyz(reqwest::StatusCode::SERVICE_UNAVAILABLE)
    })
    .await;

    let rbac = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: operator, namespace: {ns}}}\nrules:\n- apiGroups: [edgeplatform.io]\n  resources: ['*']\n  verbs: [get, list, watch, patch]\n- apiGroups: ['']\n  resources: [secrets]\n  verbs: [get, list, watch, patch]\n- apiGroups: [events.k8s.io]\n  resources: [events]\n  verbs: [create, patch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: operator, namespace: {ns}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: operator}}\nsubjects: [{{kind: ServiceAccount, name: operator, namespace: {ns}}}]\n",
        ns = namespace.name
    );
    cluster().apply(&rbac);
    eventually(
        "/readyz passes once the watches answer, with no object to reconcile",
        Duration::from_secs(90),
        || readyz(reqwest::StatusCode::OK),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_health_endpoints() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("metrics");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--metrics-addr", &addr]);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    apply_alc(&namespace.name, "measured", 9101, true);
    ready(&api, "measured").await;
    let http = reqwest::Client::new();
    let health = http
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert!(health.status().is_success());
    let readyz = http.get(format!("http://{addr}/readyz")).send().await.expect("readyz");
    assert!(readyz.status().is_success());
    let text = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for series in [
        r#"edge_operator_reconciles_total{kind="AccessListConfig",result="success"}"#,
        r#"edge_operator_platform_requests_total{operation="update_access_list",status_class="2xx"} 1"#,
        r#"edge_operator_reconcile_duration_seconds_count{kind="AccessListConfig"}"#,
        r#"edge_operator_objects{kind="AccessListConfig",condition="Ready",status="True",reason="InSync"} 1"#,
    ] {
        assert!(text.contains(series), "{series} missing from:\n{text}");
    }
    // Objects are counted, not listed, unless --object-metrics asks for it.
    assert!(!text.contains(r#"name="measured""#), "{text}");
}
