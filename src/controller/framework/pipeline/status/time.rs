//! Times and durations as status, specs and annotations write them.

use std::time::Duration;

/// RFC 3339 with seconds precision, as conditions and status times carry it.
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Parses a Go-style duration of the specs and annotations (`720h`, `90m`, `10s`).
pub fn parse_go_duration(raw: &str) -> Option<Duration> {
    humantime::parse_duration(raw.trim()).ok()
}
