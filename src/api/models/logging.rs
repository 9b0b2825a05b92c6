//! CDN request logs: the v2 JSON API and the legacy v1 pipe-delimited day file.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Cache status values of a CDN request.
pub const CACHE_STATUSES: [&str; 7] = ["HIT", "MISS", "BYPASS", "REVALIDATED", "STALE", "UPDATING", "-"];

/// One CDN request (a v2 `data[]` entry, or a parsed v1 line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub timestamp: DateTime<Utc>,
    #[serde(default)]
    pub pull_zone_id: i64,
    #[serde(default)]
    pub request_id: String,
    #[serde(default)]
    pub cache_status: String,
    #[serde(default)]
    pub status_code: u16,
    #[serde(default)]
    pub bytes_sent: u64,
    #[serde(default)]
    pub edge_location: String,
    #[serde(default)]
    pub scheme: String,
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub remote_ip: String,
    #[serde(default)]
    pub country_code: String,
    #[serde(default)]
    pub user_agent: String,
    #[serde(default)]
    pub referer: String,
    #[serde(default)]
    pub body_bytes_sent: u64,
    #[serde(default)]
    pub content_range: String,
    #[serde(default)]
    pub authorization_header: String,
    #[serde(default)]
    pub ja4_fingerprint: String,
    #[serde(default)]
    pub asn: i64,
    #[serde(default)]
    pub asn_organization: String,
}

/// `pagination` of a v2 answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub offset: u64,
    pub limit: u64,
    pub returned: u64,
    pub has_more: bool,
}

/// `query` echo of a v2 answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryEcho {
    pub pull_zone_id: i64,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub order: SortOrder,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    Asc,
    #[default]
    Desc,
}

/// Answer of `GET /v2/pullzones/{pullZoneId}/logs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogsResponse {
    pub data: Vec<LogEntry>,
    pub pagination: Pagination,
    pub query: QueryEcho,
}

/// Validates one `cacheStatus` filter item (any case) into its canonical spelling.
pub fn parse_cache_status(raw: &str) -> Result<String, String> {
    let value = raw.trim().to_ascii_uppercase();
    if CACHE_STATUSES.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(format!(
            "`cacheStatus` item `{value}` is not one of {}",
            CACHE_STATUSES.join(", ")
        ))
    }
}

/// A `status` filter item: an exact code or a class such as `5xx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMatch {
    Code(u16),
    Class(u16),
}

impl std::str::FromStr for StatusMatch {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let item = raw.trim().to_ascii_lowercase();
        let bad = || format!("`status` item `{raw}` is neither a status code nor a class like 5xx");
        if let Some(class) = item.strip_suffix("xx") {
            return match class.parse::<u16>() {
                Ok(c @ 1..=5) => Ok(StatusMatch::Class(c)),
                _ => Err(bad()),
            };
        }
        match item.parse::<u16>() {
            Ok(code @ 100..=599) => Ok(StatusMatch::Code(code)),
            _ => Err(bad()),
        }
    }
}

impl StatusMatch {
    pub fn matches(self, status_code: u16) -> bool {
        match self {
            StatusMatch::Code(code) => status_code == code,
            StatusMatch::Class(class) => status_code / 100 == class,
        }
    }
}

/// Error of parsing a v1 line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("v1 log line {line}: {reason}")]
pub struct V1ParseError {
    pub line: usize,
    pub reason: String,
}

const V1_FIELDS: usize = 12;

impl LogEntry {
    /// Whether the entry's status code matches one of `status` and its cache status
    /// one of `cache_status` (ignoring case); an empty list matches every entry.
    pub fn matches_statuses(&self, status: &[StatusMatch], cache_status: &[String]) -> bool {
        (status.is_empty() || status.iter().any(|s| s.matches(self.status_code)))
            && (cache_status.is_empty() || cache_status.iter().any(|c| c.eq_ignore_ascii_case(&self.cache_status)))
    }

    /// Whether every token of a `search` (lower-cased) appears, ignoring case, in one
    /// of the URL, user agent, referer, remote IP, request id, host, country or edge
    /// location.
    pub fn matches_search(&self, lowered_tokens: &[String]) -> bool {
        lowered_tokens.iter().all(|token| {
            [
                &self.url,
                &self.user_agent,
                &self.referer,
                &self.remote_ip,
                &self.request_id,
                &self.host,
                &self.country_code,
                &self.edge_location,
            ]
            .iter()
            .any(|field| field.to_lowercase().contains(token.as_str()))
        })
    }

    /// Formats the entry as one v1 line: cache status, status code, timestamp (Unix ms),
    /// bytes sent, pull zone id, remote IP, referer, URL, edge location, user agent,
    /// request id, country code.
    pub fn to_v1_line(&self) -> String {
        let clean = |s: &str| s.replace(['|', '\n', '\r'], " ");
        [
            clean(&self.cache_status),
            self.status_code.to_string(),
            self.timestamp.timestamp_millis().to_string(),
            self.bytes_sent.to_string(),
            self.pull_zone_id.to_string(),
            clean(&self.remote_ip),
            clean(&self.referer),
            clean(&self.url),
            clean(&self.edge_location),
            clean(&self.user_agent),
            clean(&self.request_id),
            clean(&self.country_code),
        ]
        .join("|")
    }

    /// Parses one v1 line (`line` is its 1-based number, for the error message).
    pub fn from_v1_line(raw: &str, line: usize) -> Result<Self, V1ParseError> {
        let err = |reason: String| V1ParseError { line, reason };
        let fields: Vec<&str> = raw.split('|').collect();
        if fields.len() != V1_FIELDS {
            return Err(err(format!("expected {V1_FIELDS} fields, found {}", fields.len())));
        }
        let number = |i: usize, name: &str| -> Result<i64, V1ParseError> {
            fields[i]
                .trim()
                .parse::<i64>()
                .map_err(|_| err(format!("{name} `{}` is not a number", fields[i])))
        };
        let millis = number(2, "timestamp")?;
        let timestamp = DateTime::from_timestamp_millis(millis)
            .ok_or_else(|| err(format!("timestamp {millis} is out of range")))?;
        let status_code = u16::try_from(number(1, "status code")?)
            .map_err(|_| err(format!("status code `{}` is out of range", fields[1])))?;
        let bytes_sent = u64::try_from(number(3, "bytes sent")?)
            .map_err(|_| err(format!("bytes sent `{}` is negative", fields[3])))?;
        let url = fields[7].to_string();
        let (scheme, host, path) = split_url(&url);
        Ok(LogEntry {
            timestamp,
            pull_zone_id: number(4, "pull zone id")?,
            request_id: fields[10].to_string(),
            cache_status: fields[0].to_string(),
            status_code,
            bytes_sent,
            edge_location: fields[8].to_string(),
            scheme,
            host,
            path,
            url,
            remote_ip: fields[5].to_string(),
            country_code: fields[11].to_string(),
            user_agent: fields[9].to_string(),
            referer: fields[6].to_string(),
            ..LogEntry::default()
        })
    }
}

/// Splits `scheme://host/path?query` into scheme, host and path (without the query).
fn split_url(url: &str) -> (String, String, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (String::new(), String::new(), url.to_string());
    };
    let (host, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let path = path.split('?').next().unwrap_or(path);
    (scheme.to_string(), host.to_string(), path.to_string())
}

/// Parses a whole v1 day file; blank lines are skipped.
pub fn parse_v1_file(body: &str) -> Result<Vec<LogEntry>, V1ParseError> {
    body.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| LogEntry::from_v1_line(l.trim_end_matches('\r'), i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_line_round_trips_the_twelve_fields() {
        let entry = LogEntry {
            timestamp: DateTime::from_timestamp_millis(1_700_000_000_123).expect("valid"),
            pull_zone_id: 42,
            request_id: "req-1".into(),
            cache_status: "HIT".into(),
            status_code: 200,
            bytes_sent: 512,
            edge_location: "DE".into(),
            scheme: "https".into(),
            host: "cdn.example.com".into(),
            path: "/a/b.js".into(),
            url: "https://cdn.example.com/a/b.js?v=1".into(),
            remote_ip: "203.0.113.9".into(),
            country_code: "DE".into(),
            user_agent: "curl/8".into(),
            referer: "-".into(),
            ..LogEntry::default()
        };
        let line = entry.to_v1_line();
        assert_eq!(line.split('|').count(), 12);
        assert_eq!(LogEntry::from_v1_line(&line, 1), Ok(entry));
    }

    #[test]
    fn status_filters_match_a_code_or_class_and_a_cache_status_in_any_case() {
        let entry = LogEntry {
            status_code: 404,
            cache_status: "MISS".into(),
            ..LogEntry::default()
        };
        let parsed = |raw: &[&str]| -> Vec<StatusMatch> { raw.iter().map(|s| s.parse().expect("valid")).collect() };
        assert!(entry.matches_statuses(&[], &[]));
        assert!(entry.matches_statuses(&parsed(&["200", "4xx"]), &["miss".into()]));
        assert!(!entry.matches_statuses(&parsed(&["5xx"]), &[]));
        assert!(!entry.matches_statuses(&[], &["HIT".into()]));
    }

    #[test]
    fn v1_parse_errors_name_the_line() {
        let err = parse_v1_file("HIT|200|x|1|1|ip|r|u|e|ua|id|DE\n").expect_err("bad timestamp");
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("timestamp"), "{err}");
        assert!(parse_v1_file("a|b\n").is_err());
    }
}
