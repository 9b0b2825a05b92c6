//! ContainerAppWatch: poll the app, its Shield Zone's rate limits, a security-event
//! search and the CDN logs; summarise them (pure) into status and conditions. Never
//! writes to the platform.

mod cdn_summaries;
pub mod cdn_tail;
#[cfg(test)]
mod fixtures;
mod poll_schedule;
mod settings;
mod status;
mod status_bounds;
mod vocabulary;

pub use self::settings::AppWatchSettings;

use self::status::{poll_status, transition_events};

use std::convert::Infallible;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::watcher;
use strum::VariantNames;

use self::cdn_summaries::CdnSummaries;
use self::cdn_tail::TailSummary;
use self::poll_schedule::{LastPoll, PollDecision, PollLedger, PollSchedule};
use self::vocabulary::{AppCondition, AppReason};
use crate::api::models::apps::Application;
use crate::api::models::shield::{
    Dimension, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, RateLimitRule,
};
use crate::api::{ApiError, EdgeClient};
use crate::controller::framework::backoff::failure_delay;
use crate::controller::framework::kind::{Cx, Failure, Now, Outcome, Reconciled, Requeue};
use crate::controller::framework::object::{MIN_POLL_INTERVAL, object_key};
use crate::controller::framework::status::conditions::find;
use crate::controller::framework::status::time::parse_go_duration;
use crate::crd::SecretKeyRef;
use crate::crd::container_app_watch::{ContainerAppWatch, ContainerAppWatchStatus, SecurityEventsWatch};

/// The grouped search of a watch over `[now - window, now)`.
pub fn security_search(watch: &SecurityEventsWatch, window: Duration, now_ms: i64) -> EventLogsSearchRequest {
    let from = now_ms - window.as_millis() as i64;
    let group_by = if watch.group_by.is_empty() {
        vec![Dimension::RuleId, Dimension::Ip]
    } else {
        watch.group_by.clone()
    };
    let mut request = EventLogsSearchRequest::window(from, now_ms)
        .group_by(group_by)
        .page(0)
        .page_size(watch.top as i32);
    if let Some(query) = &watch.query {
        request = request.query(query.clone());
    }
    for filter in &watch.filters {
        request = request.filter(EventLogsFilter::new(filter.field, filter.op, filter.value.clone()));
    }
    request
}

/// Everything one poll read; each read fails on its own.
#[derive(Debug)]
pub struct Reads {
    pub app: Result<Application, ApiError>,
    pub rate_limits: Option<Result<Vec<RateLimitRule>, ApiError>>,
    pub security_events: Option<Result<(EventLogsSearchResponse, i64), ApiError>>,
    /// `None` when no CDN summary is asked for.
    pub cdn: Option<CdnRead>,
}

/// The CDN summary a poll read.
#[derive(Debug)]
pub enum CdnRead {
    /// Neither the spec nor the app names a Pull Zone.
    NoPullZone,
    Summary(Result<TailSummary, ApiError>),
}

impl Reads {
    fn errors(&self) -> impl Iterator<Item = &ApiError> {
        [
            self.app.as_ref().err(),
            self.rate_limits.as_ref().and_then(|r| r.as_ref().err()),
            self.security_events.as_ref().and_then(|r| r.as_ref().err()),
            match &self.cdn {
                Some(CdnRead::Summary(read)) => read.as_ref().err(),
                Some(CdnRead::NoPullZone) | None => None,
            },
        ]
        .into_iter()
        .flatten()
    }
}

/// The poll that follows one started at `at_ms`: on the schedule's phase, or sooner
/// after failed reads, with the error backoff counted over the polls in a row that
/// failed (`failed_before` before this one). Counted from the poll's start: reads that
/// waited for the quota do not push the next poll back.
pub fn next_poll(schedule: &PollSchedule, at_ms: i64, reads: &Reads, failed_before: u32, jitter: f64) -> (u32, i64) {
    let mut errors = reads.errors().peekable();
    if errors.peek().is_none() {
        return (0, schedule.next_due(at_ms, None));
    }
    let transient = errors.any(ApiError::is_retryable);
    let failed_in_row = failed_before.saturating_add(1);
    let retry = failure_delay(failed_in_row, transient, jitter);
    (failed_in_row, schedule.next_due(at_ms, Some(retry)))
}

async fn security_events(
    client: &EdgeClient,
    zone: i64,
    watch: &SecurityEventsWatch,
    now: &Now,
) -> Result<(EventLogsSearchResponse, i64), ApiError> {
    let window = parse_go_duration(&watch.window).unwrap_or(Duration::from_secs(3600));
    let request = security_search(watch, window, now.millis());
    let grouped = client.search_events(zone, &request).await?;
    let flat = EventLogsSearchRequest {
        group_by: None,
        buckets: None,
        page_size: Some(1),
        ..request
    };
    let total = client.search_events(zone, &flat).await?.total;
    Ok((grouped, total))
}

/// The schedule of a watch: its interval (at least the floor), on a phase of its own.
fn schedule_of(watch: &ContainerAppWatch) -> PollSchedule {
    let interval = parse_go_duration(&watch.spec.interval)
        .unwrap_or(Duration::from_secs(60))
        .max(MIN_POLL_INTERVAL);
    let key = watch
        .metadata
        .uid
        .clone()
        .unwrap_or_else(|| format!("{}/{}", watch.namespace().unwrap_or_default(), watch.name_any()));
    PollSchedule::new(interval, &key)
}

/// Whether the watch polls now: when its data is due, or its spec changed since the
/// last poll. `last` is this process's last poll of the watch. Without one (after a
/// restart) the status stands in: `observedAt` for the time, and the generation of
/// AppReady, which only a poll decides, for the spec; a poll is then never called late,
/// as the schedule it would be late for is not known.
pub fn poll_decision(watch: &ContainerAppWatch, last: Option<LastPoll>, now: &Now) -> PollDecision {
    let generation = watch.metadata.generation;
    if let Some(last) = last {
        let due_ms = (last.generation == generation).then_some(last.due_ms);
        return PollSchedule::decide_due(due_ms, now.millis());
    }
    let schedule = schedule_of(watch);
    let status = watch.status.as_ref();
    let observed_ms = status
        .and_then(|s| s.observed_at.as_deref())
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.timestamp_millis());
    let polled_generation = status
        .and_then(|s| find(&s.conditions, AppCondition::AppReady))
        .and_then(|c| c.observed_generation);
    match schedule.decide(observed_ms, polled_generation != generation, now.millis()) {
        PollDecision::Poll { .. } => PollDecision::Poll { late: Duration::ZERO },
        wait => wait,
    }
}

/// What the polls of ContainerAppWatches keep between them.
#[derive(Default)]
pub struct State {
    /// When this process last polled each watch.
    pub polls: PollLedger,
    /// The CDN summaries and tails, shared by the watches of a Pull Zone.
    pub cdn: CdnSummaries,
}

impl ContainerAppWatch {
    /// One poll's reads, each failing on its own.
    async fn read(&self, cx: &Cx<'_, Self>, client: &EdgeClient) -> Reads {
        let spec = &self.spec;
        let app = client.get_app(&spec.app_id).await;
        let zone = spec.shield_zone_id;
        let rate_limits = match (zone, spec.rate_limits.as_ref().map(|r| r.enabled)) {
            (Some(zone), Some(true)) => Some(client.all_rate_limits(zone).await),
            _ => None,
        };
        let security_events = match (zone, &spec.security_events) {
            (Some(zone), Some(watch)) => Some(security_events(client, zone, watch, &cx.now).await),
            _ => None,
        };
        let cdn = match &spec.cdn {
            Some(watch) => {
                let pull_zone = watch
                    .pull_zone_id
                    .or_else(|| app.as_ref().ok().and_then(Application::endpoint_pull_zone_id));
                let span = parse_go_duration(&watch.window).unwrap_or(Duration::from_secs(3600));
                Some(match pull_zone {
                    Some(pull_zone_id) => CdnRead::Summary(
                        cx.state
                            .cdn
                            .summary(
                                client,
                                pull_zone_id,
                                (&watch.window, span),
                                cx.settings.cdn_pages_per_poll,
                                cx.now.millis() - cx.settings.cdn_log_delay.as_millis() as i64,
                            )
                            .await,
                    ),
                    None => CdnRead::NoPullZone,
                })
            }
            None => None,
        };
        Reads {
            app,
            rate_limits,
            security_events,
            cdn,
        }
    }
}

/// A watch never writes to the platform.
impl Reconciled for ContainerAppWatch {
    const KIND: &'static str = "ContainerAppWatch";
    const OWN_CONDITION_TYPES: &'static [&'static str] = AppCondition::VARIANTS;

    type Error = Infallible;
    type Settings = AppWatchSettings;
    type Status = ContainerAppWatchStatus;
    type State = State;

    fn status(&self) -> Option<&ContainerAppWatchStatus> {
        self.status.as_ref()
    }

    fn status_mut(&mut self) -> Option<&mut ContainerAppWatchStatus> {
        self.status.as_mut()
    }

    fn secret_ref(&self) -> Option<&SecretKeyRef> {
        self.spec.access_key_secret_ref.as_ref()
    }

    fn is_terminal_reason(reason: &str) -> bool {
        AppReason::is_terminal_name(reason)
    }

    fn on_watch(state: &State, event: &watcher::Event<Self>) {
        if let watcher::Event::Delete(watch) = event {
            state.polls.forget(&object_key(watch));
        }
    }

    /// Polls when due: reads, records when the next poll is due, summarises the reads
    /// (pure) into status and Events on transitions, and comes back at the next poll.
    async fn reconcile(&self, cx: &mut Cx<'_, Self>) -> Result<Outcome<ContainerAppWatchStatus>, Failure<Self>> {
        let key = object_key(self);
        let last = cx.state.polls.last(&key);
        let late = match poll_decision(self, last, &cx.now) {
            PollDecision::Wait { due_ms } => {
                return Ok(Outcome {
                    status: cx.previous.clone(),
                    events: Vec::new(),
                    requeue: Requeue::At(due_ms),
                });
            }
            PollDecision::Poll { late } => late,
        };
        let client = cx.client().await?;
        cx.ctx.metrics.polled(Self::KIND, late);
        let reads = self.read(cx, &client).await;
        let generation = self.metadata.generation;
        let failed_before = last
            .filter(|l| l.generation == generation)
            .map_or(0, |l| l.failed_in_row);
        let (failed_in_row, due_ms) = next_poll(
            &schedule_of(self),
            cx.now.millis(),
            &reads,
            failed_before,
            cx.now.jitter,
        );
        cx.state.polls.record(
            key,
            LastPoll {
                generation,
                failed_in_row,
                due_ms,
            },
        );
        let status = poll_status(self, reads, (late, &cx.now), &cx.previous, cx.settings);
        Ok(Outcome {
            events: transition_events(&cx.previous, &status),
            status,
            requeue: Requeue::At(due_ms),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{grouped, watch};
    use super::status::unless_only_slid;
    use super::*;
    use crate::api::models::apps::AppStatus;
    use crate::controller::framework::status::conditions::{NewCondition, find, merge};
    use crate::controller::framework::status::vocabulary::ConditionType;
    use crate::controller::framework::status::vocabulary::StatusName;
    use crate::crd::container_app_watch::CdnSummary;

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

    #[test]
    fn a_poll_turns_reads_into_conditions_and_warns_on_transitions_only() {
        let now = Now {
            time: "2026-11-20T12:00:00Z".parse().expect("time"),
            jitter: 0.0,
        };
        let spec = crate::crd::container_app_watch::ContainerAppWatchSpec {
            app_id: "app".into(),
            interval: "1m".into(),
            shield_zone_id: Some(1),
            rate_limits: None,
            security_events: Some(watch(50)),
            cdn: Some(crate::crd::container_app_watch::CdnWatch {
                pull_zone_id: None,
                window: "1h".into(),
            }),
            access_key_secret_ref: None,
        };
        let mut watch = ContainerAppWatch::new("shop", spec);
        watch.metadata.generation = Some(1);
        let fresh = ContainerAppWatchStatus::default();
        let settings = settings(Duration::from_secs(3600));
        let first = poll_status(
            &watch,
            observed(AppStatus::Active),
            (Duration::ZERO, &now),
            &fresh,
            &settings,
        );
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
        let notes = transition_events(&fresh, &first);
        assert_eq!(
            notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
            [AppReason::SecurityEventsElevated.as_str()]
        );
        let failing = poll_status(
            &watch,
            observed(AppStatus::Failing),
            (Duration::ZERO, &now),
            &first,
            &settings,
        );
        let notes = transition_events(&first, &failing);
        assert_eq!(
            notes.iter().map(|n| n.reason).collect::<Vec<_>>(),
            [AppReason::AppNotReady.as_str()]
        );
        let still = poll_status(
            &watch,
            observed(AppStatus::Failing),
            (Duration::ZERO, &now),
            &failing,
            &settings,
        );
        assert!(
            transition_events(&failing, &still).is_empty(),
            "no Event without a transition"
        );
        let late = poll_status(
            &watch,
            observed(AppStatus::Failing),
            (Duration::from_secs(34), &now),
            &still,
            &settings,
        );
        let synced = find(&late.conditions, ConditionType::Synced).expect("Synced");
        assert_eq!(synced.reason, "PolledLate");
        assert!(synced.message.contains("--platform-rate"), "{}", synced.message);
        let later = poll_status(
            &watch,
            observed(AppStatus::Failing),
            (Duration::from_secs(71), &now),
            &late,
            &settings,
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
            crate::crd::container_app_watch::ContainerAppWatchSpec {
                app_id: "app".into(),
                interval: "1m".into(),
                shield_zone_id: Some(1),
                rate_limits: Some(crate::crd::container_app_watch::RateLimitsWatch { enabled: true }),
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
        let settings = settings(Duration::from_secs(3600));
        let at = polled_at("2026-11-20T12:00:00Z");
        let ready = |status: &ContainerAppWatchStatus| {
            let ready = find(&status.conditions, ConditionType::Ready).expect("Ready");
            (ready.status, ready.reason.clone())
        };
        use crate::crd::ConditionStatus::{False, True};
        let fresh = ContainerAppWatchStatus::default();
        let active = poll_status(
            &watch,
            reads(AppStatus::Active, Ok(Vec::new())),
            (Duration::ZERO, &at),
            &fresh,
            &settings,
        );
        assert_eq!(ready(&active), (True, "AppActive".into()));
        let failing = poll_status(
            &watch,
            reads(AppStatus::Failing, Ok(Vec::new())),
            (Duration::ZERO, &at),
            &fresh,
            &settings,
        );
        assert_eq!(ready(&failing), (False, "Failing".into()));
        let unknown = Reads {
            app: Err(ApiError::from_response(404, None, b"")),
            ..reads(AppStatus::Active, Ok(Vec::new()))
        };
        let unknown = poll_status(&watch, unknown, (Duration::ZERO, &at), &fresh, &settings);
        assert_eq!(ready(&unknown), (False, "NotFound".into()));
        let limits_down = reads(AppStatus::Active, Err(ApiError::Timeout));
        let limits_down = poll_status(&watch, limits_down, (Duration::ZERO, &at), &active, &settings);
        assert_eq!(ready(&limits_down), (False, "Timeout".into()));
    }

    #[test]
    fn a_poll_that_finds_the_same_data_keeps_the_status_until_the_refresh() {
        let watch = active_watch();
        let settings = settings(Duration::from_secs(3600));
        let fresh = ContainerAppWatchStatus::default();
        let poll = |previous: &ContainerAppWatchStatus, at: &str| {
            poll_status(
                &watch,
                reads(AppStatus::Active, Ok(Vec::new())),
                (Duration::ZERO, &polled_at(at)),
                previous,
                &settings,
            )
        };
        let first = poll(&fresh, "2026-11-20T12:00:00Z");
        assert_eq!(first.observed_at.as_deref(), Some("2026-11-20T12:00:00Z"));
        let same = poll(&first, "2026-11-20T12:59:59Z");
        assert_eq!(same, first, "nothing a reader acts on changed: no write");
        let refreshed = poll(&same, "2026-11-20T13:00:00Z");
        assert_eq!(refreshed.observed_at.as_deref(), Some("2026-11-20T13:00:00Z"));
        assert_eq!(refreshed.conditions, first.conditions);
        let changed = poll_status(
            &watch,
            reads(AppStatus::Progressing, Ok(Vec::new())),
            (Duration::ZERO, &polled_at("2026-11-20T13:00:30Z")),
            &refreshed,
            &settings,
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
        assert!(matches!(poll_decision(&watch, None, &now), PollDecision::Wait { due_ms } if due_ms > now.millis()));
        watch.metadata.generation = Some(4);
        assert_eq!(
            poll_decision(&watch, None, &now),
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
                    AppReason::App("Active"),
                    "",
                )],
                Some(1),
                "2026-11-20T10:00:00Z",
            ),
            ..ContainerAppWatchStatus::default()
        });
        let now = polled_at("2026-11-20T12:00:00Z");
        assert_eq!(
            poll_decision(&watch, None, &now),
            PollDecision::Poll { late: Duration::ZERO },
            "an old observedAt after a restart polls, on no known schedule"
        );
        let schedule = schedule_of(&watch);
        let polled = |at_ms: i64| LastPoll {
            generation: Some(1),
            failed_in_row: 0,
            due_ms: schedule.next_after(at_ms),
        };
        let PollDecision::Poll { late } = poll_decision(&watch, Some(polled(now.millis() - 600_000)), &now) else {
            panic!("a poll ten minutes ago is due");
        };
        assert!(late >= Duration::from_secs(480), "{late:?}");
        let just_now = polled(now.millis() - 1_000);
        assert!(matches!(
            poll_decision(&watch, Some(just_now), &now),
            PollDecision::Wait { .. }
        ));
    }
}
