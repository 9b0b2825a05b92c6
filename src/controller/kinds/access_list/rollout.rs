//! spec.rollout: the list logs first, what it would block is read from the zone's
//! security events into status, and the rollout's action is set once the gate lets it.
//! A rollout belongs to one generation: a new spec starts it again. Time and readings
//! are passed in; the reconcile does the reads these functions ask for.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::vocabulary::AccessListReason;
use crate::api::bounded_text;
use crate::api::models::shield::{
    AccessListAction, Dimension, EventGroup, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, FilterOp,
};
use crate::controller::framework::prelude::{NewCondition, Notice};
use crate::controller::kinds::access_list::resource::{
    AccessListConfigStatus, Evidence, Promotion, Rollout, RolloutStage, RolloutStatus, Tally,
};
use crate::resources::hex_digest;
use crate::resources::time::rfc3339;

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
    /// What the list blocked or challenged in `[from, to)`, on probation.
    Blocked { from: i64, to: i64 },
}

/// What the list blocked (or challenged) on probation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Blocked {
    pub events: i64,
    /// Distinct client IPs among them: the rollback signal.
    pub sources: i64,
}

/// What a rollout does at one reconcile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    /// The action the list should take now.
    pub action: AccessListAction,
    pub status: RolloutStatus,
    pub events: Vec<Notice<AccessListReason>>,
    /// Ready, with its reason and message.
    pub ready: (bool, AccessListReason, String),
    /// When to look again, sooner than the zone's resync: at the window's end.
    pub check_within: Option<Duration>,
    /// The matches of the evidence this step promoted or held the rollout on, with the
    /// reason of that decision.
    pub decided_on: Option<(AccessListReason, i64)>,
}

impl Step {
    /// The list kept in Log, not Ready for `reason`: looked at again at the zone's
    /// resync, no decision on evidence.
    fn in_log(
        status: RolloutStatus,
        events: Vec<Notice<AccessListReason>>,
        reason: AccessListReason,
        message: String,
    ) -> Step {
        Step {
            action: AccessListAction::Log,
            status,
            events,
            ready: (false, reason, message),
            check_within: None,
            decided_on: None,
        }
    }
}

/// The rollout's window, as the spec gives it (validated by the CRD; 1h otherwise).
pub(crate) fn window_of(rollout: &Rollout) -> Duration {
    rollout.window.duration().unwrap_or(Duration::from_secs(3600))
}

/// The rollout's window in milliseconds.
fn window_ms(rollout: &Rollout) -> i64 {
    i64::try_from(window_of(rollout).as_millis()).unwrap_or(i64::MAX)
}

/// `ms` (Unix milliseconds) as status writes an instant.
fn instant(ms: i64) -> Option<String> {
    DateTime::from_timestamp_millis(ms).map(rfc3339)
}

fn millis(at: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(at).ok().map(|t| t.timestamp_millis())
}

/// The rollout the operator recorded. Where it recorded none (a first reconcile, or
/// the first after an upgrade from a release that kept rollouts in status): a list the
/// platform already has enabled with the rollout's action counts as promoted, without
/// probation (a rollout never weakens what the list does already); else a status that
/// shows this generation rolled back keeps the list in Log until the spec changes
/// (status is trusted only to hold back the object's own list, never for evidence).
pub(crate) fn recorded_or_adopted(
    rollout: &Rollout,
    recorded: Option<&RolloutStatus>,
    shown: Option<&RolloutStatus>,
    generation: Option<i64>,
    (enabled, platform_action): (bool, i32),
    now: DateTime<Utc>,
) -> Option<RolloutStatus> {
    if recorded.is_some() {
        return recorded.cloned();
    }
    if enabled && platform_action == rollout.action.action().code() {
        return Some(RolloutStatus {
            stage: RolloutStage::Promoted,
            observed_generation: generation,
            promoted_at: Some(rfc3339(now)),
            ..RolloutStatus::default()
        });
    }
    let rolled_back = shown
        .filter(|shown| shown.observed_generation == generation)
        .filter(|shown| shown.stage == RolloutStage::RolledBack)?;
    Some(RolloutStatus {
        stage: RolloutStage::RolledBack,
        observed_generation: generation,
        rolled_back_at: rolled_back.rolled_back_at.clone(),
        ..RolloutStatus::default()
    })
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

/// The step once the write it asked for was answered, at `answered_at` in the
/// platform's time, with the list taking `platform_action`: a write that made the list
/// log starts the window at its answer, so the evidence covers every request the list
/// logged from then on. Any other step stays as it was.
pub(crate) fn after_write(
    rollout: &Rollout,
    step: Step,
    platform_action: i32,
    approval: Option<&str>,
    answered_at: DateTime<Utc>,
) -> Step {
    let waiting_for_log = step.status.stage == RolloutStage::Logging && step.status.window_start.is_none();
    if !waiting_for_log || platform_action != AccessListAction::Log.code() {
        return step;
    }
    let generation = step.status.observed_generation;
    let started = current(Some(&step.status), generation, platform_action, answered_at);
    let mut started_step = self::step(rollout, started, None, None, approval, answered_at);
    started_step.events.splice(0..0, step.events);
    started_step
}

/// When probation ends for a list promoted at `promoted_at`: one window later.
fn probation_end(rollout: &Rollout, promoted_at: i64) -> i64 {
    promoted_at.saturating_add(window_ms(rollout))
}

/// How far back the platform's security events reach: a search may not start earlier.
const EVENTS_REACH: Duration = Duration::from_secs(71 * 3600);

/// What this reconcile reads: the evidence while the window runs; what the list
/// blocked since promotion, on probation when `rollbackAboveSources` is set, until the
/// first reconcile after probation; nothing once held, rolled back or past probation.
/// Never earlier than the platform's events reach.
pub(crate) fn read_needed(rollout: &Rollout, status: &RolloutStatus, now: DateTime<Utc>) -> Option<Read> {
    let now_ms = now.timestamp_millis();
    let window_ms = window_ms(rollout);
    let reach = now_ms.saturating_sub(i64::try_from(EVENTS_REACH.as_millis()).unwrap_or(i64::MAX));
    match status.stage {
        RolloutStage::Logging => {
            let start = status.window_start.as_deref().and_then(millis)?;
            let to = now_ms.min(start.saturating_add(window_ms));
            let from = start.max(reach);
            (to > from).then_some(Read::Evidence { from, to })
        }
        RolloutStage::Promoted if rollout.rollback_above_sources.is_some() && !status.probation_over => {
            let promoted = status.promoted_at.as_deref().and_then(millis)?;
            let ends = status.probation_ends.as_deref().and_then(millis)?;
            let to = now_ms.min(ends);
            let from = promoted.max(reach);
            (to > from).then_some(Read::Blocked { from, to })
        }
        _ => None,
    }
}

/// The searches of a read, for the list `list_id`: by the rollout's filters, or by
/// `feature eq access_list` and `ruleId eq <list_id>`. Evidence: by feature with the
/// sparkline, then the top values of ip, country, asn and url. Blocked: by feature,
/// then by ip (its total is the distinct sources).
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
        Read::Blocked { .. } => vec![by_feature, base.group_by([Dimension::Ip]).page_size(1)],
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
    let at = |ms: i64| instant(ms).unwrap_or_default();
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

/// A hash of everything the evidence shows but its digest: 128 bits, so that no other
/// evidence can be made to show the same digest.
pub(crate) fn digest(evidence: &Evidence) -> String {
    let shown = Evidence {
        digest: String::new(),
        ..evidence.clone()
    };
    // JSON: every value quoted and escaped, so no two evidences read the same.
    hex_digest(serde_json::to_string(&shown).unwrap_or_default().as_bytes(), 16)
}

/// What the list blocked or challenged, from the answers to a [`Read::Blocked`].
pub(crate) fn blocked(answers: &[EventLogsSearchResponse]) -> Blocked {
    Blocked {
        events: groups(answers.first())
            .iter()
            .filter_map(|group| group.context.as_ref())
            .map(|context| context.blocked + context.challenged)
            .sum(),
        sources: answers.get(1).map_or(0, |answer| answer.total),
    }
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
    blocked: Option<Blocked>,
    approval: Option<&str>,
    now: DateTime<Utc>,
) -> Step {
    let Current {
        mut status,
        window_started,
    } = current;
    let mut events = Vec::new();
    if window_started {
        events.push(window_started_notice(rollout, now));
    }
    if evidence.is_some() {
        status.evidence = evidence;
    }
    if let Some(blocked) = blocked {
        status.blocked = Some(blocked.events);
        status.blocked_sources = Some(blocked.sources);
    }
    match status.stage {
        RolloutStage::Logging | RolloutStage::AwaitingApproval => logging(rollout, status, events, approval, now),
        RolloutStage::Held => held(rollout, status, events, approval, now),
        RolloutStage::Promoted if probation_failed(rollout, &status) => rolled_back(rollout, status, events, now),
        RolloutStage::Promoted => promoted(rollout, status, events, now),
        RolloutStage::RolledBack => rolled_back(rollout, status, events, now),
    }
}

/// The notice that the list logs, from `now`, for the rollout's window.
fn window_started_notice(rollout: &Rollout, now: DateTime<Utc>) -> Notice<AccessListReason> {
    Notice::normal(
        AccessListReason::RolloutStarted,
        format!(
            "the list logs; {} after {} it may take {}",
            humantime(window_of(rollout)),
            rfc3339(now),
            rollout.action.action().name()
        ),
    )
}

/// A rollout in its window, or past it awaiting approval: held when the evidence
/// exceeds the gate, promoted on the gate or an approval, else logging on.
fn logging(
    rollout: &Rollout,
    status: RolloutStatus,
    mut events: Vec<Notice<AccessListReason>>,
    approval: Option<&str>,
    now: DateTime<Utc>,
) -> Step {
    let Some(start) = status.window_start.as_deref().and_then(millis) else {
        return waiting_for_log(rollout, status, events);
    };
    if let Some(over) = status.evidence.as_ref().and_then(|e| exceeded(rollout, e)) {
        return hold(status, events, &over);
    }
    let end = start.saturating_add(window_ms(rollout));
    let elapsed = now.timestamp_millis() >= end;
    if elapsed && status.evidence.is_none() {
        return unread_window_again(rollout, status, events, now);
    }
    let digest = status.evidence.as_ref().map(|e| e.digest.as_str());
    let approvable = rollout.promotion == Promotion::Manual || elapsed;
    let approved = approvable && approval.is_some() && approval == digest;
    if approved {
        return promote(rollout, status, events, Promotion::Manual, true, now);
    }
    // Promoted on the gate only with evidence of the whole window: one read beyond the
    // platform's reach waits for a person.
    let whole_window = status
        .evidence
        .as_ref()
        .is_some_and(|e| Some(&e.from) == instant(start).as_ref() && Some(&e.to) == instant(end).as_ref());
    if elapsed && whole_window && rollout.promotion == Promotion::Automatic {
        return promote(rollout, status, events, Promotion::Automatic, true, now);
    }
    if let Some(stale) = approval.filter(|_| rollout.promotion == Promotion::Manual) {
        events.push(Notice::warning(
            AccessListReason::StaleApproval,
            format!(
                "edgeplatform.io/promote is {stale:?}, the evidence shown is {}: nothing promoted",
                digest.unwrap_or("not read yet")
            ),
        ));
    }
    logging_on(status, events, end, now)
}

/// The list set to Log, its window not started until the platform logs.
fn waiting_for_log(rollout: &Rollout, status: RolloutStatus, events: Vec<Notice<AccessListReason>>) -> Step {
    let message = format!(
        "setting the list to Log; the window of {} starts once it logs",
        humantime(window_of(rollout))
    );
    Step {
        check_within: Some(CONFIRM_LOG_WITHIN),
        ..Step::in_log(status, events, AccessListReason::RolloutLogging, message)
    }
}

/// Held in Log on the evidence that exceeds the gate by `over`, with a warning.
fn hold(mut status: RolloutStatus, mut events: Vec<Notice<AccessListReason>>, over: &str) -> Step {
    let decided_on = status
        .evidence
        .as_ref()
        .map(|e| (AccessListReason::RolloutHeld, e.matches));
    status.stage = RolloutStage::Held;
    let message = held_because(over, status.evidence.as_ref());
    events.push(Notice::warning(AccessListReason::RolloutHeld, message.clone()));
    Step {
        decided_on,
        ..Step::in_log(status, events, AccessListReason::RolloutHeld, message)
    }
}

/// The list logging, not promoted: until the window's `end`, looked at again then;
/// past it, awaiting approval of the evidence shown.
fn logging_on(mut status: RolloutStatus, events: Vec<Notice<AccessListReason>>, end: i64, now: DateTime<Utc>) -> Step {
    let elapsed = now.timestamp_millis() >= end;
    let shown = summary(status.evidence.as_ref());
    let (reason, message) = if elapsed {
        status.stage = RolloutStage::AwaitingApproval;
        let digest = status.evidence.as_ref().map_or("", |e| e.digest.as_str());
        let message =
            format!("the window elapsed: {shown}; promote with the annotation edgeplatform.io/promote={digest}");
        (AccessListReason::AwaitingApproval, message)
    } else {
        let at = instant(end).unwrap_or_default();
        (AccessListReason::RolloutLogging, format!("logging until {at}: {shown}"))
    };
    let remaining = u64::try_from(end - now.timestamp_millis())
        .ok()
        .map(Duration::from_millis);
    Step {
        check_within: remaining.filter(|_| !elapsed),
        ..Step::in_log(status, events, reason, message)
    }
}

/// A held rollout: promoted once a person approves the evidence that held it (without
/// probation: what held it is no signal), else still held.
fn held(
    rollout: &Rollout,
    status: RolloutStatus,
    events: Vec<Notice<AccessListReason>>,
    approval: Option<&str>,
    now: DateTime<Utc>,
) -> Step {
    let digest = status.evidence.as_ref().map(|e| e.digest.as_str());
    if approval.is_some() && approval == digest {
        return promote(rollout, status, events, Promotion::Manual, false, now);
    }
    let over = status
        .evidence
        .as_ref()
        .and_then(|e| exceeded(rollout, e))
        .unwrap_or_else(|| summary(status.evidence.as_ref()));
    let message = held_because(&over, status.evidence.as_ref());
    Step::in_log(status, events, AccessListReason::RolloutHeld, message)
}

/// A window that ended with nothing read of it (beyond the platform's reach): the list
/// keeps logging and a new window starts now.
fn unread_window_again(
    rollout: &Rollout,
    mut status: RolloutStatus,
    mut events: Vec<Notice<AccessListReason>>,
    now: DateTime<Utc>,
) -> Step {
    status.stage = RolloutStage::Logging;
    status.window_start = Some(rfc3339(now));
    let window = window_of(rollout);
    let message = format!(
        "the window ended beyond the platform's reach of events, unread: the list logs for a new window of {} from {}",
        humantime(window),
        rfc3339(now)
    );
    events.push(Notice::normal(AccessListReason::RolloutStarted, message.clone()));
    Step {
        check_within: Some(window),
        ..Step::in_log(status, events, AccessListReason::RolloutLogging, message)
    }
}

/// Whether the promoted list blocked requests from more sources on probation than
/// `rollbackAboveSources` allows.
fn probation_failed(rollout: &Rollout, status: &RolloutStatus) -> bool {
    matches!(
        (rollout.rollback_above_sources, status.blocked_sources),
        (Some(limit), Some(sources)) if sources > limit
    )
}

/// The list back in Log, for good, until the spec changes: rolled back at `now`, with a
/// warning, when it is not yet (its probation failed).
fn rolled_back(
    rollout: &Rollout,
    mut status: RolloutStatus,
    mut events: Vec<Notice<AccessListReason>>,
    now: DateTime<Utc>,
) -> Step {
    let limit = rollout.rollback_above_sources.unwrap_or_default();
    let sources = status.blocked_sources.unwrap_or_default();
    let requests = rollout.action.past_tense();
    let message = if status.stage == RolloutStage::RolledBack {
        format!(
            "back to Log since {}: requests {requests} from {sources} sources on probation exceeded rollbackAboveSources {limit}; change the spec to start again",
            status.rolled_back_at.as_deref().unwrap_or_default(),
        )
    } else {
        status.stage = RolloutStage::RolledBack;
        status.rolled_back_at = Some(rfc3339(now));
        let message = format!(
            "back to Log: requests {requests} from {sources} sources ({} events) on probation since {} exceed rollbackAboveSources {limit}; change the spec to start again",
            status.blocked.unwrap_or_default(),
            status.promoted_at.as_deref().unwrap_or_default(),
        );
        events.push(Notice::warning(AccessListReason::RolledBack, message.clone()));
        message
    };
    Step::in_log(status, events, AccessListReason::RolledBack, message)
}

/// What the claim records of a step's rollout: what decides, not the readings that
/// change at every reconcile (the evidence while the window runs, what was blocked,
/// unless it rolled the list back).
pub(crate) fn recorded(status: &RolloutStatus) -> RolloutStatus {
    let mut recorded = status.clone();
    if recorded.stage == RolloutStage::Logging {
        recorded.evidence = None;
    }
    if recorded.stage != RolloutStage::RolledBack {
        recorded.blocked = None;
        recorded.blocked_sources = None;
    }
    recorded
}

/// `status`, converged on the step's action with `ready` decided, with the rollout's
/// state; its Ready is the step's once the platform takes that action (a Ready saying
/// the list differs stays).
pub(crate) fn with_step(
    mut status: AccessListConfigStatus,
    ready: NewCondition<AccessListReason>,
    step: &Step,
) -> (AccessListConfigStatus, NewCondition<AccessListReason>) {
    status.rollout = Some(step.status.clone());
    if !ready.is_ready() {
        return (status, ready);
    }
    let (stepped, reason, message) = &step.ready;
    (status, NewCondition::ready(*stepped, *reason, message.clone()))
}

/// Promotes at `now`, on the gate (Automatic) or on a person's approval (Manual); with
/// `rollbackAboveSources` and `probation`, on probation for one window.
fn promote(
    rollout: &Rollout,
    mut status: RolloutStatus,
    mut events: Vec<Notice<AccessListReason>>,
    by: Promotion,
    probation: bool,
    now: DateTime<Utc>,
) -> Step {
    status.stage = RolloutStage::Promoted;
    status.promoted_at = Some(rfc3339(now));
    if rollout.rollback_above_sources.is_some() && probation {
        let ends = probation_end(rollout, now.timestamp_millis());
        status.probation_ends = instant(ends);
    }
    events.push(Notice::normal(
        AccessListReason::Promoted,
        format!(
            "{} promotion to {}: {}",
            match by {
                Promotion::Manual => "approved",
                Promotion::Automatic => "automatic",
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
        ..promoted(rollout, status, events, now)
    }
}

/// The promoted list: looked at again when probation ends; the first reconcile after
/// it (having read probation whole) ends it, and the list stays.
fn promoted(
    rollout: &Rollout,
    mut status: RolloutStatus,
    events: Vec<Notice<AccessListReason>>,
    now: DateTime<Utc>,
) -> Step {
    let target = rollout.action.action();
    let probation_ends = status.probation_ends.as_deref().and_then(millis);
    let on_probation = probation_ends.filter(|&ends| ends > now.timestamp_millis());
    if probation_ends.is_some() && on_probation.is_none() {
        status.probation_over = true;
    }
    let probation = match (&status.probation_ends, on_probation) {
        (Some(ends), Some(_)) => format!("; on probation until {ends}"),
        (Some(ends), None) => format!("; probation ended {ends}"),
        (None, _) => String::new(),
    };
    let message = format!(
        "promoted to {} at {}: {}{probation}",
        target.name(),
        status.promoted_at.as_deref().unwrap_or_default(),
        summary(status.evidence.as_ref())
    );
    let check_within = on_probation
        .and_then(|ends| u64::try_from(ends - now.timestamp_millis()).ok())
        .map(Duration::from_millis);
    Step {
        action: target,
        status,
        events,
        ready: (true, AccessListReason::Promoted, message),
        check_within,
        decided_on: None,
    }
}

fn held_because(over: &str, evidence: Option<&Evidence>) -> String {
    let digest = evidence.map_or("", |e| e.digest.as_str());
    format!(
        "held in Log: {over}; promote by hand with the annotation edgeplatform.io/promote={digest}, or change the spec to start again"
    )
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
mod tests;
