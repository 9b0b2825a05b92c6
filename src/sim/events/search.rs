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
use std::ops::Range;

use super::group::{Grouping, grouped};
use super::page::{page_bounds, response};
use super::store::{Column, EventStore};
use super::validate::{QUERY_COLUMNS, ValidSearch};
use crate::api::models::shield::{Dimension, EventLogsSearchResponse, EventRow};

/// Rows tested at once: a chunk's masks stay in L1.
const CHUNK: usize = 4096;

/// A column's dictionary ids, and whether a predicate holds (1) or not (0) for each id.
type Truth<'a> = (&'a [u32], Vec<u8>);

/// Per-dictionary-id truth tables: each predicate is evaluated once per distinct value;
/// rows are then tested a chunk at a time, one column at a time.
struct MatchTables<'a> {
    filters: Vec<Truth<'a>>,
    terms: Vec<Vec<Truth<'a>>>,
}

impl<'a> MatchTables<'a> {
    fn build(search: &ValidSearch, store: &'a EventStore) -> Self {
        let table = |column: Column, test: &dyn Fn(&str) -> bool| -> Truth<'a> {
            let truth = store.dictionary(column).values().map(|v| u8::from(test(v))).collect();
            (store.column(column), truth)
        };
        let filters = search
            .filters
            .iter()
            .map(|(dimension, predicate)| table(Column::Dimension(*dimension), &|v| predicate.matches(v)))
            .collect();
        let terms = search
            .terms
            .iter()
            .map(|term| {
                QUERY_COLUMNS
                    .iter()
                    .map(|&column| table(column, &|v| v.to_lowercase().contains(term.as_str())))
                    .collect()
            })
            .collect();
        Self { filters, terms }
    }

    /// Whether every row matches (no filter, no query term).
    fn is_empty(&self) -> bool {
        self.filters.is_empty() && self.terms.is_empty()
    }

    /// The rows of `window` that match, in row order.
    fn matches(&self, window: Range<usize>) -> Matches<'_, 'a> {
        Matches {
            tables: self,
            next: window.start,
            end: window.end,
            found: Vec::with_capacity(CHUNK),
            at: 0,
            keep: vec![0; CHUNK],
            any: vec![0; CHUNK],
        }
    }
}

/// The matching rows of a window, found a chunk at a time: each predicate is a
/// branch-free lookup over the chunk of its column, and the chunk's matches are then
/// handed out.
struct Matches<'t, 'a> {
    tables: &'t MatchTables<'a>,
    next: usize,
    end: usize,
    found: Vec<u32>,
    at: usize,
    keep: Vec<u8>,
    any: Vec<u8>,
}

impl Matches<'_, '_> {
    fn test_next_chunk(&mut self) {
        let (start, end) = (self.next, (self.next + CHUNK).min(self.end));
        self.next = end;
        self.found.clear();
        self.at = 0;
        let keep = &mut self.keep[..end - start];
        keep.fill(1);
        let lookup = |into: &mut [u8], (ids, truth): &Truth, merge: fn(&mut u8, u8)| {
            for (slot, &id) in into.iter_mut().zip(&ids[start..end]) {
                merge(slot, truth[id as usize]);
            }
        };
        for filter in &self.tables.filters {
            lookup(keep, filter, |slot, hit| *slot &= hit);
        }
        for columns in &self.tables.terms {
            let any = &mut self.any[..end - start];
            any.fill(0);
            for column in columns {
                lookup(any, column, |slot, hit| *slot |= hit);
            }
            keep.iter_mut().zip(any.iter()).for_each(|(slot, &hit)| *slot &= hit);
        }
        self.found.extend(
            keep.iter()
                .zip(start as u32..)
                .filter(|&(&kept, _)| kept != 0)
                .map(|(_, row)| row),
        );
    }
}

impl Iterator for Matches<'_, '_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.at == self.found.len() {
            if self.next >= self.end {
                return None;
            }
            self.test_next_chunk();
        }
        self.at += 1;
        Some(self.found[self.at - 1] as usize)
    }
}

/// Runs a validated search.
pub fn execute(search: &ValidSearch, store: &EventStore) -> EventLogsSearchResponse {
    execute_with(search, store, Grouping::FASTEST)
}

/// [`execute`], grouping by `grouping`.
pub(super) fn execute_with(search: &ValidSearch, store: &EventStore, grouping: Grouping) -> EventLogsSearchResponse {
    let tables = MatchTables::build(search, store);
    let window = store.window(search.from, search.to);
    if tables.is_empty() {
        answer(search, store, window, grouping)
    } else {
        answer(search, store, tables.matches(window), grouping)
    }
}

fn answer(
    search: &ValidSearch,
    store: &EventStore,
    rows: impl Iterator<Item = usize>,
    grouping: Grouping,
) -> EventLogsSearchResponse {
    if search.group_by.is_empty() {
        flat(search, store, rows)
    } else {
        grouped(search, store, rows, grouping)
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
