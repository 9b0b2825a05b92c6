//! CDN request logs: validation and execution of v2 queries and v1 day files. No HTTP.

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::api::models::logging::{
    LogEntry, LogsResponse, Pagination, QueryEcho, SortOrder, StatusMatch, parse_cache_status,
};

pub(crate) const RETENTION: Duration = Duration::days(3);
pub(crate) const DEFAULT_RANGE: Duration = Duration::hours(24);
pub(crate) const DEFAULT_LIMIT: u64 = 100;
pub(crate) const MAX_LIMIT: u64 = 1000;
const MAX_SEARCH_TOKENS: usize = 16;
const MAX_TOKEN_CHARS: usize = 128;

/// A validated v2 query.
#[derive(Debug, Clone)]
pub(crate) struct LogQuery {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    status: Vec<StatusMatch>,
    cache_status: Vec<String>,
    country: Option<String>,
    edge_location: Option<String>,
    remote_ip: Option<String>,
    url_contains: Option<String>,
    user_agent_contains: Option<String>,
    referer_contains: Option<String>,
    search: Vec<String>,
    request_id: Option<String>,
    pub limit: u64,
    pub offset: u64,
    pub order: SortOrder,
}

fn invalid<T>(message: impl Into<String>) -> Result<T, String> {
    Err(message.into())
}

fn parse_time(name: &str, raw: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("`{name}` must be an ISO-8601 UTC timestamp, got `{raw}`"))
}

fn lowered(value: &str) -> Option<String> {
    Some(value.to_lowercase())
}

/// The words of `search`, case-folded: at most [`MAX_SEARCH_TOKENS`], each of at most
/// [`MAX_TOKEN_CHARS`] characters.
fn search_tokens(value: &str) -> Result<Vec<String>, String> {
    let tokens: Vec<String> = value.split_whitespace().map(str::to_lowercase).collect();
    if tokens.len() > MAX_SEARCH_TOKENS {
        return invalid(format!(
            "`search` has {} tokens; at most {MAX_SEARCH_TOKENS} are allowed",
            tokens.len()
        ));
    }
    if let Some(long) = tokens.iter().find(|t| t.chars().count() > MAX_TOKEN_CHARS) {
        return invalid(format!(
            "`search` token of {} characters exceeds {MAX_TOKEN_CHARS}",
            long.chars().count()
        ));
    }
    Ok(tokens)
}

impl LogQuery {
    /// Validates the query parameters of `GET /v2/pullzones/{id}/logs` at `now`.
    pub(crate) fn parse(params: &[(String, String)], now: DateTime<Utc>) -> Result<Self, String> {
        let mut query = LogQuery::unfiltered(now);
        let (mut from, mut to) = (None, None);
        let mut seen = std::collections::HashSet::new();
        for (name, value) in params {
            if !seen.insert(name.as_str()) {
                return invalid(format!("parameter `{name}` is repeated"));
            }
            match name.as_str() {
                "from" => from = Some(parse_time(name, value)?),
                "to" => to = Some(parse_time(name, value)?),
                _ => query.set(name, value)?,
            }
        }
        query.to = to.unwrap_or(now);
        query.from = from.unwrap_or(query.to - DEFAULT_RANGE);
        if query.to <= query.from {
            return invalid("`to` must be after `from`");
        }
        if query.to - query.from > RETENTION {
            return invalid("the range from `from` to `to` may span at most 3 days");
        }
        if query.from < now - RETENTION {
            return invalid("`from` reaches past the 3-day retention");
        }
        Ok(query)
    }

    /// The query with no parameters: the last day's entries up to `now`, newest first,
    /// one default page.
    fn unfiltered(now: DateTime<Utc>) -> Self {
        LogQuery {
            from: now - DEFAULT_RANGE,
            to: now,
            status: Vec::new(),
            cache_status: Vec::new(),
            country: None,
            edge_location: None,
            remote_ip: None,
            url_contains: None,
            user_agent_contains: None,
            referer_contains: None,
            search: Vec::new(),
            request_id: None,
            limit: DEFAULT_LIMIT,
            offset: 0,
            order: SortOrder::Desc,
        }
    }

    /// Takes the parameter `name` other than the range's `from` and `to`.
    fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        match name {
            "status" => self.status = value.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "cacheStatus" => self.cache_status = value.split(',').map(parse_cache_status).collect::<Result<_, _>>()?,
            "country" => self.country = lowered(value),
            "edgeLocation" => self.edge_location = lowered(value),
            "remoteIp" => self.remote_ip = Some(value.trim().to_string()),
            "urlContains" => self.url_contains = lowered(value),
            "userAgentContains" => self.user_agent_contains = lowered(value),
            "refererContains" => self.referer_contains = lowered(value),
            "requestId" => self.request_id = Some(value.to_string()),
            "search" => self.search = search_tokens(value)?,
            "includeOriginShield" => {
                value
                    .parse::<bool>()
                    .map_err(|_| format!("`includeOriginShield` must be true or false, got `{value}`"))?;
            }
            "limit" => {
                self.limit = match value.parse::<u64>() {
                    Ok(n @ 1..=MAX_LIMIT) => n,
                    _ => {
                        return invalid(format!(
                            "`limit` must be an integer from 1 to {MAX_LIMIT}, got `{value}`"
                        ));
                    }
                };
            }
            "offset" => {
                self.offset = value
                    .parse::<u64>()
                    .map_err(|_| format!("`offset` must be a non-negative integer, got `{value}`"))?;
            }
            "order" => {
                self.order = match value {
                    "asc" => SortOrder::Asc,
                    "desc" => SortOrder::Desc,
                    _ => return invalid(format!("`order` must be asc or desc, got `{value}`")),
                };
            }
            other => return invalid(format!("unknown parameter `{other}`")),
        }
        Ok(())
    }

    fn matches(&self, entry: &LogEntry) -> bool {
        let contains = |haystack: &str, needle: &Option<String>| {
            needle
                .as_ref()
                .is_none_or(|n| haystack.to_lowercase().contains(n.as_str()))
        };
        let equals =
            |value: &str, wanted: &Option<String>| wanted.as_ref().is_none_or(|w| value.eq_ignore_ascii_case(w));
        entry.matches_statuses(&self.status, &self.cache_status)
            && equals(&entry.country_code, &self.country)
            && equals(&entry.edge_location, &self.edge_location)
            && self.remote_ip.as_ref().is_none_or(|ip| &entry.remote_ip == ip)
            && self.request_id.as_ref().is_none_or(|id| &entry.request_id == id)
            && contains(&entry.url, &self.url_contains)
            && contains(&entry.user_agent, &self.user_agent_contains)
            && contains(&entry.referer, &self.referer_contains)
            && entry.matches_search(&self.search)
    }

    /// Runs the query over one Pull Zone's entries: reads the time range only, and
    /// stops one match after the page.
    pub(crate) fn execute(&self, pull_zone_id: i64, logs: &PullZoneLogs) -> LogsResponse {
        let range = logs.range(self.from, self.to);
        let matched: Box<dyn Iterator<Item = &LogEntry>> = match self.order {
            SortOrder::Asc => Box::new(range.iter().filter(|e| self.matches(e))),
            SortOrder::Desc => Box::new(range.iter().rev().filter(|e| self.matches(e))),
        };
        let mut matched = matched.skip(self.offset as usize);
        let data: Vec<LogEntry> = matched.by_ref().take(self.limit as usize).cloned().collect();
        let returned = data.len() as u64;
        LogsResponse {
            data,
            pagination: Pagination {
                offset: self.offset,
                limit: self.limit,
                returned,
                has_more: matched.next().is_some(),
            },
            query: QueryEcho {
                pull_zone_id,
                from: self.from,
                to: self.to,
                order: self.order,
            },
        }
    }
}

/// One Pull Zone's entries, kept in (timestamp, requestId) order so a query reads
/// only its time range.
#[derive(Debug, Clone, Default)]
pub struct PullZoneLogs {
    entries: Vec<LogEntry>,
}

impl PullZoneLogs {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds entries in any order. Newer entries than all held are appended; older ones
    /// cost a merge of two sorted runs.
    pub fn insert(&mut self, entries: impl IntoIterator<Item = LogEntry>) {
        let order = |a: &LogEntry, b: &LogEntry| (a.timestamp, &a.request_id).cmp(&(b.timestamp, &b.request_id));
        let mut batch: Vec<LogEntry> = entries.into_iter().collect();
        batch.sort_by(order);
        let in_order = match (self.entries.last(), batch.first()) {
            (Some(last), Some(first)) => order(last, first).is_le(),
            _ => true,
        };
        self.entries.extend(batch);
        if !in_order {
            self.entries.sort_by(order);
        }
    }

    /// Drops the entries at or before `oldest`.
    pub fn expire(&mut self, oldest: DateTime<Utc>) {
        let expired = self.entries.partition_point(|e| e.timestamp <= oldest);
        self.entries.drain(..expired);
    }

    /// The entries of `[from, to)`, oldest first.
    pub fn range(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> &[LogEntry] {
        let start = self.entries.partition_point(|e| e.timestamp < from);
        let end = self.entries.partition_point(|e| e.timestamp < to).max(start);
        &self.entries[start..end]
    }
}

/// Parses the `MM-dd-yy` day of a v1 path and checks it against the retention.
pub(crate) fn v1_day(raw: &str, now: DateTime<Utc>) -> Result<NaiveDate, String> {
    let day = NaiveDate::parse_from_str(raw, "%m-%d-%y").map_err(|_| format!("`{raw}` is not a MM-dd-yy date"))?;
    let end = day
        .succ_opt()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{raw}` is out of range"))?;
    if end <= now - RETENTION {
        return invalid(format!("{raw} is outside the 3-day retention"));
    }
    Ok(day)
}

/// A validated v1 query: which lines of a day file, in which order.
#[derive(Debug, Clone, Default)]
pub(crate) struct DayFileQuery {
    /// Lines skipped from the beginning (after filter and order).
    start: usize,
    /// Index of the line after the last one returned; none reads to the end.
    end: Option<usize>,
    order: SortOrder,
    status: Vec<StatusMatch>,
    /// Lower-cased text a line must contain.
    search: Option<String>,
}

fn line_index(name: &str, value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .map_err(|_| format!("`{name}` must be a non-negative integer, got `{value}`"))
}

/// A v1 `status` item: a class, written `2xx` or as its hundred (`200`).
fn status_class(raw: &str) -> Result<StatusMatch, String> {
    match raw.parse::<StatusMatch>()? {
        StatusMatch::Code(code) if code % 100 == 0 => Ok(StatusMatch::Class(code / 100)),
        StatusMatch::Code(_) => invalid(format!(
            "`status` filters by class: 100, 200, 300, 400 or 500 (or 1xx to 5xx), got `{raw}`"
        )),
        class => Ok(class),
    }
}

impl DayFileQuery {
    /// Validates the query parameters of `GET /{MM-dd-yy}/{id}.log`. The sort order is
    /// `order` in the platform's guide and `sort` in its API reference: either is read.
    pub(crate) fn parse(params: &[(String, String)]) -> Result<Self, String> {
        let mut query = DayFileQuery::default();
        let mut seen = std::collections::HashSet::new();
        for (name, value) in params {
            let key = if name == "sort" { "order" } else { name.as_str() };
            if !seen.insert(key) {
                return invalid(format!("parameter `{name}` is repeated"));
            }
            match key {
                "start" => query.start = line_index(name, value)?,
                "end" => query.end = Some(line_index(name, value)?),
                "order" => {
                    query.order = match value.as_str() {
                        "asc" => SortOrder::Asc,
                        "desc" => SortOrder::Desc,
                        _ => return invalid(format!("`{name}` must be asc or desc, got `{value}`")),
                    };
                }
                "status" => query.status = value.split(',').map(status_class).collect::<Result<_, _>>()?,
                "search" => query.search = Some(value.to_lowercase()),
                "download" => {
                    value
                        .parse::<bool>()
                        .map_err(|_| format!("`download` must be true or false, got `{value}`"))?;
                }
                other => return invalid(format!("unknown parameter `{other}`")),
            }
        }
        if query.end.is_some_and(|end| end < query.start) {
            return invalid("`end` must not be before `start`");
        }
        Ok(query)
    }

    /// The day file: that day's retained entries that match, in the query's order (newest
    /// first unless asked), lines `start` to `end`, one line each.
    pub(crate) fn day_file(&self, logs: &PullZoneLogs, day: NaiveDate, now: DateTime<Utc>) -> String {
        let start = day.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
        let end = day.succ_opt().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc());
        let (Some(from), Some(to)) = (start, end) else {
            return String::new();
        };
        let retained = logs.range(from, to).iter().filter(|e| e.timestamp > now - RETENTION);
        let ordered: Box<dyn Iterator<Item = &LogEntry>> = match self.order {
            SortOrder::Asc => Box::new(retained),
            SortOrder::Desc => Box::new(retained.rev()),
        };
        let lines = ordered
            .filter(|e| e.matches_statuses(&self.status, &[]))
            .map(LogEntry::to_v1_line)
            .filter(|line| {
                self.search
                    .as_ref()
                    .is_none_or(|text| line.to_lowercase().contains(text))
            })
            .skip(self.start);
        let wanted = self.end.map_or(usize::MAX, |end| end - self.start);
        lines.take(wanted).map(|line| line + "\n").collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-20T12:00:00Z")
            .expect("valid")
            .with_timezone(&Utc)
    }

    #[test]
    fn defaults_cover_the_last_day() {
        let q = LogQuery::parse(&[], now()).expect("valid");
        assert_eq!(q.to, now());
        assert_eq!(q.from, now() - Duration::hours(24));
        assert_eq!((q.limit, q.offset, q.order), (100, 0, SortOrder::Desc));
    }

    #[test]
    fn bad_parameters_are_rejected_with_a_reason() {
        let cases: &[&[(&str, &str)]] = &[
            &[("bogus", "1")],
            &[("limit", "0")],
            &[("limit", "1001")],
            &[("offset", "-1")],
            &[("order", "up")],
            &[("status", "6xx")],
            &[("status", "abc")],
            &[("cacheStatus", "WARM")],
            &[("from", "yesterday")],
            &[("from", "2026-11-20T11:00:00Z"), ("to", "2026-11-20T10:00:00Z")],
            &[("from", "2026-11-16T00:00:00Z"), ("to", "2026-11-20T00:00:00Z")],
            &[("from", "2026-11-17T11:59:59Z")],
            &[("includeOriginShield", "maybe")],
            &[("limit", "5"), ("limit", "6")],
        ];
        for case in cases {
            assert!(
                LogQuery::parse(&params(case), now()).is_err(),
                "{case:?} should be refused"
            );
        }
        let tokens = vec!["a"; 17].join(" ");
        assert!(LogQuery::parse(&params(&[("search", &tokens)]), now()).is_err());
        assert!(LogQuery::parse(&params(&[("search", &"x".repeat(129))]), now()).is_err());
        assert!(LogQuery::parse(&params(&[("search", &"x".repeat(128))]), now()).is_ok());
    }

    #[test]
    fn v1_day_respects_retention() {
        assert!(v1_day("11-20-26", now()).is_ok());
        assert!(
            v1_day("11-17-26", now()).is_ok(),
            "the tail of that day is still retained"
        );
        assert!(v1_day("11-16-26", now()).is_err());
        assert!(v1_day("2026-11-20", now()).is_err());
    }

    /// Lines of a day file of five entries (r0 oldest … r4 newest) for `pairs`, as
    /// their request ids.
    fn day_file_ids(pairs: &[(&str, &str)]) -> Result<String, String> {
        let statuses = [200, 404, 301, 503, 200];
        let entries = statuses.iter().enumerate().map(|(i, status)| LogEntry {
            timestamp: now() - Duration::minutes(10 - i as i64),
            request_id: format!("r{i}"),
            status_code: *status,
            url: format!("https://web.example.com/{}", if i % 2 == 0 { "Shop" } else { "blog" }),
            ..LogEntry::default()
        });
        let mut logs = PullZoneLogs::default();
        logs.insert(entries);
        let query = DayFileQuery::parse(&params(pairs))?;
        let file = query.day_file(&logs, now().date_naive(), now());
        let ids: Vec<&str> = file
            .lines()
            .map(|line| line.split('|').nth(10).unwrap_or_default())
            .collect();
        Ok(ids.join(" "))
    }

    #[test]
    fn a_day_file_is_newest_first_unless_asked_and_order_or_sort_chooses() {
        assert_eq!(day_file_ids(&[]).as_deref(), Ok("r4 r3 r2 r1 r0"));
        assert_eq!(day_file_ids(&[("order", "asc")]).as_deref(), Ok("r0 r1 r2 r3 r4"));
        assert_eq!(day_file_ids(&[("sort", "asc")]).as_deref(), Ok("r0 r1 r2 r3 r4"));
        assert_eq!(day_file_ids(&[("order", "desc")]).as_deref(), Ok("r4 r3 r2 r1 r0"));
        assert!(day_file_ids(&[("order", "newest")]).is_err());
        assert!(
            day_file_ids(&[("order", "asc"), ("sort", "desc")]).is_err(),
            "one order"
        );
    }

    #[test]
    fn start_and_end_bound_the_lines_after_filter_and_order() {
        assert_eq!(day_file_ids(&[("start", "1")]).as_deref(), Ok("r3 r2 r1 r0"));
        assert_eq!(day_file_ids(&[("start", "1"), ("end", "3")]).as_deref(), Ok("r3 r2"));
        assert_eq!(day_file_ids(&[("end", "0")]).as_deref(), Ok(""));
        assert_eq!(day_file_ids(&[("start", "9")]).as_deref(), Ok(""));
        assert_eq!(
            day_file_ids(&[("status", "200"), ("order", "asc"), ("start", "1")]).as_deref(),
            Ok("r4")
        );
        for bad in [("start", "-1"), ("end", "x"), ("start", "1.5")] {
            assert!(day_file_ids(&[bad]).is_err(), "{bad:?}");
        }
        let backwards = day_file_ids(&[("start", "3"), ("end", "2")]).expect_err("end before start");
        assert!(backwards.contains("`end`"), "{backwards}");
    }

    #[test]
    fn status_keeps_the_classes_named() {
        assert_eq!(day_file_ids(&[("status", "200")]).as_deref(), Ok("r4 r0"));
        assert_eq!(day_file_ids(&[("status", "400,500")]).as_deref(), Ok("r3 r1"));
        assert_eq!(day_file_ids(&[("status", "3xx")]).as_deref(), Ok("r2"));
        let exact = day_file_ids(&[("status", "404")]).expect_err("a code is not a class");
        assert!(exact.contains("class"), "{exact}");
        assert!(day_file_ids(&[("status", "600")]).is_err());
    }

    #[test]
    fn search_keeps_lines_holding_the_text_in_any_case() {
        assert_eq!(day_file_ids(&[("search", "shop")]).as_deref(), Ok("r4 r2 r0"));
        assert_eq!(day_file_ids(&[("search", "BLOG")]).as_deref(), Ok("r3 r1"));
        assert_eq!(day_file_ids(&[("search", "")]).as_deref(), Ok("r4 r3 r2 r1 r0"));
    }

    #[test]
    fn unknown_and_repeated_parameters_are_refused() {
        let unknown = day_file_ids(&[("bogus", "1")]).expect_err("unknown");
        assert!(unknown.contains("`bogus`"), "{unknown}");
        assert!(day_file_ids(&[("start", "1"), ("start", "2")]).is_err());
        assert!(day_file_ids(&[("download", "false")]).is_ok());
        assert!(day_file_ids(&[("download", "maybe")]).is_err());
    }

    #[test]
    fn queries_read_their_time_range_in_either_order_and_page_by_offset() {
        let at = |ms: i64, id: &str| LogEntry {
            timestamp: now() - Duration::milliseconds(10_000 - ms),
            request_id: id.into(),
            status_code: 200,
            ..LogEntry::default()
        };
        let mut logs = PullZoneLogs::default();
        logs.insert([at(5, "e"), at(1, "a"), at(3, "c")]);
        logs.insert([at(3, "b"), at(9, "f")]);
        let time = |ms: i64| (now() - Duration::milliseconds(10_000 - ms)).to_rfc3339();
        let ids = |pairs: &[(&str, String)]| {
            let query = LogQuery::parse(
                &params(&pairs.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>()),
                now(),
            )
            .expect("valid");
            let page = query.execute(7, &logs);
            let ids: Vec<String> = page.data.iter().map(|e| e.request_id.clone()).collect();
            (ids.join(""), page.pagination.has_more)
        };
        let window = |order: &str, offset: &str| {
            vec![
                ("from", time(3)),
                ("to", time(9)),
                ("order", order.to_string()),
                ("limit", "2".to_string()),
                ("offset", offset.to_string()),
            ]
        };
        assert_eq!(ids(&window("asc", "0")), ("bc".to_string(), true));
        assert_eq!(ids(&window("asc", "2")), ("e".to_string(), false));
        assert_eq!(ids(&window("desc", "0")), ("ec".to_string(), true));
        assert_eq!(ids(&window("desc", "2")), ("b".to_string(), false));
        logs.expire(now() - Duration::milliseconds(10_000 - 3));
        assert_eq!(logs.len(), 2, "entries at or before the cut are dropped");
    }
}
