//! Acting only while leadership is confirmed. The lease manager renews the Lease; this
//! gate remembers when the operator last saw itself as the Lease's holder. Past the
//! lease duration minus a margin (a renewal that keeps failing, a process stopped and
//! resumed), the driver refuses to act, so two operators never act at once.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub struct LeaderGate {
    /// `None` when there is no election: always allowed to act.
    validity: Option<Duration>,
    /// Until when acting is allowed.
    until: Mutex<Option<Instant>>,
}

impl LeaderGate {
    /// No leader election: this process is the only operator.
    pub fn sole() -> Self {
        Self {
            validity: None,
            until: Mutex::new(None),
        }
    }

    /// Leadership confirmed by observation lasts `lease_duration` less a margin of a
    /// quarter of it (at least one second).
    pub fn elected(lease_duration: Duration) -> Self {
        Self {
            validity: Some(lease_duration.saturating_sub(Self::margin(lease_duration))),
            until: Mutex::new(None),
        }
    }

    /// Acting stops this long before the Lease would expire.
    pub fn margin(lease_duration: Duration) -> Duration {
        (lease_duration / 4).max(Duration::from_secs(1))
    }

    /// The Lease was just renewed by this process (acquired, or seen renewed now).
    pub fn confirm(&self) {
        if let Some(validity) = self.validity {
            self.confirm_for(validity);
        }
    }

    /// The Lease, held by this process, stays valid for `remaining` less the margin.
    pub fn confirm_for(&self, remaining: Duration) {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + remaining);
    }

    /// The Lease was seen held by another process, or not at all.
    pub fn revoke(&self) {
        *self.until.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub fn may_act(&self) -> bool {
        if self.validity.is_none() {
            return true;
        }
        self.until
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|until| Instant::now() < until)
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
