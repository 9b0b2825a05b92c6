//! The logging API's rate limit: 30 requests per sliding 10 seconds per Pull Zone,
//! shared by v1 and v2.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

pub(crate) const LIMIT: usize = 30;
pub(crate) const WINDOW_MS: i64 = 10_000;

#[derive(Debug, Default)]
pub struct PullZoneLimiter {
    recent: Mutex<HashMap<i64, VecDeque<i64>>>,
}

impl PullZoneLimiter {
    /// Admits a request at `now_ms`, or returns the whole seconds to wait before the
    /// next one would be admitted (the `Retry-After` value, at least 1).
    pub fn admit(&self, pull_zone: i64, now_ms: i64) -> Result<(), u64> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let times = recent.entry(pull_zone).or_default();
        while times.front().is_some_and(|&t| t <= now_ms - WINDOW_MS) {
            times.pop_front();
        }
        if times.len() < LIMIT {
            times.push_back(now_ms);
            return Ok(());
        }
        let oldest = times.front().copied().unwrap_or(now_ms);
        let wait_ms = (oldest + WINDOW_MS - now_ms).max(1);
        Err(((wait_ms + 999) / 1000) as u64)
    }

    pub fn clear(&self) {
        self.recent.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_per_sliding_ten_seconds_with_retry_after() {
        let limiter = PullZoneLimiter::default();
        for i in 0..30 {
            assert!(limiter.admit(1, 1_000 + i * 100).is_ok());
        }
        assert_eq!(limiter.admit(1, 4_000), Err(7));
        assert!(limiter.admit(2, 4_000).is_ok(), "limits are per Pull Zone");
        assert_eq!(limiter.admit(1, 10_999), Err(1));
        assert!(limiter.admit(1, 11_000).is_ok(), "the first request left the window");
    }
}
