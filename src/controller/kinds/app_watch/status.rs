//! The pure summaries of a ContainerAppWatch poll: what each read becomes in status
//! and conditions, the Ready verdict, and the Events of transitions.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::cdn_tail::TailSummary;
use super::poll_schedule::PollSchedule;
use super::settings::AppWatchSettings;
use super::status_bounds::bounded;
use super::vocabulary::{AppCondition, AppReason};
use super::{CdnRead, Reads, schedule_of};
use crate::api::ApiError;
use crate::api::models::apps::{AppStatus, Application};
use crate::api::models::shield::{EventLogsSearchResponse, RateLimitRule, rate_limit_action_name};
use crate::controller::framework::prelude::{NewCondition, Notice};
use crate::controller::kinds::app_watch::resource::{
    AppSummary, CdnSummary, ContainerAppWatch, ContainerAppWatchStatus, EventGroupSummary, ImageSummary,
    RateLimitSummary, SecurityEventsSummary, SecurityEventsWatch,
};
use crate::resources::time::rfc3339;

pub(super) fn app_summary(app: &Application) -> AppSummary {
    AppSummary {
        name: app.name.clone(),
        status: app.status.as_str().to_string(),
        runtime_type: app.runtime_type_name(),
        instances: app.container_instances.len() as i64,
        regions: app.region_settings.allowed_region_ids.clone(),
        endpoints: app.public_hosts(),
        images: app
            .container_templates
            .iter()
            .map(|t| ImageSummary {
                template: t.name.clone(),
                image: t.image.clone(),
                tag: t.image_tag.clone(),
                digest: t.image_digest.clone(),
            })
            .collect(),
        autoscaling_min: app.auto_scaling.min,
        autoscaling_max: app.auto_scaling.max,
    }
}

pub(super) fn app_condition(app: &Application) -> NewCondition<AppReason> {
    NewCondition::new(
        AppCondition::AppReady,
        app.status == AppStatus::Active,
        AppReason::of_app(&app.status),
        format!("application {} is {}", app.name, app.status),
    )
}

pub(super) fn rate_limit_summaries(rules: &[RateLimitRule]) -> Vec<RateLimitSummary> {
    rules
        .iter()
        .map(|r| RateLimitSummary {
            id: r.id,
            name: r.rule_name.clone(),
            action: rate_limit_action_name(r.rule_configuration.action_type),
            request_count: r.rule_configuration.request_count,
            timeframe: r.rule_configuration.timeframe,
            block_time: r.rule_configuration.block_time,
        })
        .collect()
}

/// Summary and condition of a search: `total` is the number of events in the window.
pub(super) fn security_summary(
    watch: &SecurityEventsWatch,
    grouped: &EventLogsSearchResponse,
    total: i64,
) -> (SecurityEventsSummary, NewCondition<AppReason>) {
    let top: Vec<EventGroupSummary> = grouped
        .groups
        .iter()
        .flatten()
        .take(watch.top as usize)
        .map(|g| {
            let context = g.context.clone().unwrap_or_default();
            EventGroupSummary {
                key: g.key.clone().unwrap_or_default(),
                count: g.count,
                blocked: context.blocked,
                challenged: context.challenged,
                logged: context.logged,
            }
        })
        .collect();
    let leaders: Vec<String> = top
        .iter()
        .take(3)
        .map(|g| {
            let key: Vec<String> = g.key.iter().map(|(d, v)| format!("{d}={v}")).collect();
            format!("{} ({})", key.join(" "), g.count)
        })
        .collect();
    let elevated = total >= watch.warn_threshold;
    let message = if total == 0 {
        format!("no security events in the last {}", watch.window)
    } else {
        format!(
            "{total} security events in the last {}; top: {}",
            watch.window,
            leaders.join(", ")
        )
    };
    let condition = NewCondition::new(
        AppCondition::SecurityEvents,
        true,
        if elevated {
            AppReason::Elevated
        } else {
            AppReason::Quiet
        },
        message,
    );
    let summary = SecurityEventsSummary {
        window: watch.window.to_string(),
        total,
        top,
    };
    (summary, condition)
}

fn failed(type_: impl Into<&'static str>, error: &ApiError) -> NewCondition<AppReason> {
    NewCondition::new(type_, false, error.reason(), error.to_string())
}

/// The Synced condition of a poll: on time, or how late (the quota is short).
fn poll_condition(interval: &str, late: Duration, schedule: &PollSchedule) -> NewCondition<AppReason> {
    // The message names no lateness: it would change at every poll, and so would the
    // status.
    if schedule.is_late(late) {
        NewCondition::synced(
            true,
            AppReason::PolledLate,
            format!(
                "polls start after they are due: the platform request quota (--platform-rate) cannot serve every watch every {interval}; edge_operator_poll_lag_seconds says by how much"
            ),
        )
    } else {
        NewCondition::synced(true, AppReason::Polled, format!("polled every {interval}"))
    }
}

/// CdnLogsSynced: True when the summary covers its whole window; Partial, with the
/// share it covers and why, when the page budget has not read all of it yet.
pub(super) fn cdn_condition(tail: &TailSummary, pages_per_poll: u32) -> NewCondition<AppReason> {
    let summary = &tail.summary;
    let counts = format!("{} requests, hit ratio {}", summary.requests, summary.hit_ratio);
    if tail.complete {
        return NewCondition::new(AppCondition::CdnLogsSynced, true, AppReason::Refreshed, counts);
    }
    let why = if tail.behind {
        format!(
            "the newest logs are not read yet: {pages_per_poll} requests of 1000 entries per poll (--cdn-pages-per-poll) do not keep up with this Pull Zone's traffic"
        )
    } else {
        format!("older logs are read over the next polls, {pages_per_poll} requests of 1000 entries each")
    };
    NewCondition::new(
        AppCondition::CdnLogsSynced,
        false,
        AppReason::Partial,
        format!(
            "covers {:.1}% of the last {} ({} to {}): {counts}; {why}",
            tail.coverage * 100.0,
            summary.window,
            summary.from,
            summary.to
        ),
    )
}

/// The status and conditions a poll's reads make.
pub(super) fn poll_status(
    watch: &ContainerAppWatch,
    reads: Reads,
    (late, now): (Duration, DateTime<Utc>),
    previous: &ContainerAppWatchStatus,
    settings: &AppWatchSettings,
) -> (ContainerAppWatchStatus, Vec<NewCondition<AppReason>>) {
    let spec = &watch.spec;
    let generation = watch.metadata.generation;
    let mut status = ContainerAppWatchStatus {
        observed_generation: generation,
        ..previous.clone()
    };
    let mut decided = vec![poll_condition(spec.interval.as_str(), late, &schedule_of(watch))];
    match &reads.app {
        Ok(app) => {
            status.app = Some(app_summary(app));
            decided.push(app_condition(app));
        }
        Err(error) => decided.push(failed(AppCondition::AppReady, error)),
    }
    match reads.rate_limits {
        Some(Ok(rules)) => {
            decided.push(NewCondition::new(
                AppCondition::RateLimitsSynced,
                true,
                AppReason::Refreshed,
                format!("{} rules", rules.len()),
            ));
            status.rate_limits = Some(rate_limit_summaries(&rules));
        }
        Some(Err(error)) => decided.push(failed(AppCondition::RateLimitsSynced, &error)),
        None => {}
    }
    if let (Some(watch), Some(searched)) = (&spec.security_events, reads.security_events) {
        match searched {
            Ok((grouped, total)) => {
                let (summary, condition) = security_summary(watch, &grouped, total);
                status.security_events = Some(summary);
                decided.push(condition);
            }
            Err(error) => decided.push(failed(AppCondition::SecurityEvents, &error)),
        }
    }
    match reads.cdn {
        Some(CdnRead::Summary(Ok(tail))) => {
            decided.push(cdn_condition(&tail, settings.cdn_pages_per_poll));
            status.cdn = Some(unless_only_slid(previous.cdn.as_ref(), tail.summary));
        }
        Some(CdnRead::Summary(Err(error))) => decided.push(failed(AppCondition::CdnLogsSynced, &error)),
        Some(CdnRead::NoPullZone) => decided.push(NewCondition::new(
            AppCondition::CdnLogsSynced,
            false,
            AppReason::NoPullZone,
            "set spec.cdn.pullZoneId: the app has no endpoint with a Pull Zone",
        )),
        None => {}
    }
    decided.push(ready_condition(&decided));
    let conditions_len = NewCondition::merged_len(&previous.conditions, &decided, generation);
    let mut status = bounded(status, conditions_len);
    let unchanged = status == *previous && decided.iter().all(|d| d.is_shown_in(&previous.conditions, generation));
    status.observed_at = observed_at(previous, unchanged, now, settings.status_refresh);
    (status, decided)
}

/// Ready: the app is active and every summary asked for is synced; otherwise the
/// first detail condition that is not True, with its reason.
pub(super) fn ready_condition(details: &[NewCondition<AppReason>]) -> NewCondition<AppReason> {
    use crate::resources::ConditionStatus;
    let pending = details
        .iter()
        .filter(|d| !d.is_synced())
        .find(|d| d.status != ConditionStatus::True);
    match pending {
        Some(detail) => NewCondition::ready(false, detail.reason, format!("{}: {}", detail.type_, detail.message)),
        None => NewCondition::ready(
            true,
            AppReason::AppActive,
            "the application is active and every summary is synced",
        ),
    }
}

/// A poll's summary of the CDN logs, or the previous one when only its span slid with
/// time: the counts are those of the previous span too, and a status that changes at
/// every poll would be rewritten at every poll.
pub(super) fn unless_only_slid(previous: Option<&CdnSummary>, summary: CdnSummary) -> CdnSummary {
    match previous {
        Some(previous)
            if *previous
                == (CdnSummary {
                    from: previous.from.clone(),
                    to: previous.to.clone(),
                    ..summary.clone()
                }) =>
        {
            previous.clone()
        }
        _ => summary,
    }
}

/// `observedAt` after a poll: now when the status changed (not `unchanged`) or its
/// `observedAt` is older than `refresh`; otherwise unchanged, so a poll that finds the same data writes
/// nothing. Staleness still shows at once: a failed read turns its condition False.
fn observed_at(
    previous: &ContainerAppWatchStatus,
    unchanged: bool,
    now: DateTime<Utc>,
    refresh: Duration,
) -> Option<String> {
    let kept = previous.observed_at.as_deref().filter(|at| {
        chrono::DateTime::parse_from_rfc3339(at).is_ok_and(|at| {
            let age = now.signed_duration_since(at);
            age >= chrono::Duration::zero() && age.to_std().is_ok_and(|age| age < refresh)
        })
    });
    match kept {
        Some(at) if unchanged => Some(at.to_string()),
        _ => Some(rfc3339(now)),
    }
}

/// Warning Events when a poll that decided `decided` finds the app no longer ready or
/// security events turned Elevated.
pub(super) fn transition_events(
    previous: &ContainerAppWatchStatus,
    decided: &[NewCondition<AppReason>],
) -> Vec<Notice<AppReason>> {
    use crate::resources::ConditionStatus;
    let decided_of = |type_: AppCondition| decided.iter().rev().find(|d| d.is(type_));
    let shown = |type_| NewCondition::<AppReason>::of_type_in(&previous.conditions, type_);
    let mut notes = Vec::new();
    if let Some(after) = decided_of(AppCondition::AppReady)
        && after.status != ConditionStatus::True
        && shown(AppCondition::AppReady).is_none_or(|before| before.status)
    {
        notes.push(Notice::warning(AppReason::AppNotReady, after.message.clone()));
    }
    if let Some(after) = decided_of(AppCondition::SecurityEvents)
        && after.reason == AppReason::Elevated.into()
        && !shown(AppCondition::SecurityEvents).is_some_and(|before| before.is(AppReason::Elevated))
    {
        notes.push(Notice::warning(
            AppReason::SecurityEventsElevated,
            after.message.clone(),
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{grouped, watch};
    use super::*;
    use crate::api::models::apps::AppState;

    #[test]
    fn security_events_turn_elevated_at_the_threshold() {
        let (summary, condition) = security_summary(&watch(91), &grouped(), 91);
        assert_eq!(condition.reason, AppReason::Elevated.into());
        assert_eq!(summary.top.len(), 2);
        assert_eq!(summary.top[0].blocked, 70);
        assert!(
            condition.message.contains("ip=192.0.2.1 ruleId=942100 (70)"),
            "{}",
            condition.message
        );
        let (_, quiet) = security_summary(&watch(92), &grouped(), 91);
        assert_eq!(quiet.reason, AppReason::Quiet.into());
    }

    #[test]
    fn a_partial_cdn_summary_says_how_much_it_covers_and_why() {
        let tail = |complete: bool, behind: bool| TailSummary {
            summary: crate::controller::kinds::app_watch::resource::CdnSummary {
                window: "1h".into(),
                requests: 5_000,
                hit_ratio: "0.870".into(),
                from: "2026-11-20T11:48:00.000Z".into(),
                to: "2026-11-20T12:00:00.000Z".into(),
                ..Default::default()
            },
            complete,
            coverage: if complete { 1.0 } else { 0.2 },
            behind,
        };
        let synced = cdn_condition(&tail(true, false), 20);
        assert_eq!(
            (synced.reason, synced.message.as_str()),
            (AppReason::Refreshed.into(), "5000 requests, hit ratio 0.870")
        );
        let backfilling = cdn_condition(&tail(false, false), 20);
        assert_eq!(backfilling.status, crate::resources::ConditionStatus::False);
        assert_eq!(backfilling.reason, AppReason::Partial.into());
        assert!(
            backfilling.message.starts_with(
                "covers 20.0% of the last 1h (2026-11-20T11:48:00.000Z to 2026-11-20T12:00:00.000Z): 5000 requests"
            ),
            "{}",
            backfilling.message
        );
        assert!(backfilling.message.contains("older logs are read over the next polls"));
        let behind = cdn_condition(&tail(false, true), 20);
        assert!(behind.message.contains("--cdn-pages-per-poll"), "{}", behind.message);
    }

    #[test]
    fn app_ready_is_true_only_when_active() {
        let mut app = Application {
            name: "shop".into(),
            status: AppStatus::Active,
            ..Application::default()
        };
        assert!(app_condition(&app).status == crate::resources::ConditionStatus::True);
        app.status = AppStatus::Failing;
        let condition = app_condition(&app);
        assert_eq!(
            (condition.status, condition.reason),
            (
                crate::resources::ConditionStatus::False,
                AppReason::App(AppState::Failing).into()
            )
        );
    }
}
