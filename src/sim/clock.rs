//! The emulator's clock: real time unless fixed through `PUT /_sim/clock`.
//!
//! Real time is a wall-clock anchor plus the tokio monotonic clock, so a test that runs
//! the emulator in-process under a paused tokio clock sees emulator time advance with
//! its virtual time.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

#[derive(Debug)]
pub struct SimClock {
    anchor_ms: i64,
    anchor: Instant,
    fixed_ms: Mutex<Option<i64>>,
}

impl Default for SimClock {
    fn default() -> Self {
        Self {
            anchor_ms: Utc::now().timestamp_millis(),
            anchor: Instant::now(),
            fixed_ms: Mutex::new(None),
        }
    }
}

impl SimClock {
    /// Now, in Unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        match *self.fixed_ms.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(fixed) => fixed,
            None => self.anchor_ms + self.anchor.elapsed().as_millis() as i64,
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.now_ms()).unwrap_or_default()
    }

    /// Fixes the clock at `now`, or returns it to real time with `None`.
    pub fn set(&self, now: Option<DateTime<Utc>>) {
        *self.fixed_ms.lock().unwrap_or_else(|e| e.into_inner()) = now.map(|t| t.timestamp_millis());
    }

    pub fn fixed(&self) -> Option<DateTime<Utc>> {
        self.fixed_ms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .and_then(DateTime::from_timestamp_millis)
    }
}
