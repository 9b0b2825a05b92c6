//! Reads shared by concurrent reconciles: the first caller of a key reads; callers that
//! arrive while it reads, or within the time-to-live after, get its answer. Failed reads
//! are not kept, so the next caller reads again.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

type Slot<V> = Arc<Mutex<Option<(Instant, V)>>>;

pub struct SharedReads<K, V> {
    ttl: Duration,
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K: Eq + Hash, V: Clone> SharedReads<K, V> {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            slots: Mutex::default(),
        }
    }

    /// The value of `key`: a fresh one, or what `read` answers.
    pub async fn get_or_read<E, Fut>(&self, key: K, read: impl FnOnce() -> Fut) -> Result<V, E>
    where
        Fut: Future<Output = Result<V, E>>,
    {
        let slot = self.slots.lock().await.entry(key).or_default().clone();
        let mut entry = slot.lock().await;
        if let Some((read_at, value)) = entry.as_ref()
            && read_at.elapsed() < self.ttl
        {
            return Ok(value.clone());
        }
        // The age of a value counts from when its read started.
        let started = Instant::now();
        let value = read().await?;
        *entry = Some((started, value.clone()));
        Ok(value)
    }

    /// Applies a change the caller made on the platform to the kept value, if any.
    pub async fn update(&self, key: &K, change: impl FnOnce(&mut V)) {
        let Some(slot) = self.slots.lock().await.get(key).cloned() else {
            return;
        };
        if let Some((_, value)) = slot.lock().await.as_mut() {
            change(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    async fn counted_read(reads: &AtomicUsize) -> Result<usize, String> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(reads.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_read_until_it_expires() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let reads = AtomicUsize::new(0);
        let answers =
            futures::future::join_all((0..10).map(|_| shared.get_or_read("zone", || counted_read(&reads)))).await;
        assert!(answers.iter().all(|a| *a == Ok(1)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(shared.get_or_read("zone", || counted_read(&reads)).await, Ok(1));
        assert_eq!(shared.get_or_read("other", || counted_read(&reads)).await, Ok(2));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(shared.get_or_read("zone", || counted_read(&reads)).await, Ok(3));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_not_kept_and_updates_change_the_kept_value() {
        let shared = SharedReads::new(Duration::from_secs(2));
        let failed: Result<usize, String> = shared.get_or_read("zone", || async { Err("down".to_string()) }).await;
        assert_eq!(failed, Err("down".to_string()));
        assert_eq!(shared.get_or_read("zone", || async { Ok::<_, String>(5) }).await, Ok(5));
        shared.update(&"zone", |v| *v += 1).await;
        shared.update(&"absent", |v| *v += 1).await;
        assert_eq!(shared.get_or_read("zone", || async { Ok::<_, String>(0) }).await, Ok(6));
    }
}
