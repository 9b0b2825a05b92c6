use super::fixtures::{grouped, watch};
use super::status::unless_only_slid;
use super::*;
use crate::api::models::apps::{AppState, AppStatus};
use crate::controller::framework::pipeline::kind::{Now, Requeue};
use crate::controller::framework::pipeline::status::conditions::{NewCondition, find, merge};
use crate::controller::framework::reasons::ConditionType;
use crate::controller::kinds::app_watch::resource::{CdnSummary, ContainerAppWatchStatus};

#[test]
fn the_search_defaults_to_rule_and_ip_over_the_window() {
    let request = security_search(&watch(1), Duration::from_secs(3600), 10_000_000);
    assert_eq!(request.group_by, Some(vec![Dimension::RuleId, Dimension::Ip]));
    assert_eq!((request.from, request.to), (10_000_000 - 3_600_000, 10_000_000));
    assert_eq!(request.page_size, Some(2));
}

fn observed(status: AppStatus) -> Reads {
    Reads {
        app: Ok(Application {
            name: "shop".into(),
            status,
            ..Application::default()
        }),
        rate_limits: None,
        security_events: Some(Ok((grouped(), 91))),
        cdn: Some(CdnRead::NoPullZone),
    }
}

/// A poll's status as the driver writes it (its conditions merged in), and the
/// conditions it decided, with a status refreshed hourly.
fn polled(
    watch: &ContainerAppWatch,
    reads: Reads,
    (late, now): (Duration, &Now),
    previous: &ContainerAppWatchStatus,
) -> (ContainerAppWatchStatus, Vec<NewCondition<AppReason>>) {
    let (status, conditions) = status::poll_status(
        watch,
        reads,
        (late, now.time),
        previous,
        &settings(Duration::from_secs(3600)),
    );
    let outcome = Outcome {
        status,
        conditions,
        events: Vec::new(),
        requeue: Requeue::OnChange,
    };
    let written = outcome.status_over(previous, watch.metadata.generation, now.time);
    (written, outcome.conditions)
}

/// A poll's status as the driver writes it.
fn written(
    watch: &ContainerAppWatch,
    reads: Reads,
    late_now: (Duration, &Now),
    previous: &ContainerAppWatchStatus,
) -> ContainerAppWatchStatus {
    polled(watch, reads, late_now, previous).0
}

#[test]
fn a_poll_turns_reads_into_conditions_and_warns_on_transitions_only() {
    let now = Now {
        time: "2026-11-20T12:00:00Z".parse().expect("time"),
        jitter: 0.0,
    };
    let spec = crate::controller::kinds::app_watch::resource::ContainerAppWatchSpec {
        app_id: "app".into(),
        interval: "1m".into(),
        shield_zone_id: Some(1),
        rate_limits: None,
        security_events: Some(watch(50)),
        cdn: Some(crate::controller::kinds::app_watch::resource::CdnWatch {
            pull_zone_id: None,
            window: "1h".into(),
        }),
        access_key_secret_ref: None,
    };
    let mut watch = ContainerAppWatch::new("shop", spec);
    watch.metadata.generation = Some(1);
    let fresh = ContainerAppWatchStatus::default();
    let (first, decided) = polled(&watch, observed(AppStatus::Active), (Duration::ZERO, &now), &fresh);
    let reasons: Vec<(&str, &str)> = first
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("AppReady", "Active"),
            ("CdnLogsSynced", "NoPullZone"),
            ("Ready", "NoPullZone"),
            ("SecurityEvents", "Elevated"),
            ("Synced", "Polled")
        ]
    );
    assert_eq!(first.observed_at.as_deref(), Some("2026-11-20T12:00:00Z"));
    let notes = transition_events(&fresh, &decided);
    assert_eq!(
        notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        [AppReason::SecurityEventsElevated.into()]
    );
    let (failing, decided) = polled(&watch, observed(AppStatus::Failing), (Duration::ZERO, &now), &first);
    let notes = transition_events(&first, &decided);
    assert_eq!(
        notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
        [AppReason::AppNotReady.into()]
    );
    let (still, decided) = polled(&watch, observed(AppStatus::Failing), (Duration::ZERO, &now), &failing);
    assert!(
        transition_events(&failing, &decided).is_empty(),
        "no Event without a transition"
    );
    let late = written(
        &watch,
        observed(AppStatus::Failing),
        (Duration::from_secs(34), &now),
        &still,
    );
    let synced = find(&late.conditions, ConditionType::Synced).expect("Synced");
    assert_eq!(synced.reason, "PolledLate");
    assert!(synced.message.contains("--platform-rate"), "{}", synced.message);
    let later = written(
        &watch,
        observed(AppStatus::Failing),
        (Duration::from_secs(71), &now),
        &late,
    );
    assert_eq!(later, late, "a lateness that changes is no status change");
}

fn polled_at(time: &str) -> Now {
    Now {
        time: time.parse().expect("time"),
        jitter: 0.0,
    }
}

fn active_watch() -> ContainerAppWatch {
    let mut watch = ContainerAppWatch::new(
        "shop",
        crate::controller::kinds::app_watch::resource::ContainerAppWatchSpec {
            app_id: "app".into(),
            interval: "1m".into(),
            shield_zone_id: Some(1),
            rate_limits: Some(crate::controller::kinds::app_watch::resource::RateLimitsWatch { enabled: true }),
            security_events: None,
            cdn: None,
            access_key_secret_ref: None,
        },
    );
    watch.metadata.generation = Some(1);
    watch
}

fn reads(status: AppStatus, rate_limits: Result<Vec<RateLimitRule>, ApiError>) -> Reads {
    Reads {
        app: Ok(Application {
            name: "shop".into(),
            status,
            ..Application::default()
        }),
        rate_limits: Some(rate_limits),
        security_events: None,
        cdn: None,
    }
}

fn settings(status_refresh: Duration) -> AppWatchSettings {
    AppWatchSettings {
        cdn_pages_per_poll: 20,
        cdn_log_delay: Duration::ZERO,
        status_refresh,
    }
}

#[test]
fn ready_needs_an_active_app_and_every_summary_synced() {
    let watch = active_watch();
    let at = polled_at("2026-11-20T12:00:00Z");
    let ready = |status: &ContainerAppWatchStatus| {
        let ready = find(&status.conditions, ConditionType::Ready).expect("Ready");
        (ready.status, ready.reason.clone())
    };
    use crate::resources::ConditionStatus::{False, True};
    let fresh = ContainerAppWatchStatus::default();
    let active = written(
        &watch,
        reads(AppStatus::Active, Ok(Vec::new())),
        (Duration::ZERO, &at),
        &fresh,
    );
    assert_eq!(ready(&active), (True, "AppActive".into()));
    let failing = written(
        &watch,
        reads(AppStatus::Failing, Ok(Vec::new())),
        (Duration::ZERO, &at),
        &fresh,
    );
    assert_eq!(ready(&failing), (False, "Failing".into()));
    let unknown = Reads {
        app: Err(ApiError::from_response(404, None, b"")),
        ..reads(AppStatus::Active, Ok(Vec::new()))
    };
    let unknown = written(&watch, unknown, (Duration::ZERO, &at), &fresh);
    assert_eq!(ready(&unknown), (False, "NotFound".into()));
    let limits_down = reads(AppStatus::Active, Err(ApiError::Timeout));
    let limits_down = written(&watch, limits_down, (Duration::ZERO, &at), &active);
    assert_eq!(ready(&limits_down), (False, "Timeout".into()));
}

#[test]
fn a_poll_that_finds_the_same_data_keeps_the_status_until_the_refresh() {
    let watch = active_watch();
    let fresh = ContainerAppWatchStatus::default();
    let poll = |previous: &ContainerAppWatchStatus, at: &str| {
        written(
            &watch,
            reads(AppStatus::Active, Ok(Vec::new())),
            (Duration::ZERO, &polled_at(at)),
            previous,
        )
    };
    let first = poll(&fresh, "2026-11-20T12:00:00Z");
    assert_eq!(first.observed_at.as_deref(), Some("2026-11-20T12:00:00Z"));
    let same = poll(&first, "2026-11-20T12:59:59Z");
    assert_eq!(same, first, "nothing a reader acts on changed: no write");
    let refreshed = poll(&same, "2026-11-20T13:00:00Z");
    assert_eq!(refreshed.observed_at.as_deref(), Some("2026-11-20T13:00:00Z"));
    assert_eq!(refreshed.conditions, first.conditions);
    let changed = written(
        &watch,
        reads(AppStatus::Progressing, Ok(Vec::new())),
        (Duration::ZERO, &polled_at("2026-11-20T13:00:30Z")),
        &refreshed,
    );
    assert_eq!(changed.observed_at.as_deref(), Some("2026-11-20T13:00:30Z"));
}

#[test]
fn a_cdn_summary_whose_span_only_slid_is_kept() {
    let summary = |requests: i64, to: &str| CdnSummary {
        pull_zone_id: 1,
        window: "1h".into(),
        requests,
        hit_ratio: "1.000".into(),
        by_status_class: Default::default(),
        by_cache_status: Default::default(),
        from: "2026-11-20T11:00:00Z".into(),
        to: to.into(),
        coverage: "1".into(),
    };
    let first = summary(40, "2026-11-20T12:00:00Z");
    let slid = unless_only_slid(Some(&first), summary(40, "2026-11-20T12:01:00Z"));
    assert_eq!(slid, first);
    let grown = unless_only_slid(Some(&first), summary(41, "2026-11-20T12:01:00Z"));
    assert_eq!(grown.to, "2026-11-20T12:01:00Z");
}

#[test]
fn a_watch_with_fresh_data_waits_and_a_changed_spec_polls() {
    let now = Now {
        time: "2026-11-20T12:00:00Z".parse().expect("time"),
        jitter: 0.0,
    };
    let mut watch: ContainerAppWatch = serde_json::from_value(serde_json::json!({
            "apiVersion": "edgeplatform.io/v1alpha1", "kind": "ContainerAppWatch",
            "metadata": {"name": "shop", "namespace": "edge", "uid": "u-1", "generation": 3},
            "spec": {"appId": "app", "interval": "1m"},
            "status": {"observedGeneration": 3, "observedAt": "2026-11-20T11:59:50Z", "conditions": [
                {"type": "AppReady", "status": "True", "reason": "Active", "lastTransitionTime": "2026-11-20T11:00:00Z", "observedGeneration": 3},
            ]},
        }))
        .expect("a watch");
    assert!(
        matches!(poll_decision(&watch, None, now.millis()), PollDecision::Wait { due_ms } if due_ms > now.millis())
    );
    watch.metadata.generation = Some(4);
    assert_eq!(
        poll_decision(&watch, None, now.millis()),
        PollDecision::Poll { late: Duration::ZERO }
    );
}

#[test]
fn a_poll_with_a_failed_read_is_retried_with_backoff_well_before_its_phase() {
    let schedule = PollSchedule::new(Duration::from_secs(600), "edge/shop");
    let at = polled_at("2026-11-20T12:00:00Z").millis();
    let on_phase = schedule.next_after(at);
    let unreachable = || ApiError::Transport("connection refused".into());

    assert_eq!(
        next_poll(&schedule, at, &reads(AppStatus::Active, Ok(vec![])), 0, 1.0),
        (0, on_phase)
    );
    let failing = reads(AppStatus::Active, Err(unreachable()));
    assert_eq!(next_poll(&schedule, at, &failing, 0, 1.0), (1, at + 5_000));
    assert_eq!(next_poll(&schedule, at, &failing, 1, 1.0), (2, at + 10_000));
    assert_eq!(
        next_poll(&schedule, at, &failing, 30, 1.0),
        (31, at + 300_000),
        "capped"
    );
    let every_minute = PollSchedule::new(Duration::from_secs(60), "edge/shop");
    assert_eq!(
        next_poll(&every_minute, at, &failing, 30, 1.0),
        (31, every_minute.next_after(at)),
        "never later than the phase"
    );
    let mut missing = reads(AppStatus::Active, Ok(vec![]));
    missing.app = Err(ApiError::from_response(404, None, b""));
    assert_eq!(
        next_poll(&schedule, at, &missing, 0, 1.0),
        (1, at + 30_000),
        "an error only the user can fix backs off from 30 s"
    );
    assert_eq!(
        next_poll(&schedule, at, &reads(AppStatus::Active, Ok(vec![])), 4, 1.0),
        (0, on_phase),
        "a poll that reads everything returns to the phase"
    );
}

#[test]
fn lateness_counts_from_this_process_polls_only() {
    let mut watch = active_watch();
    watch.status = Some(ContainerAppWatchStatus {
        observed_at: Some("2026-11-20T10:00:00Z".into()),
        conditions: merge(
            &[],
            &[NewCondition::new(
                AppCondition::AppReady,
                true,
                AppReason::App(AppState::Active),
                "",
            )],
            Some(1),
            "2026-11-20T10:00:00Z",
        ),
        ..ContainerAppWatchStatus::default()
    });
    let now = polled_at("2026-11-20T12:00:00Z");
    assert_eq!(
        poll_decision(&watch, None, now.millis()),
        PollDecision::Poll { late: Duration::ZERO },
        "an old observedAt after a restart polls, on no known schedule"
    );
    let schedule = schedule_of(&watch);
    let polled = |at_ms: i64| LastPoll {
        generation: Some(1),
        failed_in_row: 0,
        due_ms: schedule.next_after(at_ms),
    };
    let PollDecision::Poll { late } = poll_decision(&watch, Some(polled(now.millis() - 600_000)), now.millis()) else {
        panic!("a poll ten minutes ago is due");
    };
    assert!(late >= Duration::from_secs(480), "{late:?}");
    let just_now = polled(now.millis() - 1_000);
    assert!(matches!(
        poll_decision(&watch, Some(just_now), now.millis()),
        PollDecision::Wait { .. }
    ));
}
