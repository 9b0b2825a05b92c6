//! Grouped searches: rows ordered by their groupBy tuple (one radix sort when the key
//! space fits a packed word, dimension by dimension otherwise), the page's groups
//! chosen with a bounded heap, then their context and sparkline (in one pass in row
//! order when the page's rows are dense, group by group otherwise), with buffers kept
//! between searches.

use std::collections::BinaryHeap;

use super::page::{page_bounds, response};
use super::store::{Column, EventStore};
use super::validate::{MAX_PAGE_SIZE, ValidSearch};
use crate::api::models::shield::{Dimension, EventGroup, EventLogsSearchResponse, GroupContext};

/// Buffers of the grouping passes, kept between searches: a search over a million
/// rows would otherwise fault in tens of MB of fresh pages every time.
#[derive(Default)]
struct Scratch {
    rows: Vec<u32>,
    spare_rows: Vec<u32>,
    codes: Vec<u32>,
    keys: Vec<u64>,
    spare_keys: Vec<u64>,
    counts: Vec<u32>,
    /// The page slot of each row of the page's row span (row-order context pass).
    slots: Vec<u16>,
}

/// Heap slots reserved up front for the best runs (deeper pages grow it).
const MAX_KEPT_CAPACITY: usize = 4096;

/// Sets of buffers kept for the next searches (more concurrent searches allocate).
const KEPT_SCRATCH: usize = 2;
static SCRATCH: std::sync::Mutex<Vec<Scratch>> = std::sync::Mutex::new(Vec::new());

impl Scratch {
    fn take() -> Self {
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    fn give_back(self) {
        let mut kept = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT_SCRATCH {
            kept.push(self);
        }
    }
}

/// Rows ordered by some groupBy dimensions, each with a code that numbers the
/// distinct tuples of those dimensions in ascending order. The passes share two row
/// buffers, one key buffer, the count buffer and the code buffer, all from [`Scratch`].
struct KeyOrder {
    scratch: Scratch,
    ordered_once: bool,
    /// The order lives in the low halves of `keys` (one packed sort) rather than in
    /// `rows` and `codes` (dimension by dimension).
    packed: bool,
}

impl KeyOrder {
    fn new(mut scratch: Scratch, rows: impl Iterator<Item = usize>) -> Self {
        scratch.rows.clear();
        scratch.rows.extend(rows.map(|row| row as u32));
        // Every position of these is written before it is read: what a previous
        // search left in them needs no zeroing.
        let n = scratch.rows.len();
        scratch.spare_rows.resize(n, 0);
        scratch.codes.resize(n, 0);
        scratch.keys.resize(n, 0);
        Self {
            scratch,
            ordered_once: false,
            packed: false,
        }
    }

    /// The row at position `p` of the order.
    fn row_at(&self, p: usize) -> usize {
        if self.packed {
            self.scratch.keys[p] as u32 as usize
        } else {
            self.scratch.rows[p] as usize
        }
    }

    /// How many runs of rows share their tuple, and the first `keep` runs by count
    /// descending, then key ascending, in that order. The runs are never all held: a
    /// heap keeps the best `keep` seen.
    fn top_runs(&self, keep: usize) -> (usize, Vec<Run>) {
        // One u64 per run that orders as wanted: the count's complement, then the run's
        // start (runs start in key order).
        let rank = |start: usize, end: usize| (u64::from(u32::MAX - (end - start) as u32) << 32) | start as u64;
        let mut best = BinaryHeap::with_capacity(keep.min(MAX_KEPT_CAPACITY) + 1);
        let mut total = 0;
        let mut take = |start: usize, end: usize| {
            total += 1;
            let run = rank(start, end);
            if best.len() < keep {
                best.push(run);
            } else if best.peek().is_some_and(|&worst| run < worst) {
                best.pop();
                best.push(run);
            }
        };
        let Scratch { keys, codes, .. } = &self.scratch;
        if self.packed {
            for_each_run(keys.len(), |p| keys[p] >> 32 != keys[p - 1] >> 32, &mut take);
        } else {
            for_each_run(codes.len(), |p| codes[p] != codes[p - 1], &mut take);
        }
        let runs = best
            .into_sorted_vec()
            .into_iter()
            .map(|run| Run {
                start: run as u32 as usize,
                count: (u32::MAX - (run >> 32) as u32) as usize,
            })
            .collect();
        (total, runs)
    }

    /// Orders the rows by `column` first, then by the current order (a stable counting
    /// sort by dictionary rank; apply the least significant dimension first).
    fn then_by(&mut self, store: &EventStore, column: Column) {
        let dictionary = store.dictionary(column);
        let ids = store.column(column);
        let rank = |row: u32| dictionary.rank(ids[row as usize]);
        let Scratch {
            rows,
            spare_rows,
            codes,
            keys,
            counts: next,
            ..
        } = &mut self.scratch;
        next.clear();
        next.resize(dictionary.len() + 1, 0);
        for &row in rows.iter() {
            next[rank(row) as usize + 1] += 1;
        }
        for i in 1..next.len() {
            next[i] += next[i - 1];
        }
        for (i, &row) in rows.iter().enumerate() {
            let rank = rank(row);
            let at = next[rank as usize] as usize;
            next[rank as usize] += 1;
            spare_rows[at] = row;
            // The new dimension's rank, then the tuple code of the dimensions before.
            let previous = if self.ordered_once { codes[i] } else { 0 };
            keys[at] = (u64::from(rank) << 32) | u64::from(previous);
        }
        std::mem::swap(rows, spare_rows);
        let mut code = 0u32;
        for (p, slot) in codes.iter_mut().enumerate() {
            code += u32::from(p > 0 && keys[p] != keys[p - 1]);
            *slot = code;
        }
        self.ordered_once = true;
    }
}

/// Calls `take(start, end)` for each run of positions `0..len`, a run starting at 0 and
/// wherever `starts_run` holds.
fn for_each_run(len: usize, starts_run: impl Fn(usize) -> bool, take: &mut impl FnMut(usize, usize)) {
    let mut start = 0;
    for p in 1..len {
        if starts_run(p) {
            take(start, p);
            start = p;
        }
    }
    if len > 0 {
        take(start, len);
    }
}

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

/// The widest digit of a radix pass (256 buckets: the scatter writes to few enough
/// places at once to stay in L1 and the TLB, which is faster than fewer, wider passes).
const MAX_RADIX_BITS: u32 = 8;

impl KeyOrder {
    /// Bits of the key space of `columns`, when it fits `packed_key_bits`.
    fn packed_key_bits(store: &EventStore, columns: &[Column], packed_key_bits: u32) -> Option<u32> {
        let space = columns.iter().try_fold(1u64, |space, &c| {
            space.checked_mul(store.dictionary(c).len().max(1) as u64)
        })?;
        (space <= 1u64 << packed_key_bits).then(|| u64::BITS - (space - 1).leading_zeros())
    }

    /// Orders the rows by all `columns` at once (most significant first), in a key
    /// space of `key_bits` (see [`KeyOrder::packed_key_bits`]): one sequential pass
    /// packs each row's tuple of ranks beside its row number, then a stable LSD radix
    /// sort orders those. Reading every column in row order, instead of once per
    /// dimension in the order of the previous pass, is what makes it fast.
    fn packed(
        mut scratch: Scratch,
        store: &EventStore,
        columns: &[Column],
        rows: impl Iterator<Item = usize>,
        key_bits: u32,
    ) -> Self {
        let sizes: Vec<u64> = columns
            .iter()
            .map(|&c| store.dictionary(c).len().max(1) as u64)
            .collect();
        let dimensions: Vec<PackedDimension> = columns
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                (
                    store.column(c),
                    store.dictionary(c).ranks(),
                    sizes[i + 1..].iter().product::<u64>(),
                )
            })
            .collect();
        let Scratch {
            keys,
            spare_keys,
            counts,
            ..
        } = &mut scratch;
        keys.clear();
        // With the number of dimensions known when compiled, the per-row sum is unrolled
        // (about four times faster than a loop over the dimensions).
        match dimensions.as_slice() {
            &[a] => pack(keys, rows, [a]),
            &[a, b] => pack(keys, rows, [a, b]),
            &[a, b, c] => pack(keys, rows, [a, b, c]),
            more => keys.extend(rows.map(|row| (key_of(more, row) << 32) | row as u64)),
        }
        // Each pass writes every position before the next reads it.
        spare_keys.resize(keys.len(), 0);
        let passes = key_bits.div_ceil(MAX_RADIX_BITS).max(1);
        let digit_bits = key_bits.div_ceil(passes).max(1);
        let mut shift = 32;
        while shift < 32 + key_bits {
            let digit = |packed: u64| ((packed >> shift) & ((1 << digit_bits) - 1)) as usize;
            counts.clear();
            counts.resize(1 << digit_bits, 0);
            for &packed in keys.iter() {
                counts[digit(packed)] += 1;
            }
            // A digit every key shares orders nothing.
            if !counts.iter().any(|&c| c as usize == keys.len()) {
                let mut next = 0;
                for count in counts.iter_mut() {
                    let here = *count;
                    *count = next;
                    next += here;
                }
                for &packed in keys.iter() {
                    let slot = &mut counts[digit(packed)];
                    spare_keys[*slot as usize] = packed;
                    *slot += 1;
                }
                std::mem::swap(keys, spare_keys);
            }
            shift += digit_bits;
        }
        Self {
            scratch,
            ordered_once: true,
            packed: true,
        }
    }
}

/// A groupBy dimension of a packed key: its column, its dictionary's ranks, and the
/// weight of its rank in the key.
type PackedDimension<'a> = (&'a [u32], &'a [u32], u64);

/// Appends each row's key beside its row number.
fn pack<const N: usize>(keys: &mut Vec<u64>, rows: impl Iterator<Item = usize>, dimensions: [PackedDimension; N]) {
    let ids = dimensions.map(|(ids, _, _)| ids);
    let ranks = dimensions.map(|(_, ranks, _)| ranks);
    let weights = dimensions.map(|(_, _, weight)| weight);
    keys.extend(rows.map(|row| {
        let mut key = 0;
        for d in 0..N {
            key += u64::from(ranks[d][ids[d][row] as usize]) * weights[d];
        }
        (key << 32) | row as u64
    }));
}

/// A row's key: the weighted sum of its ranks.
fn key_of(dimensions: &[PackedDimension], row: usize) -> u64 {
    dimensions
        .iter()
        .map(|&(ids, ranks, weight)| u64::from(ranks[ids[row] as usize]) * weight)
        .sum()
}

/// Sparkline buckets: the bucket of `t` is `(t - from) * buckets / (to - from)`,
/// exactly. Rows come in timestamp-descending order, so a walk down the buckets'
/// first timestamps finds each row's bucket without a division.
struct Buckets {
    /// The smallest timestamp of each bucket.
    starts: Vec<i64>,
}

impl Buckets {
    fn new(search: &ValidSearch) -> Self {
        let span = i128::from(search.to) - i128::from(search.from);
        let count = search.buckets as i128;
        // The smallest t with (t - from) * count >= b * span: from + ceil(b * span / count).
        let starts = (0..count)
            .map(|b| (i128::from(search.from) + (b * span + count - 1) / count) as i64)
            .collect();
        Self { starts }
    }

    /// A walk from the last bucket down.
    fn walk(&self) -> BucketWalk<'_> {
        BucketWalk {
            starts: &self.starts,
            bucket: self.starts.len().saturating_sub(1),
        }
    }
}

struct BucketWalk<'a> {
    starts: &'a [i64],
    bucket: usize,
}

impl BucketWalk<'_> {
    /// The bucket of `t`, which lies in the window and is not later than the last `t`.
    fn at(&mut self, t: i64) -> usize {
        while self.bucket > 0 && t < self.starts[self.bucket] {
            self.bucket -= 1;
        }
        self.bucket
    }
}

/// A group: a run of rows sharing their groupBy values in the key-sorted row list.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    count: usize,
}

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
    fn contexts(
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
