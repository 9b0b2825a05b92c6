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
    confirmed_at: Mutex<Option<Instant>>,
}

impl LeaderGate {
    /// No leader election: this process is the only operator.
    pub fn sole() -> Self {
        Self {
            validity: None,
            confirmed_at: Mutex::new(None),
        }
    }

    /// Leadership confirmed by observation lasts `lease_duration` less a margin of a
    /// quarter of it (at least one second).
    pub fn elected(lease_duration: Duration) -> Self {
        let margin = (lease_duration / 4).max(Duration::from_secs(1));
        Self {
            validity: Some(lease_duration.saturating_sub(margin)),
            confirmed_at: Mutex::new(None),
        }
    }

    /// The Lease was just seen held by this process.
    pub fn confirm(&self) {
        *self.confirmed_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// The Lease was seen held by another process, or not at all.
    pub fn revoke(&self) {
        *self.confirmed_at.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub fn may_act(&self) -> bool {
        let Some(validity) = self.validity else {
            return true;
        };
        self.confirmed_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < validity)
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
        gate.confirm();
        gate.revoke();
        assert!(!gate.may_act());
    }
}
