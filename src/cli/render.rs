//! Every table `edgectl` prints. Pure functions from answers to text.

use chrono::DateTime;

use super::access_lists::Change;
use super::certificates::CompletionOutcome;
use super::plan::{PlannedObject, Problem, Verdict};
use crate::api::models::apps::Application;
use crate::api::models::logging::LogEntry;
use crate::api::models::shield::{
    AccessListAction, AccessListsResponse, EventLogsSearchRequest, EventLogsSearchResponse, RateLimitRule,
    access_list_type_name, rate_limit_action_name,
};

/// Draws counts with block characters, scaled to the largest.
pub(crate) fn sparkline(counts: &[i64]) -> String {
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

/// `text` with its control characters escaped (`\n`, `\u{1b}`): what a tenant or the
/// platform wrote cannot move the cursor, recolour the terminal or forge a row.
pub(crate) fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let (plain, escape) = match c.is_control() {
                true => (None, Some(c.escape_default())),
                false => (Some(c), None),
            };
            plain.into_iter().chain(escape.into_iter().flatten())
        })
        .collect()
}

/// A plain text table: a header row and left-aligned columns, two spaces apart, each
/// cell [`escaped`].
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| escaped(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
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
pub(crate) fn format_millis(millis: i64) -> String {
    DateTime::from_timestamp_millis(millis).map_or_else(
        || millis.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

/// A flat search as one row per event; a grouped one as one row per group with its
/// per-action counts and sparkline.
pub(crate) fn search(response: &EventLogsSearchResponse, request: &EventLogsSearchRequest) -> String {
    let pages = format!("page {} of {}", response.page + 1, response.total_pages.max(1));
    if let Some(groups) = &response.groups {
        let dimensions: Vec<&str> = request.group_by.iter().flatten().map(|d| d.as_str()).collect();
        let mut header: Vec<String> = dimensions.iter().map(|d| d.to_uppercase()).collect();
        header.extend(
            [
                "COUNT",
                "BLOCKED",
                "CHALLENGED",
                "LOGGED",
                "FIRST SEEN",
                "LAST SEEN",
                "ACTIVITY",
            ]
            .map(String::from),
        );
        let rows: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                let key = g.key.clone().unwrap_or_default();
                let context = g.context.clone().unwrap_or_default();
                let mut row: Vec<String> = dimensions
                    .iter()
                    .map(|d| key.get(*d).cloned().unwrap_or_default())
                    .collect();
                row.extend([
                    g.count.to_string(),
                    context.blocked.to_string(),
                    context.challenged.to_string(),
                    context.logged.to_string(),
                    format_millis(g.first_seen),
                    format_millis(g.last_seen),
                    g.sparkline.as_deref().map(sparkline).unwrap_or_default(),
                ]);
                row
            })
            .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        return format!("{}{} groups, {pages}\n", table(&header, &rows), response.total);
    }
    let rows: Vec<Vec<String>> = response
        .rows
        .iter()
        .flatten()
        .map(|r| {
            let field = |name: &str| r.fields.as_ref().and_then(|f| f.get(name)).cloned().unwrap_or_default();
            vec![
                format_millis(r.timestamp),
                field("ip"),
                field("country"),
                field("action"),
                field("ruleId"),
                field("url"),
            ]
        })
        .collect();
    format!(
        "{}{} events, {pages}\n",
        table(&["TIME", "IP", "COUNTRY", "ACTION", "RULE", "URL"], &rows),
        response.total
    )
}

pub(crate) fn rate_limits(rules: &[RateLimitRule]) -> String {
    let seconds = |v: Option<i64>| v.map_or_else(|| "-".into(), |s| format!("{s}s"));
    let rows: Vec<Vec<String>> = rules
        .iter()
        .map(|r| {
            let c = &r.rule_configuration;
            vec![
                r.id.to_string(),
                r.rule_name.clone(),
                rate_limit_action_name(c.action_type),
                c.request_count.map_or_else(|| "-".into(), |n| n.to_string()),
                seconds(c.timeframe),
                seconds(c.block_time),
            ]
        })
        .collect();
    table(&["ID", "NAME", "ACTION", "REQUESTS", "TIMEFRAME", "BLOCK TIME"], &rows)
}

pub(crate) fn access_lists(lists: &AccessListsResponse) -> String {
    let rows: Vec<Vec<String>> = lists
        .lists_with_kind()
        .map(|(l, managed)| {
            vec![
                l.configuration_id.to_string(),
                l.list_id.to_string(),
                l.name.clone(),
                if managed { "managed" } else { "custom" }.to_string(),
                access_list_type_name(l.list_type),
                l.is_enabled.to_string(),
                AccessListAction::describe(l.action),
                l.entry_count.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "CONFIGURATION",
            "LIST",
            "NAME",
            "KIND",
            "TYPE",
            "ENABLED",
            "ACTION",
            "ENTRIES",
        ],
        &rows,
    )
}

/// Before → after of `access-lists set`, and whether anything was sent.
pub(crate) fn access_list_change(change: &Change) -> String {
    let rows = vec![
        vec![
            "isEnabled".to_string(),
            change.before.is_enabled.to_string(),
            change.after.is_enabled.to_string(),
        ],
        vec![
            "action".to_string(),
            AccessListAction::describe(change.before.action),
            AccessListAction::describe(change.after.action),
        ],
    ];
    let verdict = match (change.changes_anything(), change.applied) {
        (false, _) => "no change: nothing was sent",
        (true, true) => "applied",
        (true, false) => "dry run: nothing was sent",
    };
    format!(
        "access list {:?} (configuration {}) of Shield Zone {}\n{}{verdict}\n",
        change.name,
        change.configuration_id,
        change.shield_zone_id,
        table(&["MEMBER", "BEFORE", "AFTER"], &rows)
    )
}

/// Manifests the apiserver would refuse, each with its file and member.
pub(crate) fn problems(problems: &[Problem]) -> String {
    let rows: Vec<Vec<String>> = problems
        .iter()
        .map(|p| vec![p.source.clone(), p.path.clone(), p.message.clone()])
        .collect();
    format!(
        "{}{} problems; nothing was sent to the platform\n",
        table(&["SOURCE", "MEMBER", "PROBLEM"], &rows),
        problems.len()
    )
}

/// A plan: one row per object, its member changes below it, and a summary line.
pub(crate) fn plan(planned: &[PlannedObject]) -> String {
    let mut rows = Vec::new();
    let (mut changes, mut unchanged, mut errors) = (0, 0, 0);
    for object in planned {
        let (word, detail, members) = match &object.verdict {
            Verdict::NoChange { detail } => {
                unchanged += 1;
                ("no change", detail, &[][..])
            }
            Verdict::Change {
                detail,
                changes: members,
            } => {
                changes += 1;
                ("change", detail, members.as_slice())
            }
            Verdict::Error { detail } => {
                errors += 1;
                ("error", detail, &[][..])
            }
        };
        rows.push(vec![
            object.kind.clone(),
            format!("{}/{}", object.namespace, object.name),
            word.to_string(),
            detail.clone(),
        ]);
        for member in members {
            rows.push(vec![
                String::new(),
                String::new(),
                String::new(),
                format!("  {}: {} → {}", member.member, member.before, member.after),
            ]);
        }
    }
    format!(
        "{}{changes} to change, {unchanged} unchanged, {errors} errors\n",
        table(&["KIND", "OBJECT", "PLAN", "DETAIL"], &rows)
    )
}

pub(crate) fn certificate(outcome: &CompletionOutcome) -> String {
    format!("{}: {}\n", outcome.outcome, outcome.message)
}

pub(crate) fn app(app: &Application) -> String {
    let images: Vec<String> = app
        .container_templates
        .iter()
        .map(|t| {
            let digest = if t.image_digest.is_empty() {
                String::new()
            } else {
                format!(", {}", t.image_digest)
            };
            format!("{} ({}{digest})", t.image, t.image_tag)
        })
        .collect();
    let rows = vec![
        vec!["ID".into(), app.id.clone()],
        vec!["NAME".into(), app.name.clone()],
        vec!["STATUS".into(), app.status.to_string()],
        vec!["RUNTIME".into(), app.runtime_type_name()],
        vec!["INSTANCES".into(), app.container_instances.len().to_string()],
        vec!["REGIONS".into(), app.region_settings.allowed_region_ids.join(", ")],
        vec!["ENDPOINTS".into(), app.public_hosts().join(", ")],
        vec!["IMAGES".into(), images.join("; ")],
        vec![
            "AUTOSCALING".into(),
            format!("{}..{}", app.auto_scaling.min, app.auto_scaling.max),
        ],
    ];
    table(&["FIELD", "VALUE"], &rows)
}

const LOG_HEADER: [&str; 6] = ["TIME", "STATUS", "CACHE", "IP", "COUNTRY", "URL"];

/// CDN log entries; `with_header` false continues an earlier table (`--follow`).
pub(crate) fn logs(entries: &[LogEntry], with_header: bool) -> String {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                e.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                e.status_code.to_string(),
                e.cache_status.clone(),
                e.remote_ip.clone(),
                e.country_code.clone(),
                e.url.clone(),
            ]
        })
        .collect();
    let body = table(&LOG_HEADER, &rows);
    if with_header {
        body
    } else {
        body.split_once('\n')
            .map_or_else(String::new, |(_, rows)| rows.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cli::access_lists::Configuration;

    #[test]
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline(&[0, 1, 4, 8]), " ▁▄█");
        assert_eq!(sparkline(&[]), "");
        assert_eq!(sparkline(&[0, 0]), "  ");
    }

    #[test]
    fn tables_align_columns() {
        assert_eq!(
            table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]),
            "A    BB\nxyz  1\n"
        );
    }

    #[test]
    fn grouped_search_shows_counts_per_action() {
        let request = EventLogsSearchRequest::window(0, 1000).group_by([crate::api::models::shield::Dimension::Ip]);
        let response: EventLogsSearchResponse = serde_json::from_value(json!({
            "groups": [{"key": {"ip": "192.0.2.1"}, "count": 3, "firstSeen": 0, "lastSeen": 999,
                        "context": {"blocked": 2, "challenged": "1", "logged": null}, "sparkline": [1, 0, 2]}],
            "total": 1, "totalPages": 1, "page": 0
        }))
        .expect("valid");
        let text = search(&response, &request);
        let row = text.lines().nth(1).expect("a row");
        assert!(row.starts_with("192.0.2.1  3      2        1           0"), "{text}");
        assert!(text.ends_with("1 groups, page 1 of 1\n"), "{text}");
    }

    #[test]
    fn a_change_says_whether_it_was_sent() {
        let before = Configuration {
            is_enabled: false,
            action: 2,
        };
        let mut change = Change {
            shield_zone_id: 1001,
            configuration_id: 9101,
            name: "Known bad actors".into(),
            before,
            after: Configuration {
                is_enabled: true,
                ..before
            },
            applied: false,
            dry_run: true,
        };
        let text = access_list_change(&change);
        assert!(text.contains("isEnabled  false   true"), "{text}");
        assert!(text.contains("action     Block   Block"), "{text}");
        assert!(text.ends_with("dry run: nothing was sent\n"), "{text}");
        change.applied = true;
        assert!(access_list_change(&change).ends_with("applied\n"));
        change.after = before;
        assert!(access_list_change(&change).ends_with("no change: nothing was sent\n"));
    }

    #[test]
    fn app_shows_runtime_in_the_main_spec_spelling_and_unknown_status_as_sent() {
        let app: Application = serde_json::from_value(json!({
            "id": "a", "name": "shop", "status": "Hibernating", "runtimeType": "Reserved",
            "containerInstances": [{}, {}]
        }))
        .expect("valid");
        let text = super::app(&app);
        assert!(text.contains("STATUS       Hibernating"), "{text}");
        assert!(text.contains("RUNTIME      reserved"), "{text}");
        assert!(text.contains("INSTANCES    2"), "{text}");
    }

    #[test]
    fn follow_pages_continue_the_table() {
        let entry = LogEntry::default();
        let first = logs(std::slice::from_ref(&entry), true);
        let next = logs(std::slice::from_ref(&entry), false);
        assert!(first.starts_with("TIME"));
        assert_eq!(first.lines().count(), 2);
        assert_eq!(next.lines().count(), 1);
        assert!(!next.starts_with("TIME"));
    }

    #[test]
    fn control_characters_in_a_cell_are_shown_escaped() {
        let forged = "evil\u{1b}[2J\nstaged  Promoted\r".to_string();
        let shown = table(&["NAME", "STAGE"], &[vec![forged, "Logging".into()]]);
        assert_eq!(shown.lines().count(), 2, "{shown}");
        assert!(shown.contains("evil\\u{1b}[2J\\nstaged  Promoted\\r"), "{shown}");
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown:?}");
        assert_eq!(escaped("café 東京"), "café 東京");
    }
}
