//! Incremental CDN summaries. A [`CdnTail`] keeps per-bucket counts of a Pull Zone's
//! logs between polls, and the span `[back, head)` of the window they cover, so a
//! poll reads only what it has not read yet: forward from `head` to now (oldest
//! first), then, with the pages its budget leaves, back from `back` toward the
//! window's start (newest first). A new tail starts empty at now, so its first
//! summary is of the newest traffic and it grows backwards. When the budget cannot
//! keep up, the summary says which span it covers instead of undercounting silently.
//!
//! Entries sharing the millisecond of an edge are told apart by `requestId`: a query
//! starting or ending on that millisecond answers some of them again.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::api::LogQuery;
use crate::api::models::logging::{LogEntry, LogsResponse, SortOrder};
use crate::crd::container_app_watch::CdnSummary;

/// Entries per logging request (the platform's largest page).
pub const PAGE_SIZE: u64 = 1000;
/// The logs are kept 3 days: a window is clamped inside them, leaving room for its
/// start's rounding down to a bucket (1/360 of it, 715 s here) and a margin of 485 s
/// for the time its pages take to read; a query reaching past the retention is refused.
pub const LONGEST_WINDOW: Duration = Duration::from_secs(71 * 3600 + 1800);
/// Buckets per window. The window's start is rounded down to a bucket, so a summary
/// reaches back at most 1/360 of its window further than asked.
const BUCKETS_PER_WINDOW: i64 = 360;
/// Distinct cache-status values counted per bucket; further ones count as `other`.
const MAX_CACHE_STATUSES: usize = 16;

/// The window of a watch (`1h`...), clamped inside the retention.
pub fn window_span(window: Duration) -> Duration {
    window.clamp(Duration::from_secs(1), LONGEST_WINDOW)
}

#[derive(Debug, Default, Clone, PartialEq)]
struct Counts {
    requests: i64,
    by_status_class: BTreeMap<String, i64>,
    by_cache_status: BTreeMap<String, i64>,
}

impl Counts {
    fn add(&mut self, entry: &LogEntry) {
        self.requests += 1;
        *self
            .by_status_class
            .entry(format!("{}xx", entry.status_code / 100))
            .or_default() += 1;
        let known = self.by_cache_status.contains_key(&entry.cache_status);
        let cache_status = if known || self.by_cache_status.len() < MAX_CACHE_STATUSES {
            entry.cache_status.as_str()
        } else {
            "other"
        };
        *self.by_cache_status.entry(cache_status.to_string()).or_default() += 1;
    }

    fn merge(&mut self, other: &Counts) {
        self.requests += other.requests;
        for (class, n) in &other.by_status_class {
            *self.by_status_class.entry(class.clone()).or_default() += n;
        }
        for (status, n) in &other.by_cache_status {
            *self.by_cache_status.entry(status.clone()).or_default() += n;
        }
    }
}

/// Which way a read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From `head` to now, oldest first.
    Forward,
    /// From the window's start to `back`, newest first.
    Backward,
}

/// One query of the logs, paged by offset: `[from_ms, to_ms)` in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailRead {
    pub direction: Direction,
    pub from_ms: i64,
    pub to_ms: i64,
}

impl TailRead {
    /// The page at `offset`.
    pub fn query(&self, offset: u64) -> LogQuery {
        LogQuery {
            from: DateTime::from_timestamp_millis(self.from_ms),
            to: DateTime::from_timestamp_millis(self.to_ms),
            limit: Some(PAGE_SIZE),
            offset: Some(offset),
            order: Some(match self.direction {
                Direction::Forward => SortOrder::Asc,
                Direction::Backward => SortOrder::Desc,
            }),
            ..LogQuery::default()
        }
    }
}

/// An edge of the covered span: its millisecond, and the entries of that millisecond
/// already counted.
#[derive(Debug, Clone, Default, PartialEq)]
struct Edge {
    at_ms: i64,
    counted: HashSet<String>,
}

impl Edge {
    fn at(at_ms: i64) -> Self {
        Self {
            at_ms,
            counted: HashSet::new(),
        }
    }
}

/// The counts of one Pull Zone's logs over the covered span of a window. Counted are
/// the entries strictly between `back.at_ms` and `head.at_ms`, and those on either
/// edge's millisecond that the edge lists; `back.at_ms < head.at_ms` always.
#[derive(Debug, Clone)]
pub struct CdnTail {
    span_ms: i64,
    bucket_ms: i64,
    /// Counts by bucket start (Unix ms).
    buckets: BTreeMap<i64, Counts>,
    back: Edge,
    head: Edge,
}

/// A tail's summary and how much of its window it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct TailSummary {
    pub summary: CdnSummary,
    /// Whether every entry of the window up to now is counted.
    pub complete: bool,
    /// The covered share of the window, from 0 to 1.
    pub coverage: f64,
    /// Entries newer than the covered span are not read yet (the budget ran out
    /// reading forward).
    pub behind: bool,
}

impl CdnTail {
    /// An empty tail of a `window`-long window at `now_ms`.
    pub fn new(window: Duration, now_ms: i64) -> Self {
        let span_ms = window_span(window).as_millis() as i64;
        let mut tail = Self {
            span_ms,
            bucket_ms: (span_ms / BUCKETS_PER_WINDOW).max(1),
            buckets: BTreeMap::new(),
            back: Edge::default(),
            head: Edge::default(),
        };
        tail.restart(now_ms);
        tail
    }

    pub fn window(&self) -> Duration {
        Duration::from_millis(self.span_ms as u64)
    }

    fn restart(&mut self, now_ms: i64) {
        self.buckets.clear();
        self.back = Edge::at(now_ms - 1);
        self.head = Edge::at(now_ms);
    }

    /// The window's start at `now_ms`, rounded down to a bucket.
    pub fn window_start(&self, now_ms: i64) -> i64 {
        (now_ms - self.span_ms).div_euclid(self.bucket_ms) * self.bucket_ms
    }

    /// Moves the window to end at `now_ms`: drops the buckets that left it, and starts
    /// over when even the newest counted entry left it.
    pub fn slide(&mut self, now_ms: i64) {
        let start = self.window_start(now_ms);
        if self.head.at_ms <= start || now_ms < self.head.at_ms {
            self.restart(now_ms);
            return;
        }
        self.buckets = self.buckets.split_off(&start);
        if self.back.at_ms < start - 1 {
            self.back = Edge::at(start - 1);
        }
    }

    /// The next read toward a complete window at `now_ms`: forward to now first (the
    /// newest traffic matters most), then back to the window's start; `None` when
    /// complete.
    pub fn next_read(&self, now_ms: i64) -> Option<TailRead> {
        let start = self.window_start(now_ms);
        if self.head.at_ms < now_ms {
            Some(TailRead {
                direction: Direction::Forward,
                from_ms: self.head.at_ms,
                to_ms: now_ms,
            })
        } else if self.back.at_ms >= start {
            Some(TailRead {
                direction: Direction::Backward,
                from_ms: start,
                to_ms: self.back.at_ms + 1,
            })
        } else {
            None
        }
    }

    fn count(&mut self, at_ms: i64, entry: &LogEntry) {
        let bucket = at_ms.div_euclid(self.bucket_ms) * self.bucket_ms;
        self.buckets.entry(bucket).or_default().add(entry);
    }

    /// Counts one page of `read`, in the order the read asked for; `finished` when the
    /// platform says no page follows. Entries outside the read, or behind its edge
    /// (a platform answering out of order), are not counted.
    pub fn absorb(&mut self, read: &TailRead, entries: &[LogEntry], finished: bool) {
        for entry in entries {
            let at_ms = entry.timestamp.timestamp_millis();
            if at_ms < read.from_ms || at_ms >= read.to_ms {
                continue;
            }
            let edge = match read.direction {
                Direction::Forward if at_ms >= self.head.at_ms => &mut self.head,
                Direction::Backward if at_ms <= self.back.at_ms => &mut self.back,
                _ => continue,
            };
            if at_ms == edge.at_ms && edge.counted.contains(&entry.request_id) {
                continue;
            }
            if at_ms != edge.at_ms {
                *edge = Edge::at(at_ms);
            }
            edge.counted.insert(entry.request_id.clone());
            self.count(at_ms, entry);
        }
        if finished {
            match read.direction {
                Direction::Forward => self.head = Edge::at(read.to_ms),
                Direction::Backward => self.back = Edge::at(read.from_ms - 1),
            }
        }
    }

    /// The summary at `now_ms` (after [`CdnTail::slide`] to it).
    pub fn summary(&self, pull_zone_id: i64, window: &str, now_ms: i64) -> TailSummary {
        let mut total = Counts::default();
        self.buckets.values().for_each(|counts| total.merge(counts));
        let start = self.window_start(now_ms);
        // The span includes an edge's millisecond when some of its entries are counted.
        let covered_from = if self.back.counted.is_empty() {
            self.back.at_ms + 1
        } else {
            self.back.at_ms
        }
        .max(start);
        let covered_to = if self.head.counted.is_empty() {
            self.head.at_ms
        } else {
            self.head.at_ms + 1
        }
        .min(now_ms);
        let wanted = (now_ms - start).max(1);
        let complete = self.back.at_ms < start && self.head.at_ms == now_ms && self.head.counted.is_empty();
        let coverage = if complete {
            1.0
        } else {
            ((covered_to - covered_from).max(0) as f64 / wanted as f64).min(0.999)
        };
        let hits = total.by_cache_status.get("HIT").copied().unwrap_or(0);
        let hit_ratio = if total.requests == 0 {
            "0".to_string()
        } else {
            format!("{:.3}", hits as f64 / total.requests as f64)
        };
        let time = |ms: i64| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                .unwrap_or_default()
        };
        TailSummary {
            summary: CdnSummary {
                pull_zone_id,
                window: window.to_string(),
                requests: total.requests,
                hit_ratio,
                by_status_class: total.by_status_class,
                by_cache_status: total.by_cache_status,
                from: time(covered_from),
                to: time(covered_to),
                coverage: format_share(coverage),
            },
            complete,
            coverage,
            behind: self.head.at_ms < now_ms,
        }
    }
}

/// A share as a decimal string, rounded down to three places ("1" only when whole).
fn format_share(share: f64) -> String {
    if share >= 1.0 {
        "1".to_string()
    } else {
        format!("{:.3}", (share * 1000.0).floor() / 1000.0)
    }
}

/// Reads at most `pages` pages toward a complete window at `now_ms`, each through
/// `fetch`. A failed page ends the poll; what the pages before it counted is kept.
pub async fn advance<E, Fut>(
    tail: &mut CdnTail,
    now_ms: i64,
    pages: u32,
    mut fetch: impl FnMut(LogQuery) -> Fut,
) -> Result<(), E>
where
    Fut: Future<Output = Result<LogsResponse, E>>,
{
    tail.slide(now_ms);
    let mut used = 0;
    while let Some(read) = tail.next_read(now_ms) {
        let mut offset = 0;
        loop {
            if used == pages {
                return Ok(());
            }
            let page = fetch(read.query(offset)).await?;
            used += 1;
            if page.data.is_empty() && page.pagination.has_more {
                // A platform that promises more but answers nothing: wait for the next poll.
                return Ok(());
            }
            let finished = !page.pagination.has_more;
            tail.absorb(&read, &page.data, finished);
            if finished {
                break;
            }
            offset += page.data.len() as u64;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn entry(at_ms: i64, id: usize, cache: &str) -> LogEntry {
        LogEntry {
            timestamp: DateTime::from_timestamp_millis(at_ms).expect("time"),
            request_id: format!("r{id}"),
            status_code: if id.is_multiple_of(5) { 503 } else { 200 },
            cache_status: cache.into(),
            ..LogEntry::default()
        }
    }

    /// Answers a query as the platform does: ordered by (time, requestId), paged.
    fn page(all: &[LogEntry], query: &LogQuery) -> LogsResponse {
        let (from, to) = (query.from.expect("from"), query.to.expect("to"));
        let mut matched: Vec<&LogEntry> = all.iter().filter(|e| e.timestamp >= from && e.timestamp < to).collect();
        matched.sort_by(|a, b| (a.timestamp, &a.request_id).cmp(&(b.timestamp, &b.request_id)));
        if query.order == Some(SortOrder::Desc) {
            matched.reverse();
        }
        let offset = query.offset.unwrap_or(0) as usize;
        let rest = matched.len().saturating_sub(offset);
        let taken = rest.min(PAGE_SIZE as usize);
        LogsResponse {
            data: matched.into_iter().skip(offset).take(taken).cloned().collect(),
            pagination: crate::api::models::logging::Pagination {
                has_more: rest > taken,
                ..Default::default()
            },
            query: crate::api::models::logging::QueryEcho {
                pull_zone_id: 7,
                from,
                to,
                order: query.order.unwrap_or_default(),
            },
        }
    }

    /// `advance` without a network, pages answered from `all`; how many it read.
    fn poll(tail: &mut CdnTail, all: &[LogEntry], now_ms: i64, pages: u32) -> u32 {
        let mut used = 0;
        let read = advance(tail, now_ms, pages, |query| {
            used += 1;
            std::future::ready(Ok::<_, ()>(page(all, &query)))
        });
        futures::executor::block_on(read).expect("pages");
        used
    }

    fn exact(all: &[LogEntry], from_ms: i64, to_ms: i64) -> i64 {
        all.iter()
            .filter(|e| {
                let at = e.timestamp.timestamp_millis();
                at >= from_ms && at < to_ms
            })
            .count() as i64
    }

    fn millis(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339).expect("time").timestamp_millis()
    }

    #[test]
    fn a_quiet_zone_is_complete_at_the_first_poll_and_then_reads_only_new_entries() {
        let hour = Duration::from_secs(3600);
        let mut all: Vec<LogEntry> = (0..2_500)
            .map(|i| entry(NOW - 1 - i as i64 * 1000, i, if i % 4 == 0 { "MISS" } else { "HIT" }))
            .collect();
        let mut tail = CdnTail::new(hour, NOW);
        assert_eq!(poll(&mut tail, &all, NOW, 20), 3, "2,500 entries in three pages");
        let first = tail.summary(7, "1h", NOW);
        assert!(first.complete, "{first:?}");
        assert_eq!(first.summary.coverage, "1");
        let start = tail.window_start(NOW);
        assert_eq!(first.summary.requests, exact(&all, start, NOW));
        assert_eq!(first.summary.hit_ratio, "0.750");
        assert_eq!(
            first.summary.by_status_class,
            [("2xx".to_string(), 2_000), ("5xx".to_string(), 500)].into()
        );
        assert_eq!(first.summary.by_cache_status["MISS"], 625);
        all.extend((0..1_500).map(|i| entry(NOW + i as i64 * 10, 10_000 + i, "MISS")));
        let later = NOW + 15_000;
        assert_eq!(poll(&mut tail, &all, later, 20), 2, "only the 1,500 new entries");
        let second = tail.summary(7, "1h", later);
        assert!(second.complete);
        assert_eq!(second.summary.requests, exact(&all, tail.window_start(later), later));
        assert_eq!(millis(&second.summary.from), tail.window_start(later));
        assert_eq!(millis(&second.summary.to), later);
    }

    #[test]
    fn a_short_budget_covers_the_newest_traffic_first_and_says_how_much() {
        let hour = Duration::from_secs(3600);
        let all: Vec<LogEntry> = (0..20_000).map(|i| entry(NOW - 1 - i as i64 * 150, i, "HIT")).collect();
        let mut tail = CdnTail::new(hour, NOW);
        poll(&mut tail, &all, NOW, 5);
        let partial = tail.summary(7, "1h", NOW);
        assert!(!partial.complete && !partial.behind);
        assert_eq!(partial.summary.requests, 5_000);
        assert_eq!(millis(&partial.summary.to), NOW, "the newest entries are counted");
        let (from, to) = (millis(&partial.summary.from), millis(&partial.summary.to));
        assert_eq!(exact(&all, from, to), 5_000, "exact over the span it states");
        assert!((partial.coverage - 0.208).abs() < 0.01, "{}", partial.coverage);
        assert_eq!(partial.summary.coverage, format_share(partial.coverage));
        let mut now = NOW;
        // Four more polls of five pages, each spending one on the (empty) newest logs.
        for _ in 0..4 {
            now += 1_000;
            poll(&mut tail, &all, now, 5);
        }
        let whole = tail.summary(7, "1h", now);
        assert!(whole.complete, "{whole:?}");
        assert_eq!(whole.summary.requests, exact(&all, tail.window_start(now), now));
    }

    #[test]
    fn traffic_beyond_the_budget_leaves_the_tail_behind_and_a_whole_window_behind_restarts_it() {
        let minute = Duration::from_secs(60);
        let all: Vec<LogEntry> = (0..6_000).map(|i| entry(NOW + i as i64 * 10, i, "HIT")).collect();
        let mut tail = CdnTail::new(minute, NOW);
        poll(&mut tail, &all, NOW + 50_000, 2);
        let behind = tail.summary(7, "1m", NOW + 50_000);
        assert!(behind.behind && !behind.complete);
        assert_eq!(behind.summary.requests, 2_000);
        assert_eq!(millis(&behind.summary.to), NOW + 19_991, "up to the last entry read");
        let much_later = NOW + 200_000;
        tail.slide(much_later);
        let restarted = tail.summary(7, "1m", much_later);
        assert_eq!((restarted.summary.requests, restarted.coverage), (0, 0.0));
    }

    #[test]
    fn windows_stay_inside_the_retention() {
        assert_eq!(window_span(Duration::from_secs(72 * 3600)), LONGEST_WINDOW);
        let longest = CdnTail::new(LONGEST_WINDOW, NOW);
        for step in 0..2_000i64 {
            let now = NOW + step * 997;
            let reach = now - longest.window_start(now);
            assert!(
                reach <= (72 * 3600 - 480) * 1000,
                "the start, rounded down, stays 8 minutes inside the retention: {reach} ms"
            );
        }
        assert_eq!(window_span(Duration::from_secs(3600)), Duration::from_secs(3600));
        let tail = CdnTail::new(Duration::from_secs(3600), NOW + 7_000);
        assert_eq!(
            tail.window_start(NOW + 7_000),
            NOW + 7_000 - 3_600_000 - 7_000,
            "rounded down to 10 s"
        );
        let short = CdnTail::new(Duration::from_secs(36), NOW + 150);
        assert_eq!(
            short.window_start(NOW + 150),
            NOW - 36_000 + 100,
            "rounded down to 100 ms"
        );
    }

    #[test]
    fn hostile_answers_are_not_counted() {
        let mut tail = CdnTail::new(Duration::from_secs(60), NOW);
        let read = tail.next_read(NOW).expect("a read");
        assert_eq!(read.direction, Direction::Backward);
        let outside = [entry(NOW + 5, 1, "HIT"), entry(NOW - 120_000, 2, "HIT")];
        tail.absorb(&read, &outside, false);
        let repeated = [entry(NOW - 10, 3, "HIT"), entry(NOW - 10, 3, "HIT")];
        tail.absorb(&read, &repeated, false);
        let unknown: Vec<LogEntry> = (0..40).map(|i| entry(NOW - 20, 100 + i, &format!("S{i}"))).collect();
        tail.absorb(&read, &unknown, false);
        let summary = tail.summary(7, "1m", NOW).summary;
        assert_eq!(summary.requests, 41);
        assert_eq!(summary.by_cache_status.len(), MAX_CACHE_STATUSES + 1);
        assert_eq!(summary.by_cache_status["other"], 40 - (MAX_CACHE_STATUSES as i64 - 1));
    }

    proptest! {
        /// Whatever the traffic (many entries per millisecond), budget and poll times,
        /// the counts equal the exact count over the span the summary states, and
        /// equal the window's count once complete.
        #[test]
        fn counts_are_exact_over_the_stated_span(
            offsets in proptest::collection::vec((0i64..400_000, 0usize..3), 1..3_000),
            crowded in any::<bool>(),
            budget in 1u32..6,
            steps in proptest::collection::vec(1i64..40_000, 1..12),
        ) {
            // Crowded: 100 distinct milliseconds, so pages end inside a millisecond.
            let at = |offset: i64| if crowded { offset % 100 * 4_000 } else { offset };
            let all: Vec<LogEntry> = offsets
                .iter()
                .enumerate()
                .map(|(i, (offset, cache))| entry(NOW - 200_000 + at(*offset), i, ["HIT", "MISS", "BYPASS"][*cache]))
                .collect();
            let window = Duration::from_secs(120);
            let mut now = NOW;
            let mut tail = CdnTail::new(window, now);
            for step in steps {
                poll(&mut tail, &all, now, budget);
                let summary = tail.summary(7, "2m", now);
                let (from, to) = (millis(&summary.summary.from), millis(&summary.summary.to));
                let visible: Vec<LogEntry> = all.iter().filter(|e| e.timestamp.timestamp_millis() < now).cloned().collect();
                let within = exact(&visible, from, to);
                let on_edges = exact(&visible, from, from + 1) + exact(&visible, to - 1, to);
                let counted = summary.summary.requests;
                prop_assert!(
                    counted <= within && within - counted <= on_edges,
                    "{counted} counted, {within} in [{from}, {to}), {on_edges} on its edges"
                );
                if summary.complete {
                    prop_assert_eq!(counted, exact(&visible, tail.window_start(now), now));
                }
                now += step;
            }
        }
    }
}
