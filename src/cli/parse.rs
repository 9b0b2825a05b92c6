//! Parsing of command-line values.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};

use crate::api::models::shield::{AccessListAction, Dimension, EventLogsFilter, FilterOp};

/// Parses `field:op:v1,v2` (values may contain `:`; `cidr` values keep theirs).
pub(crate) fn parse_filter(spec: &str) -> Result<EventLogsFilter, String> {
    let mut parts = spec.splitn(3, ':');
    let (Some(field), Some(op), Some(values)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("filter `{spec}` must look like field:op:value[,value...]"));
    };
    let field = Dimension::from_str(field)?;
    let op = FilterOp::from_str(op)?;
    let values: Vec<String> = values
        .split(',')
        .map(str::to_string)
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(format!("filter `{spec}` has no value"));
    }
    Ok(EventLogsFilter::new(field, op, values))
}

/// Parses a comma-separated list of dimensions.
pub(crate) fn parse_dimensions(list: &str) -> Result<Vec<Dimension>, String> {
    list.split(',').map(|d| Dimension::from_str(d.trim())).collect()
}

/// Parses an RFC 3339 time or Unix milliseconds.
pub(crate) fn parse_time(raw: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(millis) = raw.parse::<i64>() {
        return DateTime::from_timestamp_millis(millis).ok_or_else(|| format!("time `{raw}` is out of range"));
    }
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("time `{raw}` is neither RFC 3339 (2026-11-20T12:00:00Z) nor Unix milliseconds"))
}

/// Parses the `MM-dd-yy` day of a legacy v1 log file.
pub(crate) fn parse_day(raw: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(raw.trim(), "%m-%d-%y")
        .map_err(|_| format!("day `{raw}` is not MM-dd-yy (for example 11-20-26)"))
}

/// Parses an access-list action by name (any case) or wire code.
pub(crate) fn parse_action(raw: &str) -> Result<AccessListAction, String> {
    let by_code = raw.trim().parse::<i32>().ok().and_then(AccessListAction::from_code);
    by_code
        .or_else(|| {
            AccessListAction::ALL
                .into_iter()
                .find(|a| a.name().eq_ignore_ascii_case(raw.trim()))
        })
        .ok_or_else(|| format!("action `{raw}` is not one of None, Allow, Block, Challenge, Log, Bypass (or 0 to 5)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_bad_ones_explain_themselves() {
        let filter = parse_filter("ip:cidr:10.0.0.0/8,2001:db8::/32").expect("valid");
        assert_eq!(
            filter.value,
            Some(vec!["10.0.0.0/8".to_string(), "2001:db8::/32".to_string()])
        );
        assert_eq!(filter.op, Some(FilterOp::Cidr));
        assert!(parse_filter("ip:eq").is_err());
        assert!(
            parse_filter("colour:eq:red")
                .expect_err("field")
                .contains("unknown dimension")
        );
        assert!(parse_filter("ip:near:1").expect_err("op").contains("unknown operator"));
        assert!(parse_filter("ip:eq:").is_err());
    }

    #[test]
    fn times_parse_from_rfc3339_or_milliseconds() {
        assert_eq!(parse_time("0").expect("ms"), DateTime::<Utc>::UNIX_EPOCH);
        assert!(parse_time("2026-11-20T12:00:00Z").is_ok());
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn days_and_actions() {
        assert_eq!(
            parse_day("11-20-26"),
            Ok(NaiveDate::from_ymd_opt(2026, 11, 20).expect("date"))
        );
        assert!(parse_day("2026-11-20").expect_err("format").contains("MM-dd-yy"));
        assert_eq!(parse_action("block"), Ok(AccessListAction::Block));
        assert_eq!(parse_action("3"), Ok(AccessListAction::Challenge));
        assert!(parse_action("6").is_err() && parse_action("deny").is_err());
    }
}
