use super::*;
use crate::api::models::shield::GroupContext;
use crate::controller::kinds::access_list::resource::RolloutAction;
use crate::resources::EventFilter;

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
        rollback_above_sources: Some(10),
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

/// Evidence of the first half of the window.
fn evidence_of(matches: i64) -> Evidence {
    evidence_until(matches, "2026-11-28T10:30:00Z")
}

/// Evidence of the whole window.
fn whole_window(matches: i64) -> Evidence {
    evidence_until(matches, "2026-11-28T11:00:00Z")
}

fn evidence_until(matches: i64, to: &str) -> Evidence {
    let mut by_feature = group(Dimension::Feature, "access_list", matches);
    by_feature.sparkline = Some(vec![matches - 1, 1]);
    let ips = (0..7)
        .map(|i| group(Dimension::Ip, &format!("192.0.2.{i}"), i + 1))
        .collect();
    evidence(
        at(START).timestamp_millis(),
        at(to).timestamp_millis(),
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
fn the_window_is_read_until_its_end_and_after_promotion_only_on_probation_with_rollback_above_sources() {
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
        probation_ends: Some("2026-11-28T12:00:00Z".into()),
        ..current.status.clone()
    };
    assert_eq!(
        read_needed(&spec, &promoted, at("2026-11-28T11:20:00Z")),
        Some(Read::Blocked {
            from: start + 3_600_000,
            to: start + 3_600_000 + 20 * 60_000
        }),
        "on probation: everything blocked since promotion"
    );
    assert_eq!(
        read_needed(&spec, &promoted, at("2026-11-28T12:00:00.001Z")),
        Some(Read::Blocked {
            from: start + 3_600_000,
            to: start + 2 * 3_600_000
        }),
        "the first read after probation covers it whole"
    );
    let without_rollback = Rollout {
        rollback_above_sources: None,
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
    assert_eq!(blocked.len(), 2, "by feature, then by ip for the distinct sources");
    for search in &blocked {
        assert_eq!(
            search.filters.clone().unwrap_or_default(),
            [EventLogsFilter::new(Dimension::RuleId, FilterOp::In, ["waf-11"])]
        );
    }
    assert_eq!(blocked[1].group_by, Some(vec![Dimension::Ip]));
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
    assert_eq!(evidence.digest.len(), 32, "128 bits: no other evidence shows it");
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
    let by_ip = answer(4, vec![group(Dimension::Ip, "192.0.2.1", 3)]);
    assert_eq!(
        blocked(&[answer(1, vec![feature]), by_ip]),
        Blocked { events: 9, sources: 4 }
    );
    assert_eq!(blocked(&[]), Blocked { events: 0, sources: 0 });
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
    assert_eq!(first.events[0].reason, AccessListReason::RolloutStarted.into());
    let midway = at("2026-11-28T10:30:00Z");
    let running = step(&spec, logging_since(START), Some(evidence_of(42)), None, None, midway);
    assert_eq!(
        (running.action, running.ready.1),
        (AccessListAction::Log, AccessListReason::RolloutLogging)
    );
    assert_eq!(running.check_within, Some(Duration::from_secs(1800)));
    assert!(running.ready.2.contains("42 matches from 7 IPs"), "{}", running.ready.2);

    let end = at("2026-11-28T11:00:00Z");
    let done = step(&spec, logging_since(START), Some(whole_window(42)), None, None, end);
    assert_eq!(done.action, AccessListAction::Block);
    assert_eq!(done.status.stage, RolloutStage::Promoted);
    assert_eq!(done.status.promoted_at.as_deref(), Some("2026-11-28T11:00:00Z"));
    assert!(done.ready.0);
    assert_eq!(done.events[0].reason, AccessListReason::Promoted.into());
    assert_eq!(
        done.status.evidence,
        Some(whole_window(42)),
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
    assert_eq!(refused.events[0].reason, AccessListReason::StaleApproval.into());
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

fn promoted_at(spec: &Rollout, at_time: &str) -> Current {
    let approved = step(
        spec,
        logging_since(START),
        Some(whole_window(5)),
        None,
        None,
        at(at_time),
    );
    assert_eq!(approved.status.stage, RolloutStage::Promoted);
    Current {
        status: approved.status,
        window_started: false,
    }
}

#[test]
fn blocked_requests_from_more_sources_than_rollback_above_sources_on_probation_return_the_list_to_log_once() {
    let spec = rollout(Promotion::Automatic);
    let promoted = promoted_at(&spec, "2026-11-28T11:00:00Z");
    assert_eq!(
        promoted.status.probation_ends.as_deref(),
        Some("2026-11-28T12:00:00Z"),
        "on probation for one window"
    );
    let now = at("2026-11-28T11:30:00Z");
    let one_flooding_source = Blocked {
        events: 10_000,
        sources: 1,
    };
    let within = step(&spec, promoted.clone(), None, Some(one_flooding_source), None, now);
    assert_eq!(
        (within.action, within.status.blocked, within.status.blocked_sources),
        (AccessListAction::Block, Some(10_000), Some(1)),
        "any number of requests from few sources is no signal"
    );
    assert_eq!(
        within.check_within,
        Some(Duration::from_secs(30 * 60)),
        "looks again when probation ends"
    );
    let many = Blocked {
        events: 22,
        sources: 11,
    };
    let back = step(&spec, promoted, None, Some(many), None, now);
    assert_eq!(
        (back.action, back.status.stage),
        (AccessListAction::Log, RolloutStage::RolledBack)
    );
    assert!(
        back.ready
            .2
            .contains("requests blocked from 11 sources (22 events) on probation since 2026-11-28T11:00:00Z exceed rollbackAboveSources 10"),
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

#[test]
fn after_probation_no_amount_of_blocked_traffic_returns_the_list_to_log() {
    let spec = rollout(Promotion::Automatic);
    let promoted = promoted_at(&spec, "2026-11-28T11:00:00Z");
    let after = at("2026-11-28T12:00:01Z");
    assert_eq!(
        read_needed(&spec, &promoted.status, at("2026-11-28T13:00:00Z")),
        Some(Read::Blocked {
            from: at("2026-11-28T11:00:00Z").timestamp_millis(),
            to: at("2026-11-28T12:00:00Z").timestamp_millis(),
        }),
        "what is read after probation is probation only"
    );
    let kept = step(&spec, promoted, None, None, None, after);
    assert_eq!(
        (kept.action, kept.status.stage),
        (AccessListAction::Block, RolloutStage::Promoted)
    );
    assert!(
        kept.ready.2.contains("probation ended 2026-11-28T12:00:00Z"),
        "{}",
        kept.ready.2
    );
    assert_eq!(kept.check_within, None, "nothing left to look at");
    assert!(kept.status.probation_over, "read whole, probation is over");
    assert_eq!(
        read_needed(&spec, &kept.status, at("2026-11-28T13:00:00Z")),
        None,
        "no more reads: a search beyond the platform's 72 h would fail every reconcile"
    );
}

#[test]
fn no_read_reaches_past_the_platform_s_events_an_unread_window_starts_again_and_a_partial_one_waits_for_a_person() {
    let spec = rollout(Promotion::Automatic);
    let days_later = at("2026-12-01T12:00:00Z");
    if let Some(read) = read_needed(&spec, &logging_since(START).status, days_later) {
        panic!("the whole window is beyond the platform's reach: {read:?}");
    }
    let unread = step(&spec, logging_since(START), None, None, None, days_later);
    assert_eq!(
        (
            unread.action,
            unread.status.stage,
            unread.status.window_start.as_deref()
        ),
        (
            AccessListAction::Log,
            RolloutStage::Logging,
            Some("2026-12-01T12:00:00Z")
        ),
        "a window nothing could be read of starts again"
    );
    assert_eq!(unread.check_within, Some(window_of(&spec)));
    let partial = step(
        &spec,
        logging_since(START),
        Some(evidence_of(5)),
        None,
        None,
        days_later,
    );
    assert_eq!(
        partial.status.stage,
        RolloutStage::AwaitingApproval,
        "evidence of half the window"
    );
    let digest = partial
        .status
        .evidence
        .as_ref()
        .map(|e| e.digest.clone())
        .expect("evidence");
    let current = Current {
        status: partial.status,
        window_started: false,
    };
    let approved = step(&spec, current, None, None, Some(&digest), days_later);
    assert_eq!(approved.status.stage, RolloutStage::Promoted, "a person may approve it");
}

#[test]
fn the_claim_records_what_decides_not_the_readings_of_each_reconcile() {
    let spec = rollout(Promotion::Automatic);
    let reading = step(
        &spec,
        logging_since(START),
        Some(evidence_of(5)),
        None,
        None,
        at("2026-11-28T10:10:00Z"),
    );
    assert!(reading.status.evidence.is_some(), "status shows the evidence so far");
    assert_eq!(
        recorded(&reading.status),
        logging_since(START).status,
        "the window only"
    );
    let promoted = promoted_at(&spec, "2026-11-28T11:00:00Z");
    let read = step(
        &spec,
        promoted.clone(),
        None,
        Some(Blocked { events: 9, sources: 2 }),
        None,
        at("2026-11-28T11:10:00Z"),
    );
    assert_eq!(
        recorded(&read.status),
        promoted.status,
        "nothing to write while on probation"
    );
    assert!(
        recorded(&read.status).evidence.is_some(),
        "the evidence it was promoted on stays"
    );
}

#[test]
fn with_no_record_a_blocking_list_stays_promoted_and_a_status_rolled_back_keeps_the_list_in_log() {
    let spec = rollout(Promotion::Automatic);
    let block = AccessListAction::Block.code();
    let rolled_back = RolloutStatus {
        stage: RolloutStage::RolledBack,
        observed_generation: Some(2),
        rolled_back_at: Some(START.into()),
        evidence: Some(evidence_of(5)),
        ..RolloutStatus::default()
    };
    let log = AccessListAction::Log.code();
    let kept =
        recorded_or_adopted(&spec, None, Some(&rolled_back), Some(2), (true, log), at(START)).expect("kept back");
    assert_eq!((kept.stage, kept.evidence), (RolloutStage::RolledBack, None));
    let blocking = recorded_or_adopted(&spec, None, Some(&rolled_back), Some(2), (true, block), at(START));
    assert_eq!(
        blocking.map(|r| r.stage),
        Some(RolloutStage::Promoted),
        "a status never turns a blocking list back to Log"
    );
    let held = RolloutStatus {
        stage: RolloutStage::Held,
        ..rolled_back.clone()
    };
    assert_eq!(
        recorded_or_adopted(&spec, None, Some(&held), Some(2), (true, log), at(START)),
        None,
        "held: a new window, in Log"
    );
    let older = recorded_or_adopted(&spec, None, Some(&rolled_back), Some(3), (false, block), at(START));
    assert_eq!(older, None, "a status of another generation says nothing");
    let promoted = RolloutStatus {
        stage: RolloutStage::Promoted,
        ..rolled_back
    };
    assert_eq!(
        recorded_or_adopted(&spec, None, Some(&promoted), Some(2), (false, block), at(START)),
        None,
        "a status never promotes"
    );
}

#[test]
fn a_held_rollout_is_promoted_by_hand_with_the_digest_of_the_evidence_that_held_it() {
    let spec = rollout(Promotion::Automatic);
    let flood = evidence_of(101);
    let held = step(
        &spec,
        logging_since(START),
        Some(flood.clone()),
        None,
        None,
        at("2026-11-28T10:30:00Z"),
    );
    assert_eq!(held.status.stage, RolloutStage::Held);
    assert!(
        held.ready.2.contains("101 matches exceed maxMatches 100 by 1"),
        "says which signal held it: {}",
        held.ready.2
    );
    assert!(
        held.ready
            .2
            .contains(&format!("edgeplatform.io/promote={}", flood.digest)),
        "{}",
        held.ready.2
    );
    let current = || Current {
        status: held.status.clone(),
        window_started: false,
    };
    let later = at("2026-11-28T10:40:00Z");
    let other = step(
        &spec,
        current(),
        None,
        None,
        Some("0123456789abcdef0123456789abcdef"),
        later,
    );
    assert_eq!(other.status.stage, RolloutStage::Held, "only the digest shown promotes");
    let approved = step(&spec, current(), None, None, Some(&flood.digest), later);
    assert_eq!(
        (approved.action, approved.status.stage),
        (AccessListAction::Block, RolloutStage::Promoted)
    );
    assert!(
        approved.events[0].message.starts_with("approved promotion"),
        "{}",
        approved.events[0].message
    );
    assert_eq!(
        approved.status.probation_ends, None,
        "what held it is no signal to roll back on"
    );
}

#[test]
fn the_write_that_makes_the_list_log_starts_the_window_at_its_answer() {
    let spec = rollout(Promotion::Automatic);
    let read = at(START);
    let answered = at("2026-11-28T10:00:00.250Z");
    // The reconcile's read found the list blocking: it asks for Log, no window yet.
    let asked = step(&spec, current(None, Some(2), 2, read), None, None, None, read);
    assert_eq!(asked.action, AccessListAction::Log);
    assert_eq!(asked.status.window_start, None);

    let started = after_write(&spec, asked.clone(), AccessListAction::Log.code(), None, answered);
    // Status times are whole seconds: the start is the answer's second, never later.
    assert_eq!(started.status.window_start.as_deref(), Some("2026-11-28T10:00:00Z"));
    assert_eq!(
        started.check_within,
        Some(window_of(&spec) - Duration::from_millis(250)),
        "looks again when the window ends"
    );
    assert!(
        started
            .events
            .iter()
            .any(|event| event.reason == AccessListReason::RolloutStarted.into())
    );
    // Requests the list logs right after the write are in the first evidence read.
    match read_needed(&spec, &started.status, at("2026-11-28T10:00:05Z")) {
        Some(Read::Evidence { from, .. }) => assert!(from <= answered.timestamp_millis()),
        other => panic!("an evidence read, not {other:?}"),
    }

    let refused = after_write(&spec, asked.clone(), 2, None, answered);
    assert_eq!(refused, asked, "a write the list did not take starts nothing");
    let running = step(&spec, logging_since(START), None, None, None, read);
    assert_eq!(
        after_write(&spec, running.clone(), AccessListAction::Log.code(), None, answered),
        running,
        "a window already running keeps its start"
    );
}

#[test]
fn a_list_already_taking_the_rollout_s_action_with_no_record_is_promoted_without_probation() {
    let spec = rollout(Promotion::Automatic);
    let now = at(START);
    let block = AccessListAction::Block.code();
    let adopted = recorded_or_adopted(&spec, None, None, Some(2), (true, block), now).expect("adopted");
    assert_eq!(
        (adopted.stage, adopted.probation_ends.as_deref()),
        (RolloutStage::Promoted, None)
    );
    assert_eq!(
        read_needed(&spec, &adopted, at("2026-11-28T10:10:00Z")),
        None,
        "no probation"
    );
    let kept = step(
        &spec,
        current(Some(&adopted), Some(2), block, now),
        None,
        None,
        None,
        now,
    );
    assert_eq!(kept.action, AccessListAction::Block, "the list keeps blocking");

    assert_eq!(
        recorded_or_adopted(&spec, None, None, Some(2), (false, block), now),
        None,
        "a disabled list blocks nothing"
    );
    let log = AccessListAction::Log.code();
    assert_eq!(recorded_or_adopted(&spec, None, None, Some(2), (true, log), now), None);
    let recorded = logging_since(START).status;
    assert_eq!(
        recorded_or_adopted(&spec, Some(&recorded), None, Some(2), (true, block), now),
        Some(recorded),
        "a record decides"
    );
}

#[test]
fn a_step_s_ready_replaces_only_an_in_sync_ready_and_a_held_ready_keeps_its_transition_time() {
    use crate::controller::framework::pipeline::kind::Outcome;
    use crate::controller::kinds::access_list::resource::AccessListConfigStatus;
    let spec = rollout(Promotion::Automatic);
    let logging = step(&spec, logging_since(START), None, None, None, at(START));
    let in_sync = NewCondition::ready(true, AccessListReason::InSync, "the access list matches the spec");
    let (status, ready) = with_step(AccessListConfigStatus::default(), in_sync, &logging);
    assert_eq!(ready.reason, logging.ready.1.into(), "the step's Ready");
    assert_eq!(status.rollout.as_ref(), Some(&logging.status));
    let drifted = NewCondition::ready(false, AccessListReason::Drifted, "isEnabled should be true");
    let (_, ready) = with_step(AccessListConfigStatus::default(), drifted.clone(), &logging);
    assert_eq!(ready, drifted, "a Ready saying the list differs stays");

    // Two resyncs of a list held in Log: Ready's transition time is the first's.
    let written = |previous: &AccessListConfigStatus, time: &str| {
        let in_sync = NewCondition::ready(true, AccessListReason::InSync, "");
        let (status, ready) = with_step(previous.clone(), in_sync, &logging);
        Outcome::new(status)
            .with_conditions([ready])
            .status_over(previous, Some(1), at(time))
    };
    let first = written(&AccessListConfigStatus::default(), START);
    let again = written(&first, "2026-11-28T10:05:00Z");
    assert_eq!(again, first, "nothing to write at the second resync");
}
