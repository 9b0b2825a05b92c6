//! The mock apiserver and in-process edge-sim the driver tests run against, with the
//! one log of the calls either side sees.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::events::{Recorder, Reporter};
use serde_json::{Value, json};

use crate::api::{ClientConfig, Credentials, EdgeClient, Hooks, Operation, RequestObserver, SecretValue};
use crate::controller::framework::pipeline::kind::{Reconcilable, Reconciler};
use crate::controller::framework::services::backoff::FailureCounts;
use crate::controller::framework::services::credentials::{AccessKeys, DefaultKey, NamespaceSet, SecretIndex};
use crate::controller::framework::services::event_budget::EventBudget;
use crate::controller::framework::services::metrics::Metrics;
use crate::controller::framework::services::shared::Shared;
use crate::sim::{RunningSim, SimDocument};

const ACCESS_KEY: &str = "driver-test-key";

/// Calls in the order they happened: `kube METHOD path` and `platform operation`.
#[derive(Clone, Default)]
pub(super) struct CallLog(Arc<Mutex<Vec<String>>>);

impl CallLog {
    fn push(&self, call: String) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(call);
    }

    pub(super) fn calls(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn count(&self, prefix: &str) -> usize {
        self.calls().iter().filter(|c| c.starts_with(prefix)).count()
    }

    pub(super) fn position(&self, prefix: &str) -> usize {
        self.calls()
            .iter()
            .position(|c| c.starts_with(prefix))
            .unwrap_or_else(|| panic!("no call {prefix}: {:?}", self.calls()))
    }
}

impl RequestObserver for CallLog {
    fn record(&self, operation: Operation, status_class: &'static str, _elapsed: Duration) {
        self.push(format!("platform {} {status_class}", operation.as_str()));
    }
}

/// The bodies the mock apiserver received, by call.
pub(super) type Bodies = Arc<Mutex<Vec<(String, Value)>>>;

/// A status write (a JSON Patch that replaces `/status`, or a merge patch) as the
/// object it makes of `{}`.
fn status_written(patch: Value) -> Value {
    let mut written = json!({});
    if patch.is_object() {
        json_patch::merge(&mut written, &patch);
        return written;
    }
    // The mock keeps no object: the resourceVersion precondition is checked elsewhere.
    let patch = Value::Array(
        patch
            .as_array()
            .into_iter()
            .flatten()
            .filter(|op| op["op"] != "test")
            .cloned()
            .collect(),
    );
    let patch: json_patch::Patch = serde_json::from_value(patch).unwrap_or_else(|e| panic!("a JSON Patch: {e}"));
    json_patch::patch(&mut written, &patch).unwrap_or_else(|e| panic!("{e}"));
    written
}

/// A mock apiserver that answers every read and write of the object with `held` (404
/// when it is gone), Events with the request body, every Secret read with 404, keeps
/// the AccessListClaims written (`claims`), and logs each call.
fn mock_apiserver(log: CallLog, held: Option<Value>, bodies: Bodies, claims: Claims) -> kube::Client {
    crate::controller::framework::mock_apiserver::client(move |request, mut body| {
        let path = request.uri.path().to_string();
        let call = format!("kube {} {path}", request.method);
        log.push(call.clone());
        if path.ends_with("/status") {
            body = status_written(body);
        }
        bodies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((call, body.clone()));
        let not_found = || {
            (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
            )
        };
        if path.contains("/events") {
            (201, body)
        } else if let Some(name) = path.split("/accesslistclaims").nth(1) {
            let mut claims = claims.lock().unwrap_or_else(|e| e.into_inner());
            let name = name.trim_start_matches('/');
            match request.method.as_str() {
                "POST" if claims.contains_key(body["metadata"]["name"].as_str().unwrap_or_default()) => (
                    409,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "AlreadyExists", "code": 409}),
                ),
                "POST" | "PUT" => {
                    let name = body["metadata"]["name"].as_str().unwrap_or_default().to_string();
                    body["metadata"]["uid"] = json!(format!("claim-{name}"));
                    body["metadata"]["resourceVersion"] = json!(format!("{}", claims.len() + 1));
                    claims.insert(name, body.clone());
                    (201, body)
                }
                "PATCH" => match claims.get_mut(name) {
                    Some(claim) if claim["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"] => {
                        let version = format!(
                            "{}-patched",
                            claim["metadata"]["resourceVersion"].as_str().unwrap_or_default()
                        );
                        json_patch::merge(claim, &body);
                        claim["metadata"]["resourceVersion"] = json!(version);
                        (200, claim.clone())
                    }
                    Some(_) => (
                        409,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409}),
                    ),
                    None => not_found(),
                },
                "DELETE" => claims
                    .remove(name)
                    .map_or_else(not_found, |_| (200, json!({"kind": "Status", "status": "Success"}))),
                _ => claims.get(name).cloned().map_or_else(not_found, |claim| (200, claim)),
            }
        } else if path.contains("/secrets/") {
            not_found()
        } else {
            held.clone().map_or_else(not_found, |object| (200, object))
        }
    })
}

/// The AccessListClaims the mock apiserver holds, by name.
pub(super) type Claims = Arc<Mutex<HashMap<String, Value>>>;

pub(super) struct Harness {
    pub(super) log: CallLog,
    pub(super) bodies: Bodies,
    pub(super) claims: Claims,
    shared: Arc<Shared>,
    reconcilers: Mutex<HashMap<&'static str, Arc<dyn Any + Send + Sync>>>,
    pub(super) sim: RunningSim,
    _default_key: tempfile::NamedTempFile,
}

impl Harness {
    /// The reconciler of kind `K`, one for the harness's life. Its watch has listed (the
    /// mock apiserver's list holds just the object under test, which claims nothing
    /// another holds).
    pub(super) fn reconciler<K: Reconcilable>(&self) -> Arc<Reconciler<K>> {
        let mut reconcilers = self.reconcilers.lock().unwrap_or_else(|e| e.into_inner());
        let reconciler = reconcilers.entry(K::kind_name()).or_insert_with(|| {
            let reconciler = Reconciler::<K>::new(self.shared.clone(), defaults());
            K::on_watch(&reconciler.state, &kube::runtime::watcher::Event::InitDone);
            Arc::new(reconciler)
        });
        reconciler
            .clone()
            .downcast::<Reconciler<K>>()
            .unwrap_or_else(|_| panic!("one reconciler per kind"))
    }
}

/// A kind's settings at the defaults of its flags.
fn defaults<S: clap::Args + clap::FromArgMatches>() -> S {
    let flags = S::augment_args(clap::Command::new("edge-operator")).get_matches_from(["edge-operator"]);
    S::from_arg_matches(&flags).unwrap_or_else(|e| panic!("defaults: {e}"))
}

/// A harness whose apiserver holds `held` (nothing: the object is gone).
pub(super) async fn harness(held: Option<&Value>, document: SimDocument) -> Harness {
    let sim = crate::sim::spawn(document)
        .await
        .unwrap_or_else(|e| panic!("edge-sim: {e}"));
    let log = CallLog::default();
    let bodies = Bodies::default();
    let claims = Claims::default();
    let kube = mock_apiserver(log.clone(), held.cloned(), bodies.clone(), claims.clone());
    let config = ClientConfig::new(
        sim.base_url(),
        sim.base_url(),
        Credentials::AccessKey(SecretValue::new(ACCESS_KEY)),
    );
    let platform = EdgeClient::with_hooks(
        config,
        Hooks {
            observer: Some(Arc::new(log.clone())),
            write_gate: None,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let default_key = tempfile::NamedTempFile::new().unwrap_or_else(|e| panic!("key file: {e}"));
    std::fs::write(default_key.path(), ACCESS_KEY).unwrap_or_else(|e| panic!("key file: {e}"));
    let shared = Shared {
        kube: kube.clone(),
        access_keys: AccessKeys::new(
            kube.clone(),
            platform,
            Some(DefaultKey::file(default_key.path().to_path_buf()).unwrap_or_else(|e| panic!("{e}"))),
            SecretIndex::new(kube::runtime::reflector::store::Writer::default().as_reader()),
        )
        .with_default_key_namespaces(NamespaceSet::All)
        .with_secret_namespaces(NamespaceSet::All),
        failures: FailureCounts::default(),
        metrics: Arc::new(Metrics::default()),
        recorder: Recorder::new(kube, Reporter::from("edge-operator-test")),
        event_budget: EventBudget::new(0),
        leader: Arc::new(crate::controller::framework::services::leader::LeaderGate::sole()),
    };
    Harness {
        log,
        bodies,
        claims,
        shared: Arc::new(shared),
        reconcilers: Mutex::default(),
        sim,
        _default_key: default_key,
    }
}

pub(super) fn document() -> SimDocument {
    let text = include_str!("../../../../examples/edge-sim-fixtures.yaml");
    let mut document = SimDocument::from_yaml(text).unwrap_or_else(|e| panic!("fixtures: {e}"));
    document.access_keys = vec![ACCESS_KEY.to_string()];
    document
}

pub(super) fn object<K: serde::de::DeserializeOwned>(value: &Value) -> Arc<K> {
    Arc::new(serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("object: {e}")))
}
