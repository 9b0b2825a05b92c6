//! Times and durations as status, specs, annotations and flags write them.

use std::time::Duration;

/// RFC 3339 with seconds precision, as conditions and status times carry it.
pub fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A duration as a spec writes it, Go-style (`720h`, `90m`, `10s`): kept as written,
/// read as a [`Duration`] where it is used. Its schema is a string's; the CRD's rules
/// say which durations a field accepts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct GoDuration(String);

impl GoDuration {
    /// The duration it says; `None` when it says none (the CRD's rules refuse such a
    /// spec, so only an object written before them holds one).
    pub fn duration(&self) -> Option<Duration> {
        parse_go_duration(&self.0)
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for GoDuration {
    fn from(written: &str) -> Self {
        GoDuration(written.to_string())
    }
}

impl std::fmt::Display for GoDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `time` as a duration since the Unix epoch (zero before it).
pub fn since_epoch(time: chrono::DateTime<chrono::Utc>) -> Duration {
    Duration::from_millis(u64::try_from(time.timestamp_millis()).unwrap_or_default())
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
