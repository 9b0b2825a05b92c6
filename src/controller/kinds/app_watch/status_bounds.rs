//! A ContainerAppWatch status stays small whatever the platform and the Internet send:
//! every text and list it copies is capped, and the whole status, with the conditions
//! the driver merges in, is kept under [`DECIDED_STATUS_BYTES`], with
//! `status.truncated` saying what was cut.

use std::collections::BTreeMap;

use crate::api::bounded_text;
use crate::controller::kinds::app_watch::resource::{
    AppSummary, ContainerAppWatchStatus, RateLimitSummary, SecurityEventsSummary,
};
use crate::resources::{DECIDED_STATUS_BYTES, serialized_len};

/// The most bytes of any one text copied into status (names, images, group keys).
pub(super) const TEXT_BYTES: usize = 256;
/// Regions, endpoints and images kept of an app.
const APP_LIST_ENTRIES: usize = 50;
/// Rate-limit rules kept, before the size bound.
const RATE_LIMIT_ENTRIES: usize = 200;
/// Entries of a count-by map (status classes, cache statuses).
const MAP_ENTRIES: usize = 20;
/// Notes in `status.truncated`.
const TRUNCATED_NOTES: usize = 10;

/// What was cut, as notes for `status.truncated`.
#[derive(Default)]
struct Cuts(Vec<String>);

impl Cuts {
    fn note(&mut self, note: String) {
        let note = bounded_text(&note, TEXT_BYTES);
        if self.0.len() < TRUNCATED_NOTES && !self.0.contains(&note) {
            self.0.push(note);
        }
    }

    fn text(&mut self, member: &str, text: &mut String) {
        if text.len() > TEXT_BYTES {
            *text = bounded_text(text, TEXT_BYTES);
            self.note(format!("{member}: texts cut to {TEXT_BYTES} bytes"));
        }
    }

    fn list<T>(&mut self, member: &str, list: &mut Vec<T>, keep: usize) {
        if list.len() > keep {
            self.note(format!("{member}: the first {keep} of {} kept", list.len()));
            list.truncate(keep);
        }
    }

    fn map(&mut self, member: &str, map: &mut BTreeMap<String, i64>) {
        if map.len() > MAP_ENTRIES {
            self.note(format!("{member}: the first {MAP_ENTRIES} of {} kept", map.len()));
            *map = std::mem::take(map).into_iter().take(MAP_ENTRIES).collect();
        }
        if map.keys().any(|k| k.len() > TEXT_BYTES) {
            self.note(format!("{member}: texts cut to {TEXT_BYTES} bytes"));
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| (bounded_text(&k, TEXT_BYTES), v))
                .collect();
        }
    }
}

fn bound_app(app: &mut AppSummary, cuts: &mut Cuts) {
    for (member, text) in [
        ("app.name", &mut app.name),
        ("app.status", &mut app.status),
        ("app.runtimeType", &mut app.runtime_type),
    ] {
        cuts.text(member, text);
    }
    cuts.list("app.regions", &mut app.regions, APP_LIST_ENTRIES);
    cuts.list("app.endpoints", &mut app.endpoints, APP_LIST_ENTRIES);
    cuts.list("app.images", &mut app.images, APP_LIST_ENTRIES);
    for text in app.regions.iter_mut().chain(app.endpoints.iter_mut()) {
        cuts.text("app.regions, app.endpoints", text);
    }
    for image in &mut app.images {
        for text in [&mut image.template, &mut image.image, &mut image.tag, &mut image.digest] {
            cuts.text("app.images", text);
        }
    }
}

fn bound_rules(rules: &mut Vec<RateLimitSummary>, cuts: &mut Cuts) {
    rules.truncate(RATE_LIMIT_ENTRIES);
    for rule in rules {
        cuts.text("rateLimits", &mut rule.name);
        cuts.text("rateLimits", &mut rule.action);
    }
}

fn bound_events(events: &mut SecurityEventsSummary, cuts: &mut Cuts) {
    cuts.text("securityEvents.window", &mut events.window);
    for group in &mut events.top {
        if group
            .key
            .iter()
            .any(|(d, v)| d.len() > TEXT_BYTES || v.len() > TEXT_BYTES)
        {
            cuts.note(format!("securityEvents.top: group keys cut to {TEXT_BYTES} bytes"));
            group.key = std::mem::take(&mut group.key)
                .into_iter()
                .map(|(d, v)| (bounded_text(&d, TEXT_BYTES), bounded_text(&v, TEXT_BYTES)))
                .collect();
        }
    }
}

/// `status` with every copied text and list capped and, past [`DECIDED_STATUS_BYTES`]
/// with its conditions written (`conditions_len` bytes once serialized), the longest
/// lists halved (rate-limit rules first, then event groups, then the app's lists)
/// until it fits; `truncated` says what was cut.
pub(super) fn bounded(mut status: ContainerAppWatchStatus, conditions_len: usize) -> ContainerAppWatchStatus {
    let conditions = std::mem::take(&mut status.conditions);
    let mut cuts = Cuts::default();
    let counts = |status: &ContainerAppWatchStatus| {
        (
            status.rate_limits.as_ref().map_or(0, Vec::len),
            status.security_events.as_ref().map_or(0, |e| e.top.len()),
        )
    };
    let before = counts(&status);
    if let Some(app) = &mut status.app {
        bound_app(app, &mut cuts);
    }
    if let Some(rules) = &mut status.rate_limits {
        bound_rules(rules, &mut cuts);
    }
    if let Some(events) = &mut status.security_events {
        bound_events(events, &mut cuts);
    }
    if let Some(cdn) = &mut status.cdn {
        cuts.map("cdn.byStatusClass", &mut cdn.by_status_class);
        cuts.map("cdn.byCacheStatus", &mut cdn.by_cache_status);
    }
    // Room for the notes, which come last.
    while serialized_len(&status) + conditions_len > DECIDED_STATUS_BYTES - TRUNCATED_NOTES * TEXT_BYTES {
        let halve = |len: usize| len / 2;
        match (&mut status.rate_limits, &mut status.security_events, &mut status.app) {
            (Some(rules), _, _) if !rules.is_empty() => rules.truncate(halve(rules.len())),
            (_, Some(events), _) if !events.top.is_empty() => events.top.truncate(halve(events.top.len())),
            (_, _, Some(app)) if !app.images.is_empty() || !app.endpoints.is_empty() || !app.regions.is_empty() => {
                app.images.truncate(halve(app.images.len()));
                app.endpoints.truncate(halve(app.endpoints.len()));
                app.regions.truncate(halve(app.regions.len()));
                cuts.note(format!(
                    "app: lists shortened to keep status under {DECIDED_STATUS_BYTES} bytes"
                ));
            }
            _ => break,
        }
    }
    let after = counts(&status);
    if after.0 < before.0 {
        cuts.note(format!(
            "rateLimits: the first {} of {} rules kept, to keep status under {DECIDED_STATUS_BYTES} bytes",
            after.0, before.0
        ));
    }
    if after.1 < before.1 {
        cuts.note(format!(
            "securityEvents.top: the first {} of {} groups kept, to keep status under {DECIDED_STATUS_BYTES} bytes",
            after.1, before.1
        ));
    }
    status.truncated = cuts.0;
    status.conditions = conditions;
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::kinds::app_watch::resource::{EventGroupSummary, ImageSummary};

    fn huge_status() -> ContainerAppWatchStatus {
        let long = |c: &str| c.repeat(10_000);
        ContainerAppWatchStatus {
            app: Some(AppSummary {
                name: long("n"),
                regions: (0..10_000).map(|i| format!("region-{i}")).collect(),
                endpoints: vec![long("e"); 100],
                images: vec![
                    ImageSummary {
                        image: long("i"),
                        ..ImageSummary::default()
                    };
                    100
                ],
                ..AppSummary::default()
            }),
            rate_limits: Some(
                (0..10_000)
                    .map(|id| RateLimitSummary {
                        id,
                        name: format!("rule {id} {}", long("r")),
                        action: "Challenge".into(),
                        ..RateLimitSummary::default()
                    })
                    .collect(),
            ),
            security_events: Some(SecurityEventsSummary {
                window: "1h".into(),
                total: 1_000_000,
                top: (0..50)
                    .map(|i| EventGroupSummary {
                        key: BTreeMap::from([
                            ("ua".to_string(), format!("{i}{}", long("u"))),
                            ("url".to_string(), format!("{i}{}", long("/"))),
                        ]),
                        count: 100 - i,
                        ..EventGroupSummary::default()
                    })
                    .collect(),
            }),
            ..ContainerAppWatchStatus::default()
        }
    }

    #[test]
    fn the_largest_status_the_operator_writes_is_cached_whole() {
        use crate::controller::framework::pipeline::object::keep_what_is_read_of;
        use crate::controller::framework::reasons::ConditionType;
        use crate::controller::kinds::app_watch::resource::ContainerAppWatch;
        use crate::controller::kinds::app_watch::vocabulary::AppCondition;
        use crate::resources::{Condition, ConditionStatus};
        use strum::VariantNames;
        let condition = |type_: &str| Condition {
            type_: type_.to_string(),
            status: ConditionStatus::False,
            reason: "R".repeat(128),
            message: "m".repeat(2048),
            last_transition_time: "2026-11-28T00:00:00Z".into(),
            observed_generation: Some(1),
        };
        let decided = ContainerAppWatchStatus {
            conditions: ["Ready", "Synced"]
                .into_iter()
                .chain(AppCondition::VARIANTS.iter().copied())
                .map(condition)
                .collect(),
            ..huge_status()
        };
        let conditions_len = serialized_len(&decided.conditions);
        let mut written = bounded(decided, conditions_len);
        while serialized_len(&written) + 512 < DECIDED_STATUS_BYTES {
            let rules = written.rate_limits.get_or_insert_default();
            rules.push(RateLimitSummary {
                name: "r".repeat(TEXT_BYTES),
                ..RateLimitSummary::default()
            });
        }
        assert!(serialized_len(&written) <= DECIDED_STATUS_BYTES, "decided at its bound");
        written.conditions.extend(["Reconciling", "Stalled"].map(condition));
        assert!(
            ConditionType::VARIANTS
                .iter()
                .all(|t| written.conditions.iter().any(|c| c.type_ == *t))
        );
        let mut watch: ContainerAppWatch =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "w"}, "spec": {"appId": "app"}}))
                .expect("a ContainerAppWatch");
        watch.status = Some(written.clone());
        keep_what_is_read_of(&mut watch);
        assert_eq!(
            watch.status,
            Some(written),
            "a status the operator wrote stays as written in the cache"
        );
    }

    #[test]
    fn a_status_fed_ten_thousand_rules_and_ten_thousand_character_keys_stays_under_its_bound() {
        let status = bounded(huge_status(), 0);
        let bytes = serialized_len(&status);
        assert!(bytes <= DECIDED_STATUS_BYTES, "{bytes} bytes");
        assert!(status.truncated.len() <= TRUNCATED_NOTES, "{:?}", status.truncated);
        let notes = status.truncated.join("\n");
        for said in [
            "app: texts cut",
            "app.regions: the first 50 of 10000 kept",
            "of 10000 rules kept",
            "securityEvents.top: group keys cut to 256 bytes",
        ] {
            assert!(
                notes.contains(said) || notes.contains(&said.replace("app: ", "app.name: ")),
                "{said}: {notes}"
            );
        }
        let rules = status.rate_limits.as_ref().expect("rules");
        assert!(!rules.is_empty() && rules[0].id == 0, "the first rules are kept");
        let top = &status.security_events.as_ref().expect("events").top;
        assert!(top.iter().all(|g| g.key.values().all(|v| v.len() <= TEXT_BYTES)));
    }

    #[test]
    fn a_status_within_its_bounds_is_left_as_it_is() {
        let mut status = huge_status();
        status.app = Some(AppSummary {
            name: "shop".into(),
            regions: vec!["DE".into()],
            ..AppSummary::default()
        });
        status.rate_limits = Some(vec![RateLimitSummary::default(); 3]);
        status.security_events = None;
        let kept = bounded(status.clone(), 0);
        assert_eq!(kept, status);
        assert!(kept.truncated.is_empty());
    }
}
