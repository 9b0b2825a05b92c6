//! The filters of `edgectl logs` applied to a legacy v1 day file, which the platform
//! serves whole: status codes or classes, cache statuses and free-text search, with
//! the v2 API's meaning.

use crate::api::models::logging::{LogEntry, StatusMatch, parse_cache_status};

/// Filters of a v1 day file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayFilter {
    status: Vec<StatusMatch>,
    cache_status: Vec<String>,
    search: Vec<String>,
}

impl DayFilter {
    /// Validates the filters as the v2 API would.
    pub fn new(status: &[String], cache_status: &[String], search: Option<&str>) -> Result<Self, String> {
        let status = status.iter().map(|s| s.parse()).collect::<Result<_, _>>()?;
        let cache_status = cache_status
            .iter()
            .map(|c| parse_cache_status(c))
            .collect::<Result<_, _>>()?;
        let search = search
            .map(|s| s.split_whitespace().map(str::to_lowercase).collect())
            .unwrap_or_default();
        Ok(Self {
            status,
            cache_status,
            search,
        })
    }

    pub fn matches(&self, entry: &LogEntry) -> bool {
        (self.status.is_empty() || self.status.iter().any(|s| s.matches(entry.status_code)))
            && (self.cache_status.is_empty()
                || self
                    .cache_status
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&entry.cache_status)))
            && entry.matches_search(&self.search)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: u16, cache: &str, url: &str) -> LogEntry {
        LogEntry {
            status_code: status,
            cache_status: cache.into(),
            url: url.into(),
            ..LogEntry::default()
        }
    }

    #[test]
    fn day_filters_mean_what_the_v2_parameters_mean() {
        let filter = DayFilter::new(&["5xx".into(), "404".into()], &["miss".into()], Some("LOGIN")).expect("valid");
        assert!(filter.matches(&entry(503, "MISS", "https://a/login")));
        assert!(filter.matches(&entry(404, "MISS", "https://a/Login?x")));
        assert!(!filter.matches(&entry(200, "MISS", "https://a/login")));
        assert!(!filter.matches(&entry(503, "HIT", "https://a/login")));
        assert!(!filter.matches(&entry(503, "MISS", "https://a/logout")));
        assert!(DayFilter::default().matches(&entry(200, "HIT", "/")));
        assert!(DayFilter::new(&["6xx".into()], &[], None).is_err());
        assert!(DayFilter::new(&[], &["WARM".into()], None).is_err());
    }
}
