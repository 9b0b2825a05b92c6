//! PullZoneCertificate: decide (pure) whether to call the platform now, later or not
//! at all; call; turn the answer into status, Events and the next attempt time.

pub mod resource;
mod settings;
mod vocabulary;

pub(crate) use self::settings::CertificateSettings;

use std::convert::Infallible;
use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::ResourceExt;

use self::vocabulary::{CertificateReason, certificate_reason};
use crate::api::{ApiError, ApiFailure, MAX_PLATFORM_TEXT, RetryPolicy, bounded_text};
use crate::controller::framework::error::ReconcileError;
use crate::controller::framework::kind::{Context, Notice, Now, Outcome, Reconcilable, Requeue};
use crate::controller::framework::status::conditions::{NewCondition, find, merge};
use crate::controller::framework::status::time::{parse_go_duration, rfc3339};
use crate::controller::framework::status::vocabulary::{AnyReason, ConditionType};
use crate::controller::kinds::certificate::resource::{
    LastError, PullZoneCertificate, PullZoneCertificateSpec, PullZoneCertificateStatus,
};
use crate::crd::ANNOTATION_RECONCILE_REQUESTED_AT;

/// How long to wait before retrying with credentials the platform refused.
pub(crate) const UNAUTHORIZED_RETRY: Duration = Duration::from_secs(600);
/// The longest wait between looks at a certificate, whatever the backoff says.
const LONGEST_WAIT: Duration = Duration::from_secs(24 * 3600);

/// What to do about a certificate now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
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
pub(crate) fn decide(
    spec: &PullZoneCertificateSpec,
    status: &PullZoneCertificateStatus,
    generation: Option<i64>,
    requested: Option<&str>,
    now: DateTime<Utc>,
) -> Decision {
    let new_request = requested.is_some() && requested != status.last_handled_reconcile_at.as_deref();
    let ready = find(&status.conditions, ConditionType::Ready);
    // Statuses without attemptedGeneration (written by 0.1.0) record a success only as
    // an Issued condition of the generation issued.
    let attempted = status.attempted_generation.or_else(|| {
        ready
            .filter(|c| AnyReason::parse(&c.reason) == Some(AnyReason::Own(CertificateReason::Issued)))
            .and_then(|c| c.observed_generation)
    });
    if attempted != generation || new_request {
        return Decision::Complete;
    }
    match ready.and_then(|c| AnyReason::parse(&c.reason)) {
        Some(AnyReason::Own(CertificateReason::Issued)) => {
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
        Some(AnyReason::Own(CertificateReason::HostnameNotFound)) => Decision::Idle,
        // Reconciles come only from changes (a Secret, the object) and the slow requeue.
        Some(AnyReason::Platform(ApiFailure::Unauthorized)) => Decision::Complete,
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
            .unwrap_or_else(|| bounded_text(&error.to_string(), MAX_PLATFORM_TEXT)),
    }
}

/// Status after an attempt, and when to look again (`None`: only on change).
pub(crate) fn after_attempt(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    generation: Option<i64>,
    requested: Option<&str>,
    result: Result<(), &ApiError>,
    backoff: &RetryPolicy,
    now: &Now,
) -> (PullZoneCertificateStatus, Option<Duration>) {
    let same_generation = previous.attempted_generation == generation;
    let attempts = if same_generation { previous.attempts } else { 0 } + 1;
    let stamp = now.rfc3339();
    let backoff = backoff.backoff_with_jitter(attempts - 1, now.jitter);
    let base = PullZoneCertificateStatus {
        observed_generation: generation,
        attempted_generation: generation,
        issued_time: previous.issued_time.clone(),
        last_handled_reconcile_at: requested
            .map(str::to_string)
            .or_else(|| previous.last_handled_reconcile_at.clone()),
        ..PullZoneCertificateStatus::default()
    };
    let error = match result {
        Ok(()) => {
            let renew = spec.renew_every.as_deref().and_then(parse_go_duration);
            let ready = NewCondition::new(
                ConditionType::Ready,
                true,
                CertificateReason::Issued,
                format!("certificate issued for {}", spec.hostname),
            );
            let status = PullZoneCertificateStatus {
                conditions: merge(&previous.conditions, &[ready], generation, &stamp),
                issued_time: Some(stamp.clone()),
                attempts: 0,
                next_attempt_time: renew
                    .and_then(|d| chrono::Duration::from_std(d).ok())
                    .map(|d| rfc3339(now.time + d)),
                last_error: None,
                ..base
            };
            return (status, renew);
        }
        Err(error) => error,
    };
    let reason = certificate_reason(error);
    let (wait, message) = match reason {
        AnyReason::Own(CertificateReason::HostnameNotFound) => (
            None,
            format!(
                "{} is not registered on any Pull Zone; fix spec.hostname",
                spec.hostname
            ),
        ),
        AnyReason::Platform(ApiFailure::Unauthorized) => (Some(UNAUTHORIZED_RETRY), error.to_string()),
        _ => (
            Some(backoff.max(error.retry_after().unwrap_or_default())),
            error.to_string(),
        ),
    };
    let ready = NewCondition::new(ConditionType::Ready, false, reason, message);
    let status = PullZoneCertificateStatus {
        conditions: merge(&previous.conditions, &[ready], generation, &stamp),
        attempts,
        next_attempt_time: wait
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| rfc3339(now.time + d)),
        last_error: Some(last_error(error)),
        ..base
    };
    (status, wait)
}

/// The Events of an attempt: Issued, or a Warning when the failure's reason is new.
pub(crate) fn attempt_events(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    status: &PullZoneCertificateStatus,
    result: Result<(), &ApiError>,
) -> Vec<Notice<CertificateReason>> {
    let Err(error) = result else {
        return vec![Notice::normal(
            CertificateReason::Issued,
            format!("certificate issued for {}", spec.hostname),
        )];
    };
    let ready = |s: &PullZoneCertificateStatus| find(&s.conditions, ConditionType::Ready).map(|c| c.reason.clone());
    match (ready(previous), ready(status)) {
        (was, Some(now)) if was.as_deref() != Some(now.as_str()) => {
            let reason = certificate_reason(error);
            vec![Notice::warning(reason, error.to_string())]
        }
        _ => Vec::new(),
    }
}

/// When to look again after a decision not to call.
fn requeue_without_call(decision: &Decision, now: &Now) -> Requeue {
    match decision {
        Decision::WaitUntil(when) => Requeue::After(
            (*when - now.time)
                .to_std()
                .unwrap_or_default()
                .max(Duration::from_secs(1)),
        ),
        Decision::Idle | Decision::Complete => Requeue::OnChange,
    }
}

impl Reconcilable for PullZoneCertificate {
    const KIND: &'static str = "PullZoneCertificate";

    type Error = Infallible;
    type Reason = CertificateReason;
    type Settings = CertificateSettings;
    type State = ();

    /// Decides whether to call now (the platform has no read of a certificate's
    /// state); calls; turns the answer into status, Events and the next attempt.
    async fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> Result<Outcome<Self::Status, Self::Reason>, ReconcileError<Infallible>> {
        let requested = self
            .annotations()
            .get(ANNOTATION_RECONCILE_REQUESTED_AT)
            .map(String::as_str);
        let generation = self.metadata.generation;
        let decision = decide(&self.spec, &cx.previous, generation, requested, cx.now.time);
        if decision != Decision::Complete {
            return Ok(Outcome {
                status: cx.previous.clone(),
                events: Vec::new(),
                requeue: requeue_without_call(&decision, &cx.now),
            });
        }
        cx.ensure_leader()?;
        let client = cx.client().await?;
        let result = client.complete_external_http_certificate(&self.spec.hostname).await;
        let result = result.as_ref().map(|_| ());
        let (status, wait) = after_attempt(
            &self.spec,
            &cx.previous,
            generation,
            requested,
            result,
            &cx.settings.certificate_backoff,
            &cx.now,
        );
        Ok(Outcome {
            events: attempt_events(&self.spec, &cx.previous, &status, result),
            status,
            requeue: wait.map_or(Requeue::OnChange, |wait| Requeue::After(wait.min(LONGEST_WAIT))),
        })
    }
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

    fn moment(time: DateTime<Utc>) -> Now {
        Now { time, jitter: 0.5 }
    }

    fn no_jitter() -> RetryPolicy {
        RetryPolicy {
            max_retries: u32::MAX,
            initial_backoff: Duration::from_secs(30),
            max_backoff: Duration::from_secs(3600),
            ..RetryPolicy::default()
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

    /// The status after generation 1's first attempt succeeded at `now`.
    fn first_success(renew: Option<&str>, now: DateTime<Utc>) -> (PullZoneCertificateStatus, Option<Duration>) {
        after_attempt(
            &spec(renew),
            &PullZoneCertificateStatus::default(),
            Some(1),
            None,
            Ok(()),
            &no_jitter(),
            &moment(now),
        )
    }

    #[test]
    fn issued_is_not_called_again_for_the_generation_unless_renewal_is_due() {
        let now = at("2026-11-20T12:00:00Z");
        let (issued, wait) = first_success(None, now);
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
        let (handled, _) = after_attempt(
            &spec(None),
            &issued,
            Some(1),
            Some("r1"),
            Ok(()),
            &no_jitter(),
            &moment(now),
        );
        assert_eq!(
            decide(&spec(None), &handled, Some(1), Some("r1"), now),
            Decision::Idle,
            "handled once, also after a restart"
        );

        let (renewing, wait) = first_success(Some("720h"), now);
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
    fn an_issued_status_without_attempted_generation_is_not_issued_again() {
        let now = at("2026-11-20T12:00:00Z");
        let (issued, _) = first_success(Some("720h"), now);
        let previous_release = PullZoneCertificateStatus {
            attempted_generation: None,
            ..issued
        };
        assert_eq!(
            decide(&spec(Some("720h")), &previous_release, Some(1), None, now),
            Decision::WaitUntil(at("2026-12-20T12:00:00Z"))
        );
        assert_eq!(
            decide(&spec(Some("720h")), &previous_release, Some(2), None, now),
            Decision::Complete,
            "a new generation"
        );
        let paused_before_any_attempt = PullZoneCertificateStatus {
            observed_generation: Some(1),
            conditions: previous_release
                .conditions
                .iter()
                .map(|c| crate::crd::Condition {
                    reason: "Paused".to_string(),
                    status: crate::crd::ConditionStatus::False,
                    ..c.clone()
                })
                .collect(),
            ..PullZoneCertificateStatus::default()
        };
        assert_eq!(
            decide(&spec(None), &paused_before_any_attempt, Some(1), None, now),
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
                &moment(now),
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
            find(&status.conditions, ConditionType::Ready).map(|c| c.reason.as_str()),
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
            &moment(now),
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
            &moment(now),
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
            &moment(now),
        );
        assert_eq!(wait, Some(UNAUTHORIZED_RETRY));
        assert_eq!(
            find(&status.conditions, ConditionType::Ready).map(|c| c.reason.as_str()),
            Some("Unauthorized")
        );
    }
}
