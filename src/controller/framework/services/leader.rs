//! Acting only while leadership is confirmed. The lease manager renews the Lease; this
//! gate remembers when the operator last saw itself as the Lease's holder. Past the
//! lease duration minus a margin (a renewal that keeps failing, a process stopped and
//! resumed), the driver refuses to act, so two operators never act at once.
//!
//! Renewals come every half of the usable time, and the Lease is looked at again no
//! later than the moment the current confirmation would lapse: a healthy leader's gate
//! never closes, and a renewal may be late by half the usable time before it does.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::coordination::v1::LeaseSpec;
use tokio::time::Instant;

/// The shortest wait between two looks at the Lease.
const MIN_CHECK: Duration = Duration::from_millis(100);

pub(crate) struct LeaderGate {
    /// `None` when there is no election: always allowed to act.
    validity: Option<Duration>,
    /// Until when acting is allowed.
    until: Mutex<Option<Instant>>,
}

impl LeaderGate {
    /// No leader election: this process is the only operator.
    pub(crate) fn sole() -> Self {
        Self {
            validity: None,
            until: Mutex::new(None),
        }
    }

    /// Leadership confirmed by observation lasts `lease_duration` less a margin of a
    /// quarter of it (at least one second).
    pub(crate) fn elected(lease_duration: Duration) -> Self {
        Self {
            validity: Some(usable(lease_duration)),
            until: Mutex::new(None),
        }
    }

    /// Acting stops this long before the Lease would expire.
    pub(crate) fn margin(lease_duration: Duration) -> Duration {
        quarter(lease_duration)
    }

    /// The Lease was just renewed by this process (acquired, or seen renewed now).
    pub(crate) fn confirm(&self) {
        if let Some(validity) = self.validity {
            self.confirm_for(validity);
        }
    }

    /// The Lease, held by this process, stays valid for `remaining` less the margin.
    pub(crate) fn confirm_for(&self, remaining: Duration) {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + remaining);
    }

    /// The Lease was seen held by another process, or not at all.
    pub(crate) fn revoke(&self) {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub(crate) fn may_act(&self) -> bool {
        if self.validity.is_none() {
            return true;
        }
        self.until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }
}

/// How long a confirmation lasts: the lease duration less the margin.
pub(crate) fn usable(lease_duration: Duration) -> Duration {
    lease_duration.saturating_sub(LeaderGate::margin(lease_duration))
}

/// Whole seconds between renewals: half the usable time, at least one.
pub(crate) fn renew_every(lease_duration: Duration) -> u64 {
    (usable(lease_duration).as_secs() / 2).max(1)
}

/// The lease manager's `grace`: seconds before expiry at which it renews.
pub(crate) fn renewal_grace(lease_duration: Duration) -> u64 {
    lease_duration
        .as_secs()
        .saturating_sub(renew_every(lease_duration))
        .max(1)
}

/// What the Lease says of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Held, renewed recently enough to act for `remaining` more.
    Held { remaining: Duration },
    /// Held, but the last renewal is too old to act on.
    Lapsed { renewed: Option<DateTime<Utc>> },
    /// Held by another process, or by none.
    Lost { holder: Option<String> },
}

/// The standing of `identity` in a Lease read at `now`.
pub(crate) fn standing(spec: &LeaseSpec, identity: &str, lease_duration: Duration, now: DateTime<Utc>) -> Standing {
    if spec.holder_identity.as_deref() != Some(identity) {
        return Standing::Lost {
            holder: spec.holder_identity.clone(),
        };
    }
    let renewed = spec
        .renew_time
        .as_ref()
        .and_then(|t| DateTime::from_timestamp_millis(t.0.as_millisecond()));
    let remaining = renewed.and_then(|at| {
        let age = now.signed_duration_since(at).to_std().unwrap_or_default();
        usable(lease_duration).checked_sub(age)
    });
    match remaining {
        Some(remaining) => Standing::Held { remaining },
        None => Standing::Lapsed { renewed },
    }
}

/// How often the Lease is read when nothing calls for sooner: every quarter of the
/// lease, at least every second.
pub(crate) fn check_every(lease_duration: Duration) -> Duration {
    quarter(lease_duration)
}

/// The unit of every leader timing: a quarter of the lease, at least one second. The
/// margin before expiry and the interval between Lease reads are both one unit, so a
/// lapse is seen at least once before acting must stop.
fn quarter(lease_duration: Duration) -> Duration {
    (lease_duration / 4).max(Duration::from_secs(1))
}

/// When to read the Lease again: [`check_every`], and no later than the moment a
/// confirmation for `remaining` lapses.
pub(crate) fn next_check(lease_duration: Duration, standing: &Standing) -> Duration {
    let every = check_every(lease_duration);
    match standing {
        Standing::Held { remaining } => every.min(*remaining).max(MIN_CHECK),
        Standing::Lapsed { .. } | Standing::Lost { .. } => every,
    }
}

impl crate::api::WriteGate for LeaderGate {
    fn may_write(&self) -> bool {
        self.may_act()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    #[test]
    fn renewals_leave_half_the_usable_time_for_a_late_one() {
        for seconds in [3, 4, 6, 15, 60] {
            let duration = Duration::from_secs(seconds);
            let every = renew_every(duration);
            assert_eq!(seconds - renewal_grace(duration), every, "{seconds}s lease");
            assert!(
                Duration::from_secs(every * 2) <= usable(duration),
                "{seconds}s lease: renew every {every}s, usable {:?}",
                usable(duration)
            );
        }
    }

    fn lease(holder: &str, renewed: DateTime<Utc>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            renew_time: Some(MicroTime(
                k8s_openapi::jiff::Timestamp::from_millisecond(renewed.timestamp_millis()).expect("a time"),
            )),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn the_lease_is_read_again_when_a_confirmation_would_lapse() {
        let duration = Duration::from_secs(15);
        let now = DateTime::from_timestamp_millis(1_795_000_000_000).expect("a time");
        let renewed = |seconds_ago: i64| lease("me", now - chrono::Duration::seconds(seconds_ago));

        let fresh = standing(&renewed(0), "me", duration, now);
        assert_eq!(
            fresh,
            Standing::Held {
                remaining: usable(duration)
            }
        );
        assert_eq!(next_check(duration, &fresh), Duration::from_millis(3750));

        // A renewal due now: looked at again when this one lapses, not a quarter later.
        let due = standing(&renewed(10), "me", duration, now);
        assert_eq!(
            due,
            Standing::Held {
                remaining: Duration::from_millis(1250)
            }
        );
        assert_eq!(next_check(duration, &due), Duration::from_millis(1250));

        assert!(matches!(
            standing(&renewed(12), "me", duration, now),
            Standing::Lapsed { renewed: Some(_) }
        ));
        assert_eq!(
            standing(&renewed(0), "other", duration, now),
            Standing::Lost {
                holder: Some("me".to_string())
            }
        );
        assert!(matches!(
            standing(&LeaseSpec::default(), "me", duration, now),
            Standing::Lost { holder: None }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn leadership_lapses_before_the_lease_can_expire() {
        assert!(LeaderGate::sole().may_act());
        let gate = LeaderGate::elected(Duration::from_secs(15));
        assert!(!gate.may_act(), "not before the first confirmation");
        gate.confirm();
        assert!(gate.may_act());
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(gate.may_act());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!gate.may_act(), "15 s lease less a 3.75 s margin");
        gate.confirm_for(Duration::from_secs(2));
        assert!(gate.may_act());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!gate.may_act(), "the renewal seen was old: two seconds were left");
        gate.confirm();
        gate.revoke();
        assert!(!gate.may_act());
    }
}
