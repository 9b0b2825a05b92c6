//! Reads shared by concurrent reconciles: the first caller of a key reads; callers that
//! arrive while it reads, or within the time-to-live after, get its answer. A failed
//! read is kept only when the platform asked to be left alone (`Retry-After`): until
//! then every caller gets that failure without a call. A caller that changed what a key
//! reads outdates it: no kept read that started before is served again. Slots unused
//! for a while are dropped, so keys of deleted objects do not accumulate.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::api::error::ApiError;

enum Kept<V> {
    Value { read_at: Instant, value: V },
    Refused { until: Instant, error: ApiError },
}

/// What one key keeps, and since when its reads are current.
struct Held<V> {
    kept: Mutex<Option<Kept<V>>>,
    /// Kept reads that started before this instant are not served: a caller changed
    /// what they read. Set without waiting for a read under way.
    outdated_at: std::sync::Mutex<Option<Instant>>,
}

impl<V> Default for Held<V> {
    fn default() -> Self {
        Self {
            kept: Mutex::default(),
            outdated_at: std::sync::Mutex::default(),
        }
    }
}

impl<V> Held<V> {
    fn outdated_at(&self) -> Option<Instant> {
        *self.outdated_at.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Slot<V> = Arc<Held<V>>;
/// A slot and when it was last asked for.
type Used<V> = (Instant, Slot<V>);

/// Slots not used for this many time-to-lives are dropped.
const IDLE_TTLS: u32 = 10;

pub(crate) struct SharedReads<K, V> {
    ttl: Duration,
    slots: Mutex<HashMap<K, Used<V>>>,
}

impl<K: Eq + Hash + Clone, V: Clone> SharedReads<K, V> {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            slots: Mutex::default(),
        }
    }

    async fn slot(&self, key: K) -> Slot<V> {
        let now = Instant::now();
        let mut slots = self.slots.lock().await;
        let idle = self.ttl * IDLE_TTLS;
        slots.retain(|_, (used, slot)| now.duration_since(*used) < idle || Arc::strong_count(slot) > 1);
        let entry = slots.entry(key).or_insert_with(|| (now, Slot::default()));
        entry.0 = now;
        entry.1.clone()
    }

    /// The value of `key`: one read within the time-to-live, the failure the platform
    /// asked to keep, or what `read` answers.
    pub(crate) async fn get_or_read<Fut>(&self, key: K, read: impl FnOnce() -> Fut) -> Result<V, ApiError>
    where
        Fut: Future<Output = Result<V, ApiError>>,
    {
        let not_before = Instant::now().checked_sub(self.ttl);
        self.get_or_read_since(key, not_before, read).await
    }

    /// The value of `key`: one read that started at or after `not_before` (any kept
    /// one when `None`), the failure the platform asked to keep, or what `read` answers.
    pub(crate) async fn get_or_read_since<Fut>(
        &self,
        key: K,
        not_before: Option<Instant>,
        read: impl FnOnce() -> Fut,
    ) -> Result<V, ApiError>
    where
        Fut: Future<Output = Result<V, ApiError>>,
    {
        let slot = self.slot(key).await;
        let mut entry = slot.kept.lock().await;
        // Read once the slot is ours: an outdate while a read was under way counts.
        let not_before = not_before.max(slot.outdated_at());
        match entry.as_ref() {
            Some(Kept::Value { read_at, value }) if not_before.is_none_or(|t| *read_at >= t) => {
                return Ok(value.clone());
            }
            Some(Kept::Refused { until, error }) if Instant::now() < *until => return Err(error.clone()),
            _ => {}
        }
        // The age of a value counts from when its read started.
        let started = Instant::now();
        match read().await {
            Ok(value) => {
                *entry = Some(Kept::Value {
                    read_at: started,
                    value: value.clone(),
                });
                Ok(value)
            }
            Err(error) => {
                *entry = error.retry_after().map(|wait| Kept::Refused {
                    until: Instant::now() + wait,
                    error: error.clone(),
                });
                Err(error)
            }
        }
    }

    /// Applies a change the caller made on the platform to the kept value, if any.
    pub(crate) async fn update(&self, key: &K, change: impl FnOnce(&mut V)) {
        let Some((_, slot)) = self.slots.lock().await.get(key).cloned() else {
            return;
        };
        if let Some(Kept::Value { value, .. }) = slot.kept.lock().await.as_mut() {
            change(value);
        }
    }

    /// Serves no kept read of the keys `changed` picks that started before `at`: the
    /// caller changed what they read on the platform, and knew it then. A read under
    /// way answers its own caller only; a failure the platform asked to keep stays.
    pub(crate) async fn outdate(&self, changed: impl Fn(&K) -> bool, at: Instant) {
        let slots = self.slots.lock().await;
        for (_, slot) in slots.iter().filter(|(key, _)| changed(key)).map(|(_, used)| used) {
            let mut outdated_at = slot.outdated_at.lock().unwrap_or_else(|e| e.into_inner());
            *outdated_at = (*outdated_at).max(Some(at));
        }
    }

    /// How many keys have a slot.
    #[cfg(test)]
    pub(crate) async fn keys(&self) -> usize {
        self.slots.lock().await.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    use crate::api::PlatformMessage;

    /// A failure as its message, to compare.
    fn said<V>(answer: Result<V, ApiError>) -> Result<V, String> {
        answer.map_err(|error| error.to_string())
    }

    /// A 429 that asks to wait `wait`.
    fn rate_limited(wait: Duration) -> ApiError {
        ApiError::RateLimited {
            retry_after: Some(wait),
            message: PlatformMessage {
                message: "slow down".into(),
                field: None,
                error_key: None,
            },
        }
    }

    async fn counted_read(reads: &AtomicUsize) -> Result<usize, ApiError> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(reads.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_read_until_it_expires() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let reads = AtomicUsize::new(0);
        let answers =
            futures::future::join_all((0..10).map(|_| shared.get_or_read("zone", || counted_read(&reads)))).await;
        assert!(answers.iter().all(|a| matches!(a, Ok(1))));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(said(shared.get_or_read("zone", || counted_read(&reads)).await), Ok(1));
        assert_eq!(said(shared.get_or_read("other", || counted_read(&reads)).await), Ok(2));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(said(shared.get_or_read("zone", || counted_read(&reads)).await), Ok(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_may_accept_an_older_read_or_demand_a_newer_one() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let reads = AtomicUsize::new(0);
        let started = Instant::now();
        assert_eq!(said(shared.get_or_read("zone", || counted_read(&reads)).await), Ok(1));
        // Past the time-to-live, within the slot's idle time.
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(
            said(
                shared
                    .get_or_read_since("zone", Some(started), || counted_read(&reads))
                    .await
            ),
            Ok(1),
            "read since the instant asked for"
        );
        assert_eq!(
            said(shared.get_or_read_since("zone", None, || counted_read(&reads)).await),
            Ok(1)
        );
        let now = Instant::now();
        assert_eq!(
            said(
                shared
                    .get_or_read_since("zone", Some(now), || counted_read(&reads))
                    .await
            ),
            Ok(2)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_not_kept_and_updates_change_the_kept_value() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let down = ApiError::Transport("down".into());
        let failed: Result<usize, ApiError> = shared.get_or_read("zone", || async { Err(down.clone()) }).await;
        assert_eq!(said(failed), Err(down.to_string()));
        assert_eq!(said(shared.get_or_read("zone", || async { Ok(5) }).await), Ok(5));
        shared.update(&"zone", |v| *v += 1).await;
        shared.update(&"absent", |v| *v += 1).await;
        assert_eq!(said(shared.get_or_read("zone", || async { Ok(0) }).await), Ok(6));
    }

    #[tokio::test(start_paused = true)]
    async fn an_outdated_key_is_read_anew_and_a_read_under_way_answers_only_its_caller() {
        let shared = SharedReads::new(Duration::from_secs(60));
        let reads = AtomicUsize::new(0);
        assert_eq!(said(shared.get_or_read("zone", || counted_read(&reads)).await), Ok(1));
        assert_eq!(said(shared.get_or_read("other", || counted_read(&reads)).await), Ok(2));
        shared.outdate(|key| *key == "zone", Instant::now()).await;
        assert_eq!(
            said(shared.get_or_read_since("zone", None, || counted_read(&reads)).await),
            Ok(3),
            "whatever the caller accepts"
        );
        assert_eq!(said(shared.get_or_read("zone", || counted_read(&reads)).await), Ok(3));
        assert_eq!(said(shared.get_or_read("other", || counted_read(&reads)).await), Ok(2));

        // A read begun before the change answers its caller; one waiting for it reads anew.
        let under_way = shared.get_or_read_since("zone", Some(Instant::now()), || counted_read(&reads));
        let after_the_change = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            shared.outdate(|key| *key == "zone", Instant::now()).await;
            shared.get_or_read("zone", || counted_read(&reads)).await
        };
        let (begun, waited) = tokio::join!(under_way, after_the_change);
        assert_eq!((said(begun), said(waited)), (Ok(4), Ok(5)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_outdated_key_keeps_the_failure_the_platform_asked_to_keep() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let limited = rate_limited(Duration::from_secs(60));
        let refused: Result<usize, ApiError> = shared.get_or_read("zone", || async { Err(limited.clone()) }).await;
        assert_eq!(said(refused), Err(limited.to_string()));
        shared.outdate(|_| true, Instant::now()).await;
        let kept = shared.get_or_read("zone", || async { Ok(1) }).await;
        assert_eq!(said(kept), Err(limited.to_string()), "no call before the Retry-After");
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_is_kept_until_it_passes_so_nobody_asks_meanwhile() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let limited = rate_limited(Duration::from_secs(3600));
        let calls = AtomicUsize::new(0);
        let read = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<usize, _>(limited.clone())
        };
        for _ in 0..50 {
            assert_eq!(said(shared.get_or_read("zone", read).await), Err(limited.to_string()));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one call while the platform says wait");
        tokio::time::sleep(Duration::from_secs(3601)).await;
        assert_eq!(said(shared.get_or_read("zone", || async { Ok(7) }).await), Ok(7));
    }

    #[tokio::test(start_paused = true)]
    async fn idle_slots_are_dropped() {
        let shared: SharedReads<i64, usize> = SharedReads::new(Duration::from_secs(1));
        for zone in 0..100 {
            assert_eq!(said(shared.get_or_read(zone, || async { Ok(1) }).await), Ok(1));
        }
        assert_eq!(shared.keys().await, 100);
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(said(shared.get_or_read(-1, || async { Ok(1) }).await), Ok(1));
        assert_eq!(shared.keys().await, 1);
    }
}
