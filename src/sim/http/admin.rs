//! The admin API under `/_sim`: state, seeding, clock, faults and the request journal.
//! It is open or guarded by a token ([`AdminAccess`]), and is neither journaled nor
//! subject to faults.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, patch, post, put};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::respond::{bad_request, empty, json, off_the_runtime, parse_json, problem};
use crate::api::SecretFile;
use crate::api::models::logging::LogEntry;
use crate::sim::always_sent;
use crate::sim::document::{SimAccessList, SimDocument, merge_patch};
use crate::sim::emulator::{Fault, MAX_FAULTS, Sim};
use crate::sim::events::EventInput;
use crate::sim::traffic::{self, ListTraffic, MAX_REQUESTS};
use crate::sim::world::{MAX_EVENTS_PER_ZONE, MAX_LOGS_PER_PULL_ZONE};

/// Who may use the admin API.
#[derive(Debug)]
pub enum AdminAccess {
    /// Every client that reaches the emulator (local runs and tests).
    Open,
    /// Clients presenting the token in the file, as `Authorization: Bearer <token>` or,
    /// through a proxy that keeps `Authorization` for itself (the Kubernetes apiserver's
    /// Service proxy), as [`ADMIN_TOKEN_HEADER`].
    Token(SecretFile),
}

/// The header that carries the admin token where `Authorization` cannot.
pub const ADMIN_TOKEN_HEADER: &str = "X-Edge-Sim-Token";

/// The token a request presents, if any.
fn presented_token(headers: &HeaderMap) -> Option<&str> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    bearer.or_else(|| headers.get(ADMIN_TOKEN_HEADER).and_then(|v| v.to_str().ok()))
}

/// 401 unless the request presents the admin token (compared in constant time).
async fn require_admin_token(State(access): State<Arc<AdminAccess>>, request: Request, next: Next) -> Response {
    let AdminAccess::Token(file) = access.as_ref() else {
        return next.run(request).await;
    };
    let expected = match file.current() {
        Ok(expected) => expected,
        Err(error) => {
            tracing::error!(%error, "the admin token cannot be read; refusing admin requests");
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable",
                "the admin token cannot be read",
                None,
            );
        }
    };
    let presented = presented_token(request.headers());
    let accepted = presented.is_some_and(|token| {
        subtle::ConstantTimeEq::ct_eq(token.trim().as_bytes(), expected.expose().as_bytes()).into()
    });
    if accepted {
        return next.run(request).await;
    }
    let detail = match presented {
        Some(_) => "the admin token is not valid",
        None => "the admin API needs a token: `Authorization: Bearer <token>` or `X-Edge-Sim-Token: <token>`",
    };
    let mut response = problem(StatusCode::UNAUTHORIZED, "Unauthorized", detail, None);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"edge-sim admin\""),
    );
    response
}

pub(crate) fn router(access: Arc<AdminAccess>) -> Router<Arc<Sim>> {
    Router::new()
        .route("/state", get(get_state).put(put_state))
        .route("/reset", post(reset))
        .route("/shield-zones/{id}/events", post(insert_events))
        .route("/shield-zones/{id}/access-list-traffic", post(insert_traffic))
        .route(
            "/shield-zones/{id}/access-lists/{configuration_id}",
            patch(patch_access_list),
        )
        .route("/pullzones/{id}/logs", post(insert_logs))
        .route("/pullzones/{id}/hostnames/{hostname}", patch(patch_hostname))
        .route("/apps/{app_id}", patch(patch_app))
        .route("/clock", put(set_clock).delete(real_clock).get(get_clock))
        .route("/faults", post(add_fault).delete(clear_faults).get(list_faults))
        .route("/requests", get(journal).delete(clear_journal))
        .layer(axum::middleware::from_fn_with_state(access, require_admin_token))
}

fn not_found(what: String) -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Not Found",
        format!("{what} was not found"),
        None,
    )
}

/// The current document without its credentials: access keys and the JWT secret are
/// never answered (a PUT must carry them).
async fn get_state(State(sim): State<Arc<Sim>>) -> Response {
    let mut document = sim.document();
    document.access_keys = document.access_keys.iter().map(|_| REDACTED.to_string()).collect();
    for account in &mut document.accounts {
        account.access_keys = account.access_keys.iter().map(|_| REDACTED.to_string()).collect();
    }
    document.jwt_secret = document.jwt_secret.map(|_| REDACTED.to_string());
    json(StatusCode::OK, &document)
}

/// What the state answer shows in place of a credential.
pub(crate) const REDACTED: &str = "<redacted>";

async fn put_state(State(sim): State<Arc<Sim>>, body: Bytes) -> Response {
    match SimDocument::from_json(&body) {
        Ok(document) => {
            sim.replace(document);
            empty(StatusCode::NO_CONTENT)
        }
        Err(error) => bad_request(error.to_string(), None),
    }
}

async fn reset(State(sim): State<Arc<Sim>>) -> Response {
    sim.replace(SimDocument::default());
    sim.clear_faults();
    sim.clear_journal();
    empty(StatusCode::NO_CONTENT)
}

fn inserted(n: usize) -> Response {
    json(StatusCode::OK, &serde_json::json!({ "inserted": n }))
}

/// Parses a JSON array, naming the bad index and member as `{what}[i].member`.
fn parse_array<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<Vec<T>, Response> {
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let member = match super::respond::member_at_fault(&e.path().to_string(), &e.inner().to_string()) {
            root if root == "$" => what.to_string(),
            member => format!("{what}{member}"),
        };
        bad_request(format!("{member}: {}", e.inner()), Some(&member))
    })
}

async fn insert_events(State(sim): State<Arc<Sim>>, Path(id): Path<i64>, body: Bytes) -> Response {
    let events: Vec<EventInput> = match parse_array(&body, "events") {
        Ok(events) => events,
        Err(response) => return response,
    };
    off_the_runtime(move || insert_into_zone(&sim, id, |_| Ok(events))).await
}

/// Requests access lists of the zone act on: the events they record (see
/// [`traffic`](crate::sim::traffic)).
async fn insert_traffic(State(sim): State<Arc<Sim>>, Path(id): Path<i64>, body: Bytes) -> Response {
    let traffic: Vec<ListTraffic> = match parse_array(&body, "traffic") {
        Ok(traffic) => traffic,
        Err(response) => return response,
    };
    let requested = traffic.iter().fold(0u64, |sum, t| sum.saturating_add(t.count));
    if requested > MAX_REQUESTS {
        return bad_request(
            format!("traffic: at most {MAX_REQUESTS} requests per call ({requested} sent)"),
            Some("traffic"),
        );
    }
    off_the_runtime(move || {
        let now_ms = sim.clock.now_ms();
        insert_into_zone(&sim, id, |lists| {
            traffic::events(lists, &traffic, now_ms).map(Iterator::collect)
        })
    })
    .await
}

/// Adds to the events of Shield Zone `id` those `events_for` makes from its access
/// lists, within the zone's bound.
fn insert_into_zone(
    sim: &Sim,
    id: i64,
    events_for: impl FnOnce(&[SimAccessList]) -> Result<Vec<EventInput>, String>,
) -> Response {
    let mut world = sim.world_mut();
    let Some(zone) = world.shield_zone(id) else {
        return not_found(format!("Shield Zone {id}"));
    };
    let events = match events_for(&zone.access_lists) {
        Ok(events) => events,
        Err(message) => return bad_request(message, None),
    };
    let n = events.len();
    let store = world.shield_zone_events_mut(id);
    if store.len() + n > MAX_EVENTS_PER_ZONE {
        return bad_request(
            format!(
                "a Shield Zone holds at most {MAX_EVENTS_PER_ZONE} events ({} held, {n} sent)",
                store.len()
            ),
            None,
        );
    }
    store.insert(events);
    inserted(n)
}

async fn insert_logs(State(sim): State<Arc<Sim>>, Path(id): Path<i64>, body: Bytes) -> Response {
    let mut entries: Vec<LogEntry> = match parse_array(&body, "logs") {
        Ok(entries) => entries,
        Err(response) => return response,
    };
    for entry in &mut entries {
        entry.pull_zone_id = id;
    }
    off_the_runtime(move || {
        let n = entries.len();
        let oldest = sim.clock.now() - crate::sim::logs::RETENTION;
        let mut world = sim.world_mut();
        if world.pull_zone(id).is_none() {
            return not_found(format!("Pull Zone {id}"));
        }
        let logs = world.pull_zone_logs_mut(id);
        logs.expire(oldest);
        if logs.len() + n > MAX_LOGS_PER_PULL_ZONE {
            return bad_request(
                format!(
                    "a Pull Zone holds at most {MAX_LOGS_PER_PULL_ZONE} log entries of the retention ({} held, {n} sent)",
                    logs.len()
                ),
                None,
            );
        }
        logs.insert(entries);
        inserted(n)
    })
    .await
}

/// Applies the merge patch in `body` to `target` in place, keeping it a valid `T`,
/// and answers with the result.
fn apply_merge_patch<T: serde::Serialize + serde::de::DeserializeOwned>(target: &mut T, body: &[u8]) -> Response {
    let patch: serde_json::Value = match parse_json(body) {
        Ok(patch) => patch,
        Err(response) => return response,
    };
    let mut raw = match serde_json::to_value(&*target) {
        Ok(raw) => raw,
        Err(error) => return bad_request(error.to_string(), None),
    };
    merge_patch(&mut raw, &patch);
    match serde_json::from_value(raw) {
        Ok(updated) => {
            *target = updated;
            json(StatusCode::OK, target)
        }
        Err(error) => bad_request(format!("the patched object is invalid: {error}"), None),
    }
}

async fn patch_access_list(
    State(sim): State<Arc<Sim>>,
    Path((id, configuration_id)): Path<(i64, i64)>,
    body: Bytes,
) -> Response {
    let patch: serde_json::Value = match parse_json(&body) {
        Ok(patch) => patch,
        Err(response) => return response,
    };
    let mut world = sim.world_mut();
    let Some(zone) = world.shield_zone_mut(id) else {
        return not_found(format!("Shield Zone {id}"));
    };
    let Some(list) = zone
        .access_lists
        .iter_mut()
        .find(|l| l.configuration_id() == Some(configuration_id))
    else {
        return not_found(format!("access list configuration {configuration_id}"));
    };
    let mut updated = match serde_json::to_value(&*list) {
        Ok(updated) => updated,
        Err(error) => return bad_request(error.to_string(), None),
    };
    merge_patch(&mut updated, &patch);
    let updated: SimAccessList = match serde_json::from_value(updated) {
        Ok(updated) => updated,
        Err(error) => return bad_request(format!("the patched list is invalid: {error}"), None),
    };
    if updated.configuration_id() != Some(configuration_id) {
        return bad_request(
            "configurationId: a list's configuration id cannot be changed",
            Some("configurationId"),
        );
    }
    if let Err(error) = updated.check() {
        return bad_request(error.to_string(), None);
    }
    *list = updated;
    json(StatusCode::OK, list)
}

async fn patch_hostname(
    State(sim): State<Arc<Sim>>,
    Path((id, hostname)): Path<(i64, String)>,
    body: Bytes,
) -> Response {
    let mut world = sim.world_mut();
    let Some(zone) = world.pull_zone_mut(id) else {
        return not_found(format!("Pull Zone {id}"));
    };
    match zone
        .hostnames
        .iter_mut()
        .find(|h| h.hostname.eq_ignore_ascii_case(&hostname))
    {
        Some(entry) => apply_merge_patch(entry, &body),
        None => not_found(format!("hostname {hostname} of Pull Zone {id}")),
    }
}

async fn patch_app(State(sim): State<Arc<Sim>>, Path(app_id): Path<String>, body: Bytes) -> Response {
    let patch: serde_json::Value = match parse_json(&body) {
        Ok(patch) => patch,
        Err(response) => return response,
    };
    let mut world = sim.world_mut();
    let Some(app) = world.app_mut(&app_id) else {
        return not_found(format!("application {app_id}"));
    };
    let mut updated = app.clone();
    merge_patch(&mut updated, &patch);
    if updated.get("id").and_then(|v| v.as_str()) != Some(app_id.as_str()) {
        return bad_request("id: an application's id cannot be changed", Some("id"));
    }
    // Served as patched, off the platform's form too (tests of a client's lenience);
    // only what the platform always sends is filled again.
    always_sent::fill_app(&mut updated);
    *app = updated;
    json(StatusCode::OK, app)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockBody {
    now: DateTime<Utc>,
}

async fn set_clock(State(sim): State<Arc<Sim>>, body: Bytes) -> Response {
    match parse_json::<ClockBody>(&body) {
        Ok(clock) => {
            sim.set_clock(Some(clock.now));
            get_clock(State(sim)).await
        }
        Err(response) => response,
    }
}

async fn real_clock(State(sim): State<Arc<Sim>>) -> Response {
    sim.set_clock(None);
    get_clock(State(sim)).await
}

async fn get_clock(State(sim): State<Arc<Sim>>) -> Response {
    json(
        StatusCode::OK,
        &serde_json::json!({ "now": sim.clock.now(), "fixed": sim.clock.fixed().is_some() }),
    )
}

async fn add_fault(State(sim): State<Arc<Sim>>, body: Bytes) -> Response {
    let fault: Fault = match parse_json(&body) {
        Ok(fault) => fault,
        Err(response) => return response,
    };
    if let Some(status) = fault.status.filter(|s| !(100..=599).contains(s)) {
        return bad_request(format!("status: {status} is not an HTTP status"), Some("status"));
    }
    if fault.status.is_none() && fault.delay_ms.is_none() {
        return bad_request("a fault needs a status, a delayMs, or both", Some("status"));
    }
    match sim.add_fault(fault) {
        Ok(()) => empty(StatusCode::CREATED),
        Err(_) => bad_request(
            format!("{MAX_FAULTS} faults are pending already; DELETE /_sim/faults first"),
            None,
        ),
    }
}

async fn list_faults(State(sim): State<Arc<Sim>>) -> Response {
    json(StatusCode::OK, &sim.faults())
}

async fn clear_faults(State(sim): State<Arc<Sim>>) -> Response {
    sim.clear_faults();
    empty(StatusCode::NO_CONTENT)
}

async fn journal(State(sim): State<Arc<Sim>>) -> Response {
    json(StatusCode::OK, &sim.journal())
}

async fn clear_journal(State(sim): State<Arc<Sim>>) -> Response {
    sim.clear_journal();
    empty(StatusCode::NO_CONTENT)
}
