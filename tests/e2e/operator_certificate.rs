//! PullZoneCertificate end to end: backoff while verification fails, issuance, a
//! terminal unknown hostname, Retry-After, and credentials fixed by a Secret update.

use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{Operator, eventually, wait_for_condition};
use crate::support::sim::{ACCESS_KEY, add_fault, example_fixtures, start};
use edge_operator::controller::kinds::certificate::resource::PullZoneCertificate;
use edge_operator::sim::RunningSim;
use kube::Api;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

fn certificate(namespace: &str, name: &str, hostname: &str) -> Manifest {
    Manifest::certificate(namespace, name, json!({ "hostname": hostname }))
}

async fn reason_is(api: &Api<PullZoneCertificate>, name: &str, reason: &str) -> PullZoneCertificate {
    wait_for_condition(api, name, "Ready", None, reason, WAIT).await
}

fn calls(sim: &RunningSim) -> Vec<(u16, i64)> {
    sim.sim
        .journal()
        .iter()
        .filter(|e| e.path == "/pullzone/completeExternalHttpCertificate")
        .map(|e| (e.status, e.time_ms))
        .collect()
}

async fn admin_patch(sim: &RunningSim, path: &str, body: serde_json::Value) {
    let response = reqwest::Client::new()
        .patch(format!("{}{path}", sim.base_url()))
        .json(&body)
        .send()
        .await
        .expect("admin");
    assert!(response.status().is_success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_challenge_backs_off_then_issues_once() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("pzc");
    let operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    let api: Api<PullZoneCertificate> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(certificate(&namespace.name, "new", "new.example.com"));

    let failing = eventually("two failed attempts", WAIT, || async {
        let object = api.get("new").await.ok()?;
        let status = object.status.clone()?;
        (status.attempts >= 2).then_some(status)
    })
    .await;
    let last_error = failing.last_error.expect("lastError");
    assert_eq!(last_error.http_status, Some(400));
    assert_eq!(last_error.field.as_deref(), Some("Hostname"));
    assert_eq!(
        last_error.error_key.as_deref(),
        Some("pullzone.domain_verification_failed")
    );
    assert!(failing.next_attempt_time.is_some());
    assert!(failing.conditions.iter().any(|c| c.reason == "VerificationFailed"));
    let attempts = calls(&sim);
    assert!(
        attempts.windows(2).all(|w| w[1].1 - w[0].1 >= 400),
        "attempts are spaced by the backoff: {attempts:?}"
    );

    admin_patch(
        &sim,
        "/_sim/pullzones/501/hostnames/new.example.com",
        json!({"challenge": "ready"}),
    )
    .await;
    let issued = reason_is(&api, "new", "Issued").await;
    let status = issued.status.expect("status");
    assert!(status.issued_time.is_some());
    assert_eq!(status.attempts, 0);
    assert!(status.last_error.is_none());
    let after_issue = calls(&sim).len();
    // A new operator decides from the status alone.
    drop(operator);
    let operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    operator.await_reconciles("PullZoneCertificate", 1).await;
    assert_eq!(calls(&sim).len(), after_issue, "never called again for this generation");
    assert_eq!(calls(&sim).last().map(|c| c.0), Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_hostname_is_terminal() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("pzc-404");
    let operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    let api: Api<PullZoneCertificate> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(certificate(&namespace.name, "ghost", "ghost.example.org"));
    let object = reason_is(&api, "ghost", "HostnameNotFound").await;
    assert_eq!(
        object.status.and_then(|s| s.last_error).and_then(|e| e.http_status),
        Some(404)
    );
    // A new operator decides from the status alone.
    drop(operator);
    let operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    operator.await_reconciles("PullZoneCertificate", 1).await;
    assert_eq!(calls(&sim).len(), 1, "no retry until the spec changes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_honoured() {
    let sim = start(example_fixtures()).await;
    let fault = json!({"pathPrefix": "/pullzone/", "status": 429, "count": 1, "retryAfter": 3});
    add_fault(&sim, fault);
    let namespace = TestNamespace::create("pzc-429");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    let api: Api<PullZoneCertificate> = Api::namespaced(cluster().client().await, &namespace.name);
    cluster().apply(certificate(&namespace.name, "shop", "shop.example.com"));
    reason_is(&api, "shop", "Issued").await;
    let attempts = calls(&sim);
    assert_eq!(attempts.iter().map(|a| a.0).collect::<Vec<_>>(), [429, 200]);
    assert!(
        attempts[1].1 - attempts[0].1 >= 3000,
        "waited {} ms after Retry-After: 3",
        attempts[1].1 - attempts[0].1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_access_key_is_fixed_by_updating_the_secret_alone() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("pzc-key");
    let _operator = Operator::start(&namespace.name, &sim.base_url(), &["--certificate-backoff", "1s"]);
    let api: Api<PullZoneCertificate> = Api::namespaced(cluster().client().await, &namespace.name);
    let secret = |key: &str| Manifest::key_secret(&namespace.name, "edge-key", key);
    cluster().apply(secret("not-the-key"));
    cluster().apply(
        certificate(&namespace.name, "keyed", "shop.example.com")
            .with_spec(json!({"accessKeySecretRef": {"name": "edge-key", "key": "accessKey"}})),
    );
    let refused = reason_is(&api, "keyed", "Unauthorized").await;
    let message = refused
        .status
        .and_then(|s| s.conditions.first().map(|c| c.message.clone()))
        .unwrap_or_default();
    assert!(
        !message.contains("not-the-key"),
        "the key never appears in status: {message}"
    );
    cluster().apply(secret(ACCESS_KEY));
    reason_is(&api, "keyed", "Issued").await;
}
