//! The emulator's state: the world behind a lock, its clock, the logging rate limits,
//! the request journal and programmed faults. No HTTP here.

use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};

use super::clock::SimClock;
use super::ratelimit::PullZoneLimiter;
use super::state::{SimDocument, World};

/// One non-admin request, as recorded in the journal (`GET /_sim/requests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    pub method: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub status: u16,
    /// Emulator time of the request, Unix milliseconds.
    pub time_ms: i64,
    /// Emulator time of the request, RFC 3339.
    pub time: String,
}

/// A programmed answer for the next `count` matching requests (`POST /_sim/faults`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// Only requests with this method (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only requests whose path starts with this.
    pub path_prefix: String,
    /// The status to answer with; absent means "delay, then answer normally".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How many matching requests the fault applies to.
    pub count: u32,
    /// `Retry-After` header value, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// Delay before answering, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// JSON body of the answer (empty when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// The journal keeps the latest exchanges only.
pub const MAX_JOURNAL: usize = 200_000;
/// Faults pending at once.
pub const MAX_FAULTS: usize = 1_000;

/// The emulator: everything its handlers share.
#[derive(Debug, Default)]
pub struct Sim {
    world: RwLock<World>,
    pub clock: SimClock,
    pub limiter: PullZoneLimiter,
    journal: Mutex<std::collections::VecDeque<JournalEntry>>,
    faults: Mutex<Vec<Fault>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Sim {
    pub fn new(document: SimDocument) -> Arc<Self> {
        let sim = Arc::new(Sim::default());
        sim.replace(document);
        sim
    }

    /// Replaces all state (document, events, logs, rate-limit history) with `document`.
    pub fn replace(&self, document: SimDocument) {
        self.clock.set(document.clock);
        self.limiter.clear();
        *self.world_mut() = World::new(document.complete());
    }

    pub fn world(&self) -> RwLockReadGuard<'_, World> {
        self.world.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn world_mut(&self) -> RwLockWriteGuard<'_, World> {
        self.world.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Records an exchange; past [`MAX_JOURNAL`] entries the oldest are dropped.
    pub fn record(&self, entry: JournalEntry) {
        let mut journal = lock(&self.journal);
        if journal.len() >= MAX_JOURNAL {
            journal.pop_front();
        }
        journal.push_back(entry);
    }

    pub fn journal(&self) -> Vec<JournalEntry> {
        lock(&self.journal).iter().cloned().collect()
    }

    pub fn clear_journal(&self) {
        lock(&self.journal).clear();
    }

    /// Programs a fault; refused when [`MAX_FAULTS`] are pending.
    pub fn add_fault(&self, fault: Fault) -> Result<(), Fault> {
        let mut faults = lock(&self.faults);
        if faults.len() >= MAX_FAULTS {
            return Err(fault);
        }
        faults.push(fault);
        Ok(())
    }

    pub fn faults(&self) -> Vec<Fault> {
        lock(&self.faults).clone()
    }

    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// Takes one use of the first fault matching `method` and `path`.
    pub fn take_fault(&self, method: &str, path: &str) -> Option<Fault> {
        let mut faults = lock(&self.faults);
        let index = faults.iter().position(|f| {
            f.count > 0
                && path.starts_with(&f.path_prefix)
                && f.method.as_ref().is_none_or(|m| m.eq_ignore_ascii_case(method))
        })?;
        faults[index].count -= 1;
        let fault = faults[index].clone();
        if faults[index].count == 0 {
            faults.remove(index);
        }
        Some(fault)
    }

    pub fn is_access_key(&self, key: &str) -> bool {
        self.world().document.access_keys.iter().any(|k| k == key)
    }
}

/// What [`Sim::generate`] added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Generated {
    pub events: usize,
    pub logs: usize,
}

/// Why synthetic data could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("cannot generate events: the fixtures define no Shield Zone")]
    NoShieldZone,
    #[error("cannot generate logs: the fixtures define no Pull Zone with logging enabled")]
    NoLoggingPullZone,
}

impl Sim {
    /// Adds synthetic events (spread over all Shield Zones) and CDN logs (spread over
    /// Pull Zones with logging enabled), deterministic for a given seed.
    pub fn generate(&self, events: usize, logs: usize, seed: u64) -> Result<Generated, GenerateError> {
        let now = self.clock.now();
        let mut world = self.world_mut();
        let zones: Vec<i64> = world.document.shield_zones.iter().map(|z| z.id).collect();
        if events > 0 && zones.is_empty() {
            return Err(GenerateError::NoShieldZone);
        }
        let pull_zones: Vec<i64> = world
            .document
            .pull_zones
            .iter()
            .filter(|z| z.logging_enabled)
            .map(|z| z.id)
            .collect();
        if logs > 0 && pull_zones.is_empty() {
            return Err(GenerateError::NoLoggingPullZone);
        }
        for (i, zone) in zones.iter().enumerate() {
            let share = share_of(events, zones.len(), i);
            let batch = super::generator::events(share, seed.wrapping_add(*zone as u64), now);
            world.events.entry(*zone).or_default().insert(batch);
        }
        for (i, zone) in pull_zones.iter().enumerate() {
            let share = share_of(logs, pull_zones.len(), i);
            let day = (now - chrono::Duration::hours(24), now);
            let batch = super::generator::logs(share, seed, *zone, day);
            world.logs.entry(*zone).or_default().insert(batch);
        }
        Ok(Generated { events, logs })
    }
}

/// The `index`-th of `parts` near-equal shares of `total`.
fn share_of(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}
