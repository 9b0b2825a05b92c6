//! The fixtures of a recorded account, rebuilt from its answers: the first successful
//! answer about a resource says what it held when the recording started.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use super::exchange::{Exchange, RECORDING_ACCESS_KEY, RecordedData, SentCredentials};
use crate::api::Operation;
use crate::api::models::logging::{LogEntry, parse_v1_file};
use crate::api::models::shield::{Dimension, EventRow};
use crate::sim::document::{PullZone, ShieldZone, SimAccessList, SimDocument};
use crate::sim::events::EventInput;
use crate::sim::http::query::QueryParams;

/// The most events a recording reads to replay its grouped searches.
pub(crate) const MAX_SUMMARY_EVENTS: usize = 100_000;

/// The events the recorder read so that grouped searches replay (the flat pages of
/// their windows): each event once, at most [`MAX_SUMMARY_EVENTS`].
#[derive(Debug, Default)]
pub(crate) struct SummaryEvents {
    by_zone: BTreeMap<i64, Vec<EventInput>>,
    held: HashSet<(i64, String)>,
}

impl SummaryEvents {
    /// Keeps the events of `rows` not held yet, up to the bound. Returns how many of
    /// `rows` are held now, and whether the bound left any out.
    pub(crate) fn add(&mut self, zone: i64, rows: &[EventRow]) -> (u64, bool) {
        let mut held = 0;
        for event in rows.iter().filter_map(event_of_row) {
            let key = (zone, event.log_id.clone().unwrap_or_default());
            if !self.held.contains(&key) {
                if self.held.len() >= MAX_SUMMARY_EVENTS {
                    return (held, true);
                }
                self.held.insert(key);
                self.by_zone.entry(zone).or_default().push(event);
            }
            held += 1;
        }
        (held, false)
    }
}

/// The fixtures document and the data that edge-sim needs to give the recorded answers
/// (with the events read for grouped searches).
pub(crate) fn rebuild(exchanges: &[Exchange], summaries: &SummaryEvents) -> (SimDocument, RecordedData) {
    let mut account = Account::default();
    for exchange in exchanges {
        let request = &exchange.request;
        let Ok(method) = request.method.parse() else {
            continue;
        };
        if request.credentials != SentCredentials::AccountKey {
            continue;
        }
        let Some(operation) = Operation::of(&method, &request.path) else {
            continue;
        };
        let response = &exchange.response;
        let body = response.body.as_ref().unwrap_or(&Value::Null);
        match (operation, response.status) {
            (Operation::ListAccessLists, 200) => account.access_lists(&request.path, body),
            (Operation::ListRateLimits, 200) => account.rate_limits(&request.path, request.query.as_deref(), body),
            (Operation::GetApp, 200) => account.app(body),
            (Operation::SearchEvents, 200) => account.events(&request.path, body),
            (Operation::QueryLogs, 200) => account.logs(&request.path, body),
            (Operation::QueryLogs, 404) => account.logging_disabled(&request.path, body),
            (Operation::GetLogFile, 200) => account.legacy_logs(&request.path, response.text.as_deref()),
            _ => {}
        }
    }
    for (zone, events) in &summaries.by_zone {
        account.zone(*zone);
        for event in events {
            account.keep_event(*zone, event.clone());
        }
    }
    account.finish()
}

#[derive(Default)]
struct Account {
    shield_zones: BTreeMap<i64, ShieldZone>,
    lists_seen: BTreeSet<i64>,
    rate_limit_pages: BTreeMap<i64, BTreeMap<i64, Vec<Value>>>,
    pull_zones: BTreeMap<i64, PullZone>,
    apps: BTreeMap<String, Value>,
    events_held: HashSet<(i64, String)>,
    entries_held: HashSet<(i64, String)>,
    data: RecordedData,
}

fn pull_zone(id: i64) -> PullZone {
    PullZone {
        id,
        logging_enabled: true,
        suspended: false,
        hostnames: Vec::new(),
    }
}

fn items(body: &Value, member: &str) -> Vec<Value> {
    body.get(member).and_then(Value::as_array).cloned().unwrap_or_default()
}

impl Account {
    fn zone(&mut self, id: i64) -> &mut ShieldZone {
        self.shield_zones.entry(id).or_insert_with(|| ShieldZone {
            id,
            ..ShieldZone::default()
        })
    }

    fn access_lists(&mut self, path: &str, body: &Value) {
        let Some(id) = numeric_segment(path, 2) else {
            return;
        };
        if !self.lists_seen.insert(id) {
            return;
        }
        let lists = [("managedLists", true), ("customLists", false)]
            .into_iter()
            .flat_map(|(member, managed)| {
                items(body, member).into_iter().filter_map(move |item| match item {
                    Value::Object(details) => Some(SimAccessList { managed, details }),
                    _ => None,
                })
            })
            .collect();
        self.zone(id).access_lists = lists;
    }

    fn rate_limits(&mut self, path: &str, query: Option<&str>, body: &Value) {
        let Some(id) = numeric_segment(path, 2) else {
            return;
        };
        self.zone(id);
        let page = QueryParams::parse(query)
            .0
            .into_iter()
            .rev()
            .find(|(name, _)| name == "page")
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(1);
        self.rate_limit_pages
            .entry(id)
            .or_default()
            .entry(page)
            .or_insert_with(|| items(body, "data"));
    }

    fn app(&mut self, body: &Value) {
        if let Some(id) = body.get("id").and_then(Value::as_str) {
            self.apps.entry(id.to_string()).or_insert_with(|| body.clone());
        }
    }

    fn events(&mut self, path: &str, body: &Value) {
        let Some(id) = numeric_segment(path, 2) else {
            return;
        };
        self.zone(id);
        let rows: Vec<EventRow> =
            serde_json::from_value(body.get("rows").cloned().unwrap_or_default()).unwrap_or_default();
        for event in rows.iter().filter_map(event_of_row) {
            self.keep_event(id, event);
        }
    }

    fn keep_event(&mut self, zone: i64, event: EventInput) {
        if self
            .events_held
            .insert((zone, event.log_id.clone().unwrap_or_default()))
        {
            self.data.events.entry(zone).or_default().push(event);
        }
    }

    fn logs(&mut self, path: &str, body: &Value) {
        let Some(id) = numeric_segment(path, 2) else {
            return;
        };
        let entries: Vec<LogEntry> =
            serde_json::from_value(body.get("data").cloned().unwrap_or_default()).unwrap_or_default();
        self.keep_logs(id, entries);
    }

    fn legacy_logs(&mut self, path: &str, text: Option<&str>) {
        let Some(id) = numeric_segment(path, 1) else {
            return;
        };
        let entries = parse_v1_file(text.unwrap_or_default()).unwrap_or_default();
        self.keep_logs(id, entries);
    }

    fn keep_logs(&mut self, id: i64, entries: Vec<LogEntry>) {
        self.pull_zones.entry(id).or_insert_with(|| pull_zone(id));
        let held = self.data.logs.entry(id).or_default();
        for mut entry in entries {
            entry.pull_zone_id = id;
            if self.entries_held.insert((id, entry.request_id.clone())) {
                held.push(entry);
            }
        }
    }

    fn logging_disabled(&mut self, path: &str, body: &Value) {
        let code = body.pointer("/error/code").and_then(Value::as_str);
        if let (Some(id), Some("logging_disabled")) = (numeric_segment(path, 2), code) {
            self.pull_zones
                .entry(id)
                .or_insert_with(|| pull_zone(id))
                .logging_enabled = false;
        }
    }

    fn finish(mut self) -> (SimDocument, RecordedData) {
        for (id, pages) in std::mem::take(&mut self.rate_limit_pages) {
            self.zone(id).rate_limits = pages.into_values().flatten().collect();
        }
        let document = SimDocument {
            access_keys: vec![RECORDING_ACCESS_KEY.to_string()],
            shield_zones: self.shield_zones.into_values().collect(),
            pull_zones: self.pull_zones.into_values().collect(),
            apps: self.apps.into_values().collect(),
            ..SimDocument::default()
        };
        (document, self.data)
    }
}

/// The numeric path parameter at `index` of `path`'s segments (a log file's name too).
pub(crate) fn numeric_segment(path: &str, index: usize) -> Option<i64> {
    path.trim_start_matches('/')
        .split('/')
        .nth(index)?
        .trim_end_matches(".log")
        .parse()
        .ok()
}

/// The event a search row shows; rows without their id or timestamp are skipped.
fn event_of_row(row: &EventRow) -> Option<EventInput> {
    let fields = row.fields.as_ref()?;
    let field = |dimension: Dimension| fields.get(dimension.as_str()).cloned().unwrap_or_default();
    Some(EventInput {
        log_id: Some(row.log_id.clone()?),
        timestamp: row.timestamp,
        feature: field(Dimension::Feature),
        rule_id: field(Dimension::RuleId),
        ip: field(Dimension::Ip),
        ja4: field(Dimension::Ja4),
        ua: field(Dimension::Ua),
        url: field(Dimension::Url),
        asn: field(Dimension::Asn),
        country: field(Dimension::Country),
        action: field(Dimension::Action),
        rule_name: fields.get("ruleName").cloned().unwrap_or_default(),
        log: row.log.as_ref().and_then(Value::as_object).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::recording::exchange::{RecordedRequest, RecordedResponse};
    use serde_json::json;

    fn exchange(method: &str, path: &str, query: Option<&str>, status: u16, body: Value) -> Exchange {
        Exchange {
            time: "2026-11-20T12:00:00Z".parse().expect("time"),
            request: RecordedRequest {
                method: method.into(),
                path: path.into(),
                query: query.map(str::to_string),
                credentials: SentCredentials::AccountKey,
                content_type: None,
                body: None,
            },
            response: RecordedResponse {
                status,
                content_type: Some("application/json".into()),
                retry_after: None,
                body: Some(body),
                text: None,
            },
            summarised: None,
        }
    }

    #[test]
    fn the_first_answer_about_a_resource_is_its_recorded_state() {
        let lists = |enabled: bool| json!({"managedLists": [{"configurationId": 5, "isEnabled": enabled}], "customLists": [{"configurationId": 6}]});
        let exchanges = [
            exchange("GET", "/shield/shield-zone/7/access-lists", None, 200, lists(false)),
            exchange("GET", "/shield/shield-zone/7/access-lists", None, 200, lists(true)),
            exchange(
                "GET",
                "/shield/rate-limits/7",
                Some("page=2&perPage=1"),
                200,
                json!({"data": [{"id": 2}]}),
            ),
            exchange(
                "GET",
                "/shield/rate-limits/7",
                Some("page=1&perPage=1"),
                200,
                json!({"data": [{"id": 1}]}),
            ),
            exchange("GET", "/v2/pullzones/9/logs", None, 200, json!({"data": []})),
            exchange("GET", "/mc/apps/a", None, 200, json!({"id": "a", "status": "Active"})),
            exchange("GET", "/mc/apps/b", None, 404, json!({"title": "Not Found"})),
            exchange(
                "GET",
                "/v2/pullzones/10/logs",
                None,
                404,
                json!({"error": {"code": "logging_disabled", "message": ""}}),
            ),
        ];
        let (document, _) = rebuild(&exchanges, &SummaryEvents::default());
        assert_eq!(document.access_keys, [RECORDING_ACCESS_KEY]);
        let zone = &document.shield_zones[0];
        assert_eq!(zone.id, 7);
        assert_eq!(zone.access_lists.len(), 2);
        assert!(zone.access_lists[0].managed && !zone.access_lists[0].is_enabled());
        assert_eq!(zone.rate_limits, [json!({"id": 1}), json!({"id": 2})], "in page order");
        assert_eq!(document.apps, [json!({"id": "a", "status": "Active"})], "as answered");
        let logging: Vec<_> = document.pull_zones.iter().map(|z| (z.id, z.logging_enabled)).collect();
        assert_eq!(logging, [(9, true), (10, false)]);
    }

    #[test]
    fn events_and_log_entries_are_kept_once_each() {
        let row = json!({"logId": "e1", "timestamp": 1_700_000_000_000_i64, "fields": {"ip": "192.0.2.1", "action": "block", "ruleName": "r"}});
        let entry = json!({"timestamp": "2026-11-20T11:00:00Z", "requestId": "r1", "statusCode": 200});
        let exchanges = [
            exchange(
                "POST",
                "/shield/event-logs/7/search",
                None,
                200,
                json!({"rows": [row.clone()]}),
            ),
            exchange("POST", "/shield/event-logs/7/search", None, 200, json!({"rows": [row]})),
            exchange(
                "GET",
                "/v2/pullzones/9/logs",
                None,
                200,
                json!({"data": [entry.clone(), entry]}),
            ),
        ];
        let (document, data) = rebuild(&exchanges, &SummaryEvents::default());
        let events = &data.events[&7];
        assert_eq!(events.len(), 1);
        assert_eq!(
            (
                events[0].ip.as_str(),
                events[0].action.as_str(),
                events[0].rule_name.as_str()
            ),
            ("192.0.2.1", "block", "r")
        );
        assert_eq!(data.logs[&9].len(), 1);
        assert_eq!(data.logs[&9][0].pull_zone_id, 9);
        assert_eq!(document.pull_zones.len(), 1);
    }

    #[test]
    fn events_read_for_grouped_searches_are_held_once_each_up_to_the_bound() {
        let row = |i: usize| EventRow {
            log_id: Some(format!("e{i}")),
            timestamp: 1_700_000_000_000,
            fields: Some(std::collections::BTreeMap::from([(
                "country".to_string(),
                "DE".to_string(),
            )])),
            ..EventRow::default()
        };
        let mut summaries = SummaryEvents::default();
        let first: Vec<EventRow> = (0..3).map(row).collect();
        assert_eq!(summaries.add(7, &first), (3, false));
        assert_eq!(
            summaries.add(7, &first),
            (3, false),
            "held already: read, not kept twice"
        );
        let unnamed = EventRow { log_id: None, ..row(0) };
        assert_eq!(
            summaries.add(7, &[unnamed]),
            (0, false),
            "an event without id cannot be held"
        );
        let rest: Vec<EventRow> = (3..MAX_SUMMARY_EVENTS + 5).map(row).collect();
        assert_eq!(summaries.add(7, &rest), ((MAX_SUMMARY_EVENTS - 3) as u64, true));
        let exchange = exchange("POST", "/shield/event-logs/7/search", None, 200, json!({"groups": []}));
        let (document, data) = rebuild(&[exchange], &summaries);
        assert_eq!(data.events[&7].len(), MAX_SUMMARY_EVENTS);
        assert_eq!(data.events[&7][0].country, "DE");
        assert_eq!(document.shield_zones[0].id, 7);
    }

    #[test]
    fn answers_to_other_credentials_describe_no_resource() {
        let mut refused = exchange("GET", "/mc/apps/a", None, 200, json!({"id": "a"}));
        refused.request.credentials = SentCredentials::None;
        let (document, _) = rebuild(&[refused], &SummaryEvents::default());
        assert!(document.apps.is_empty());
    }
}
