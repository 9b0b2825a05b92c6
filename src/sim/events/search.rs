//! Event-log search: a validated request (`validate`) run over an [`EventStore`]: the
//! filters as per-value truth tables, then the page of rows, or the groups (`group`).
//! No HTTP here.
//!
//! Semantics (see docs/emulator.md, "Event-log search semantics"):
//! - window `[from, to)`; `to > from`, `to <= now + 5 min`, `to >= now - 72 h`;
//! - `query`: whitespace-separated terms, each a case-insensitive substring of at least
//!   one of ip, ruleId, url, ua, ruleName;
//! - filters AND-combined, values OR-combined; `eq`/`in` exact, `contains`
//!   case-insensitive substring, `wildcard` case-insensitive full match with `*`,
//!   `cidr` on `ip` only;
//! - groups sorted by count descending then key values ascending; rows by timestamp
//!   descending then logId ascending.

use std::collections::BTreeMap;

use super::group::{PACKED_KEY_BITS, grouped};
use super::page::{page_bounds, response};
use super::store::{Column, EventStore};
use super::validate::{QUERY_COLUMNS, ValidSearch};
use crate::api::models::shield::{Dimension, EventLogsSearchResponse, EventRow};

/// Per-dictionary-id truth tables: each predicate is evaluated once per distinct value.
struct MatchTables {
    filters: Vec<(Column, Vec<bool>)>,
    terms: Vec<[Vec<bool>; QUERY_COLUMNS.len()]>,
}

impl MatchTables {
    fn build(search: &ValidSearch, store: &EventStore) -> Self {
        let table = |column: Column, test: &dyn Fn(&str) -> bool| -> Vec<bool> {
            store.dictionary(column).values().map(test).collect()
        };
        let filters = search
            .filters
            .iter()
            .map(|(dimension, predicate)| {
                let column = Column::Dimension(*dimension);
                (column, table(column, &|v| predicate.matches(v)))
            })
            .collect();
        let terms = search
            .terms
            .iter()
            .map(|term| QUERY_COLUMNS.map(|column| table(column, &|v| v.to_lowercase().contains(term.as_str()))))
            .collect();
        Self { filters, terms }
    }

    fn is_empty(&self) -> bool {
        self.filters.is_empty() && self.terms.is_empty()
    }

    fn matches(&self, store: &EventStore, row: usize) -> bool {
        self.filters
            .iter()
            .all(|(column, table)| table[store.column(*column)[row] as usize])
            && self.terms.iter().all(|tables| {
                QUERY_COLUMNS
                    .iter()
                    .zip(tables)
                    .any(|(&column, table)| table[store.column(column)[row] as usize])
            })
    }
}

/// Runs a validated search.
pub fn execute(search: &ValidSearch, store: &EventStore) -> EventLogsSearchResponse {
    execute_with(search, store, PACKED_KEY_BITS)
}

/// [`execute`], grouping in one radix sort when the groupBy key space fits
/// `packed_key_bits` bits, and dimension by dimension otherwise.
pub(super) fn execute_with(search: &ValidSearch, store: &EventStore, packed_key_bits: u32) -> EventLogsSearchResponse {
    let tables = MatchTables::build(search, store);
    let window = store.window(search.from, search.to);
    let rows: Box<dyn Iterator<Item = usize>> = if tables.is_empty() {
        Box::new(window)
    } else {
        Box::new(window.filter(move |&row| tables.matches(store, row)))
    };
    if search.group_by.is_empty() {
        flat(search, store, rows)
    } else {
        grouped(search, store, rows, packed_key_bits)
    }
}

fn flat(search: &ValidSearch, store: &EventStore, rows: impl Iterator<Item = usize>) -> EventLogsSearchResponse {
    let (start, end) = page_bounds(search);
    let mut total = 0;
    let mut page = Vec::new();
    for row in rows {
        if (start..end).contains(&total) {
            page.push(event_row(store, row));
        }
        total += 1;
    }
    EventLogsSearchResponse {
        rows: Some(page),
        ..response(search, total)
    }
}

pub(super) fn event_row(store: &EventStore, row: usize) -> EventRow {
    let mut fields: BTreeMap<String, String> = Dimension::ALL
        .iter()
        .map(|d| {
            (
                d.as_str().to_string(),
                store.text(Column::Dimension(*d), row).to_string(),
            )
        })
        .collect();
    fields.insert("ruleName".to_string(), store.text(Column::RuleName, row).to_string());
    EventRow {
        log_id: Some(store.log_id(row).to_string()),
        timestamp: store.timestamp(row),
        log: store.log(row).map(serde_json::Value::Object),
        fields: Some(fields),
    }
}
