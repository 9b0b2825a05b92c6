//! spec.rollout: the list logs first, what it would block is read from the zone's
//! security events into status, and the rollout's action is set once the gate lets it.
//! A rollout belongs to one generation: a new spec starts it again. Time and readings
//! are passed in; the reconcile does the reads these functions ask for.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::vocabulary::AccessListReason;
use crate::api::bounded_text;
use crate::api::models::shield::{
    AccessListAction, Dimension, EventGroup, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, FilterOp,
};
use crate::controller::framework::kind::{Event, is_ready};
use crate::controller::framework::status::conditions::{NewCondition, merge};
use crate::controller::framework::status::time::{parse_go_duration, rfc3339};
use crate::controller::framework::status::vocabulary::ConditionType;
use crate::crd::access_list_config::{
    AccessListConfigStatus, Evidence, Promotion, Rollout, RolloutStage, RolloutStatus, Tally,
};
use crate::crd::short_digest;

/// Values of each dimension kept in the evidence.
const TOP: usize = 5;

/// The most slices of a sparkline (one per second below a minute's window).
const SPARKLINE_BUCKETS: i64 = 60;

/// How soon a reconcile looks again at a list set to Log, to start its window.
pub(crate) const CONFIRM_LOG_WITHIN: Duration = Duration::from_secs(5);

/// A rollout as a reconcile finds it, before its readings.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Current {
    pub status: RolloutStatus,
    /// The window started at this reconcile: the platform logs for this generation.
    pub window_started: bool,
}

/// What a reconcile reads from the zone's security events for a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// What the list logged in `[from, to)` (Unix milliseconds).
    Evidence { from: i64, to: i64 },
    /// What the list blocked or challenged in `[from, to)`, after promotion.
    Blocked { from: i64, to: i64 },
}

/// What a rollout does at one reconcile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    /// The action the list should take now.
    pub action: AccessListAction,
    pub status: RolloutStatus,
    pub events: Vec<Event>,
    /// Ready, with its reason and message.
    pub ready: (bool, AccessListReason, String),
    /// When to look again, sooner than the zone's resync: at the window's end.
    pub check_within: Option<Duration>,
    /// The matches of the evidence this step promoted or held the rollout on, with the
    /// reason of that decision.
    pub decided_on: Option<(AccessListReason, i64)>,
}

/// The rollout's window, as the spec gives it (validated by the CRD; 1h otherwise).
pub(crate) fn window_of(rollout: &Rollout) -> Duration {
    parse_go_duration(&rollout.window).unwrap_or(Duration::from_secs(3600))
}

fn millis(at: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(at).ok().map(|t| t.timestamp_millis())
}

/// The rollout of `generation` as this reconcile finds it: started again when the spec
/// changed, its window started once the platform logs (`platform_action`).
pub(crate) fn current(
    previous: Option<&RolloutStatus>,
    generation: Option<i64>,
    platform_action: i32,
    now: DateTime<Utc>,
) -> Current {
    let mut status = match previous {
        Some(previous) if previous.observed_generation == generation => previous.clone(),
        _ => RolloutStatus {
            observed_generation: generation,
            ..RolloutStatus::default()
        },
    };
    let window_started = status.stage == RolloutStage::Logging
        && status.window_start.is_none()
        && platform_action == AccessListAction::Log.code();
    if window_started {
        status.window_start = Some(rfc3339(now));
    }
    Current { status, window_started }
}

/// What this reconcile reads: the evidence while the window runs, the blocked events
/// after promotion when `rollbackAbove` is set; nothing once held or rolled back.
pub(crate) fn read_needed(rollout: &Rollout, status: &RolloutStatus, now: DateTime<Utc>) -> Option<Read> {
    let now_ms = now.timestamp_millis();
    let window_ms = i64::try_from(window_of(rollout).as_millis()).unwrap_or(i64::MAX);
    match status.stage {
        RolloutStage::Logging => {
            let from = status.window_start.as_deref().and_then(millis)?;
            let to = now_ms.min(from.saturating_add(window_ms));
            (to > from).then_some(Read::Evidence { from, to })
        }
        RolloutStage::Promoted if rollout.rollback_above.is_some() => {
            let promoted = status.promoted_at.as_deref().and_then(millis).unwrap_or(now_ms);
            let from = promoted.max(now_ms - window_ms);
            (now_ms > from).then_some(Read::Blocked { from, to: now_ms })
        }
        _ => None,
    }
}

/// The searches of a read, for the list `list_id`: by the rollout's filters, or by
/// `feature eq access_list` and `ruleId eq <list_id>`. Evidence: by feature with the
/// sparkline, then the top values of ip, country, asn and url. Blocked: by feature.
pub(crate) fn searches(read: Read, rollout: &Rollout, list_id: i64) -> Vec<EventLogsSearchRequest> {
    let (from, to) = match read {
        Read::Evidence { from, to } | Read::Blocked { from, to } => (from, to),
    };
    let mut base = EventLogsSearchRequest::window(from, to).page(0);
    if rollout.filters.is_empty() {
        base = base
            .filter(EventLogsFilter::new(Dimension::Feature, FilterOp::Eq, ["access_list"]))
            .filter(EventLogsFilter::new(
                Dimension::RuleId,
                FilterOp::Eq,
                [list_id.to_string()],
            ));
    }
    for filter in &rollout.filters {
        base = base.filter(EventLogsFilter::new(filter.field, filter.op, filter.value.clone()));
    }
    let by_feature = base.clone().group_by([Dimension::Feature]).page_size(500);
    match read {
        Read::Blocked { .. } => vec![by_feature],
        Read::Evidence { .. } => {
            let buckets = ((to - from) / 1000).clamp(1, SPARKLINE_BUCKETS);
            let mut all = vec![by_feature.buckets(i32::try_from(buckets).unwrap_or(1))];
            for dimension in [Dimension::Ip, Dimension::Country, Dimension::Asn, Dimension::Url] {
                all.push(base.clone().group_by([dimension]).page_size(TOP as i32));
            }
            all
        }
    }
}

fn top(groups: &[EventGroup], dimension: Dimension) -> Vec<Tally> {
    let mut tallies: Vec<Tally> = groups
        .iter()
        .map(|group| Tally {
            value: bounded_text(
                group
                    .key
                    .as_ref()
                    .and_then(|key| key.get(dimension.as_str()))
                    .map_or("", String::as_str),
                256,
            ),
            count: group.count,
        })
        .collect();
    tallies.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
    tallies.truncate(TOP);
    tallies
}

fn groups(answer: Option<&EventLogsSearchResponse>) -> &[EventGroup] {
    answer.and_then(|a| a.groups.as_deref()).unwrap_or_default()
}

/// The evidence of `[from, to)` from the answers to [`searches`] of a [`Read::Evidence`],
/// in their order; its digest covers every number and value shown.
pub(crate) fn evidence(from: i64, to: i64, answers: &[EventLogsSearchResponse]) -> Evidence {
    let by_feature = groups(answers.first());
    let mut sparkline: Vec<i64> = Vec::new();
    for line in by_feature.iter().filter_map(|group| group.sparkline.as_ref()) {
        if sparkline.len() < line.len() {
            sparkline.resize(line.len(), 0);
        }
        for (sum, count) in sparkline.iter_mut().zip(line) {
            *sum += count;
        }
    }
    sparkline.truncate(SPARKLINE_BUCKETS as usize);
    let at = |ms: i64| DateTime::from_timestamp_millis(ms).map(rfc3339).unwrap_or_default();
    let mut evidence = Evidence {
        from: at(from),
        to: at(to),
        matches: by_feature.iter().map(|group| group.count).sum(),
        distinct_ips: answers.get(1).map_or(0, |answer| answer.total),
        top_ips: top(groups(answers.get(1)), Dimension::Ip),
        top_countries: top(groups(answers.get(2)), Dimension::Country),
        top_asns: top(groups(answers.get(3)), Dimension::Asn),
        top_urls: top(groups(answers.get(4)), Dimension::Url),
        sparkline,
        digest: String::new(),
    };
    evidence.digest = digest(&evidence);
    evidence
}

/// A short hash of everything the evidence shows but its digest.
pub(crate) fn digest(evidence: &Evidence) -> String {
    let tallies =
        |tallies: &[Tally]| -> Vec<String> { tallies.iter().map(|t| format!("{}={}", t.value, t.count)).collect() };
    let shown: BTreeMap<&str, String> = [
        ("from", evidence.from.clone()),
        ("to", evidence.to.clone()),
        ("matches", evidence.matches.to_string()),
        ("distinctIps", evidence.distinct_ips.to_string()),
        ("topIps", tallies(&evidence.top_ips).join(",")),
        ("topCountries", tallies(&evidence.top_countries).join(",")),
        ("topAsns", tallies(&evidence.top_asns).join(",")),
        ("topUrls", tallies(&evidence.top_urls).join(",")),
        ("sparkline", format!("{:?}", evidence.sparkline)),
    ]
    .into_iter()
    .collect();
    short_digest(format!("{shown:?}").as_bytes())
}

/// The events the list blocked or challenged, from the answer to a [`Read::Blocked`].
pub(crate) fn blocked(answers: &[EventLogsSearchResponse]) -> i64 {
    groups(answers.first())
        .iter()
        .filter_map(|group| group.context.as_ref())
        .map(|context| context.blocked + context.challenged)
        .sum()
}

/// What exceeds the gate, by how much; `None` while it holds.
pub(crate) fn exceeded(rollout: &Rollout, evidence: &Evidence) -> Option<String> {
    let over = |what: &str, seen: i64, limit: Option<i64>, name: &str| {
        limit
            .filter(|&limit| seen > limit)
            .map(|limit| format!("{seen} {what} exceed {name} {limit} by {}", seen - limit))
    };
    let exceeded: Vec<String> = [
        over("matches", evidence.matches, rollout.max_matches, "maxMatches"),
        over(
            "distinct IPs",
            evidence.distinct_ips,
            rollout.max_distinct_ips,
            "maxDistinctIps",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!exceeded.is_empty()).then(|| exceeded.join("; "))
}

fn summary(evidence: Option<&Evidence>) -> String {
    evidence.map_or_else(
        || "no events read yet".to_string(),
        |e| {
            format!(
                "{} matches from {} IPs from {} to {} (evidence {})",
                e.matches, e.distinct_ips, e.from, e.to, e.digest
            )
        },
    )
}

/// The rollout's step at `now`: `current` as [`current`] found it, with the readings
/// [`read_needed`] asked for, and `approval`, the value of the promote annotation.
pub(crate) fn step(
    rollout: &Rollout,
    current: Current,
    evidence: Option<Evidence>,
    blocked: Option<i64>,
    approval: Option<&str>,
    now: DateTime<Utc>,
) -> Step {
    let Current {
        mut status,
        window_started,
    } = current;
    let target = rollout.action.action();
    let window = window_of(rollout);
    let mut events = Vec::new();
    if window_started {
        events.push(Event::normal(
            AccessListReason::RolloutStarted,
            format!(
                "the list logs; {} after {} it may take {}",
                humantime(window),
                rfc3339(now),
                target.name()
            ),
        ));
    }
    if evidence.is_some() {
        status.evidence = evidence;
    }
    if blocked.is_some() {
        status.blocked = blocked;
    }
    let log = AccessListAction::Log;
    match status.stage {
        RolloutStage::Logging | RolloutStage::AwaitingApproval => {
            let Some(start) = status.window_start.as_deref().and_then(millis) else {
                let message = format!(
                    "setting the list to Log; the window of {} starts once it logs",
                    humantime(window)
                );
                return Step {
                    action: log,
                    status,
                    events,
                    ready: (false, AccessListReason::RolloutLogging, message),
                    check_within: Some(CONFIRM_LOG_WITHIN),
                    decided_on: None,
                };
            };
            if let Some(over) = status.evidence.as_ref().and_then(|e| exceeded(rollout, e)) {
                let status_matches = status
                    .evidence
                    .as_ref()
                    .map(|e| (AccessListReason::RolloutHeld, e.matches));
                status.stage = RolloutStage::Held;
                let message = held_because(&over);
                events.push(Event::warning(AccessListReason::RolloutHeld, message.clone()));
                return Step {
                    action: log,
                    status,
                    events,
                    ready: (false, AccessListReason::RolloutHeld, message),
                    check_within: None,
                    decided_on: status_matches,
                };
            }
            let end = start.saturating_add(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
            let elapsed = now.timestamp_millis() >= end;
            let digest = status.evidence.as_ref().map(|e| e.digest.as_str());
            let approved = rollout.promotion == Promotion::Manual && approval.is_some() && approval == digest;
            if (elapsed && rollout.promotion == Promotion::Automatic) || approved {
                return promote(rollout, status, events, now);
            }
            if let Some(stale) = approval.filter(|_| rollout.promotion == Promotion::Manual && !approved) {
                events.push(Event::warning(
                    AccessListReason::StaleApproval,
                    format!(
                        "edgeplatform.io/promote is {stale:?}, the evidence shown is {}: nothing promoted",
                        digest.unwrap_or("not read yet")
                    ),
                ));
            }
            let shown = summary(status.evidence.as_ref());
            let (reason, message) = if elapsed {
                status.stage = RolloutStage::AwaitingApproval;
                let message = format!(
                    "the window elapsed: {shown}; promote with the annotation edgeplatform.io/promote={}",
                    digest.unwrap_or_default()
                );
                (AccessListReason::AwaitingApproval, message)
            } else {
                let at = DateTime::from_timestamp_millis(end).map(rfc3339).unwrap_or_default();
                (AccessListReason::RolloutLogging, format!("logging until {at}: {shown}"))
            };
            let remaining = u64::try_from(end - now.timestamp_millis())
                .ok()
                .map(Duration::from_millis);
            Step {
                action: log,
                status,
                events,
                ready: (false, reason, message),
                check_within: remaining.filter(|_| !elapsed),
                decided_on: None,
            }
        }
        RolloutStage::Held => {
            let over = status
                .evidence
                .as_ref()
                .and_then(|e| exceeded(rollout, e))
                .unwrap_or_else(|| summary(status.evidence.as_ref()));
            Step {
                action: log,
                status,
                events,
                ready: (false, AccessListReason::RolloutHeld, held_because(&over)),
                check_within: None,
                decided_on: None,
            }
        }
        RolloutStage::Promoted => match (rollout.rollback_above, status.blocked) {
            (Some(limit), Some(blocked)) if blocked > limit => {
                status.stage = RolloutStage::RolledBack;
                status.rolled_back_at = Some(rfc3339(now));
                let message = format!(
                    "back to Log: {blocked} events {} within {} exceed rollbackAbove {limit}; change the spec to start again",
                    past_tense(target),
                    humantime(window)
                );
                events.push(Event::warning(AccessListReason::RolledBack, message.clone()));
                Step {
                    action: log,
                    status,
                    events,
                    ready: (false, AccessListReason::RolledBack, message),
                    check_within: None,
                    decided_on: None,
                }
            }
            _ => promoted(rollout, status, events),
        },
        RolloutStage::RolledBack => {
            let message = format!(
                "back to Log since {}: {} events {} exceeded rollbackAbove {}; change the spec to start again",
                status.rolled_back_at.as_deref().unwrap_or_default(),
                status.blocked.unwrap_or_default(),
                past_tense(target),
                rollout.rollback_above.unwrap_or_default()
            );
            Step {
                action: log,
                status,
                events,
                ready: (false, AccessListReason::RolledBack, message),
                check_within: None,
                decided_on: None,
            }
        }
    }
}

/// `status`, converged on the step's action, with the rollout's state; its Ready is the
/// step's once the platform takes that action (a Ready saying the list differs stays).
pub(crate) fn with_step(
    mut status: AccessListConfigStatus,
    step: &Step,
    generation: Option<i64>,
    now: &str,
) -> AccessListConfigStatus {
    if is_ready(&status, generation) {
        let (ready, reason, message) = &step.ready;
        let decided = [NewCondition::new(
            ConditionType::Ready,
            *ready,
            *reason,
            message.clone(),
        )];
        status.conditions = merge(&status.conditions, &decided, generation, now);
    }
    status.rollout = Some(step.status.clone());
    status
}

fn promote(rollout: &Rollout, mut status: RolloutStatus, mut events: Vec<Event>, now: DateTime<Utc>) -> Step {
    status.stage = RolloutStage::Promoted;
    status.promoted_at = Some(rfc3339(now));
    events.push(Event::normal(
        AccessListReason::Promoted,
        format!(
            "{} promotion to {}: {}",
            match rollout.promotion {
                Promotion::Automatic => "automatic",
                Promotion::Manual => "approved",
            },
            rollout.action.action().name(),
            summary(status.evidence.as_ref())
        ),
    ));
    let matches = status
        .evidence
        .as_ref()
        .map(|e| (AccessListReason::Promoted, e.matches));
    Step {
        decided_on: matches,
        ..promoted(rollout, status, events)
    }
}

fn promoted(rollout: &Rollout, status: RolloutStatus, events: Vec<Event>) -> Step {
    let target = rollout.action.action();
    let message = format!(
        "promoted to {} at {}: {}",
        target.name(),
        status.promoted_at.as_deref().unwrap_or_default(),
        summary(status.evidence.as_ref())
    );
    Step {
        action: target,
        status,
        events,
        ready: (true, AccessListReason::Promoted, message),
        check_within: None,
        decided_on: None,
    }
}

fn held_because(over: &str) -> String {
    format!("held in Log: {over}; change the spec to start again")
}

fn past_tense(action: AccessListAction) -> &'static str {
    match action {
        AccessListAction::Challenge => "challenged",
        _ => "blocked",
    }
}

/// `1h`, `90m`, `45s`: the window as a person would write it.
fn humantime(window: Duration) -> String {
    let seconds = window.as_secs();
    match seconds {
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::shield::GroupContext;
    use crate::controller::framework::status::vocabulary::StatusName;
    use crate::crd::EventFilter;
    use crate::crd::access_list_config::RolloutAction;

    const START: &str = "2026-11-28T10:00:00Z";
    const LIST: i64 = 11;

    fn at(time: &str) -> DateTime<Utc> {
        time.parse().expect("time")
    }

    fn rollout(promotion: Promotion) -> Rollout {
        Rollout {
            action: RolloutAction::Block,
            window: "1h".into(),
            promotion,
            max_matches: Some(100),
            max_distinct_ips: None,
            rollback_above: Some(10),
            filters: Vec::new(),
        }
    }

    fn logging_since(start: &str) -> Current {
        Current {
            status: RolloutStatus {
                stage: RolloutStage::Logging,
                observed_generation: Some(2),
                window_start: Some(start.into()),
                ..RolloutStatus::default()
            },
            window_started: false,
        }
    }

    fn group(dimension: Dimension, value: &str, count: i64) -> EventGroup {
        EventGroup {
            key: Some([(dimension.as_str().to_string(), value.to_string())].into()),
            count,
            ..EventGroup::default()
        }
    }

    fn answer(total: i64, groups: Vec<EventGroup>) -> EventLogsSearchResponse {
        EventLogsSearchResponse {
            groups: Some(groups),
            total,
            ..EventLogsSearchResponse::default()
        }
    }

    fn evidence_of(matches: i64) -> Evidence {
        let mut by_feature = group(Dimension::Feature, "access_list", matches);
        by_feature.sparkline = Some(vec![matches - 1, 1]);
        let ips = (0..7)
            .map(|i| group(Dimension::Ip, &format!("192.0.2.{i}"), i + 1))
            .collect();
        evidence(
            at(START).timestamp_millis(),
            at("2026-11-28T10:30:00Z").timestamp_millis(),
            &[
                answer(1, vec![by_feature]),
                answer(7, ips),
                answer(1, vec![group(Dimension::Country, "DE", matches)]),
                answer(1, vec![group(Dimension::Asn, "64500", matches)]),
                answer(1, vec![group(Dimension::Url, "/login", matches)]),
            ],
        )
    }

    #[test]
    fn a_rollout_starts_again_with_a_new_generation_and_its_window_once_the_list_logs() {
        let now = at(START);
        let promoted = RolloutStatus {
            stage: RolloutStage::Promoted,
            observed_generation: Some(1),
            window_start: Some("2026-11-27T10:00:00Z".into()),
            ..RolloutStatus::default()
        };
        let blocking = current(Some(&promoted), Some(2), AccessListAction::Block.code(), now);
        assert_eq!(blocking.status.stage, RolloutStage::Logging);
        assert_eq!(
            blocking.status.window_start, None,
            "the window waits for the platform to log"
        );
        assert!(!blocking.window_started);
        let logging = current(Some(&blocking.status), Some(2), AccessListAction::Log.code(), now);
        assert!(logging.window_started);
        assert_eq!(logging.status.window_start.as_deref(), Some(START));
        let same = current(Some(&promoted), Some(1), AccessListAction::Block.code(), now);
        assert_eq!(same.status, promoted, "the same generation keeps its rollout");
    }

    #[test]
    fn the_window_is_read_until_its_end_and_after_promotion_only_with_rollback_above() {
        let spec = rollout(Promotion::Automatic);
        let current = logging_since(START);
        let start = at(START).timestamp_millis();
        assert_eq!(
            read_needed(&spec, &current.status, at("2026-11-28T10:20:00Z")),
            Some(Read::Evidence {
                from: start,
                to: start + 20 * 60_000
            })
        );
        assert_eq!(
            read_needed(&spec, &current.status, at("2026-11-28T13:00:00Z")),
            Some(Read::Evidence {
                from: start,
                to: start + 3_600_000
            })
        );
        assert_eq!(read_needed(&spec, &current.status, at(START)), None, "an empty window");
        let promoted = RolloutStatus {
            stage: RolloutStage::Promoted,
            promoted_at: Some("2026-11-28T11:00:00Z".into()),
            ..current.status.clone()
        };
        assert_eq!(
            read_needed(&spec, &promoted, at("2026-11-28T13:00:00Z")),
            Some(Read::Blocked {
                from: start + 2 * 3_600_000,
                to: start + 3 * 3_600_000
            })
        );
        let without_rollback = Rollout {
            rollback_above: None,
            ..spec.clone()
        };
        assert_eq!(
            read_needed(&without_rollback, &promoted, at("2026-11-28T13:00:00Z")),
            None
        );
        let held = RolloutStatus {
            stage: RolloutStage::Held,
            ..current.status
        };
        assert_eq!(read_needed(&spec, &held, at("2026-11-28T13:00:00Z")), None);
    }

    #[test]
    fn the_list_s_events_are_searched_by_feature_and_rule_id_unless_the_spec_filters() {
        let read = Read::Evidence { from: 0, to: 3_600_000 };
        let all = searches(read, &rollout(Promotion::Automatic), LIST);
        assert_eq!(all.len(), 5);
        let filters = all[0].filters.clone().unwrap_or_default();
        assert_eq!(
            filters,
            [
                EventLogsFilter::new(Dimension::Feature, FilterOp::Eq, ["access_list"]),
                EventLogsFilter::new(Dimension::RuleId, FilterOp::Eq, ["11"]),
            ]
        );
        assert_eq!(all[0].buckets, Some(60));
        let grouped: Vec<_> = all.iter().map(|s| s.group_by.clone().unwrap_or_default()).collect();
        assert_eq!(
            grouped,
            [
                vec![Dimension::Feature],
                vec![Dimension::Ip],
                vec![Dimension::Country],
                vec![Dimension::Asn],
                vec![Dimension::Url]
            ]
        );
        assert!(all[1..].iter().all(|s| s.page_size == Some(5) && s.buckets.is_none()));
        let short = searches(
            Read::Evidence { from: 0, to: 20_000 },
            &rollout(Promotion::Automatic),
            LIST,
        );
        assert_eq!(short[0].buckets, Some(20), "one slice per second below a minute");

        let filtered = Rollout {
            filters: vec![EventFilter {
                field: Dimension::RuleId,
                op: FilterOp::In,
                value: vec!["waf-11".into()],
            }],
            ..rollout(Promotion::Automatic)
        };
        let blocked = searches(Read::Blocked { from: 0, to: 1 }, &filtered, LIST);
        assert_eq!(blocked.len(), 1);
        assert_eq!(
            blocked[0].filters.clone().unwrap_or_default(),
            [EventLogsFilter::new(Dimension::RuleId, FilterOp::In, ["waf-11"])]
        );
    }

    #[test]
    fn evidence_counts_tops_and_a_digest_of_what_it_shows() {
        let evidence = evidence_of(42);
        assert_eq!(evidence.matches, 42);
        assert_eq!(evidence.distinct_ips, 7);
        let ips: Vec<_> = evidence.top_ips.iter().map(|t| (t.value.as_str(), t.count)).collect();
        assert_eq!(
            ips,
            [
                ("192.0.2.6", 7),
                ("192.0.2.5", 6),
                ("192.0.2.4", 5),
                ("192.0.2.3", 4),
                ("192.0.2.2", 3)
            ]
        );
        assert_eq!(evidence.top_countries[0].value, "DE");
        assert_eq!(evidence.sparkline, [41, 1]);
        assert_eq!(
            (evidence.from.as_str(), evidence.to.as_str()),
            (START, "2026-11-28T10:30:00Z")
        );
        assert_eq!(evidence.digest.len(), 10);
        assert_eq!(
            evidence.digest,
            evidence_of(42).digest,
            "the same numbers, the same digest"
        );
        assert_ne!(evidence.digest, evidence_of(43).digest);
    }

    #[test]
    fn blocked_events_are_counted_from_the_groups_context_whatever_the_action_s_spelling() {
        let mut feature = group(Dimension::Feature, "access_list", 9);
        feature.context = Some(GroupContext {
            blocked: 7,
            challenged: 2,
            ..GroupContext::default()
        });
        assert_eq!(blocked(&[answer(1, vec![feature])]), 9);
        assert_eq!(blocked(&[]), 0);
    }

    #[test]
    fn a_list_not_logging_yet_is_set_to_log_and_looked_at_again_soon() {
        let spec = rollout(Promotion::Automatic);
        let fresh = current(None, Some(2), AccessListAction::Block.code(), at(START));
        let step = step(&spec, fresh, None, None, None, at(START));
        assert_eq!(step.action, AccessListAction::Log);
        assert_eq!(step.ready.1, AccessListReason::RolloutLogging);
        assert_eq!(step.check_within, Some(CONFIRM_LOG_WITHIN));
        assert!(step.events.is_empty());
    }

    #[test]
    fn automatic_promotion_after_the_whole_window_with_the_gate_holding() {
        let spec = rollout(Promotion::Automatic);
        let started = current(None, Some(2), AccessListAction::Log.code(), at(START));
        let first = step(&spec, started, None, None, None, at(START));
        assert_eq!(first.events[0].reason, AccessListReason::RolloutStarted.as_str());
        let midway = at("2026-11-28T10:30:00Z");
        let running = step(&spec, logging_since(START), Some(evidence_of(42)), None, None, midway);
        assert_eq!(
            (running.action, running.ready.1),
            (AccessListAction::Log, AccessListReason::RolloutLogging)
        );
        assert_eq!(running.check_within, Some(Duration::from_secs(1800)));
        assert!(running.ready.2.contains("42 matches from 7 IPs"), "{}", running.ready.2);

        let end = at("2026-11-28T11:00:00Z");
        let done = step(&spec, logging_since(START), Some(evidence_of(42)), None, None, end);
        assert_eq!(done.action, AccessListAction::Block);
        assert_eq!(done.status.stage, RolloutStage::Promoted);
        assert_eq!(done.status.promoted_at.as_deref(), Some("2026-11-28T11:00:00Z"));
        assert!(done.ready.0);
        assert_eq!(done.events[0].reason, AccessListReason::Promoted.as_str());
        assert_eq!(
            done.status.evidence,
            Some(evidence_of(42)),
            "the evidence stays in status"
        );
        assert_eq!(running.decided_on, None);
        assert_eq!(done.decided_on, Some((AccessListReason::Promoted, 42)));
    }

    #[test]
    fn a_gate_exceeded_holds_the_list_in_log_and_says_by_how_much() {
        let spec = Rollout {
            max_distinct_ips: Some(5),
            ..rollout(Promotion::Automatic)
        };
        let midway = at("2026-11-28T10:30:00Z");
        let held = step(&spec, logging_since(START), Some(evidence_of(130)), None, None, midway);
        assert_eq!(
            (held.action, held.status.stage),
            (AccessListAction::Log, RolloutStage::Held)
        );
        assert_eq!(held.ready.1, AccessListReason::RolloutHeld);
        assert!(
            held.ready
                .2
                .contains("130 matches exceed maxMatches 100 by 30; 7 distinct IPs exceed maxDistinctIps 5 by 2"),
            "{}",
            held.ready.2
        );
        assert_eq!(held.events.len(), 1);
        assert_eq!(held.decided_on, Some((AccessListReason::RolloutHeld, 130)));
        let later = Current {
            status: held.status,
            window_started: false,
        };
        let still = step(&spec, later, None, None, None, at("2026-11-28T12:00:00Z"));
        assert_eq!(
            (still.action, still.status.stage),
            (AccessListAction::Log, RolloutStage::Held)
        );
        assert!(still.events.is_empty(), "held once");
    }

    #[test]
    fn a_manual_rollout_promotes_on_the_digest_shown_and_not_on_a_stale_one() {
        let spec = rollout(Promotion::Manual);
        let end = at("2026-11-28T11:00:00Z");
        let approving =
            |approval: Option<&str>| step(&spec, logging_since(START), Some(evidence_of(42)), None, approval, end);
        let waiting = approving(None);
        assert_eq!(waiting.status.stage, RolloutStage::AwaitingApproval);
        assert_eq!(waiting.ready.1, AccessListReason::AwaitingApproval);
        let digest = evidence_of(42).digest;
        assert!(waiting.ready.2.contains(&digest), "{}", waiting.ready.2);
        assert_eq!(waiting.check_within, None);

        let stale = evidence_of(41).digest;
        let refused = approving(Some(&stale));
        assert_eq!(refused.action, AccessListAction::Log);
        assert_eq!(refused.events[0].reason, AccessListReason::StaleApproval.as_str());
        assert!(
            refused.events[0].message.contains(&stale),
            "{}",
            refused.events[0].message
        );

        let approved = approving(Some(&digest));
        assert_eq!(
            (approved.action, approved.status.stage),
            (AccessListAction::Block, RolloutStage::Promoted)
        );
    }

    #[test]
    fn more_blocked_than_rollback_above_returns_the_list_to_log_once() {
        let spec = rollout(Promotion::Automatic);
        let promoted = Current {
            status: RolloutStatus {
                stage: RolloutStage::Promoted,
                promoted_at: Some("2026-11-28T11:00:00Z".into()),
                ..logging_since(START).status
            },
            window_started: false,
        };
        let now = at("2026-11-28T11:30:00Z");
        let within = step(&spec, promoted.clone(), None, Some(10), None, now);
        assert_eq!(
            (within.action, within.status.blocked),
            (AccessListAction::Block, Some(10))
        );
        let back = step(&spec, promoted, None, Some(11), None, now);
        assert_eq!(
            (back.action, back.status.stage),
            (AccessListAction::Log, RolloutStage::RolledBack)
        );
        assert!(
            back.ready
                .2
                .contains("11 events blocked within 1h exceed rollbackAbove 10"),
            "{}",
            back.ready.2
        );
        assert_eq!(back.events.len(), 1);
        let after = Current {
            status: back.status,
            window_started: false,
        };
        let stays = step(&spec, after, None, None, None, at("2026-11-28T13:00:00Z"));
        assert_eq!(
            (stays.action, stays.status.stage),
            (AccessListAction::Log, RolloutStage::RolledBack)
        );
        assert!(stays.events.is_empty(), "rolled back once");
    }
}
