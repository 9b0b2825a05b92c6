//! The driver with every kind, without a cluster: a mock apiserver (tower-test) and an
//! in-process edge-sim. Every call either side sees goes into one log, so the tests
//! assert the order of calls: the claim, the finalizer and the restore point before the
//! first platform write, one status write, none when nothing changed, a precise
//! finalizer removal.

use serde_json::{Value, json};

use self::harness::{document, harness, object};
use crate::controller::framework::pipeline::driver::reconcile;
use crate::controller::kinds::{AccessListConfig, ContainerAppWatch, PullZoneCertificate};

mod harness;

fn access_list(extra_metadata: Value, status: Value) -> Value {
    let mut metadata =
        json!({"name": "bad-actors", "namespace": "team", "generation": 1, "resourceVersion": "7", "uid": "u1"});
    if let (Some(m), Some(extra)) = (metadata.as_object_mut(), extra_metadata.as_object()) {
        m.extend(extra.clone());
    }
    json!({
        "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListConfig", "metadata": metadata,
        "spec": {"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "deletionPolicy": "Restore"},
        "status": status,
    })
}

#[tokio::test]
async fn access_list_claims_then_records_the_restore_point_in_its_claim_before_its_one_write() {
    let value = access_list(json!({}), Value::Null);
    let h = harness(Some(&value), document()).await;
    let action = reconcile(object::<AccessListConfig>(&value), h.reconciler()).await;
    assert!(action.is_ok(), "{action:?}");
    let object_path = "kube PATCH /apis/edgeplatform.io/v1alpha1/namespaces/team/accesslistconfigs/bad-actors";
    let status_path = format!("{object_path}/status");
    let claim_path = "/apis/edgeplatform.io/v1alpha1/accesslistclaims";
    let calls = h.log.calls();
    let claimed = h.log.position(&format!("kube POST {claim_path}"));
    let read = h
        .log
        .position("kube GET /apis/edgeplatform.io/v1alpha1/namespaces/team/accesslistconfigs/bad-actors");
    let finalizer = h.log.position(object_path);
    let recorded = h.log.position(&format!("kube PATCH {claim_path}/"));
    let write = h.log.position("platform update_access_list");
    assert!(
        h.log.position("platform list_access_lists") < claimed
            && claimed < read
            && read < finalizer
            && finalizer < recorded
            && recorded < write,
        "read the list, claim it, read the object's finalizers, add ours, record the restore point, then the \
         write: {calls:?}"
    );
    assert_eq!(h.log.count("platform update_access_list"), 1);
    assert_eq!(h.log.count(&status_path), 1, "the outcome only: {calls:?}");
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let metadata = &bodies
        .iter()
        .find(|(call, _)| call == object_path)
        .expect("metadata patch")
        .1["metadata"];
    assert_eq!(metadata["finalizers"], json!(["edgeplatform.io/restore-access-list"]));
    assert_eq!(metadata["resourceVersion"], "7", "the finalizer write is conditional");
    assert_eq!(metadata.get("annotations"), None, "nothing a user may edit is trusted");
    let name = crate::controller::kinds::access_list::claim_resource::claim_name(&h.sim.base_url(), 1001, 9101);
    let claim = h
        .claims
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&name)
        .cloned()
        .expect("the claim");
    assert_eq!(
        claim["spec"]["owner"],
        json!({"namespace": "team", "name": "bad-actors", "uid": "u1"})
    );
    assert_eq!(claim["spec"]["restorePoint"], json!({"isEnabled": false, "action": 2}));
    let status = &bodies
        .iter()
        .find(|(call, _)| *call == status_path)
        .expect("the status write")
        .1["status"];
    assert_eq!(
        status["restorePoint"],
        json!({"shieldZoneId": 1001, "configurationId": 9101, "isEnabled": false, "action": 2}),
        "status mirrors the claim"
    );
}

#[tokio::test]
async fn a_converged_access_list_is_neither_written_nor_patched() {
    let first = access_list(json!({}), Value::Null);
    let h = harness(Some(&first), document()).await;
    assert!(
        reconcile(object::<AccessListConfig>(&first), h.reconciler())
            .await
            .is_ok()
    );
    let written = h
        .bodies
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .rev()
        .find(|(c, _)| c.ends_with("/status"))
        .map(|(_, b)| b["status"].clone())
        .expect("status");
    let converged = access_list(json!({"finalizers": ["edgeplatform.io/restore-access-list"]}), written);
    let before = h.log.calls().len();
    assert!(
        reconcile(object::<AccessListConfig>(&converged), h.reconciler())
            .await
            .is_ok()
    );
    let after: Vec<String> = h.log.calls()[before..].to_vec();
    assert!(
        after
            .iter()
            .all(|c| !c.starts_with("kube PATCH") && !c.starts_with("kube PUT") && !c.contains("update_access_list")),
        "only reads (of the claim, which the operator's watch caches): {after:?}"
    );
}

#[tokio::test]
async fn deleting_restores_what_its_claim_recorded_then_removes_exactly_our_finalizer() {
    let forged = json!({"restorePoint": {"configurationId": 9101, "isEnabled": true, "action": 5}});
    let metadata = json!({"deletionTimestamp": "2026-11-20T12:00:00Z", "finalizers": ["other.io/keep", "edgeplatform.io/restore-access-list"]});
    let value = access_list(metadata, forged);
    let mut fixtures = document();
    fixtures.shield_zones[0].access_lists[0].set_enabled(true);
    let h = harness(Some(&value), fixtures).await;
    let name = crate::controller::kinds::access_list::claim_resource::claim_name(&h.sim.base_url(), 1001, 9101);
    h.claims.lock().unwrap_or_else(|e| e.into_inner()).insert(
        name.clone(),
        json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListClaim",
            "metadata": {"name": name, "uid": "claim-1", "resourceVersion": "3"},
            "spec": {"platform": h.sim.base_url(), "shieldZoneId": 1001, "configurationId": 9101,
                     "owner": {"namespace": "team", "name": "bad-actors", "uid": "u1"},
                     "proof": {"readAt": "2026-11-20T11:00:00Z"},
                     "restorePoint": {"isEnabled": false, "action": 2}},
        }),
    );
    assert!(
        reconcile(object::<AccessListConfig>(&value), h.reconciler())
            .await
            .is_ok()
    );
    let read = h
        .log
        .position("kube GET /apis/edgeplatform.io/v1alpha1/namespaces/team/accesslistconfigs/bad-actors");
    let restore = h.log.position("platform update_access_list");
    assert!(read < restore, "the clean-up acts on the object as it is now");
    let event = h
        .log
        .position("kube POST /apis/events.k8s.io/v1/namespaces/team/events");
    let released = h.log.position(&format!(
        "kube DELETE /apis/edgeplatform.io/v1alpha1/accesslistclaims/{name}"
    ));
    let removed = h
        .log
        .position("kube PATCH /apis/edgeplatform.io/v1alpha1/namespaces/team/accesslistconfigs/bad-actors");
    assert!(
        restore < released && released < event && event < removed,
        "{:?}",
        h.log.calls()
    );
    assert!(
        h.claims.lock().unwrap_or_else(|e| e.into_inner()).is_empty(),
        "released"
    );
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let note = bodies
        .iter()
        .find(|(call, _)| call.contains("/events"))
        .map(|(_, body)| body["note"].as_str().unwrap_or_default().to_string())
        .expect("the Event");
    assert!(
        note.contains("isEnabled=false action=Block"),
        "the claim's values, not the status's: {note}"
    );
    let removal = &bodies
        .iter()
        .rev()
        .find(|(call, _)| call.ends_with("/bad-actors"))
        .expect("patch")
        .1;
    assert_eq!(
        removal,
        &json!([
            {"op": "test", "path": "/metadata/finalizers/1", "value": "edgeplatform.io/restore-access-list"},
            {"op": "remove", "path": "/metadata/finalizers/1"}
        ])
    );
}

#[tokio::test]
async fn a_cached_copy_of_an_object_already_released_restores_nothing() {
    let status = json!({"restorePoint": {"configurationId": 9101, "isEnabled": false, "action": 2}});
    let metadata =
        json!({"deletionTimestamp": "2026-11-20T12:00:00Z", "finalizers": ["edgeplatform.io/restore-access-list"]});
    let cached = access_list(metadata, status);
    let h = harness(None, document()).await;
    assert!(
        reconcile(object::<AccessListConfig>(&cached), h.reconciler())
            .await
            .is_ok()
    );
    assert_eq!(h.log.count("platform"), 0, "{:?}", h.log.calls());
    assert_eq!(h.log.count("kube PATCH"), 0, "{:?}", h.log.calls());
}

#[tokio::test]
async fn paused_objects_get_one_status_write_and_no_platform_call() {
    let value = access_list(json!({"annotations": {"edgeplatform.io/paused": "true"}}), Value::Null);
    let h = harness(Some(&value), document()).await;
    assert!(
        reconcile(object::<AccessListConfig>(&value), h.reconciler())
            .await
            .is_ok()
    );
    assert_eq!(h.log.count("platform"), 0, "{:?}", h.log.calls());
    assert_eq!(h.log.count("kube PATCH"), 1);
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let conditions: Vec<(&str, &str, &str)> = bodies[0].1["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            let member = |name: &str| c[name].as_str().unwrap_or_default();
            (member("type"), member("status"), member("reason"))
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("Ready", "False", "Paused"),
            ("Stalled", "True", "Paused"),
            ("Synced", "False", "Paused")
        ],
        "a paused object that never applied its spec waits for a person"
    );
    assert_eq!(bodies[0].1["status"]["observedGeneration"], json!(1));
}

fn certificate(hostname: &str, secret: Option<&str>) -> Value {
    let mut spec = json!({"hostname": hostname});
    if let Some(secret) = secret {
        spec["accessKeySecretRef"] = json!({"name": secret, "key": "accessKey"});
    }
    json!({
        "apiVersion": "edgeplatform.io/v1alpha1", "kind": "PullZoneCertificate",
        "metadata": {"name": "shop", "namespace": "team", "generation": 1, "uid": "u2"},
        "spec": spec,
    })
}

/// The condition of `type_` in a status as written.
fn condition<'a>(status: &'a Value, type_: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .unwrap_or_else(|| panic!("{type_}: {status}"))
}

#[tokio::test]
async fn a_certificate_is_completed_then_reported_once_with_an_event() {
    let value = certificate("shop.example.com", None);
    let h = harness(Some(&value), document()).await;
    assert!(
        reconcile(object::<PullZoneCertificate>(&value), h.reconciler())
            .await
            .is_ok()
    );
    let calls = h.log.calls();
    let kinds: Vec<&str> = calls
        .iter()
        .map(|c| c.split_whitespace().take(2).last().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["complete_certificate", "PATCH", "POST"], "{calls:?}");
}

#[tokio::test]
async fn two_certificates_of_one_hostname_in_one_namespace_make_one_completion() {
    let first = certificate("shop.example.com", None);
    let mut second = certificate("Shop.Example.COM.", None);
    second["metadata"]["name"] = json!("shop-again");
    second["metadata"]["uid"] = json!("u4");
    let h = harness(Some(&first), document()).await;
    for value in [&first, &second] {
        let action = reconcile(object::<PullZoneCertificate>(value), h.reconciler()).await;
        assert!(action.is_ok(), "{action:?}");
    }
    let calls = h.log.calls();
    assert_eq!(h.log.count("platform complete_certificate"), 1, "{calls:?}");
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let held = bodies
        .iter()
        .find(|(call, _)| call.ends_with("/namespaces/team/pullzonecertificates/shop-again/status"))
        .map(|(_, body)| &body["status"])
        .unwrap_or_else(|| panic!("the second object's status: {calls:?}"));
    let ready = condition(held, "Ready");
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("Progressing"))
    );
    let message = ready["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("one completion of Shop.Example.COM. per backoff step; next attempt at "),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_secret_is_one_outcome_for_every_kind() {
    let app_watch = json!({
        "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
        "metadata": {"name": "shop", "namespace": "team", "generation": 1, "uid": "u3"},
        "spec": {"appId": "app-shop", "accessKeySecretRef": {"name": "gone", "key": "accessKey"}},
    });
    let mut list = access_list(json!({}), Value::Null);
    list["spec"]["accessKeySecretRef"] = json!({"name": "gone", "key": "accessKey"});
    let cert = certificate("shop.example.com", Some("gone"));
    for value in [list, cert, app_watch] {
        let h = harness(Some(&value), document()).await;
        let kind = value["kind"].as_str().unwrap_or_default().to_string();
        let failed = match kind.as_str() {
            "AccessListConfig" => reconcile(object::<AccessListConfig>(&value), h.reconciler())
                .await
                .is_err(),
            "PullZoneCertificate" => reconcile(object::<PullZoneCertificate>(&value), h.reconciler())
                .await
                .is_err(),
            _ => reconcile(object::<ContainerAppWatch>(&value), h.reconciler())
                .await
                .is_err(),
        };
        assert!(failed, "{kind}");
        assert_eq!(h.log.count("platform"), 0, "{kind}");
        let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let status = &bodies
            .iter()
            .find(|(c, _)| c.ends_with("/status"))
            .expect("a status write")
            .1["status"];
        let synced = condition(status, "Synced");
        assert_eq!(
            (synced["status"].as_str(), synced["reason"].as_str()),
            (Some("False"), Some("CredentialsUnavailable")),
            "{kind}"
        );
        assert!(
            synced["message"]
                .as_str()
                .unwrap_or_default()
                .contains("Secret team/gone: not found"),
            "{kind}"
        );
        let event = bodies
            .iter()
            .find(|(c, _)| c.contains("/events"))
            .expect("a Warning Event")
            .1
            .clone();
        assert_eq!(
            (event["type"].as_str(), event["reason"].as_str()),
            (Some("Warning"), Some("CredentialsUnavailable"))
        );
    }
}

#[tokio::test]
async fn an_app_watch_reads_then_writes_status_once() {
    let value = json!({
        "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
        "metadata": {"name": "shop", "namespace": "team", "generation": 1, "uid": "u4"},
        "spec": {"appId": "app-shop", "shieldZoneId": 1001, "rateLimits": {"enabled": true}},
    });
    let h = harness(Some(&value), document()).await;
    assert!(
        reconcile(object::<ContainerAppWatch>(&value), h.reconciler())
            .await
            .is_ok()
    );
    let calls = h.log.calls();
    assert_eq!(
        calls
            .iter()
            .map(|c| c.split_whitespace().nth(1).unwrap_or_default())
            .collect::<Vec<_>>(),
        ["get_app", "list_rate_limits", "PATCH"],
        "{calls:?}"
    );
}

/// The test-only kind `Greeting` joined with its one registry line: the registry lists
/// it with its CRD and flags, and the driver reconciles it like any kind, paused or not.
#[tokio::test]
async fn a_kind_registered_with_one_line_is_reconciled_by_the_driver_like_any_other() {
    use crate::controller::kinds::greeting::Greeting;
    use crate::controller::kinds::{Kind, KindSettings};

    let kind = Kind::of("Greeting").expect("registered by its one line");
    assert_eq!(kind.crd().spec.names.plural, "greetings");
    assert_eq!(kind.api_resource().group, "edgeplatform.io");
    let flags = <KindSettings as clap::Args>::augment_args(clap::Command::new("edge-operator"));
    let parsed = <KindSettings as clap::FromArgMatches>::from_arg_matches(&flags.get_matches_from(["edge-operator"]));
    assert!(parsed.is_ok_and(|settings| settings.get::<Greeting>().is_some()));

    let greeting = |annotations: Value| {
        json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "Greeting",
            "metadata": {"name": "hello", "namespace": "team", "generation": 2, "uid": "u9", "annotations": annotations},
            "spec": {"message": "hello", "shieldZoneId": 1001},
        })
    };
    let value = greeting(json!({}));
    let h = harness(Some(&value), document()).await;
    let action = reconcile(object::<Greeting>(&value), h.reconciler()).await;
    assert!(action.is_ok(), "{action:?}");
    assert_eq!(h.log.count("platform list_access_lists"), 1, "{:?}", h.log.calls());
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let status_path = "kube PATCH /apis/edgeplatform.io/v1alpha1/namespaces/team/greetings/hello/status";
    let status = &bodies
        .iter()
        .find(|(call, _)| call == status_path)
        .unwrap_or_else(|| panic!("a status write: {:?}", h.log.calls()))
        .1["status"];
    let ready = condition(status, "Ready");
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&json!("True"), &json!("Greeted"))
    );
    assert!(
        ready["message"]
            .as_str()
            .is_some_and(|m| m.contains("access lists of Shield Zone 1001"))
    );
    assert_eq!(status["observedGeneration"], json!(2));
    let event = bodies
        .iter()
        .find(|(call, _)| call.contains("/events"))
        .expect("an Event");
    assert_eq!(event.1["reason"], "Greeted");

    let paused = greeting(json!({"edgeplatform.io/paused": "true"}));
    let h = harness(Some(&paused), document()).await;
    assert!(reconcile(object::<Greeting>(&paused), h.reconciler()).await.is_ok());
    assert_eq!(h.log.count("platform"), 0, "a paused object reaches no platform");
    let bodies = h.bodies.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(condition(&bodies[0].1["status"], "Synced")["reason"], "Paused");
}
