//! Grouped searches: rows ordered by their groupBy tuple (one radix sort when the key
//! space fits a packed word, dimension by dimension otherwise), then each group's
//! counts, context and sparkline, with buffers kept between searches.

use std::collections::BinaryHeap;

use super::page::{page_bounds, response};
use super::store::{Column, Dictionary, EventStore};
use super::validate::ValidSearch;
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
        let n = scratch.rows.len();
        scratch.spare_rows.clear();
        scratch.spare_rows.resize(n, 0);
        scratch.codes.clear();
        scratch.codes.resize(n, 0);
        scratch.keys.clear();
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

/// The widest groupBy key space sorted in one pass: a row's key (its mixed-radix
/// tuple of dictionary ranks) and its row number share one `u64`.
pub(super) const PACKED_KEY_BITS: u32 = 32;
/// The widest digit of a radix pass (4,096 buckets: the counts stay in L1).
const MAX_RADIX_BITS: u32 = 12;

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
        let dimensions: Vec<(&[u32], &Dictionary, u64)> = columns
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                (
                    store.column(c),
                    store.dictionary(c),
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
        keys.extend(rows.map(|row| {
            let key: u64 = dimensions
                .iter()
                .map(|(ids, dictionary, weight)| u64::from(dictionary.rank(ids[row])) * weight)
                .sum();
            (key << 32) | row as u64
        }));
        spare_keys.clear();
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

/// Sparkline bucket of a timestamp: `(t - from) * buckets / (to - from)`, exactly.
struct Buckets {
    from: i64,
    count: i64,
    span: i128,
    /// `to - from` when `(to - from) * buckets` fits an i64, so i64 arithmetic is exact.
    narrow_span: Option<i64>,
}

impl Buckets {
    fn new(search: &ValidSearch) -> Self {
        let count = search.buckets as i64;
        let narrow_span = search
            .to
            .checked_sub(search.from)
            .filter(|span| span.checked_mul(count).is_some());
        Self {
            from: search.from,
            count,
            span: i128::from(search.to) - i128::from(search.from),
            narrow_span,
        }
    }

    fn of(&self, timestamp: i64) -> usize {
        match self.narrow_span {
            Some(span) => ((timestamp - self.from) * self.count / span) as usize,
            None => ((i128::from(timestamp) - i128::from(self.from)) * i128::from(self.count) / self.span) as usize,
        }
    }
}

/// A group: a run of rows sharing their groupBy values in the key-sorted row list.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    count: usize,
}

/// Per-value counts of one dimension over a group, in a dense scratch array reused
/// from group to group (only the touched entries are reset).
struct Tally {
    counts: Vec<u32>,
    touched: Vec<u32>,
}

impl Tally {
    fn new(store: &EventStore, dimension: Dimension) -> Self {
        Self {
            counts: vec![0; store.dictionary(Column::Dimension(dimension)).len()],
            touched: Vec::new(),
        }
    }

    fn add(&mut self, id: u32) {
        if self.counts[id as usize] == 0 {
            self.touched.push(id);
        }
        self.counts[id as usize] += 1;
    }

    fn reset(&mut self) {
        for &id in &self.touched {
            self.counts[id as usize] = 0;
        }
        self.touched.clear();
    }

    /// The most frequent value (ties: the smallest), then resets.
    fn take_mode(&mut self, store: &EventStore, dimension: Dimension) -> String {
        let dictionary = store.dictionary(Column::Dimension(dimension));
        let counts = &self.counts;
        let mode = self.touched.iter().copied().max_by(|&a, &b| {
            counts[a as usize]
                .cmp(&counts[b as usize])
                .then_with(|| dictionary.rank(b).cmp(&dictionary.rank(a)))
        });
        let value = mode.map(|id| dictionary.value(id).to_string()).unwrap_or_default();
        self.reset();
        value
    }

    /// The distinct values, sorted and comma-joined, then resets.
    fn take_distinct(&mut self, store: &EventStore, dimension: Dimension) -> String {
        let dictionary = store.dictionary(Column::Dimension(dimension));
        self.touched.sort_unstable_by_key(|&id| dictionary.rank(id));
        let joined = self
            .touched
            .iter()
            .map(|&id| dictionary.value(id))
            .collect::<Vec<_>>()
            .join(",");
        self.reset();
        joined
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

pub(super) fn grouped(
    search: &ValidSearch,
    store: &EventStore,
    rows: impl Iterator<Item = usize>,
    packed_key_bits: u32,
) -> EventLogsSearchResponse {
    let columns: Vec<Column> = search.group_by.iter().map(|&d| Column::Dimension(d)).collect();
    // After ordering, the rows are ordered by the groupBy values, so each group is a
    // contiguous run, runs in key order.
    let key_order = match KeyOrder::packed_key_bits(store, &columns, packed_key_bits) {
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

    let action_kinds: Vec<Option<usize>> = store
        .dictionary(Column::Dimension(Dimension::Action))
        .values()
        .map(action_kind)
        .collect();
    let mut countries = Tally::new(store, Dimension::Country);
    let mut asns = Tally::new(store, Dimension::Asn);
    let mut features = Tally::new(store, Dimension::Feature);
    let mut rule_ids = Tally::new(store, Dimension::RuleId);
    let buckets = Buckets::new(search);
    let column = |dimension: Dimension| store.column(Column::Dimension(dimension));
    let groups = page
        .iter()
        .map(|run| {
            let mut actions = [0i64; 3];
            let mut sparkline = vec![0i64; search.buckets];
            for p in run.start..run.start + run.count {
                let row = key_order.row_at(p);
                countries.add(column(Dimension::Country)[row]);
                asns.add(column(Dimension::Asn)[row]);
                features.add(column(Dimension::Feature)[row]);
                rule_ids.add(column(Dimension::RuleId)[row]);
                if let Some(kind) = action_kinds[column(Dimension::Action)[row] as usize] {
                    actions[kind] += 1;
                }
                if search.buckets > 0 {
                    sparkline[buckets.of(store.timestamp(row))] += 1;
                }
            }
            // The sorts are stable and rows start in timestamp-descending order, so a
            // run's first row is its latest event and its last row its earliest.
            let first_row = key_order.row_at(run.start);
            let last_seen = store.timestamp(first_row);
            let first_seen = store.timestamp(key_order.row_at(run.start + run.count - 1));
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
                first_seen,
                last_seen,
                context: Some(GroupContext {
                    country: countries.take_mode(store, Dimension::Country),
                    asn: asns.take_mode(store, Dimension::Asn),
                    blocked: actions[0],
                    challenged: actions[1],
                    logged: actions[2],
                    features: features.take_distinct(store, Dimension::Feature),
                    rule_ids: rule_ids.take_distinct(store, Dimension::RuleId),
                }),
                sparkline: (search.buckets > 0).then_some(sparkline),
            }
        })
        .collect();
    key_order.scratch.give_back();
    EventLogsSearchResponse {
        groups: Some(groups),
        ..response(search, total)
    }
}
