//! Parity: the recorded requests replayed against edge-sim loaded with the recording's
//! fixtures and data, each answer compared with the recorded one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, header};
use serde_json::Value;
use tower::ServiceExt;

use super::diff::{Difference, UNSEEN_COUNTS, VOLATILE, differences, shows_unseen_rows, type_differences};
use super::exchange::{
    Exchange, FIXTURES_FILE, RECORDING_ACCESS_KEY, RecordedData, RecordingError, SentCredentials, read_data,
    read_exchanges, recorded_body,
};
use super::rebuild::{SummaryEvents, rebuild};
use crate::api::Operation;
use crate::sim::document::SimDocument;
use crate::sim::emulator::Sim;
use crate::sim::http::admin::AdminAccess;
use crate::sim::http::query::QueryParams;

/// The `AccessKey` sent for requests recorded with a key no account has.
const UNKNOWN_KEY: &str = "no-account-has-this-key";
/// The largest answer edge-sim gives in a replay.
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// The most distinct differences an operation's report lists.
const MAX_LISTED: usize = 20;

/// How the answers of one operation compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationParity {
    pub operation: String,
    pub exchanges: usize,
    pub identical: usize,
    /// Grouped searches compared by type only: the recording did not read every event
    /// they summarised.
    pub by_type: usize,
    /// Distinct differences, at most `MAX_LISTED`.
    pub differences: BTreeSet<String>,
}

/// The outcome of a replay.
#[derive(Debug, Clone)]
pub struct ParityReport {
    pub operations: Vec<OperationParity>,
    pub elapsed: Duration,
}

impl ParityReport {
    pub fn exchanges(&self) -> usize {
        self.operations.iter().map(|o| o.exchanges).sum()
    }

    pub fn differs(&self) -> bool {
        self.operations.iter().any(|o| o.identical < o.exchanges)
    }

    /// The report for a person at a terminal.
    pub fn text(&self) -> String {
        let mut out = format!(
            "replayed {} exchanges of {} operations in {} ms\nvolatile members (values not compared): {}\n\
             counts of rows (values not compared where the recorded answer shows rows it does not hold): {}\n",
            self.exchanges(),
            self.operations.len(),
            self.elapsed.as_millis(),
            VOLATILE.join(", "),
            UNSEEN_COUNTS.join(", ")
        );
        for operation in &self.operations {
            let verdict = if operation.identical == operation.exchanges {
                "identical".to_string()
            } else {
                format!(
                    "{} of {} differ",
                    operation.exchanges - operation.identical,
                    operation.exchanges
                )
            };
            out.push_str(&format!(
                "{:<72} {verdict}{}\n",
                operation.operation,
                operation.by_type_note()
            ));
            for difference in &operation.differences {
                out.push_str(&format!("    {difference}\n"));
            }
        }
        out
    }

    /// The report as a Markdown table (no timing, so it is the same on every run).
    pub fn markdown(&self) -> String {
        let mut out = String::from("| operation | exchanges | identical | differences |\n|---|---|---|---|\n");
        for operation in &self.operations {
            let listed: Vec<String> = operation.differences.iter().map(|d| format!("`{d}`")).collect();
            out.push_str(&format!(
                "| `{}` | {} | {}{} | {} |\n",
                operation.operation,
                operation.exchanges,
                operation.identical,
                operation.by_type_note(),
                listed.join("<br>")
            ));
        }
        let listed = |members: &[&str]| members.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
        out.push_str(&format!(
            "\nVolatile members (compared by type, not value): {}. Counts of rows (compared by type where \
             the recorded answer shows rows it does not hold): {}.\n",
            listed(VOLATILE),
            listed(UNSEEN_COUNTS)
        ));
        out
    }
}

impl OperationParity {
    fn by_type_note(&self) -> String {
        if self.by_type == 0 {
            return String::new();
        }
        format!(
            " ({} compared by type only: the recording did not read every event they summarised)",
            self.by_type
        )
    }
}

/// Replays the recording in `dir` against edge-sim loaded with its fixtures and data.
pub async fn replay(dir: &Path) -> Result<ParityReport, RecordingError> {
    let exchanges = read_exchanges(dir)?;
    let started = Instant::now();
    let sim = offline_account(dir, &exchanges)?;
    let router = crate::sim::http::router(&sim, AdminAccess::Open);
    let mut by_operation: BTreeMap<String, OperationParity> = BTreeMap::new();
    for (index, exchange) in exchanges.iter().enumerate() {
        sim.clock.set(Some(exchange.time));
        let found = replay_one(&router, exchange)
            .await
            .map_err(|e| RecordingError::invalid(&super::exchange::exchange_path(dir, index + 1), e))?;
        let label = label_of(exchange);
        let parity = by_operation.entry(label.clone()).or_insert_with(|| OperationParity {
            operation: label,
            exchanges: 0,
            identical: 0,
            by_type: 0,
            differences: BTreeSet::new(),
        });
        parity.exchanges += 1;
        if exchange.summarised.is_some_and(|summarised| !summarised.is_complete()) {
            parity.by_type += 1;
        }
        if found.is_empty() {
            parity.identical += 1;
        }
        for difference in found {
            if parity.differences.len() < MAX_LISTED {
                parity.differences.insert(difference.to_string());
            }
        }
    }
    Ok(ParityReport {
        operations: by_operation.into_values().collect(),
        elapsed: started.elapsed(),
    })
}

/// edge-sim holding what the recording in `dir` holds: its fixtures and data, or,
/// for a recording written by hand that has no fixtures, what its answers show.
fn offline_account(dir: &Path, exchanges: &[Exchange]) -> Result<Arc<Sim>, RecordingError> {
    let fixtures = dir.join(FIXTURES_FILE);
    let (document, data) = match std::fs::read_to_string(&fixtures) {
        Ok(text) => (
            SimDocument::from_yaml(&text).map_err(|e| RecordingError::invalid(&fixtures, e))?,
            read_data(dir)?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (document, data) = rebuild(exchanges, &SummaryEvents::default());
            let checked = serde_json::to_vec(&document).map_err(|e| RecordingError::invalid(dir, e))?;
            (
                SimDocument::from_json(&checked).map_err(|e| RecordingError::invalid(dir, e))?,
                data,
            )
        }
        Err(e) => return Err(RecordingError::io(&fixtures)(e)),
    };
    let sim = Sim::new(document);
    load(&sim, data);
    Ok(sim)
}

fn load(sim: &Sim, data: RecordedData) {
    let mut world = sim.world_mut();
    for (zone, events) in data.events {
        world.shield_zone_events_mut(zone).insert(events);
    }
    for (pull_zone, entries) in data.logs {
        world.pull_zone_logs_mut(pull_zone).insert(entries);
    }
}

/// The operation of an exchange, with the credentials it was sent with when not the
/// account's key, and whether it sent optional parameters empty.
fn label_of(exchange: &Exchange) -> String {
    let request = &exchange.request;
    let operation = request
        .method
        .parse()
        .ok()
        .and_then(|method| Operation::of(&method, &request.path))
        .map_or_else(
            || format!("{} {}", request.method, request.path),
            |o| format!("{} {}", o.method(), o.template()),
        );
    let operation = if QueryParams::sends_empty(request.query.as_deref()) {
        format!("{operation} (optional parameters sent empty)")
    } else {
        operation
    };
    match request.credentials {
        SentCredentials::AccountKey => operation,
        SentCredentials::None => format!("{operation} (no credentials)"),
        SentCredentials::UnknownKey => format!("{operation} (unknown key)"),
    }
}

async fn replay_one(router: &axum::Router, exchange: &Exchange) -> Result<Vec<Difference>, String> {
    let recorded = &exchange.request;
    let uri = match &recorded.query {
        Some(query) => format!("{}?{query}", recorded.path),
        None => recorded.path.clone(),
    };
    let mut request = Request::builder().method(recorded.method.as_str()).uri(uri);
    if let Some(content_type) = &recorded.content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    request = match recorded.credentials {
        SentCredentials::AccountKey => request.header("AccessKey", RECORDING_ACCESS_KEY),
        SentCredentials::UnknownKey => request.header("AccessKey", UNKNOWN_KEY),
        SentCredentials::None => request,
    };
    let body = match &recorded.body {
        Some(Value::String(text)) => Body::from(text.clone()),
        Some(value) => Body::from(value.to_string()),
        None => Body::empty(),
    };
    let request = request.body(body).map_err(|e| format!("not a request: {e}"))?;
    let response = router
        .clone()
        .oneshot(request)
        .await
        .map_err(|e| format!("edge-sim failed: {e}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
        .await
        .map_err(|e| format!("edge-sim's answer cannot be read: {e}"))?;
    let (body, text) = recorded_body(&bytes);
    let answer = &exchange.response;
    let mut found = Vec::new();
    if answer.status != status {
        found.push(Difference::Value {
            path: "HTTP status".into(),
            recorded: answer.status.to_string(),
            replayed: status.to_string(),
        });
    }
    let has_body = answer.body.is_some() || answer.text.is_some();
    if has_body && media_type(answer.content_type.as_deref()) != media_type(content_type.as_deref()) {
        found.push(Difference::Value {
            path: "Content-Type".into(),
            recorded: media_type(answer.content_type.as_deref()),
            replayed: media_type(content_type.as_deref()),
        });
    }
    let summarised_in_part = exchange.summarised.is_some_and(|summarised| !summarised.is_complete());
    match (&answer.body, &body) {
        (Some(left), Some(right)) if summarised_in_part => found.extend(type_differences(left, right)),
        _ => found.extend(compare_bodies(
            answer.body.as_ref(),
            answer.text.as_deref(),
            body.as_ref(),
            text.as_deref(),
        )),
    }
    Ok(found)
}

fn media_type(content_type: Option<&str>) -> String {
    content_type
        .and_then(|value| value.split(';').next())
        .map(|essence| essence.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "none".into())
}

fn compare_bodies(
    recorded: Option<&Value>,
    recorded_text: Option<&str>,
    replayed: Option<&Value>,
    replayed_text: Option<&str>,
) -> Vec<Difference> {
    let form = |json: Option<&Value>, text: Option<&str>| match (json, text) {
        (Some(_), _) => "JSON",
        (None, Some(_)) => "text",
        (None, None) => "empty",
    };
    match (recorded, replayed, recorded_text, replayed_text) {
        (Some(left), Some(right), _, _) if shows_unseen_rows(left) => {
            differences(left, right, &[VOLATILE, UNSEEN_COUNTS].concat())
        }
        (Some(left), Some(right), _, _) => differences(left, right, VOLATILE),
        (None, None, Some(left), Some(right)) => left
            .lines()
            .zip(right.lines().chain(std::iter::repeat("")))
            .position(|(a, b)| a != b)
            .or_else(|| (left.lines().count() != right.lines().count()).then_some(left.lines().count()))
            .map(|line| Difference::Value {
                path: format!("line {}", line + 1),
                recorded: left.lines().nth(line).unwrap_or_default().to_string(),
                replayed: right.lines().nth(line).unwrap_or_default().to_string(),
            })
            .into_iter()
            .collect(),
        _ if form(recorded, recorded_text) == form(replayed, replayed_text) => Vec::new(),
        _ => vec![Difference::Type {
            path: "$".into(),
            recorded: form(recorded, recorded_text),
            replayed: form(replayed, replayed_text),
        }],
    }
}
