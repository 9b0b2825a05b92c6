//! Starting `edge-sim` in-process for tests, on a free port of 127.0.0.1.

use edge_operator::sim::{RunningSim, SimDocument, spawn};

pub(crate) const ACCESS_KEY: &str = "demo-access-key";
pub(crate) const JWT_SECRET: &str = "demo-jwt-secret";
/// The fixed "now" of [`fixtures_at`].
pub(crate) const NOW: &str = "2026-11-20T12:00:00Z";

pub(crate) fn now_ms() -> i64 {
    chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("valid")
        .timestamp_millis()
}

/// The example fixtures document of `examples/`.
pub(crate) fn example_fixtures() -> SimDocument {
    let path = super::cluster::repo_root().join("examples/edge-sim-fixtures.yaml");
    let text = std::fs::read_to_string(path).expect("example fixtures");
    SimDocument::from_yaml(&text).expect("valid example fixtures")
}

/// The example fixtures with the clock fixed at [`NOW`].
pub(crate) fn fixtures_at() -> SimDocument {
    let mut document = example_fixtures();
    document.clock = Some(NOW.parse().expect("valid"));
    document
}

pub(crate) const TEAM_B_KEY: &str = "team-b-access-key";

/// The example fixtures, with zone 1002, Pull Zone 502 (static.example.com) in account
/// team-b; the rest in the default account.
pub(crate) fn two_accounts() -> SimDocument {
    let mut document = fixtures_at();
    document.accounts = vec![edge_operator::sim::document::Account {
        name: "team-b".into(),
        access_keys: vec![TEAM_B_KEY.into()],
        shield_zones: vec![1002],
        pull_zones: vec![502],
        apps: Vec::new(),
    }];
    document
}

pub(crate) async fn start(document: SimDocument) -> RunningSim {
    spawn(document).await.expect("edge-sim starts")
}

/// An HTTP client for raw requests against the emulator.
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// A client of `sim` with the example access key and no retries unless asked, in the
/// strict mode: an answer without what the platform always sends fails the call.
pub(crate) fn client_of(sim: &RunningSim, retry: edge_operator::api::RetryPolicy) -> edge_operator::api::EdgeClient {
    client_with(sim, retry, true)
}

/// The same client reading leniently, as the operator does: for answers off the
/// platform's form on purpose.
pub(crate) fn lenient_client_of(
    sim: &RunningSim,
    retry: edge_operator::api::RetryPolicy,
) -> edge_operator::api::EdgeClient {
    client_with(sim, retry, false)
}

fn client_with(
    sim: &RunningSim,
    retry: edge_operator::api::RetryPolicy,
    strict: bool,
) -> edge_operator::api::EdgeClient {
    let mut config = edge_operator::api::ClientConfig::new(
        sim.base_url(),
        sim.base_url(),
        edge_operator::api::Credentials::AccessKey(edge_operator::api::SecretValue::new(ACCESS_KEY)),
    );
    config.retry = retry;
    config.answer_check =
        strict.then_some(edge_operator::api::contract::check_answer as edge_operator::api::AnswerCheck);
    edge_operator::api::EdgeClient::new(config).expect("valid config")
}

/// Inserts security events into a Shield Zone through the admin API.
pub(crate) async fn insert_events(base: &str, zone: i64, events: &serde_json::Value) {
    let response = http()
        .post(format!("{base}/_sim/shield-zones/{zone}/events"))
        .json(events)
        .send()
        .await
        .expect("request");
    let status = response.status();
    assert!(status.is_success(), "{}", response.text().await.unwrap_or_default());
}

/// Sets an application's status through the admin API (e.g. `"failing"`).
pub(crate) async fn set_app_status(base: &str, app: &str, status: &str) {
    let response = http()
        .patch(format!("{base}/_sim/apps/{app}"))
        .json(&serde_json::json!({"status": status}))
        .send()
        .await
        .expect("request");
    let code = response.status();
    assert!(code.is_success(), "{}", response.text().await.unwrap_or_default());
}

/// An HS256 bearer token of the logging API, signed with `secret`.
pub(crate) fn bearer_token(secret: &str, expires: chrono::DateTime<chrono::Utc>) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &serde_json::json!({"sub": "user-1", "exp": expires.timestamp()}),
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("token")
}

/// Programs a fault on an in-process emulator (the admin API's `POST /_sim/faults` body).
pub(crate) fn add_fault(sim: &RunningSim, fault: serde_json::Value) {
    let fault = serde_json::from_value(fault).expect("a valid fault");
    sim.sim.add_fault(fault).expect("room for the fault");
}

/// Journaled requests with `method` whose path contains `path_part`.
pub(crate) fn journal_count(sim: &RunningSim, method: &str, path_part: &str) -> usize {
    sim.sim
        .journal()
        .iter()
        .filter(|e| e.method == method && e.path.contains(path_part))
        .count()
}

/// Waits until the emulator has answered `more` requests with `method` whose path
/// contains `path_part` beyond the `since` it had already answered (e.g. the reads of
/// resyncs, which prove the operator looked again).
pub(crate) async fn await_journal(sim: &RunningSim, method: &str, path_part: &str, since: usize, more: usize) {
    super::operator::eventually(
        &format!("{more} more {method} {path_part} in the journal"),
        super::operator::WAIT,
        || async { (journal_count(sim, method, path_part) >= since + more).then_some(()) },
    )
    .await;
}

/// `(isEnabled, action)` of a configuration of the first Shield Zone, as the emulator holds it.
pub(crate) fn platform_list(sim: &RunningSim, configuration: i64) -> Option<(bool, i64)> {
    let world = sim.sim.world();
    let list = world.document.shield_zones[0]
        .access_lists
        .iter()
        .find(|l| l.configuration_id() == Some(configuration))?;
    Some((list.is_enabled(), list.action()))
}
