//! `edgectl logs`: the v2 log query, with `--follow`, and the legacy v1 day file, which
//! the platform serves whole and which the same filters (status codes or classes,
//! cache statuses, free-text search) are applied to here, with the v2 API's meaning.

use chrono::Utc;
use futures::{StreamExt, TryStreamExt};

use super::args::{LogsArgs, Output};
use super::parse::parse_day;
use super::{CommandError, render, show, since};
use crate::api::models::logging::{LogEntry, SortOrder, StatusMatch, parse_cache_status};
use crate::api::{EdgeClient, LogQuery};

/// Filters of a v1 day file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DayFilter {
    status: Vec<StatusMatch>,
    cache_status: Vec<String>,
    search: Vec<String>,
}

impl DayFilter {
    /// Validates the filters as the v2 API would.
    pub(crate) fn new(status: &[String], cache_status: &[String], search: Option<&str>) -> Result<Self, String> {
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

    pub(crate) fn matches(&self, entry: &LogEntry) -> bool {
        entry.matches_statuses(&self.status, &self.cache_status) && entry.matches_search(&self.search)
    }
}

fn split_list(list: &Option<String>) -> Vec<String> {
    list.iter()
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The entries as a table, or one JSON or YAML document each (a stream that `--follow`
/// continues).
fn print_entries(entries: &[LogEntry], output: Output, with_header: bool) {
    match output {
        Output::Table => print!("{}", render::logs(entries, with_header)),
        _ => entries.iter().for_each(|entry| show(output, entry, |_| String::new())),
    }
}

async fn day_file(client: &EdgeClient, args: &LogsArgs, day: &str, output: Output) -> Result<(), CommandError> {
    let day = parse_day(day).map_err(CommandError::usage)?;
    let filter = DayFilter::new(
        &split_list(&args.status),
        &split_list(&args.cache_status),
        args.search.as_deref(),
    )
    .map_err(CommandError::usage)?;
    let entries: Vec<LogEntry> = client
        .log_file(args.pull_zone, day)
        .await?
        .into_iter()
        .filter(|e| filter.matches(e))
        .take(args.limit)
        .collect();
    print_entries(&entries, output, true);
    Ok(())
}

/// `edgectl logs`: the newest entries, a v1 day file, or (`--follow`) new entries as
/// they come, until interrupted.
pub(crate) async fn logs(client: &EdgeClient, args: &LogsArgs, output: Output) -> Result<(), CommandError> {
    if let Some(day) = &args.day {
        return day_file(client, args, day, output).await;
    }
    let mut query = LogQuery {
        from: args.since.map(|s| since(Utc::now(), s.into())).transpose()?,
        status: split_list(&args.status),
        cache_status: split_list(&args.cache_status),
        search: args.search.clone(),
        limit: Some(args.limit.clamp(1, 1000) as u64),
        order: Some(if args.follow { SortOrder::Asc } else { SortOrder::Desc }),
        ..LogQuery::default()
    };
    let mut first = true;
    loop {
        let entries: Vec<LogEntry> = client
            .logs(args.pull_zone, query.clone())
            .take(args.limit)
            .try_collect()
            .await?;
        print_entries(&entries, output, first);
        if !args.follow {
            return Ok(());
        }
        first = false;
        if let Some(last) = entries.last() {
            query.from = Some(last.timestamp + chrono::Duration::milliseconds(1));
        }
        tokio::time::sleep(args.interval.into()).await;
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
