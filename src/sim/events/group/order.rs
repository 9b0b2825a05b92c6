//! Rows in groupBy order: one radix sort of packed keys when the key space fits a
//! word, dimension by dimension otherwise; the page's runs chosen with a bounded heap;
//! the sparkline's buckets.

use std::collections::BinaryHeap;

use super::super::store::{Column, EventStore};
use super::super::validate::ValidSearch;

/// Buffers of the grouping passes, kept between searches: a search over a million
/// rows would otherwise fault in tens of MB of fresh pages every time.
#[derive(Default)]
pub(super) struct Scratch {
    rows: Vec<u32>,
    spare_rows: Vec<u32>,
    codes: Vec<u32>,
    keys: Vec<u64>,
    spare_keys: Vec<u64>,
    counts: Vec<u32>,
    /// The page slot of each row of the page's row span (row-order context pass).
    pub(super) slots: Vec<u16>,
}

/// Heap slots reserved up front for the best runs (deeper pages grow it).
const MAX_KEPT_CAPACITY: usize = 4096;

/// Sets of buffers kept for the next searches (more concurrent searches allocate).
const KEPT_SCRATCH: usize = 2;
static SCRATCH: std::sync::Mutex<Vec<Scratch>> = std::sync::Mutex::new(Vec::new());

impl Scratch {
    pub(super) fn take() -> Self {
        SCRATCH
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    pub(super) fn give_back(self) {
        let mut kept = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT_SCRATCH {
            kept.push(self);
        }
    }
}

/// Rows ordered by some groupBy dimensions, each with a code that numbers the
/// distinct tuples of those dimensions in ascending order. The passes share two row
/// buffers, one key buffer, the count buffer and the code buffer, all from [`Scratch`].
pub(super) struct KeyOrder {
    pub(super) scratch: Scratch,
    ordered_once: bool,
    /// The order lives in the low halves of `keys` (one packed sort) rather than in
    /// `rows` and `codes` (dimension by dimension).
    packed: bool,
}

impl KeyOrder {
    pub(super) fn new(mut scratch: Scratch, rows: impl Iterator<Item = usize>) -> Self {
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
    pub(super) fn row_at(&self, p: usize) -> usize {
        if self.packed {
            self.scratch.keys[p] as u32 as usize
        } else {
            self.scratch.rows[p] as usize
        }
    }

    /// How many runs of rows share their tuple, and the first `keep` runs by count
    /// descending, then key ascending, in that order. The runs are never all held: a
    /// heap keeps the best `keep` seen.
    pub(super) fn top_runs(&self, keep: usize) -> (usize, Vec<Run>) {
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
    pub(super) fn then_by(&mut self, store: &EventStore, column: Column) {
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

/// The widest digit of a radix pass (256 buckets: the scatter writes to few enough
/// places at once to stay in L1 and the TLB, which is faster than fewer, wider passes).
const MAX_RADIX_BITS: u32 = 8;

impl KeyOrder {
    /// Bits of the key space of `columns`, when it fits `packed_key_bits`.
    pub(super) fn packed_key_bits(store: &EventStore, columns: &[Column], packed_key_bits: u32) -> Option<u32> {
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
    pub(super) fn packed(
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
pub(super) struct Buckets {
    /// The smallest timestamp of each bucket.
    pub(super) starts: Vec<i64>,
}

impl Buckets {
    pub(super) fn new(search: &ValidSearch) -> Self {
        let span = i128::from(search.to) - i128::from(search.from);
        let count = search.buckets as i128;
        // The smallest t with (t - from) * count >= b * span: from + ceil(b * span / count).
        let starts = (0..count)
            .map(|b| (i128::from(search.from) + (b * span + count - 1) / count) as i64)
            .collect();
        Self { starts }
    }

    /// A walk from the last bucket down.
    pub(super) fn walk(&self) -> BucketWalk<'_> {
        BucketWalk {
            starts: &self.starts,
            bucket: self.starts.len().saturating_sub(1),
        }
    }
}

pub(super) struct BucketWalk<'a> {
    starts: &'a [i64],
    bucket: usize,
}

impl BucketWalk<'_> {
    /// The bucket of `t`, which lies in the window and is not later than the last `t`.
    pub(super) fn at(&mut self, t: i64) -> usize {
        while self.bucket > 0 && t < self.starts[self.bucket] {
            self.bucket -= 1;
        }
        self.bucket
    }
}

/// A group: a run of rows sharing their groupBy values in the key-sorted row list.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) start: usize,
    pub(super) count: usize,
}
