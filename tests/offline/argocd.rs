//! The shipped Argo CD health checks (examples/gitops/argocd) in a Lua 5.1 interpreter,
//! on objects in every state of the status contract; and the argocd-cm patch carries
//! health.lua unchanged for each kind.

use serde_json::{Value, json};

use crate::support::cluster::repo_root;
use crate::support::gitops::{argocd_health, argocd_script};

/// Every kind the operator has.
fn kinds() -> impl Iterator<Item = &'static str> {
    edge_operator::controller::kinds::Kind::all()
        .iter()
        .map(|kind| kind.name())
}

#[test]
fn the_argocd_cm_patch_carries_health_lua_for_every_kind() {
    let script = std::fs::read_to_string(repo_root().join("examples/gitops/argocd/health.lua")).expect("health.lua");
    for kind in kinds() {
        assert_eq!(
            argocd_script(kind),
            script,
            "argocd-cm-patch.yaml is out of date for {kind}: run make crds"
        );
    }
}

fn condition(type_: &str, status: &str, reason: &str, generation: i64) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": format!("{reason} details"),
           "lastTransitionTime": "2026-11-23T10:00:00Z", "observedGeneration": generation})
}

fn object(kind: &str, generation: i64, status: Value) -> Value {
    json!({"apiVersion": "edgeplatform.io/v1alpha1", "kind": kind,
           "metadata": {"name": "x", "namespace": "edge", "generation": generation}, "spec": {}, "status": status})
}

#[test]
fn health_follows_the_status_contract() {
    let cases = [
        (
            "no status yet",
            1,
            Value::Null,
            "Progressing",
            "Waiting for the operator",
        ),
        (
            "an older generation observed",
            2,
            json!({"observedGeneration": 1, "conditions": [condition("Ready", "True", "InSync", 1)]}),
            "Progressing",
            "generation 2",
        ),
        (
            "ready for the current generation",
            2,
            json!({"observedGeneration": 2, "conditions": [condition("Ready", "True", "InSync", 2)]}),
            "Healthy",
            "InSync: InSync details",
        ),
        (
            "a Ready of an older generation",
            2,
            json!({"observedGeneration": 2, "conditions": [condition("Ready", "True", "InSync", 1)]}),
            "Progressing",
            "",
        ),
        (
            "reconciling",
            1,
            json!({"observedGeneration": 1, "conditions": [
                condition("Ready", "False", "ServerError", 1), condition("Reconciling", "True", "ServerError", 1)]}),
            "Progressing",
            "ServerError: ServerError details",
        ),
        (
            "stalled",
            1,
            json!({"observedGeneration": 1, "conditions": [
                condition("Ready", "False", "AccessListNotFound", 1), condition("Stalled", "True", "AccessListNotFound", 1)]}),
            "Degraded",
            "AccessListNotFound: AccessListNotFound details",
        ),
        (
            "paused",
            1,
            json!({"observedGeneration": 1, "conditions": [
                condition("Ready", "False", "Paused", 1), condition("Stalled", "True", "Paused", 1)]}),
            "Suspended",
            "Paused",
        ),
        (
            "app suspended",
            1,
            json!({"observedGeneration": 1, "conditions": [
                condition("Ready", "False", "Suspended", 1), condition("Stalled", "True", "Suspended", 1)]}),
            "Suspended",
            "Suspended",
        ),
    ];
    for kind in kinds() {
        for (case, generation, status, health, message) in &cases {
            let (got, said) = argocd_health(&object(kind, *generation, status.clone()));
            assert_eq!(&got, health, "{kind}, {case}: {said}");
            assert!(said.contains(message), "{kind}, {case}: {said:?} lacks {message:?}");
        }
    }
}

#[test]
fn odd_text_reaches_lua_intact() {
    let mut status = json!({"observedGeneration": 1, "conditions": [condition("Ready", "True", "InSync", 1)]});
    status["conditions"][0]["message"] = json!("quote \" backslash \\ newline \n ünïcode");
    let (health, message) = argocd_health(&object("AccessListConfig", 1, status));
    assert_eq!(health, "Healthy");
    assert_eq!(message, "InSync: quote \" backslash \\ newline \n ünïcode");
}
