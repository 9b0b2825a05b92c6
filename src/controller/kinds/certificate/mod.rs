//! PullZoneCertificate: decide (pure) whether to call the platform now, later or not
//! at all; take the hostname's turn (at most one completion per hostname per backoff
//! step: `ledger.rs`); call; turn the answer into status, Events and the next attempt
//! time.

mod ledger;
pub mod resource;
mod settings;
mod vocabulary;

pub(crate) use self::settings::CertificateSettings;

use std::time::Duration;

use chrono::{DateTime, Utc};
use kube::ResourceExt;

use self::ledger::{Completer, CompletionLedger, later};
use self::vocabulary::CertificateReason;
use crate::api::{ApiError, ApiFailure, EdgeClient, MAX_PLATFORM_TEXT, RetryPolicy, bounded_text};
use crate::controller::framework::extend::Verdict;
use crate::controller::framework::prelude::{Context, Failure, NewCondition, Notice, Outcome, Reconcilable};
use crate::controller::kinds::certificate::resource::{
    LastError, PullZoneCertificate, PullZoneCertificateSpec, PullZoneCertificateStatus,
};
use crate::resources::ANNOTATION_RECONCILE_REQUESTED_AT;
use crate::resources::time::{GoDuration, rfc3339};

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
    let ready = NewCondition::<CertificateReason>::ready_in(&status.conditions);
    let issued = ready.as_ref().filter(|ready| ready.is(CertificateReason::Issued));
    // Statuses without attemptedGeneration (written by 0.1.0) record a success only as
    // an Issued condition of the generation issued.
    let attempted = status
        .attempted_generation
        .or_else(|| issued.and_then(|ready| ready.observed_generation));
    if attempted != generation || new_request {
        return Decision::Complete;
    }
    if issued.is_some() {
        let renewal = spec
            .renew_every
            .as_ref()
            .and_then(GoDuration::duration)
            .zip(parse_time(status.issued_time.as_deref()))
            .and_then(|(every, issued)| chrono::Duration::from_std(every).ok().map(|every| issued + every));
        return match renewal {
            Some(due) if due <= now => Decision::Complete,
            Some(due) => Decision::WaitUntil(due),
            None => Decision::Idle,
        };
    }
    if ready
        .as_ref()
        .is_some_and(|ready| ready.is(CertificateReason::HostnameNotFound))
    {
        return Decision::Idle;
    }
    // Reconciles come only from changes (a Secret, the object) and the slow requeue.
    if ready
        .as_ref()
        .is_some_and(|ready| ready.is(ApiFailure::Unauthorized) || ready.is(ApiFailure::Forbidden))
    {
        return Decision::Complete;
    }
    match parse_time(status.next_attempt_time.as_deref()) {
        Some(next) if next > now => Decision::WaitUntil(next),
        _ => Decision::Complete,
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

/// Status after an attempt, its Ready, and when to look again (`None`: only on change).
pub(crate) fn after_attempt(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    generation: Option<i64>,
    requested: Option<&str>,
    result: Result<(), &ApiError>,
    backoff: &RetryPolicy,
    (now, jitter): (DateTime<Utc>, f64),
) -> (
    PullZoneCertificateStatus,
    NewCondition<CertificateReason>,
    Option<Duration>,
) {
    let same_generation = previous.attempted_generation == generation;
    let attempts = if same_generation { previous.attempts } else { 0 }.saturating_add(1);
    let stamp = rfc3339(now);
    let backoff = backoff.backoff_with_jitter(attempts - 1, jitter);
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
            let renew = spec.renew_every.as_ref().and_then(GoDuration::duration);
            let ready = NewCondition::ready(
                true,
                CertificateReason::Issued,
                format!("certificate issued for {}", spec.hostname),
            );
            let status = PullZoneCertificateStatus {
                issued_time: Some(stamp.clone()),
                attempts: 0,
                next_attempt_time: renew
                    .and_then(|d| chrono::Duration::from_std(d).ok())
                    .map(|d| rfc3339(now + d)),
                last_error: None,
                ..base
            };
            return (status, ready, renew);
        }
        Err(error) => error,
    };
    let (ready, wait) = failed_ready(spec, error, backoff);
    let status = PullZoneCertificateStatus {
        attempts,
        next_attempt_time: wait
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| rfc3339(now + d)),
        last_error: Some(last_error(error)),
        ..base
    };
    (status, ready, wait)
}

/// The Ready of a failed completion, in the kind's words where it has its own, and when
/// to try again (`None`: once the spec changes): a key the platform refused after
/// [`UNAUTHORIZED_RETRY`], a transient or rejected answer after the step's `backoff`
/// (at least the platform's `Retry-After`).
fn failed_ready(
    spec: &PullZoneCertificateSpec,
    error: &ApiError,
    backoff: Duration,
) -> (NewCondition<CertificateReason>, Option<Duration>) {
    let retry = Some(backoff.max(error.retry_after().unwrap_or_default()));
    let message = error.to_string();
    match error.reason() {
        ApiFailure::NotFound => {
            let message = format!(
                "{} is not registered on any Pull Zone; fix spec.hostname",
                spec.hostname
            );
            (
                NewCondition::ready(false, CertificateReason::HostnameNotFound, message),
                None,
            )
        }
        ApiFailure::Rejected => (
            NewCondition::ready(false, CertificateReason::VerificationFailed, message),
            retry,
        ),
        refused if refused.is_refused_key() => (NewCondition::ready(false, refused, message), Some(UNAUTHORIZED_RETRY)),
        other => (NewCondition::ready(false, other, message), retry),
    }
}

/// When the backoff step that a completion made at `now` starts for its hostname ends:
/// after a failure the policy retries, at the wait [`after_attempt`] computed; after a
/// success, a key the platform refused (the hostname untouched) or an unknown hostname,
/// after the policy's initial backoff.
pub(crate) fn step_end(
    result: Result<(), &ApiError>,
    wait: Option<Duration>,
    backoff: &RetryPolicy,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    let retried = result.is_err_and(|error| !error.reason().is_refused_key());
    later(now, wait.filter(|_| retried).unwrap_or(backoff.initial_backoff))
}

/// Status while a completion waits for its hostname's backoff step to end at `end`, and
/// its Ready, which says when the next attempt is. It keeps its state and reason when a
/// completion of this generation decided them, and is otherwise False, `Progressing`.
pub(crate) fn deferred(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    generation: Option<i64>,
    end: DateTime<Utc>,
) -> (PullZoneCertificateStatus, NewCondition<CertificateReason>) {
    let decided = NewCondition::<CertificateReason>::ready_in(&previous.conditions)
        .filter(|ready| ready.observed_generation == generation)
        .and_then(|ready| {
            ready
                .reason
                .filter(|reason| !reason.is_common())
                .map(|reason| (ready.status, reason))
        });
    let next = rfc3339(end);
    let message = format!(
        "one completion of {} per backoff step; next attempt at {next}",
        spec.hostname
    );
    let ready = match decided {
        Some((ready, reason)) => NewCondition::ready(ready, reason, message),
        None => NewCondition::progressing(message),
    };
    let status = PullZoneCertificateStatus {
        next_attempt_time: Some(next),
        ..previous.clone()
    };
    (status, ready)
}

/// The Events of an attempt that decided `ready`: Issued, or a Warning when the
/// failure's reason is new.
pub(crate) fn attempt_events(
    spec: &PullZoneCertificateSpec,
    previous: &PullZoneCertificateStatus,
    ready: &NewCondition<CertificateReason>,
    result: Result<(), &ApiError>,
) -> Vec<Notice<CertificateReason>> {
    let Err(error) = result else {
        return vec![Notice::normal(
            CertificateReason::Issued,
            format!("certificate issued for {}", spec.hostname),
        )];
    };
    let was = NewCondition::<CertificateReason>::ready_in(&previous.conditions).and_then(|shown| shown.reason);
    match was != Some(ready.reason) {
        true => vec![Notice::warning(ready.reason, error.to_string())],
        false => Vec::new(),
    }
}

/// The wait until `when` (at least a second).
fn wait_until(when: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (when - now).to_std().unwrap_or_default().max(Duration::from_secs(1))
}

/// The outcome of a decision not to call: the status as it is, looked at again when
/// the decision says.
fn without_call(
    previous: &PullZoneCertificateStatus,
    decision: &Decision,
    now: DateTime<Utc>,
) -> Outcome<PullZoneCertificateStatus, CertificateReason> {
    let outcome = Outcome::new(previous.clone());
    match decision {
        Decision::WaitUntil(when) => outcome.requeue_after(wait_until(*when, now)),
        Decision::Idle | Decision::Complete => outcome,
    }
}

impl PullZoneCertificate {
    /// The object's reconcile-requested-at annotation.
    fn requested(&self) -> Option<&str> {
        self.annotations()
            .get(ANNOTATION_RECONCILE_REQUESTED_AT)
            .map(String::as_str)
    }

    /// The outcome of a completion its hostname's backoff step holds back until `end`:
    /// no call, status says when, and a look again then (the request stays unhandled).
    fn held_back(
        &self,
        previous: &PullZoneCertificateStatus,
        end: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Outcome<PullZoneCertificateStatus, CertificateReason> {
        let (status, ready) = deferred(&self.spec, previous, self.metadata.generation, end);
        Outcome::new(status)
            .with_conditions([ready])
            .requeue_after(wait_until(end, now))
    }

    /// Who completes this object's hostname with `credential`.
    fn completer<'a>(&'a self, credential: &'a str) -> Completer<'a> {
        Completer {
            namespace: self.metadata.namespace.as_deref().unwrap_or_default(),
            credential,
            hostname: &self.spec.hostname,
        }
    }

    /// The outcome of a completion made at `now` that answered `result`; the backoff
    /// step it starts for the hostname is recorded in `ledger`.
    fn attempted(
        &self,
        (ledger, credential): (&CompletionLedger, &str),
        previous: &PullZoneCertificateStatus,
        result: Result<(), &ApiError>,
        backoff: &RetryPolicy,
        (now, jitter): (DateTime<Utc>, f64),
    ) -> Outcome<PullZoneCertificateStatus, CertificateReason> {
        let generation = self.metadata.generation;
        let (status, ready, wait) = after_attempt(
            &self.spec,
            previous,
            generation,
            self.requested(),
            result,
            backoff,
            (now, jitter),
        );
        let step_end = step_end(result, wait, backoff, now);
        ledger.record(self.completer(credential), step_end, now);
        let outcome = Outcome::new(status)
            .with_events(attempt_events(&self.spec, previous, &ready, result))
            .with_conditions([ready]);
        match wait {
            Some(wait) => outcome.requeue_after(wait.min(LONGEST_WAIT)),
            None => outcome,
        }
    }
}

impl Reconcilable for PullZoneCertificate {
    const EXAMPLE: &'static str = include_str!("../../../../examples/pull-zone-certificate.yaml");

    type Reason = CertificateReason;
    type Settings = CertificateSettings;
    type State = CompletionLedger;

    fn is_terminal(reason: CertificateReason) -> bool {
        reason.is_terminal()
    }

    /// Decides whether to call now (the platform has no read of a certificate's
    /// state); takes the hostname's turn, or waits for the end of its backoff step;
    /// calls; turns the answer into status, Events and the next attempt.
    async fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> Result<Outcome<Self::Status, Self::Reason>, Failure<Self>> {
        let generation = self.metadata.generation;
        let decision = decide(&self.spec, &cx.previous, generation, self.requested(), cx.now.time);
        if decision != Decision::Complete {
            return Ok(without_call(&cx.previous, &decision, cx.now.time));
        }
        cx.ensure_leader()?;
        let client = cx.client().await?;
        let credential = client.credential_id();
        // The turn is held for as long as a reconcile may run, then for the call's step.
        if let Some(end) = cx.state.take(self.completer(&credential), cx.now.time, cx.time_limit()) {
            return Ok(self.held_back(&cx.previous, end, cx.now.time));
        }
        let result = client.complete_external_http_certificate(&self.spec.hostname).await;
        let result = result.as_ref().map(|_| ());
        Ok(self.attempted(
            (cx.state, &credential),
            &cx.previous,
            result,
            &cx.settings.certificate_backoff,
            (cx.now.time, cx.now.jitter),
        ))
    }

    /// The platform offers no read of a certificate: a plan can only say it would call.
    async fn plan(objects: Vec<(Self, Result<EdgeClient, String>)>) -> Vec<Verdict> {
        objects
            .iter()
            .map(|(object, _)| Verdict::Change {
                detail: format!(
                    "unknown whether {} is issued: the platform offers no read of a certificate; the operator would call completeExternalHttpCertificate",
                    object.spec.hostname
                ),
                changes: Vec::new(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PlatformMessage;
    use crate::controller::framework::pipeline::kind::RECONCILE_TIMEOUT;
    use crate::controller::framework::pipeline::kind::{Now, Requeue};
    use crate::controller::framework::pipeline::status::conditions::find;
    use crate::controller::framework::reasons::ConditionType;
    use crate::resources::ConditionStatus;

    fn spec(renew: Option<&str>) -> PullZoneCertificateSpec {
        PullZoneCertificateSpec {
            hostname: "shop.example.com".into(),
            renew_every: renew.map(GoDuration::from),
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

    /// Generation 1 of a certificate of `hostname` in `namespace`, asked for at
    /// `requested` (its reconcile-requested-at).
    fn certificate(namespace: &str, hostname: &str, requested: Option<&str>) -> PullZoneCertificate {
        let mut object = PullZoneCertificate::new(
            "shop",
            PullZoneCertificateSpec {
                hostname: hostname.into(),
                ..spec(None)
            },
        );
        object.metadata.namespace = Some(namespace.into());
        object.metadata.generation = Some(1);
        object.metadata.annotations =
            requested.map(|r| [(ANNOTATION_RECONCILE_REQUESTED_AT.to_string(), r.to_string())].into());
        object
    }

    /// [`after_attempt`]'s status for generation 1 at `now`, without jitter, with its
    /// Ready merged in as the driver writes it.
    fn attempt(
        spec: &PullZoneCertificateSpec,
        previous: &PullZoneCertificateStatus,
        requested: Option<&str>,
        result: Result<(), &ApiError>,
        now: &Now,
    ) -> (PullZoneCertificateStatus, Option<Duration>) {
        let (status, ready, wait) = after_attempt(
            spec,
            previous,
            Some(1),
            requested,
            result,
            &no_jitter(),
            (now.time, now.jitter),
        );
        let outcome = Outcome::<_, CertificateReason> {
            status,
            conditions: vec![ready],
            events: Vec::new(),
            requeue: Requeue::OnChange,
        };
        (outcome.status_over(previous, Some(1), now.time), wait)
    }

    /// The credential every object of these tests completes with.
    const SHARED_KEY: &str = "shared";

    /// One reconcile of `object` at `now`, as `reconcile` makes it, whose completion
    /// answers `answer`: its outcome (with the status the driver writes), and whether
    /// it called.
    fn pass(
        ledger: &CompletionLedger,
        object: &PullZoneCertificate,
        previous: &PullZoneCertificateStatus,
        answer: Result<(), &ApiError>,
        now: DateTime<Utc>,
    ) -> (Outcome<PullZoneCertificateStatus, CertificateReason>, bool) {
        let now = moment(now);
        let decision = decide(
            &object.spec,
            previous,
            object.metadata.generation,
            object.requested(),
            now.time,
        );
        if decision != Decision::Complete {
            return (without_call(previous, &decision, now.time), false);
        }
        let (mut outcome, called) = match ledger.take(object.completer(SHARED_KEY), now.time, RECONCILE_TIMEOUT) {
            Some(end) => (object.held_back(previous, end, now.time), false),
            None => (
                object.attempted(
                    (ledger, SHARED_KEY),
                    previous,
                    answer,
                    &no_jitter(),
                    (now.time, now.jitter),
                ),
                true,
            ),
        };
        outcome.status = outcome.status_over(previous, object.metadata.generation, now.time);
        (outcome, called)
    }

    fn ready(status: &PullZoneCertificateStatus) -> (ConditionStatus, &str, &str) {
        let ready = find(&status.conditions, ConditionType::Ready).expect("Ready");
        (ready.status, ready.reason.as_str(), ready.message.as_str())
    }

    fn seconds(seconds: i64) -> chrono::Duration {
        chrono::Duration::seconds(seconds)
    }

    /// The status after generation 1's first attempt at `now` answered `result`, and
    /// when to look again.
    fn first_attempt(
        renew: Option<&str>,
        result: Result<(), &ApiError>,
        now: DateTime<Utc>,
    ) -> (PullZoneCertificateStatus, Option<Duration>) {
        attempt(
            &spec(renew),
            &PullZoneCertificateStatus::default(),
            None,
            result,
            &moment(now),
        )
    }

    #[test]
    fn issued_is_not_called_again_for_the_generation_unless_renewal_is_due() {
        let now = at("2026-11-20T12:00:00Z");
        let (issued, wait) = first_attempt(None, Ok(()), now);
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
        let (handled, _) = attempt(&spec(None), &issued, Some("r1"), Ok(()), &moment(now));
        assert_eq!(
            decide(&spec(None), &handled, Some(1), Some("r1"), now),
            Decision::Idle,
            "handled once, also after a restart"
        );

        let (renewing, wait) = first_attempt(Some("720h"), Ok(()), now);
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
        let (issued, _) = first_attempt(Some("720h"), Ok(()), now);
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
                .map(|c| crate::resources::Condition {
                    reason: "Paused".to_string(),
                    status: crate::resources::ConditionStatus::False,
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
            let (next, wait) = attempt(
                &spec(None),
                &status,
                None,
                Err(&failed("challenge pending")),
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
        let (status, wait) = first_attempt(None, Err(&missing), now);
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
        let (_, wait) = first_attempt(None, Err(&limited), now);
        assert!(wait.expect("retried") >= Duration::from_secs(120));
        // A 401, and a 403 (a key that may not touch the zone), written as every kind
        // writes them.
        for (refused, reason) in [
            (ApiError::Unauthorized(PlatformMessage::default()), "Unauthorized"),
            (ApiError::Forbidden(PlatformMessage::default()), "Forbidden"),
        ] {
            let (status, wait) = first_attempt(None, Err(&refused), now);
            assert_eq!(wait, Some(UNAUTHORIZED_RETRY), "{reason}");
            assert_eq!(
                find(&status.conditions, ConditionType::Ready).map(|c| c.reason.as_str()),
                Some(reason)
            );
            assert_eq!(
                decide(&spec(None), &status, Some(1), None, now),
                Decision::Complete,
                "{reason}"
            );
            assert_eq!(
                step_end(Err(&refused), wait, &no_jitter(), now),
                now + seconds(30),
                "{reason}: the hostname is held for the initial backoff only"
            );
        }
    }

    #[test]
    fn fifty_requests_within_one_step_make_one_completion() {
        let ledger = CompletionLedger::default();
        let (mut status, _) = first_attempt(None, Ok(()), at("2026-11-19T12:00:00Z"));
        let now = at("2026-11-20T12:00:00Z");
        let mut calls = 0;
        for i in 0..50 {
            let object = certificate("team", "shop.example.com", Some(&format!("request-{i}")));
            let (outcome, called) = pass(
                &ledger,
                &object,
                &status,
                Ok(()),
                now + chrono::Duration::milliseconds(500 * i),
            );
            calls += usize::from(called);
            status = outcome.status;
        }
        assert_eq!(calls, 1);
        assert_eq!(
            status.last_handled_reconcile_at.as_deref(),
            Some("request-0"),
            "the later requests are not handled yet"
        );
        assert_eq!(
            ready(&status),
            (
                ConditionStatus::True,
                "Issued",
                "one completion of shop.example.com per backoff step; next attempt at 2026-11-20T12:00:30Z"
            )
        );
        assert_eq!(status.next_attempt_time.as_deref(), Some("2026-11-20T12:00:30Z"));
    }

    #[test]
    fn two_objects_of_one_hostname_in_one_namespace_make_one_completion_per_step() {
        let ledger = CompletionLedger::default();
        let none = PullZoneCertificateStatus::default();
        let now = at("2026-11-20T12:00:00Z");
        let tenant_a = certificate("team-a", "shop.example.com", None);
        let tenant_b = certificate("team-a", "Shop.Example.COM.", Some("again"));
        let other_tenant = certificate("team-b", "shop.example.com", None);
        let (_, called) = pass(&ledger, &other_tenant, &none, Ok(()), now);
        assert!(
            called,
            "another namespace's step neither waits for nor holds this one's"
        );
        let challenge = failed("challenge pending");
        let (a, called) = pass(&ledger, &tenant_a, &none, Err(&challenge), now);
        assert!(called);
        // The first failure waits 22.5 s: half of 30 s, then half again at jitter 0.5.
        let end = at("2026-11-20T12:00:22.500Z");
        assert_eq!(a.status.next_attempt_time.as_deref(), Some("2026-11-20T12:00:22Z"));
        let mut b = none.clone();
        for second in [0, 5, 22] {
            let (outcome, called) = pass(&ledger, &tenant_b, &b, Ok(()), now + seconds(second));
            assert!(!called, "at {second} s");
            b = outcome.status;
        }
        assert_eq!(
            ready(&b),
            (
                ConditionStatus::False,
                "Progressing",
                "one completion of Shop.Example.COM. per backoff step; next attempt at 2026-11-20T12:00:22Z"
            )
        );
        assert_eq!(b.last_handled_reconcile_at, None);
        let (b, called) = pass(&ledger, &tenant_b, &b, Ok(()), end);
        assert!(called, "the step has ended");
        assert_eq!(b.status.last_handled_reconcile_at.as_deref(), Some("again"));
        let (a, called) = pass(&ledger, &tenant_a, &a.status, Err(&challenge), end);
        assert!(!called, "the success's step holds A's retry");
        assert_eq!(a.requeue, Requeue::After(Duration::from_secs(30)));
        assert_eq!(
            ready(&a.status).1,
            "VerificationFailed",
            "A keeps its reason while it waits"
        );
    }

    #[test]
    fn a_request_held_back_is_completed_when_the_step_ends() {
        let ledger = CompletionLedger::default();
        let (issued, _) = first_attempt(None, Ok(()), at("2026-11-19T12:00:00Z"));
        let now = at("2026-11-20T12:00:00Z");
        let (first, called) = pass(
            &ledger,
            &certificate("team", "shop.example.com", Some("r0")),
            &issued,
            Ok(()),
            now,
        );
        assert!(called);
        let touched = certificate("team", "shop.example.com", Some("r1"));
        let (held, called) = pass(&ledger, &touched, &first.status, Ok(()), now + seconds(10));
        assert!(!called);
        assert_eq!(held.requeue, Requeue::After(Duration::from_secs(20)));
        assert_eq!(held.status.last_handled_reconcile_at.as_deref(), Some("r0"));
        let end = now + seconds(30);
        let (done, called) = pass(&ledger, &touched, &held.status, Ok(()), end);
        assert!(called, "the request held back is handled when the step ends");
        assert_eq!(done.status.last_handled_reconcile_at.as_deref(), Some("r1"));
        assert_eq!(
            ready(&done.status),
            (
                ConditionStatus::True,
                "Issued",
                "certificate issued for shop.example.com"
            )
        );
        let (_, called) = pass(&ledger, &touched, &done.status, Ok(()), end + seconds(60));
        assert!(!called, "handled once");
    }

    #[test]
    fn a_refused_key_holds_its_hostname_for_the_initial_backoff_only() {
        let now = at("2026-11-20T12:00:00Z");
        let refused = ApiError::Unauthorized(PlatformMessage::default());
        let end = step_end(Err(&refused), Some(UNAUTHORIZED_RETRY), &no_jitter(), now);
        assert_eq!(end, now + seconds(30));
        let missing = ApiError::NotFound(PlatformMessage::default());
        assert_eq!(step_end(Err(&missing), None, &no_jitter(), now), now + seconds(30));
        let renewal = Some(Duration::from_secs(720 * 3600));
        assert_eq!(step_end(Ok(()), renewal, &no_jitter(), now), now + seconds(30));
        let challenge = failed("challenge pending");
        let backoff = Some(Duration::from_secs(480));
        assert_eq!(
            step_end(Err(&challenge), backoff, &no_jitter(), now),
            now + seconds(480)
        );
    }
}
