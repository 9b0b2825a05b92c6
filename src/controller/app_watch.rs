//! ContainerAppWatch: poll the app, its Shield Zone's rate limits, a security-event
//! search and the CDN logs; summarise them (pure) into status and conditions. Never
//! writes to the platform.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::TryStreamExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::conditions::{Decided, find, merge, pause_condition};
use super::context::{Context, is_paused, now_rfc3339, parse_go_duration, write_status};
use super::error::ReconcileError;
use crate::api::models::apps::{AppStatus, Application};
use crate::api::models::logging::LogEntry;
use crate::api::models::shield::{
    Dimension, EventLogsFilter, EventLogsSearchRequest, EventLogsSearchResponse, RateLimitRule, rate_limit_action_name,
};
use crate::api::{ApiError, EdgeClient, LogQuery};
use crate::crd::container_app_watch::{
    AppSummary, CdnSummary, ContainerAppWatch, ContainerAppWatchStatus, EventGroupSummary, ImageSummary,
    RateLimitSummary, SecurityEventsSummary, SecurityEventsWatch,
};

pub const KIND: &str = "ContainerAppWatch";
/// At most this many log entries are read per poll for the CDN summary.
pub const MAX_LOG_ENTRIES: usize = 50_000;

pub fn app_summary(app: &Application) -> AppSummary {
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

pub fn app_condition(app: &Application) -> Decided {
    Decided::new(
        "AppReady",
        app.status == AppStatus::Active,
        app.status.reason(),
        format!("application {} is {}", app.name, app.status),
    )
}

pub fn rate_limit_summaries(rules: &[RateLimitRule]) -> Vec<RateLimitSummary> {
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

/// Summary and condition of a search: `total` is the number of events in the window.
pub fn security_summary(
    watch: &SecurityEventsWatch,
    grouped: &EventLogsSearchResponse,
    total: i64,
) -> (SecurityEventsSummary, Decided) {
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
    let condition = Decided::new(
        "SecurityEvents",
        true,
        if elevated { "Elevated" } else { "Quiet" },
        message,
    );
    let summary = SecurityEventsSummary {
        window: watch.window.clone(),
        total,
        top,
    };
    (summary, condition)
}

/// Requests, hit ratio and counts by status class and cache status.
pub fn cdn_summary(pull_zone_id: i64, window: &str, entries: &[LogEntry]) -> CdnSummary {
    let mut by_status_class: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_cache_status: BTreeMap<String, i64> = BTreeMap::new();
    for entry in entries {
        *by_status_class
            .entry(format!("{}xx", entry.status_code / 100))
            .or_default() += 1;
        *by_cache_status.entry(entry.cache_status.clone()).or_default() += 1;
    }
    let requests = entries.len() as i64;
    let hits = by_cache_status.get("HIT").copied().unwrap_or(0);
    let hit_ratio = if requests == 0 {
        "0".to_string()
    } else {
        format!("{:.3}", hits as f64 / requests as f64)
    };
    CdnSummary {
        pull_zone_id,
        window: window.to_string(),
        requests,
        hit_ratio,
        by_status_class,
        by_cache_status,
    }
}

fn failed(type_: &'static str, reason: &'static str, error: &dyn std::fmt::Display) -> Decided {
    Decided::new(type_, false, reason, error.to_string())
}

pub async fn reconcile(object: Arc<ContainerAppWatch>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.track(object.as_ref(), reconcile_inner(&object, &ctx)).await
}

async fn security_events(
    client: &EdgeClient,
    zone: i64,
    watch: &SecurityEventsWatch,
) -> Result<(SecurityEventsSummary, Decided), ApiError> {
    let window = parse_go_duration(&watch.window).unwrap_or(Duration::from_secs(3600));
    let request = security_search(watch, window, Utc::now().timestamp_millis());
    let grouped = client.search_events(zone, &request).await?;
    let flat = EventLogsSearchRequest {
        group_by: None,
        buckets: None,
        page_size: Some(1),
        ..request
    };
    let total = client.search_events(zone, &flat).await?.total;
    Ok(security_summary(watch, &grouped, total))
}

async fn cdn(client: &EdgeClient, pull_zone_id: i64, window: &str) -> Result<CdnSummary, ApiError> {
    let span = parse_go_duration(window).unwrap_or(Duration::from_secs(3600));
    let query = LogQuery {
        from: chrono::Duration::from_std(span).ok().map(|d| Utc::now() - d),
        limit: Some(1000),
        ..LogQuery::default()
    };
    let entries: Vec<LogEntry> = futures::StreamExt::take(client.logs(pull_zone_id, query), MAX_LOG_ENTRIES)
        .try_collect()
        .await?;
    Ok(cdn_summary(pull_zone_id, window, &entries))
}

async fn reconcile_inner(object: &ContainerAppWatch, ctx: &Context) -> Result<Action, ReconcileError> {
    let namespace = object.namespace().unwrap_or_default();
    let api: Api<ContainerAppWatch> = Api::namespaced(ctx.kube.clone(), &namespace);
    let previous = object.status.clone().unwrap_or_default();
    let generation = object.metadata.generation;
    let now = now_rfc3339();
    if object.metadata.deletion_timestamp.is_some() {
        ctx.metrics.forget(KIND, &namespace, &object.name_any());
        return Ok(Action::await_change());
    }
    let paused = is_paused(object);
    if paused {
        let synced = pause_condition(true, &previous.conditions)
            .into_iter()
            .collect::<Vec<_>>();
        let status = ContainerAppWatchStatus {
            conditions: merge(&previous.conditions, &synced, generation, &now),
            ..previous.clone()
        };
        write_status(&api, object, object.status.as_ref(), &status).await?;
        return Ok(Action::await_change());
    }
    let interval = parse_go_duration(&object.spec.interval).unwrap_or(Duration::from_secs(60));
    let client = match ctx
        .client_for(&namespace, object.spec.access_key_secret_ref.as_ref())
        .await
    {
        Ok(client) => client,
        Err(error) => {
            let decided = failed("AppReady", error.reason(), &error);
            let status = ContainerAppWatchStatus {
                observed_generation: generation,
                conditions: merge(&previous.conditions, &[decided], generation, &now),
                ..previous.clone()
            };
            write_status(&api, object, object.status.as_ref(), &status).await?;
            return Err(error);
        }
    };
    let mut status = ContainerAppWatchStatus {
        observed_generation: generation,
        ..previous.clone()
    };
    let mut decided: Vec<Decided> = pause_condition(false, &previous.conditions).into_iter().collect();
    let app = match client.get_app(&object.spec.app_id).await {
        Ok(app) => {
            status.app = Some(app_summary(&app));
            decided.push(app_condition(&app));
            Some(app)
        }
        Err(error) => {
            decided.push(failed("AppReady", error.reason(), &error));
            None
        }
    };
    let zone = object.spec.shield_zone_id;
    if let (Some(zone), Some(true)) = (zone, object.spec.rate_limits.as_ref().map(|r| r.enabled)) {
        match client.all_rate_limits(zone).await {
            Ok(rules) => {
                decided.push(Decided::new(
                    "RateLimitsSynced",
                    true,
                    "Synced",
                    format!("{} rules", rules.len()),
                ));
                status.rate_limits = Some(rate_limit_summaries(&rules));
            }
            Err(error) => decided.push(failed("RateLimitsSynced", error.reason(), &error)),
        }
    }
    if let (Some(zone), Some(watch)) = (zone, &object.spec.security_events) {
        match security_events(&client, zone, watch).await {
            Ok((summary, condition)) => {
                status.security_events = Some(summary);
                decided.push(condition);
            }
            Err(error) => decided.push(failed("SecurityEvents", "SearchFailed", &error)),
        }
    }
    if let Some(watch) = &object.spec.cdn {
        match watch
            .pull_zone_id
            .or_else(|| app.as_ref().and_then(Application::endpoint_pull_zone_id))
        {
            Some(pull_zone_id) => match ctx
                .cdn_summary(&client, pull_zone_id, &watch.window, || {
                    cdn(&client, pull_zone_id, &watch.window)
                })
                .await
            {
                Ok(summary) => {
                    let message = format!("{} requests, hit ratio {}", summary.requests, summary.hit_ratio);
                    decided.push(Decided::new("CdnLogsSynced", true, "Synced", message));
                    status.cdn = Some(summary);
                }
                Err(error) => decided.push(failed("CdnLogsSynced", error.reason(), &error)),
            },
            None => decided.push(Decided::new(
                "CdnLogsSynced",
                false,
                "NoPullZone",
                "set spec.cdn.pullZoneId: the app has no endpoint with a Pull Zone",
            )),
        }
    }
    status.conditions = merge(&previous.conditions, &decided, generation, &now);
    write_status(&api, object, object.status.as_ref(), &status).await?;
    ctx.metrics
        .set_conditions(KIND, &namespace, &object.name_any(), &status.conditions);
    for (type_, warn_reason) in [("SecurityEvents", "Elevated"), ("AppReady", "")] {
        let before = find(&previous.conditions, type_);
        let after = find(&status.conditions, type_);
        let turned = match (before, after) {
            (_, None) => false,
            (before, Some(after)) if type_ == "AppReady" => {
                after.status != crate::crd::ConditionStatus::True
                    && before.is_none_or(|b| b.status == crate::crd::ConditionStatus::True)
            }
            (before, Some(after)) => after.reason == warn_reason && before.is_none_or(|b| b.reason != warn_reason),
        };
        if let (true, Some(after)) = (turned, after) {
            let reason = if type_ == "AppReady" {
                "AppNotReady"
            } else {
                "SecurityEventsElevated"
            };
            ctx.event(object, EventType::Warning, reason, after.message.clone())
                .await;
        }
    }
    Ok(Action::requeue(interval))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::models::shield::{EventGroup, GroupContext};

    fn watch(threshold: i64) -> SecurityEventsWatch {
        SecurityEventsWatch {
            window: "1h".into(),
            query: None,
            filters: Vec::new(),
            group_by: Vec::new(),
            top: 2,
            warn_threshold: threshold,
        }
    }

    fn grouped() -> EventLogsSearchResponse {
        let group = |rule: &str, ip: &str, count: i64| EventGroup {
            key: Some(
                [
                    ("ruleId".to_string(), rule.to_string()),
                    ("ip".to_string(), ip.to_string()),
                ]
                .into(),
            ),
            count,
            first_seen: 0,
            last_seen: 0,
            context: Some(GroupContext {
                blocked: count,
                ..GroupContext::default()
            }),
            sparkline: None,
        };
        EventLogsSearchResponse {
            rows: None,
            groups: Some(vec![
                group("942100", "192.0.2.1", 70),
                group("941100", "192.0.2.2", 20),
                group("x", "y", 1),
            ]),
            total: 3,
            total_pages: 1,
            page: 0,
            error_response: None,
        }
    }

    #[test]
    fn security_events_turn_elevated_at_the_threshold() {
        let (summary, condition) = security_summary(&watch(91), &grouped(), 91);
        assert_eq!(condition.reason, "Elevated");
        assert_eq!(summary.top.len(), 2);
        assert_eq!(summary.top[0].blocked, 70);
        assert!(
            condition.message.contains("ip=192.0.2.1 ruleId=942100 (70)"),
            "{}",
            condition.message
        );
        let (_, quiet) = security_summary(&watch(92), &grouped(), 91);
        assert_eq!(quiet.reason, "Quiet");
    }

    #[test]
    fn the_search_defaults_to_rule_and_ip_over_the_window() {
        let request = security_search(&watch(1), Duration::from_secs(3600), 10_000_000);
        assert_eq!(request.group_by, Some(vec![Dimension::RuleId, Dimension::Ip]));
        assert_eq!((request.from, request.to), (10_000_000 - 3_600_000, 10_000_000));
        assert_eq!(request.page_size, Some(2));
    }

    #[test]
    fn cdn_summary_counts_classes_cache_statuses_and_hit_ratio() {
        let entry = |status: u16, cache: &str| LogEntry {
            status_code: status,
            cache_status: cache.into(),
            ..LogEntry::default()
        };
        let summary = cdn_summary(
            501,
            "1h",
            &[
                entry(200, "HIT"),
                entry(200, "HIT"),
                entry(404, "MISS"),
                entry(503, "MISS"),
            ],
        );
        assert_eq!(summary.requests, 4);
        assert_eq!(summary.hit_ratio, "0.500");
        assert_eq!(
            summary.by_status_class,
            [("2xx".to_string(), 2), ("4xx".to_string(), 1), ("5xx".to_string(), 1)].into()
        );
        assert_eq!(summary.by_cache_status["MISS"], 2);
        assert_eq!(cdn_summary(1, "1h", &[]).hit_ratio, "0");
    }

    #[test]
    fn app_ready_is_true_only_when_active() {
        let mut app = Application {
            name: "shop".into(),
            status: AppStatus::Active,
            ..Application::default()
        };
        assert!(app_condition(&app).status == crate::crd::ConditionStatus::True);
        app.status = AppStatus::Failing;
        let condition = app_condition(&app);
        assert_eq!(
            (condition.status, condition.reason.as_str()),
            (crate::crd::ConditionStatus::False, "Failing")
        );
    }
}
