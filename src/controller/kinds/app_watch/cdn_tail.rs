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
use crate::controller::kinds::app_watch::resource::CdnSummary;

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
mod tests;
