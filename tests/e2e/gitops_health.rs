//! Health as the users' tools judge it, on objects the operator reconciled against
//! edge-sim: Flux's kstatus library, the shipped Argo CD health checks and `kubectl
//! wait --for=condition=Ready`. Current/Healthy/Ready only when the platform matches
//! the current generation; Failed/Degraded when waiting cannot help; InProgress/
//! Progressing otherwise.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::gitops::{Verdict, judge};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{Operator, eventually};
use crate::support::sim::{add_fault, example_fixtures, set_app_status, start};

const SETTLE: Duration = Duration::from_secs(45);

fn condition_of(namespace: &str, resource: &str, type_: &str) -> Option<(String, String, i64)> {
    let object = crate::support::gitops::get_json(namespace, resource);
    let generation = object["metadata"]["generation"].as_i64()?;
    let condition = object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?
        .clone();
    (object["status"]["observedGeneration"].as_i64() == Some(generation)).then(|| {
        (
            condition["status"].as_str().unwrap_or_default().to_string(),
            condition["reason"].as_str().unwrap_or_default().to_string(),
            condition["observedGeneration"].as_i64().unwrap_or_default(),
        )
    })
}

/// Waits until `resource` shows condition `type_` with `status` and `reason` for its
/// current generation.
async fn settled(namespace: &str, resource: &str, type_: &str, status: &str, reason: &str) {
    eventually(&format!("{resource} {type_}={status} {reason}"), SETTLE, || async {
        let (s, r, _) = condition_of(namespace, resource, type_)?;
        (s == status && r == reason).then_some(())
    })
    .await;
}

fn expect(kstatus: &str, argocd: &str, kubectl_wait: bool) -> Verdict {
    Verdict {
        kstatus: kstatus.into(),
        argocd: argocd.into(),
        kubectl_wait,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_is_judged_right_by_kstatus_argocd_and_kubectl_wait() {
    let sim = start(example_fixtures()).await;
    let base = sim.base_url();
    let namespace = TestNamespace::create("gitops");
    let ns = namespace.name.as_str();
    let _operator = Operator::start(ns, &base, &[]);
    let missing_secret = json!({"accessKeySecretRef": {"name": "absent", "key": "accessKey"}});
    let access_list = |name: &str, spec: Value| {
        Manifest::access_list(
            ns,
            name,
            json!({"shieldZoneId": 1001, "enabled": true, "action": "Block"}),
        )
        .with_spec(spec)
    };
    let certificate = |name: &str, hostname: &str| Manifest::certificate(ns, name, json!({ "hostname": hostname }));
    let watch = |name: &str, app: &str| {
        Manifest::app_watch(
            ns,
            name,
            json!({"appId": app, "interval": "10s", "shieldZoneId": 1001, "rateLimits": {"enabled": true}}),
        )
    };
    cluster().apply(stream([
        access_list("converged", json!({"configurationId": 9101})),
        access_list("missing-list", json!({"listName": "No such list"})),
        access_list("paused", json!({"configurationId": 9102})).annotated("edgeplatform.io/paused", "true"),
        certificate("issued", "shop.example.com"),
        certificate("unknown-hostname", "nobody.example.org"),
        certificate("pending-challenge", "new.example.com"),
        certificate("missing-secret", "shop.example.com").with_spec(missing_secret.clone()),
        watch("healthy", "app-shop"),
        watch("unknown-app", "app-nope"),
        watch("missing-secret", "app-shop").with_spec(missing_secret),
    ]));

    let mut table: Vec<(&str, Verdict, Verdict)> = Vec::new();
    let mut row = |scenario: &'static str, resource: &str, expected: Verdict| {
        let timeout = if expected.kubectl_wait { "30s" } else { "3s" };
        table.push((scenario, judge(ns, resource, timeout), expected));
    };
    let (current, failed) = (expect("Current", "Healthy", true), expect("Failed", "Degraded", false));
    let scenarios = [
        (
            "AccessListConfig converged",
            "accesslistconfig/converged",
            ("Ready", "True", "InSync"),
            current.clone(),
        ),
        (
            "AccessListConfig naming a list that does not exist",
            "accesslistconfig/missing-list",
            ("Stalled", "True", "AccessListNotFound"),
            failed.clone(),
        ),
        (
            "AccessListConfig paused before its spec was applied",
            "accesslistconfig/paused",
            ("Stalled", "True", "Paused"),
            expect("Failed", "Suspended", false),
        ),
        (
            "PullZoneCertificate issued",
            "pullzonecertificate/issued",
            ("Ready", "True", "Issued"),
            current.clone(),
        ),
        (
            "PullZoneCertificate for an unknown hostname",
            "pullzonecertificate/unknown-hostname",
            ("Stalled", "True", "HostnameNotFound"),
            failed.clone(),
        ),
        (
            "PullZoneCertificate whose challenge is not served yet",
            "pullzonecertificate/pending-challenge",
            ("Reconciling", "True", "VerificationFailed"),
            expect("InProgress", "Progressing", false),
        ),
        (
            "PullZoneCertificate whose Secret is missing",
            "pullzonecertificate/missing-secret",
            ("Stalled", "True", "CredentialsUnavailable"),
            failed.clone(),
        ),
        (
            "ContainerAppWatch of a healthy app",
            "containerappwatch/healthy",
            ("Ready", "True", "AppActive"),
            current.clone(),
        ),
        (
            "ContainerAppWatch of an unknown app",
            "containerappwatch/unknown-app",
            ("Stalled", "True", "NotFound"),
            failed.clone(),
        ),
        (
            "ContainerAppWatch whose Secret is missing",
            "containerappwatch/missing-secret",
            ("Stalled", "True", "CredentialsUnavailable"),
            failed.clone(),
        ),
    ];
    for (scenario, resource, (type_, status, reason), expected) in scenarios {
        settled(ns, resource, type_, status, reason).await;
        row(scenario, resource, expected);
    }

    // The app turns failing: the healthy watch's next poll says so.
    set_app_status(&base, "app-shop", "failing").await;
    settled(ns, "containerappwatch/healthy", "Stalled", "True", "Failing").await;
    row(
        "ContainerAppWatch of an app turned failing",
        "containerappwatch/healthy",
        failed,
    );

    // A new generation while the platform answers 500: the old Ready must not stand.
    add_fault(
        &sim,
        json!({"method": "PATCH", "pathPrefix": "/shield/shield-zone/1001/access-lists/configurations/9101",
               "status": 500, "count": 1000}),
    );
    cluster().apply(access_list(
        "converged",
        json!({"configurationId": 9101, "action": "Challenge"}),
    ));
    eventually("generation 2 observed while the platform fails", SETTLE, || async {
        let (status, reason, generation) = condition_of(ns, "accesslistconfig/converged", "Synced")?;
        (status == "False" && reason == "ServerError" && generation == 2).then_some(())
    })
    .await;
    settled(ns, "accesslistconfig/converged", "Reconciling", "True", "ServerError").await;
    row(
        "AccessListConfig whose new spec meets a failing platform",
        "accesslistconfig/converged",
        expect("InProgress", "Progressing", false),
    );
    sim.sim.clear_faults();
    settled(ns, "accesslistconfig/converged", "Ready", "True", "InSync").await;
    row(
        "the same once the platform answers again",
        "accesslistconfig/converged",
        current,
    );

    eprintln!("| scenario | kstatus | Argo CD | kubectl wait Ready |\n|---|---|---|---|");
    for (scenario, got, _) in &table {
        let wait = if got.kubectl_wait { "met" } else { "times out" };
        eprintln!("| {scenario} | {} | {} | {wait} |", got.kstatus, got.argocd);
    }
    let wrong: Vec<String> = table
        .iter()
        .filter(|(_, got, expected)| got != expected)
        .map(|(scenario, got, expected)| format!("{scenario}: got {got:?}, expected {expected:?}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}
