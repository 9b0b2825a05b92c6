//! The operator over https to edge-sim with a private CA: trusted through --ca-file,
//! and an untrusted certificate named in status.

use std::io::Write;
use std::time::Duration;

use crate::support::cluster::{TestNamespace, cluster};
use crate::support::manifest::Manifest;
use crate::support::operator::{HasConditions, Operator, wait_for_condition};
use crate::support::sim::example_fixtures;
use crate::support::tls::{PrivateCa, https_sim};
use edge_operator::controller::kinds::access_list::resource::AccessListConfig;
use kube::Api;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn apply_by_id(namespace: &str) {
    cluster().apply(Manifest::access_list(
        namespace,
        "by-id",
        json!({"shieldZoneId": 1001, "configurationId": 9101, "enabled": true, "action": "Challenge"}),
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_given_with_ca_file_is_trusted_and_an_untrusted_one_is_named() {
    let ca = PrivateCa::new("edge test CA");
    let sim = https_sim(example_fixtures(), &ca.server(&["127.0.0.1"])).await;
    let mut ca_file = tempfile::NamedTempFile::new().expect("CA file");
    ca_file.write_all(ca.pem.as_bytes()).expect("written");
    let ca_path = ca_file.path().to_str().expect("utf-8 path");

    let trusting = TestNamespace::create("tls");
    let _operator = Operator::start(&trusting.name, &sim.base_url(), &["--ca-file", ca_path]);
    apply_by_id(&trusting.name);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &trusting.name);
    wait_for_condition(&api, "by-id", "Ready", Some("True"), "InSync", WAIT).await;

    let untrusting = TestNamespace::create("tls-untrusted");
    let _other = Operator::start(&untrusting.name, &sim.base_url(), &[]);
    apply_by_id(&untrusting.name);
    let api: Api<AccessListConfig> = Api::namespaced(cluster().client().await, &untrusting.name);
    let refused = wait_for_condition(&api, "by-id", "Stalled", Some("True"), "TlsError", WAIT).await;
    let message = refused.condition("Stalled").map(|c| c.message).unwrap_or_default();
    assert!(
        message.contains(&sim.addr.to_string()) && message.contains("not signed by a trusted CA"),
        "{message}"
    );
}
