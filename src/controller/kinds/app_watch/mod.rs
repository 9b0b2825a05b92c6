//! ContainerAppWatch: poll the app, its Shield Zone's rate limits, a security-event
//! search and the CDN logs; summarise them (pure) into status and conditions. Never
//! writes to the platform.

mod cdn_summaries;
pub mod cdn_tail;
#[cfg(test)]
mod fixtures;
mod poll_schedule;
pub mod resource;
mod settings;
mod status;
mod status_bounds;
mod vocabulary;

pub use self::settings::AppWatchSettings;

use self::status::{poll_status, transition_events};

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
use crate::controller::framework::extend::Verdict;
use crate::controller::framework::prelude::{Context, Failure, NewCondition, Outcome, Reconcilable};
use crate::controller::kinds::app_watch::resource::{ContainerAppWatch, SecurityEventsWatch};
use crate::resources::{MIN_POLL_INTERVAL, object_key};

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
    let retry = Failure::<ContainerAppWatch>::delay(failed_in_row, transient, jitter);
    (failed_in_row, schedule.next_due(at_ms, Some(retry)))
}

async fn security_events(
    client: &EdgeClient,
    zone: i64,
    watch: &SecurityEventsWatch,
    now_ms: i64,
) -> Result<(EventLogsSearchResponse, i64), ApiError> {
    let window = watch.window.duration().unwrap_or(Duration::from_secs(3600));
    let request = security_search(watch, window, now_ms);
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
    let interval = watch
        .spec
        .interval
        .duration()
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
pub fn poll_decision(watch: &ContainerAppWatch, last: Option<LastPoll>, now_ms: i64) -> PollDecision {
    let generation = watch.metadata.generation;
    if let Some(last) = last {
        let due_ms = (last.generation == generation).then_some(last.due_ms);
        return PollSchedule::decide_due(due_ms, now_ms);
    }
    let schedule = schedule_of(watch);
    let status = watch.status.as_ref();
    let observed_ms = status
        .and_then(|s| s.observed_at.as_deref())
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.timestamp_millis());
    let polled_generation = status
        .and_then(|s| NewCondition::<AppReason>::of_type_in(&s.conditions, AppCondition::AppReady))
        .and_then(|app_ready| app_ready.observed_generation);
    match schedule.decide(observed_ms, polled_generation != generation, now_ms) {
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
    async fn read(&self, cx: &Context<'_, Self>, client: &EdgeClient) -> Reads {
        let spec = &self.spec;
        let app = client.get_app(&spec.app_id).await;
        let zone = spec.shield_zone_id;
        let rate_limits = match (zone, spec.rate_limits.as_ref().map(|r| r.enabled)) {
            (Some(zone), Some(true)) => Some(client.all_rate_limits(zone).await),
            _ => None,
        };
        let security_events = match (zone, &spec.security_events) {
            (Some(zone), Some(watch)) => Some(security_events(client, zone, watch, cx.now.millis()).await),
            _ => None,
        };
        let cdn = match &spec.cdn {
            Some(watch) => {
                let pull_zone = watch
                    .pull_zone_id
                    .or_else(|| app.as_ref().ok().and_then(Application::endpoint_pull_zone_id));
                let span = watch.window.duration().unwrap_or(Duration::from_secs(3600));
                Some(match pull_zone {
                    Some(pull_zone_id) => CdnRead::Summary(
                        cx.state
                            .cdn
                            .summary(
                                (client.credential_id(), pull_zone_id),
                                (watch.window.as_str(), span),
                                cx.settings.cdn_pages_per_poll,
                                cx.now.millis() - cx.settings.cdn_log_delay.as_millis() as i64,
                                |query| async move { client.query_logs(pull_zone_id, &query).await },
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
impl Reconcilable for ContainerAppWatch {
    const EXAMPLE: &'static str = include_str!("../../../../examples/container-app-watch.yaml");
    const POLLS: bool = true;
    const OWN_CONDITION_TYPES: &'static [&'static str] = AppCondition::VARIANTS;

    type Reason = AppReason;
    type Settings = AppWatchSettings;
    type State = State;

    fn is_terminal(reason: AppReason) -> bool {
        reason.is_terminal()
    }

    fn on_watch(state: &State, event: &watcher::Event<Self>) {
        state.polls.follow(event);
    }

    /// Polls when due: reads, records when the next poll is due, summarises the reads
    /// (pure) into status and Events on transitions, and comes back at the next poll.
    async fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> Result<Outcome<Self::Status, Self::Reason>, Failure<Self>> {
        let key = object_key(self);
        let last = cx.state.polls.last(&key);
        let late = match poll_decision(self, last, cx.now.millis()) {
            PollDecision::Wait { due_ms } => return Ok(Outcome::new(cx.previous.clone()).requeue_at(due_ms)),
            PollDecision::Poll { late } => late,
        };
        let client = cx.client().await?;
        cx.shared.metrics.polled(Self::kind_name(), late);
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
        let (status, conditions) = poll_status(self, reads, (late, cx.now.time), &cx.previous, cx.settings);
        Ok(Outcome::new(status)
            .with_events(transition_events(&cx.previous, &conditions))
            .with_conditions(conditions)
            .requeue_at(due_ms))
    }

    /// A watch never writes: its plan is what it would observe now.
    async fn plan(objects: Vec<(Self, Result<EdgeClient, String>)>) -> Vec<Verdict> {
        let mut verdicts = Vec::with_capacity(objects.len());
        for (object, client) in objects {
            verdicts.push(match client {
                Ok(client) => match client.get_app(&object.spec.app_id).await {
                    Ok(app) => Verdict::NoChange {
                        detail: format!("observes app {} (status {}); never writes", app.id, app.status),
                    },
                    Err(error) => Verdict::platform_error(&error),
                },
                Err(detail) => Verdict::Error { detail },
            });
        }
        verdicts
    }
}

#[cfg(test)]
mod tests;
