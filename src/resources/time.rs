//! Times and durations as status, specs, annotations and flags write them.

use std::time::Duration;

/// RFC 3339 with seconds precision, as conditions and status times carry it.
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Parses a Go-style duration of the specs and annotations (`720h`, `90m`, `10s`).
pub fn parse_go_duration(raw: &str) -> Option<Duration> {
    humantime::parse_duration(raw.trim()).ok()
}

/// A duration flag of at least `MIN_SECS` seconds.
pub fn duration_of_at_least<const MIN_SECS: u64>(raw: &str) -> Result<Duration, String> {
    let duration = humantime::parse_duration(raw).map_err(|error| error.to_string())?;
    if duration < Duration::from_secs(MIN_SECS) {
        return Err(format!("must be at least {MIN_SECS}s"));
    }
    Ok(duration)
}
