//! A run's context (modes, distinct values, actions) and sparkline: in row order when
//! the page's rows are dense, group by group otherwise.

use super::super::store::{Column, EventStore};
use super::super::validate::MAX_PAGE_SIZE;
use super::order::{BucketWalk, Buckets, KeyOrder, Run};
use super::{ContextPass, Grouping};
use crate::api::models::shield::{Dimension, GroupContext};

/// Per-value counts of one dimension over a group, in a dense array reused from group
/// to group.
struct Tally {
    counts: Vec<u32>,
    /// The values counted, for dictionaries too large to scan whole at each group's end.
    touched: Option<Vec<u32>>,
}

impl Tally {
    /// A tally that scans its counts when the dimension has at most `scanned` values.
    fn new(store: &EventStore, dimension: Dimension, scanned: usize) -> Self {
        let values = store.dictionary(Column::Dimension(dimension)).len();
        Self {
            counts: vec![0; values],
            touched: (values > scanned).then(Vec::new),
        }
    }

    fn add(&mut self, id: u32) {
        let count = &mut self.counts[id as usize];
        if *count == 0
            && let Some(touched) = &mut self.touched
        {
            touched.push(id);
        }
        *count += 1;
    }

    /// The values counted, each once, with their counts; then resets.
    fn take(&mut self) -> Vec<(u32, u32)> {
        let ids = match &mut self.touched {
            Some(touched) => std::mem::take(touched),
            None => (0..self.counts.len() as u32)
                .filter(|&id| self.counts[id as usize] > 0)
                .collect(),
        };
        ids.into_iter()
            .map(|id| (id, std::mem::take(&mut self.counts[id as usize])))
            .collect()
    }

    /// The most frequent value (ties: the smallest), then resets.
    fn take_mode(&mut self, store: &EventStore, dimension: Dimension) -> String {
        let dictionary = store.dictionary(Column::Dimension(dimension));
        let mode = self.take().into_iter().max_by(|&(a, a_count), &(b, b_count)| {
            a_count
                .cmp(&b_count)
                .then_with(|| dictionary.rank(b).cmp(&dictionary.rank(a)))
        });
        mode.map(|(id, _)| dictionary.value(id).to_string()).unwrap_or_default()
    }

    /// The distinct values, sorted and comma-joined, then resets.
    fn take_distinct(&mut self, store: &EventStore, dimension: Dimension) -> String {
        let dictionary = store.dictionary(Column::Dimension(dimension));
        let mut ids: Vec<u32> = self.take().into_iter().map(|(id, _)| id).collect();
        ids.sort_unstable_by_key(|&id| dictionary.rank(id));
        ids.iter().map(|&id| dictionary.value(id)).collect::<Vec<_>>().join(",")
    }
}

/// Which context count an event's action adds to: 0 blocked, 1 challenged, 2 logged.
/// The spelling of actions is not published, so both the verb and the participle
/// count, in any ASCII case.
fn action_kind(action: &str) -> Option<usize> {
    const SPELLINGS: [[&str; 2]; 3] = [["block", "blocked"], ["challenge", "challenged"], ["log", "logged"]];
    SPELLINGS
        .iter()
        .position(|spellings| spellings.iter().any(|s| s.eq_ignore_ascii_case(action)))
}

/// The columns a group's context reads.
struct ContextColumns<'a> {
    country: &'a [u32],
    asn: &'a [u32],
    feature: &'a [u32],
    rule_id: &'a [u32],
    action: &'a [u32],
    /// [`action_kind`] of each action id.
    action_kinds: Vec<Option<usize>>,
    timestamps: &'a [i64],
}

impl<'a> ContextColumns<'a> {
    fn new(store: &'a EventStore) -> Self {
        let column = |dimension: Dimension| store.column(Column::Dimension(dimension));
        Self {
            country: column(Dimension::Country),
            asn: column(Dimension::Asn),
            feature: column(Dimension::Feature),
            rule_id: column(Dimension::RuleId),
            action: column(Dimension::Action),
            action_kinds: store
                .dictionary(Column::Dimension(Dimension::Action))
                .values()
                .map(action_kind)
                .collect(),
            timestamps: store.timestamps(),
        }
    }
}

/// Dimensions whose values a group's context tallies, in the order of
/// [`ContextCount`]'s tallies.
const TALLIED: [Dimension; 4] = [
    Dimension::Country,
    Dimension::Asn,
    Dimension::Feature,
    Dimension::RuleId,
];

/// One group's context and sparkline, counted a row at a time.
struct ContextCount {
    countries: Tally,
    asns: Tally,
    features: Tally,
    rule_ids: Tally,
    actions: [i64; 3],
    sparkline: Vec<i64>,
}

impl ContextCount {
    fn new(store: &EventStore, buckets: usize, scanned: usize) -> Self {
        let [countries, asns, features, rule_ids] = TALLIED.map(|dimension| Tally::new(store, dimension, scanned));
        Self {
            countries,
            asns,
            features,
            rule_ids,
            actions: [0; 3],
            sparkline: vec![0; buckets],
        }
    }

    fn add(&mut self, columns: &ContextColumns, row: usize, walk: &mut BucketWalk) {
        self.countries.add(columns.country[row]);
        self.asns.add(columns.asn[row]);
        self.features.add(columns.feature[row]);
        self.rule_ids.add(columns.rule_id[row]);
        if let Some(kind) = columns.action_kinds[columns.action[row] as usize] {
            self.actions[kind] += 1;
        }
        if !self.sparkline.is_empty() {
            self.sparkline[walk.at(columns.timestamps[row])] += 1;
        }
    }

    /// The context and sparkline counted, then resets.
    fn take(&mut self, store: &EventStore) -> (GroupContext, Option<Vec<i64>>) {
        let context = GroupContext {
            country: self.countries.take_mode(store, Dimension::Country),
            asn: self.asns.take_mode(store, Dimension::Asn),
            blocked: self.actions[0],
            challenged: self.actions[1],
            logged: self.actions[2],
            features: self.features.take_distinct(store, Dimension::Feature),
            rule_ids: self.rule_ids.take_distinct(store, Dimension::RuleId),
        };
        self.actions = [0; 3];
        let sparkline = (!self.sparkline.is_empty()).then(|| {
            let buckets = self.sparkline.len();
            std::mem::replace(&mut self.sparkline, vec![0; buckets])
        });
        (context, sparkline)
    }
}

/// Page slot of a row outside the page.
const NO_SLOT: u16 = u16::MAX;
// Every slot of a page fits a `u16` below `NO_SLOT`.
const _: () = assert!(MAX_PAGE_SIZE < NO_SLOT as i32);
/// The row-order pass reads every row between the page's first and last; it is
/// chosen when at least one in this many of those rows is in the page.
const ROW_ORDER_MIN_SHARE: usize = 4;
/// Most tally entries of the row-order pass (each page group tallies densely).
const ROW_ORDER_TALLY_BUDGET: usize = 1 << 20;

impl KeyOrder {
    /// The context and sparkline of each run of `page`; `slots` is the row-order
    /// pass's buffer.
    pub(super) fn contexts(
        &self,
        store: &EventStore,
        page: &[Run],
        buckets: &Buckets,
        grouping: Grouping,
        slots: &mut Vec<u16>,
    ) -> Vec<(GroupContext, Option<Vec<i64>>)> {
        let columns = ContextColumns::new(store);
        let rows_of = |run: &Run| (run.start..run.start + run.count).map(|p| self.row_at(p));
        let span = page
            .iter()
            .map(|run| self.row_at(run.start)..self.row_at(run.start + run.count - 1) + 1)
            .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
            .unwrap_or_default();
        let page_rows: usize = page.iter().map(|run| run.count).sum();
        let tallied: usize = TALLIED
            .iter()
            .map(|&d| store.dictionary(Column::Dimension(d)).len())
            .sum();
        let row_order = match grouping.context {
            ContextPass::RowOrder => true,
            ContextPass::ByGroup => false,
            ContextPass::Cheapest => {
                page_rows.saturating_mul(ROW_ORDER_MIN_SHARE) >= span.len()
                    && page.len().saturating_mul(tallied) <= ROW_ORDER_TALLY_BUDGET
            }
        };
        if !row_order {
            let mut count = ContextCount::new(store, buckets.starts.len(), grouping.scanned_dictionary);
            return page
                .iter()
                .map(|run| {
                    let mut walk = buckets.walk();
                    rows_of(run).for_each(|row| count.add(&columns, row, &mut walk));
                    count.take(store)
                })
                .collect();
        }
        slots.clear();
        slots.resize(span.len(), NO_SLOT);
        for (slot, run) in page.iter().enumerate() {
            for row in rows_of(run) {
                slots[row - span.start] = slot as u16;
            }
        }
        let mut counts: Vec<ContextCount> = page
            .iter()
            .map(|_| ContextCount::new(store, buckets.starts.len(), grouping.scanned_dictionary))
            .collect();
        let mut walk = buckets.walk();
        for (row, &slot) in span.zip(slots.iter()) {
            if slot != NO_SLOT {
                counts[slot as usize].add(&columns, row, &mut walk);
            }
        }
        counts.iter_mut().map(|count| count.take(store)).collect()
    }
}
