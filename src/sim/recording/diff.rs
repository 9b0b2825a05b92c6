//! Where two JSON answers differ, by JSON path.

use serde_json::Value;

/// Members whose values the platform mints per answer (prose, trace ids, the time of
/// the answer): their presence and type are compared, not their values. An entry
/// names a member, or a member of a member (`query.from`), at any depth.
pub(crate) const VOLATILE: &[&str] = &[
    "detail",
    "message",
    "Message",
    "traceId",
    "instance",
    "query.from",
    "query.to",
];

/// Counts of rows: compared by type only where the recorded answer shows rows the
/// recording never saw (a first page of many), since edge-sim holds only those seen.
pub(crate) const UNSEEN_COUNTS: &[&str] = &["pagination.hasMore", "total", "totalPages"];

/// Whether a recorded answer shows more rows than it holds: logs with more pages, or
/// a flat search whose total is more than its rows.
pub(crate) fn shows_unseen_rows(recorded: &Value) -> bool {
    let more_logs = recorded.pointer("/pagination/hasMore") == Some(&Value::Bool(true));
    let rows = recorded.get("rows").and_then(Value::as_array).map(Vec::len);
    let total = recorded.get("total").and_then(Value::as_u64);
    let more_events = matches!((rows, total), (Some(rows), Some(total)) if total > rows as u64);
    more_logs || more_events
}

/// One difference between a recorded answer and edge-sim's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Difference {
    /// The recorded answer has the member, edge-sim's does not.
    Missing { path: String },
    /// edge-sim's answer has a member the recorded one does not.
    Extra { path: String },
    /// The JSON types differ (`null` is a type here).
    Type {
        path: String,
        recorded: &'static str,
        replayed: &'static str,
    },
    /// Same type, another value (an enum's spelling, a number).
    Value {
        path: String,
        recorded: String,
        replayed: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Missing { path } => write!(f, "{path}: missing from edge-sim's answer"),
            Difference::Extra { path } => write!(f, "{path}: extra in edge-sim's answer"),
            Difference::Type {
                path,
                recorded,
                replayed,
            } => write!(f, "{path}: {recorded} recorded, {replayed} from edge-sim"),
            Difference::Value {
                path,
                recorded,
                replayed,
            } => write!(f, "{path}: {recorded} recorded, {replayed} from edge-sim"),
        }
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The longest text of a value a difference shows.
const MAX_SHOWN: usize = 80;

fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_SHOWN {
        return text;
    }
    let cut = (0..=MAX_SHOWN).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    format!("{}…", &text[..cut])
}

fn is_volatile(path: &str, volatile: &[&str]) -> bool {
    volatile
        .iter()
        .any(|member| path.strip_suffix(member).is_some_and(|head| head.ends_with('.')))
}

/// What a comparison compares.
#[derive(Debug, Clone, Copy)]
enum Compared<'a> {
    /// Every member and item, and the values but those of the volatile members named.
    Values(&'a [&'a str]),
    /// The types of the members and items both answers have.
    Types,
}

/// Where `replayed` differs from `recorded`, paths rooted at `$`.
pub(crate) fn differences(recorded: &Value, replayed: &Value, volatile: &[&str]) -> Vec<Difference> {
    let mut found = Vec::new();
    compare(
        "$".to_string(),
        recorded,
        replayed,
        Compared::Values(volatile),
        &mut found,
    );
    found
}

/// Where the types of `replayed` differ from those of `recorded`, for an answer that
/// edge-sim cannot give value for value (it summarised events the recording lacks).
pub(crate) fn type_differences(recorded: &Value, replayed: &Value) -> Vec<Difference> {
    let mut found = Vec::new();
    compare("$".to_string(), recorded, replayed, Compared::Types, &mut found);
    found
}

fn compare(path: String, recorded: &Value, replayed: &Value, compared: Compared, found: &mut Vec<Difference>) {
    let every_member = matches!(compared, Compared::Values(_));
    match (recorded, replayed) {
        (Value::Object(left), Value::Object(right)) => {
            for (name, value) in left {
                let member = format!("{path}.{name}");
                match right.get(name) {
                    Some(other) => compare(member, value, other, compared, found),
                    None if every_member => found.push(Difference::Missing { path: member }),
                    None => {}
                }
            }
            for name in right.keys().filter(|name| every_member && !left.contains_key(*name)) {
                found.push(Difference::Extra {
                    path: format!("{path}.{name}"),
                });
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for (index, value) in left.iter().enumerate() {
                let item = format!("{path}[{index}]");
                match right.get(index) {
                    Some(other) => compare(item, value, other, compared, found),
                    None if every_member => found.push(Difference::Missing { path: item }),
                    None => {}
                }
            }
            for index in (left.len()..right.len()).filter(|_| every_member) {
                found.push(Difference::Extra {
                    path: format!("{path}[{index}]"),
                });
            }
        }
        _ if type_of(recorded) != type_of(replayed) => found.push(Difference::Type {
            path,
            recorded: type_of(recorded),
            replayed: type_of(replayed),
        }),
        _ => {
            if let Compared::Values(volatile) = compared
                && recorded != replayed
                && !is_volatile(&path, volatile)
            {
                found.push(Difference::Value {
                    path,
                    recorded: shown(recorded),
                    replayed: shown(replayed),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identical_answers_have_no_difference() {
        let answer = json!({"data": [{"id": 1, "ruleConfiguration": {"actionType": 1}}], "page": null});
        assert!(differences(&answer, &answer, VOLATILE).is_empty());
    }

    #[test]
    fn each_kind_of_difference_is_named_at_its_path() {
        let recorded =
            json!({"status": "Active", "id": "a", "probes": {"startup": null}, "regions": [1, 2], "size": 1});
        let replayed = json!({"status": "active", "probes": {"startup": {"periodSeconds": 1}}, "regions": [1], "size": "1", "extra": true});
        let found = differences(&recorded, &replayed, VOLATILE);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "$.id: missing from edge-sim's answer",
                "$.probes.startup: null recorded, object from edge-sim",
                "$.regions[1]: missing from edge-sim's answer",
                "$.size: number recorded, string from edge-sim",
                "$.status: \"Active\" recorded, \"active\" from edge-sim",
                "$.extra: extra in edge-sim's answer",
            ]
        );
    }

    #[test]
    fn volatile_members_are_compared_by_type_only() {
        let recorded =
            json!({"detail": "Zone 7 not found", "query": {"from": "a", "to": "b", "order": "desc"}, "from": "x"});
        let replayed = json!({"detail": "Shield Zone 7 was not found", "query": {"from": "c", "to": "d", "order": "desc"}, "from": "y"});
        let found = differences(&recorded, &replayed, VOLATILE);
        let shown: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert!(
            shown.len() == 1 && shown[0].starts_with("$.from: "),
            "only the member named at its depth: {shown:?}"
        );
        let typed = differences(&json!({"detail": "x"}), &json!({"detail": null}), VOLATILE);
        assert_eq!(typed.len(), 1, "a volatile member keeps its type");
    }

    #[test]
    fn answers_with_rows_never_seen_are_told() {
        assert!(shows_unseen_rows(&json!({"data": [], "pagination": {"hasMore": true}})));
        assert!(!shows_unseen_rows(
            &json!({"data": [], "pagination": {"hasMore": false}})
        ));
        assert!(shows_unseen_rows(&json!({"rows": [{}], "total": 2})));
        assert!(!shows_unseen_rows(&json!({"rows": [{}], "total": 1})));
        assert!(
            !shows_unseen_rows(&json!({"groups": [{}], "total": 9})),
            "groups are not rows"
        );
    }

    #[test]
    fn a_comparison_of_types_skips_values_and_what_only_one_side_has() {
        let recorded = json!({"groups": [{"count": 3, "key": {"country": "DE"}}, {"count": 1}], "total": 2});
        let replayed = json!({"groups": [{"count": 2, "key": {"country": "FR"}, "extra": 1}], "total": 1});
        assert!(type_differences(&recorded, &replayed).is_empty());
        let retyped = json!({"groups": [{"count": "3"}], "total": null});
        let shown: Vec<String> = type_differences(&recorded, &retyped)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "$.groups[0].count: number recorded, string from edge-sim",
                "$.total: number recorded, null from edge-sim"
            ]
        );
    }

    #[test]
    fn long_values_are_cut_for_the_report() {
        let long = "x".repeat(500);
        let found = differences(&json!({"a": long}), &json!({"a": "y"}), VOLATILE);
        assert!(found[0].to_string().len() < 200);
    }
}
