//! `edgectl plan` says exactly what the operator then does: the planned PATCHes are the
//! ones the platform receives once the manifests are applied.

use std::time::Duration;

use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use kube::Api;
use serde_json::{Value, json};

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::{Manifest, stream};
use crate::support::operator::{Operator, wait_for_condition};
use crate::support::sim::{ACCESS_KEY, example_fixtures, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_is_what_the_operator_does() {
    let sim = start(example_fixtures()).await;
    let namespace = TestNamespace::create("plan");
    let ns = namespace.name.as_str();
    let manifests = stream([
        Manifest::access_list(
            ns,
            "bad-actors",
            json!({"shieldZoneId": 1001, "listName": "Known bad actors", "enabled": true, "action": "Challenge"}),
        ),
        Manifest::access_list(
            ns,
            "tor",
            json!({"shieldZoneId": 1001, "configurationId": 9102, "enabled": true, "action": "Challenge"}),
        ),
        Manifest::access_list(
            ns,
            "office",
            json!({"shieldZoneId": 1001, "configurationId": 9201, "enabled": false}),
        ),
    ]);
    let file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("a manifest file");
    std::fs::write(file.path(), &manifests).expect("manifests");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(["plan", "-o", "json", "-f"])
        .arg(file.path())
        .env("EDGE_API_URL", sim.base_url())
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .output()
        .expect("edgectl");
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let planned: Vec<Value> = serde_json::from_slice(&output.stdout).expect("JSON");
    let planned_patches: Vec<(String, Vec<Value>)> = planned
        .iter()
        .filter(|p| p["outcome"] == "change")
        .map(|p| {
            (
                p["detail"].as_str().unwrap_or_default().to_string(),
                p["changes"].as_array().cloned().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(planned_patches.len(), 2, "{planned:?}");

    let _operator = Operator::start(&namespace.name, &sim.base_url(), &[]);
    let (ok, _, stderr) = cluster().kubectl(&["apply", "-f", &file.path().display().to_string()], None);
    assert!(ok, "{stderr}");
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &namespace.name);
    for name in ["bad-actors", "tor", "office"] {
        wait_for_condition(&api, name, "Ready", Some("True"), "InSync", Duration::from_secs(60)).await;
    }
    let patched: Vec<String> = sim
        .sim
        .journal()
        .iter()
        .filter(|e| e.method == "PATCH")
        .map(|e| e.path.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    let mut planned_ids: Vec<String> = planned_patches
        .iter()
        .map(|(detail, _)| detail.split_whitespace().nth(2).unwrap_or_default().to_string())
        .collect();
    let mut patched_sorted = patched.clone();
    planned_ids.sort();
    patched_sorted.sort();
    assert_eq!(patched_sorted, planned_ids, "one PATCH per planned change, none other");
    let world = sim.sim.world();
    for (detail, changes) in &planned_patches {
        let id: i64 = detail
            .split_whitespace()
            .nth(2)
            .and_then(|id| id.parse().ok())
            .expect("configuration id");
        let list = world.document.shield_zones[0]
            .access_lists
            .iter()
            .find(|l| l.configuration_id() == Some(id))
            .expect("list");
        for change in changes {
            let now = match change["member"].as_str() {
                Some("isEnabled") => list.is_enabled().to_string(),
                _ => edge_operator::api::models::shield::AccessListAction::describe(list.action() as i32),
            };
            assert_eq!(Some(now.as_str()), change["after"].as_str(), "{detail}: {change}");
        }
    }
}
