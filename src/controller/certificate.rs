//! PullZoneCertificate: decide (pure) whether to call the platform now, later or not
//! at all; call; turn the answer into status and the next attempt time.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::conditions::{Decided, find, merge, pause_condition};
use super::context::{Context, is_paused, parse_go_duration, poll_interval, rfc3339, write_status};
use super::error::ReconcileError;
use crate::api::{ApiError, RetryPolicy};
use crate::crd::ANNOTATION_RECONCILE_REQUESTED_AT;
use crate::crd::pull_zone_certificate::{
    LastError, PullZoneCertificate, PullZoneCertificateSpec, PullZoneCertificateStatus,
};

pub const KIND: &str = "PullZoneCertificate";
/// How long to wait before retrying with credentials the platform refused.
pub const UNAUTHORIZED_RETRY: Duration = Duration::from_secs(600);

/// What to do about a certificate now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Call completeExternalHttpCertificate.
    Complete,
    /// Nothing before this time.
    WaitUntil(DateTime<Utc>),
    /// Nothing until the spec (or a referenced Secret) changes.
    Idle,
}

fn parse_time(raw: Option<&str>) -> Option<DateTime<Utc>> {
    raw.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// `requested` is the object's reconcile-requested-at annotation.
pub fn decide(
    spec: &PullZoneCertificateSpec,
    status: &PullZoneCertificateStatus,
    generation: Option<i64>,
    requested: Option<&str>,
    now: DateTime<Utc>,
) -> Decision {
    let new_request = requested.is_some() && requested != status.last_handled_reconcile_at.as_deref();
    if status.observed_generation != generation || new_request {
        return Decision::Complete;
    }
    let reason = find(&status.conditions, "Ready").map(|c| c.reason.as_str());
    match reason {
        Some("Issued") => {
            let renewal = spec
                .renew_every
                .as_deref()
                .and_then(parse_go_duration)
                .zip(parse_time(status.issued_time.as_deref()))
                .and_then(|(every, issued)| chrono::Duration::from_std(every).ok().map(|every| issued + every));
            match renewal {
                Some(due) if due <= now => Decision::Complete,
                Some(due) => Decision::WaitUntil(due),
                None => Decision::Idle,
            }
        }
        Some("HostnameNotFound") => Decision::Idle,
        // Reconciles come only from changes (a Secret, the object) and the slow requeue.
        Some("Unauthorized") => Decision::Complete,
        _ => match parse_time(status.next_attempt_time.as_deref()) {
            Some(next) if next > now => Decision::WaitUntil(next),
            _ => Decision::Complete,
        },
    }
}

fn last_error(error: &ApiError) -> LastError {
    let message = error.platform_message();
    LastError {
        http_status: error.status(),
        error_key: message.and_then(|m| m.error_key.clone()),
        field: message.and_then(|m| m.field.clone()),
        message: message
            .map(|m| m.message.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| error.to_string()),
    }
}

/// Status after an attempt, and when to look again (`None`: only on change).
pub fn after_attempt(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    generation: Option<i64>,
    requested: Option<&str>,
    result: Result<(), &ApiError>,
    backoff: &RetryPolicy,
    now: DateTime<Utc>,
) -> (PullZoneCertificateStatus, Option<Duration>) {
    let same_generation = previous.observed_generation == generation;
    let attempts = if same_generation { previous.attempts } else { 0 } + 1;
    let stamp = rfc3339(now);
    let base = PullZoneCertificateStatus {
        observed_generation: generation,
        issued_time: previous.issued_time.clone(),
        last_handled_reconcile_at: requested
            .map(str::to_string)
            .or_else(|| previous.last_handled_reconcile_at.clone()),
        ..PullZoneCertificateStatus::default()
    };
    let error = match result {
        Ok(()) => {
            let renew = spec.renew_every.as_deref().and_then(parse_go_duration);
            let ready = Decided::new(
                "Ready",
                true,
                "Issued",
                format!("certificate issued for {}", spec.hostname),
            );
            let status = PullZoneCertificateStatus {
                conditions: merge(&previous.conditions, &[ready], generation, &stamp),
                issued_time: Some(stamp.clone()),
                attempts: 0,
                next_attempt_time: renew
                    .and_then(|d| chrono::Duration::from_std(d).ok())
                    .map(|d| rfc3339(now + d)),
                last_error: None,
                ..base
            };
            return (status, renew);
        }
        Err(error) => error,
    };
    let (reason, wait) = match error {
        ApiError::NotFound(_) => ("HostnameNotFound", None),
        ApiError::Validation { .. } => ("VerificationFailed", Some(backoff.backoff(attempts - 1))),
        ApiError::Unauthorized(_) | ApiError::Forbidden(_) => ("Unauthorized", Some(UNAUTHORIZED_RETRY)),
        ApiError::RateLimited { retry_after, .. } => (
            "RateLimited",
            Some(backoff.backoff(attempts - 1).max(retry_after.unwrap_or_default())),
        ),
        other => (other.reason(), Some(backoff.backoff(attempts - 1))),
    };
    let message = match reason {
        "HostnameNotFound" => format!(
            "{} is not registered on any Pull Zone; fix spec.hostname",
            spec.hostname
        ),
        _ => error.to_string(),
    };
    let ready = Decided::new("Ready", false, reason, message);
    let status = PullZoneCertificateStatus {
        conditions: merge(&previous.conditions, &[ready], generation, &stamp),
        attempts,
        next_attempt_time: wait
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| rfc3339(now + d)),
        last_error: Some(last_error(error)),
        ..base
    };
    (status, wait)
}

pub async fn reconcile(object: Arc<PullZoneCertificate>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    ctx.track(object.as_ref(), reconcile_inner(&object, &ctx)).await
}

async fn reconcile_inner(object: &PullZoneCertificate, ctx: &Context) -> Result<Action, ReconcileError> {
    let namespace = object.namespace().unwrap_or_default();
    let api: Api<PullZoneCertificate> = Api::namespaced(ctx.kube.clone(), &namespace);
    let previous = object.status.clone().unwrap_or_default();
    let generation = object.metadata.generation;
    let now = Utc::now();
    if object.metadata.deletion_timestamp.is_some() {
        ctx.metrics.forget(KIND, &namespace, &object.name_any());
        return Ok(Action::await_change());
    }
    let paused = is_paused(object);
    let mut previous = previous;
    if let Some(synced) = pause_condition(paused, &previous.conditions) {
        let status = PullZoneCertificateStatus {
            conditions: merge(&previous.conditions, &[synced], generation, &rfc3339(now)),
            ..previous.clone()
        };
        write_status(&api, object, object.status.as_ref(), &status).await?;
        previous = status;
    }
    if paused {
        return Ok(Action::await_change());
    }
    let requested = object
        .annotations()
        .get(ANNOTATION_RECONCILE_REQUESTED_AT)
        .map(String::as_str);
    match decide(&object.spec, &previous, generation, requested, now) {
        Decision::Idle => return Ok(Action::await_change()),
        Decision::WaitUntil(when) => {
            let wait = (when - now).to_std().unwrap_or_default();
            return Ok(Action::requeue(wait.max(Duration::from_secs(1))));
        }
        Decision::Complete => {}
    }
    let client = ctx
        .client_for(&namespace, object.spec.access_key_secret_ref.as_ref())
        .await?;
    let result = client.complete_external_http_certificate(&object.spec.hostname).await;
    let outcome = result.as_ref().map(|_| ());
    let (status, wait) = after_attempt(
        &object.spec,
        &previous,
        generation,
        requested,
        outcome,
        &ctx.certificate_backoff,
        now,
    );
    write_status(&api, object, object.status.as_ref(), &status).await?;
    ctx.metrics
        .set_conditions(KIND, &namespace, &object.name_any(), &status.conditions);
    if let Err(error) = &result {
        let was = find(&previous.conditions, "Ready").map(|c| c.reason.clone());
        let reason = find(&status.conditions, "Ready")
            .map(|c| c.reason.clone())
            .unwrap_or_default();
        if was.as_deref() != Some(reason.as_str()) {
            ctx.event(object, EventType::Warning, &reason, error.to_string()).await;
        }
    } else {
        ctx.event(
            object,
            EventType::Normal,
            "Issued",
            format!("certificate issued for {}", object.spec.hostname),
        )
        .await;
    }
    Ok(match wait {
        Some(wait) => Action::requeue(wait.min(poll_interval(object, Duration::from_secs(24 * 3600)))),
        None => Action::await_change(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PlatformMessage;

    fn spec(renew: Option<&str>) -> PullZoneCertificateSpec {
        PullZoneCertificateSpec {
            hostname: "shop.example.com".into(),
            renew_every: renew.map(str::to_string),
            access_key_secret_ref: None,
        }
    }

    fn at(raw: &str) -> DateTime<Utc> {
        raw.parse().expect("valid time")
    }

    fn no_jitter() -> RetryPolicy {
        RetryPolicy {
            max_retries: u32::MAX,
            initial_backoff: Duration::from_secs(30),
            max_backoff: Duration::from_secs(3600),
        }
    }

    fn failed(message: &str) -> ApiError {
        ApiError::Validation {
            status: 400,
            message: PlatformMessage {
                message: message.into(),
                field: Some("Hostname".into()),
                error_key: Some("pullzone.domain_verification_failed".into()),
            },
        }
    }

    #[test]
    fn issued_is_not_called_again_for_the_generation_unless_renewal_is_due() {
        let now = at("2026-11-20T12:00:00Z");
        let (issued, wait) = after_attempt(
            &spec(None),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Ok(()),
            &no_jitter(),
            now,
        );
        assert_eq!(wait, None);
        assert_eq!(issued.issued_time.as_deref(), Some("2026-11-20T12:00:00Z"));
        assert_eq!(decide(&spec(None), &issued, Some(1), None, now), Decision::Idle);
        assert_eq!(
            decide(&spec(None), &issued, Some(2), None, now),
            Decision::Complete,
            "a new generation"
        );
        assert_eq!(
            decide(&spec(None), &issued, Some(1), Some("r1"), now),
            Decision::Complete,
            "reconcile-requested-at"
        );
        let (handled, _) = after_attempt(&spec(None), &issued, Some(1), Some("r1"), Ok(()), &no_jitter(), now);
        assert_eq!(
            decide(&spec(None), &handled, Some(1), Some("r1"), now),
            Decision::Idle,
            "handled once, also after a restart"
        );

        let (renewing, wait) = after_attempt(
            &spec(Some("720h")),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Ok(()),
            &no_jitter(),
            now,
        );
        assert_eq!(wait, Some(Duration::from_secs(720 * 3600)));
        let due = at("2026-12-20T12:00:00Z");
        assert_eq!(
            decide(&spec(Some("720h")), &renewing, Some(1), None, now),
            Decision::WaitUntil(due)
        );
        assert_eq!(
            decide(&spec(Some("720h")), &renewing, Some(1), None, due),
            Decision::Complete
        );
    }

    #[test]
    fn verification_failures_back_off_exponentially_up_to_an_hour() {
        let now = at("2026-11-20T12:00:00Z");
        let mut status = PullZoneCertificateStatus::default();
        let mut waits = Vec::new();
        for _ in 0..10 {
            let (next, wait) = after_attempt(
                &spec(None),
                &status,
                Some(1),
                None,
                Err(&failed("challenge pending")),
                &no_jitter(),
                now,
            );
            waits.push(wait.expect("retried"));
            status = next;
        }
        assert_eq!(status.attempts, 10);
        for (i, wait) in waits.iter().enumerate() {
            let nominal = Duration::from_secs(30 * 2u64.pow(i as u32)).min(Duration::from_secs(3600));
            assert!(
                *wait >= nominal / 2 && *wait <= nominal,
                "attempt {i}: {wait:?} vs {nominal:?}"
            );
        }
        let error = status.last_error.clone().expect("last error");
        assert_eq!(
            (error.http_status, error.field.as_deref()),
            (Some(400), Some("Hostname"))
        );
        assert_eq!(error.error_key.as_deref(), Some("pullzone.domain_verification_failed"));
        assert_eq!(
            find(&status.conditions, "Ready").map(|c| c.reason.as_str()),
            Some("VerificationFailed")
        );
        assert!(matches!(
            decide(&spec(None), &status, Some(1), None, now),
            Decision::WaitUntil(_)
        ));
    }

    #[test]
    fn unknown_hostname_is_terminal_until_the_spec_changes() {
        let now = at("2026-11-20T12:00:00Z");
        let missing = ApiError::NotFound(PlatformMessage::default());
        let (status, wait) = after_attempt(
            &spec(None),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Err(&missing),
            &no_jitter(),
            now,
        );
        assert_eq!(wait, None);
        assert_eq!(
            decide(&spec(None), &status, Some(1), None, now + chrono::Duration::days(30)),
            Decision::Idle
        );
        assert_eq!(decide(&spec(None), &status, Some(2), None, now), Decision::Complete);
    }

    #[test]
    fn rate_limits_wait_at_least_retry_after_and_unauthorized_retries_slowly() {
        let now = at("2026-11-20T12:00:00Z");
        let limited = ApiError::RateLimited {
            retry_after: Some(Duration::from_secs(120)),
            message: PlatformMessage::default(),
        };
        let (_, wait) = after_attempt(
            &spec(None),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Err(&limited),
            &no_jitter(),
            now,
        );
        assert!(wait.expect("retried") >= Duration::from_secs(120));
        let refused = ApiError::Unauthorized(PlatformMessage::default());
        let (status, wait) = after_attempt(
            &spec(None),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Err(&refused),
            &no_jitter(),
            now,
        );
        assert_eq!(wait, Some(UNAUTHORIZED_RETRY));
        assert_eq!(
            find(&status.conditions, "Ready").map(|c| c.reason.as_str()),
            Some("Unauthorized")
        );
    }
}
