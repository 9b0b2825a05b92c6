//! Rate limiters on tokio's clock (governor's GCRA), so waiting follows tokio time and
//! a test with a paused clock exercises the real limiter without real waiting.

use std::ops::Add;
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokioInstant(tokio::time::Instant);

impl Add<Nanos> for TokioInstant {
    type Output = Self;

    fn add(self, duration: Nanos) -> Self {
        TokioInstant(self.0 + Duration::from(duration))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_duration_since(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        TokioInstant(self.0.checked_sub(duration.into()).unwrap_or(self.0))
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

/// One limiter per key (the Pull Zone id for the logging API).
pub struct KeyedLimiter(RateLimiter<i64, HashMapStateStore<i64>, TokioClock, NoOpMiddleware<TokioInstant>>);

impl KeyedLimiter {
    pub fn new(quota: Quota) -> Self {
        Self(RateLimiter::new(quota, HashMapStateStore::default(), TokioClock))
    }

    /// Waits until `key` may send one more request; returns how long it waited.
    pub async fn until_ready(&self, key: i64) -> Duration {
        let mut waited = Duration::ZERO;
        while let Err(not_until) = self.0.check_key(&key) {
            let wait = not_until.wait_time_from(TokioClock.now());
            tokio::time::sleep(wait).await;
            waited += wait;
        }
        waited
    }
}

/// One limiter for everything.
pub struct DirectLimiter(RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<TokioInstant>>);

impl DirectLimiter {
    pub fn new(quota: Quota) -> Self {
        Self(RateLimiter::new(quota, InMemoryState::default(), TokioClock))
    }

    pub async fn until_ready(&self) -> Duration {
        let mut waited = Duration::ZERO;
        while let Err(not_until) = self.0.check() {
            let wait = not_until.wait_time_from(TokioClock.now());
            tokio::time::sleep(wait).await;
            waited += wait;
        }
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::config::default_logging_quota;

    #[tokio::test(start_paused = true)]
    async fn default_logging_quota_never_exceeds_thirty_per_ten_seconds() {
        let limiter = KeyedLimiter::new(default_logging_quota());
        let start = tokio::time::Instant::now();
        let mut sent = Vec::new();
        for _ in 0..100 {
            limiter.until_ready(7).await;
            sent.push(start.elapsed());
        }
        for (i, &t) in sent.iter().enumerate() {
            let in_window = sent[i..]
                .iter()
                .take_while(|&&u| u < t + Duration::from_secs(10))
                .count();
            assert!(in_window <= 29, "{in_window} requests within 10 s from {t:?}");
        }
        assert!(
            start.elapsed() >= Duration::from_secs(30),
            "100 requests take {:?}",
            start.elapsed()
        );
        assert_eq!(
            limiter.until_ready(8).await,
            Duration::ZERO,
            "other keys have their own budget"
        );
    }
}
