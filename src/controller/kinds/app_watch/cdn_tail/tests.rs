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
