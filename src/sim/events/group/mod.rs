//! Grouped searches: rows ordered by their groupBy tuple (one radix sort when the key
//! space fits a packed word, dimension by dimension otherwise), the page's groups
//! chosen with a bounded heap, then their context and sparkline (in one pass in row
//! order when the page's rows are dense, group by group otherwise), with buffers kept
//! between searches.

//!
//! `order`: the rows in groupBy order and the page's runs; `context`: a run's context
//! and sparkline.

mod context;
mod order;

use self::order::{Buckets, KeyOrder, Scratch};
use super::page::{page_bounds, response};
use super::store::{Column, EventStore};
use super::validate::ValidSearch;
use crate::api::models::shield::{EventGroup, EventLogsSearchResponse};

/// How a grouped search orders its rows and counts its page's context; tests force
/// each side of every choice.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grouping {
    /// The widest groupBy key space sorted in one pass (see [`KeyOrder::packed`]).
    pub(super) packed_key_bits: u32,
    pub(super) context: ContextPass,
    /// The largest dictionary whose context tally is scanned whole at each group's end
    /// rather than listing the values it counted.
    pub(super) scanned_dictionary: usize,
}

/// How the page's groups get their context and sparkline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), expect(dead_code, reason = "searches choose; tests force each pass"))]
pub(super) enum ContextPass {
    /// In row order when the page's rows are dense enough, group by group otherwise.
    Cheapest,
    /// One pass over the rows in row order, every group counted at once.
    RowOrder,
    /// Group by group, each group's rows in turn.
    ByGroup,
}

impl Grouping {
    /// A row's key (its mixed-radix tuple of dictionary ranks) and its row number share
    /// one `u64`.
    pub(super) const FASTEST: Grouping = Grouping {
        packed_key_bits: 32,
        context: ContextPass::Cheapest,
        scanned_dictionary: 1024,
    };
}

pub(super) fn grouped(
    search: &ValidSearch,
    store: &EventStore,
    rows: impl Iterator<Item = usize>,
    grouping: Grouping,
) -> EventLogsSearchResponse {
    let columns: Vec<Column> = search.group_by.iter().map(|&d| Column::Dimension(d)).collect();
    // After ordering, the rows are ordered by the groupBy values, so each group is a
    // contiguous run, runs in key order.
    let mut key_order = match KeyOrder::packed_key_bits(store, &columns, grouping.packed_key_bits) {
        Some(key_bits) => KeyOrder::packed(Scratch::take(), store, &columns, rows, key_bits),
        None => {
            // Least significant dimension first.
            let mut key_order = KeyOrder::new(Scratch::take(), rows);
            for &column in columns.iter().rev() {
                key_order.then_by(store, column);
            }
            key_order
        }
    };
    let (start, end) = page_bounds(search);
    let (total, top) = key_order.top_runs(end);
    let page = top.get(start..).unwrap_or_default();
    let mut slots = std::mem::take(&mut key_order.scratch.slots);
    let contexts = key_order.contexts(store, page, &Buckets::new(search), grouping, &mut slots);
    key_order.scratch.slots = slots;
    let groups = page
        .iter()
        .zip(contexts)
        .map(|(run, (context, sparkline))| {
            // The sorts are stable and rows start in timestamp-descending order, so a
            // run's first row is its latest event and its last row its earliest.
            let first_row = key_order.row_at(run.start);
            let key = search
                .group_by
                .iter()
                .map(|dimension| {
                    let value = store.text(Column::Dimension(*dimension), first_row);
                    (dimension.as_str().to_string(), value.to_string())
                })
                .collect();
            EventGroup {
                key: Some(key),
                count: run.count as i64,
                first_seen: store.timestamp(key_order.row_at(run.start + run.count - 1)),
                last_seen: store.timestamp(first_row),
                context: Some(context),
                sparkline,
            }
        })
        .collect();
    key_order.scratch.give_back();
    EventLogsSearchResponse {
        groups: Some(groups),
        ..response(search, total)
    }
}
