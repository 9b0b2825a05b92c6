//! Helpers of `edgectl`: parsing command-line values and rendering tables.

use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::api::models::shield::{Dimension, EventLogsFilter, FilterOp};

/// Parses `field:op:v1,v2` (values may contain `:`; `cidr` values keep theirs).
pub fn parse_filter(spec: &str) -> Result<EventLogsFilter, String> {
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
pub fn parse_dimensions(list: &str) -> Result<Vec<Dimension>, String> {
    list.split(',').map(|d| Dimension::from_str(d.trim())).collect()
}

/// Parses an RFC 3339 time or Unix milliseconds.
pub fn parse_time(raw: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(millis) = raw.parse::<i64>() {
        return DateTime::from_timestamp_millis(millis).ok_or_else(|| format!("time `{raw}` is out of range"));
    }
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("time `{raw}` is neither RFC 3339 (2026-11-20T12:00:00Z) nor Unix milliseconds"))
}

/// Draws counts with block characters, scaled to the largest.
pub fn sparkline(counts: &[i64]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = counts.iter().copied().max().unwrap_or(0);
    counts
        .iter()
        .map(|&c| match c {
            0 => ' ',
            _ if max <= 0 => BLOCKS[0],
            c => BLOCKS[(c * 7 / max).clamp(0, 7) as usize],
        })
        .collect()
}

/// A plain text table: a header row and left-aligned columns, two spaces apart.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = vec![line(header.to_vec())];
    out.extend(rows.iter().map(|r| line(r.iter().map(String::as_str).collect())));
    out.join("\n") + "\n"
}

/// Unix milliseconds as RFC 3339 (seconds), or the number itself when out of range.
pub fn format_millis(millis: i64) -> String {
    DateTime::from_timestamp_millis(millis).map_or_else(
        || millis.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
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
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline(&[0, 1, 4, 8]), " ▁▄█");
        assert_eq!(sparkline(&[]), "");
        assert_eq!(sparkline(&[0, 0]), "  ");
    }

    #[test]
    fn times_and_tables() {
        assert_eq!(parse_time("0").expect("ms"), DateTime::<Utc>::UNIX_EPOCH);
        assert!(parse_time("2026-11-20T12:00:00Z").is_ok());
        assert!(parse_time("yesterday").is_err());
        assert_eq!(
            table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]),
            "A    BB\nxyz  1\n"
        );
    }
}
