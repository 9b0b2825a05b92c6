//! How many Events each namespace's objects may publish: a budget per namespace, as the
//! apiserver's EventRateLimit admission keeps one, so one tenant's flapping objects
//! cannot fill etcd with Events or crowd out another tenant's. Events over the budget
//! are dropped and counted (`edge_operator_events_dropped`); the status says the same.

use std::num::NonZeroU32;
use std::sync::Mutex;

use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};

use crate::api::limiter::{TokioClock, TokioInstant};

type NamespaceGcra = RateLimiter<String, HashMapStateStore<String>, TokioClock, NoOpMiddleware<TokioInstant>>;

/// Namespaces held before those whose budget has recovered are forgotten.
const NAMESPACES_BEFORE_PRUNING: usize = 64;

pub(crate) struct EventBudget {
    /// `None`: no budget.
    per_namespace: Option<NamespaceGcra>,
    /// Namespaces held after the last pruning.
    after_pruning: Mutex<usize>,
}

impl EventBudget {
    /// `per_minute` Events a minute for each namespace, as many at once (0: no budget).
    pub(crate) fn new(per_minute: u32) -> Self {
        let quota = NonZeroU32::new(per_minute).map(|per_minute| Quota::per_minute(per_minute).allow_burst(per_minute));
        Self {
            per_namespace: quota.map(|quota| RateLimiter::new(quota, HashMapStateStore::default(), TokioClock)),
            after_pruning: Mutex::new(0),
        }
    }

    /// Whether `namespace` may publish one more Event now (spending it when so).
    pub(crate) fn spend(&self, namespace: &str) -> bool {
        let Some(limiter) = &self.per_namespace else {
            return true;
        };
        let allowed = limiter.check_key(&namespace.to_string()).is_ok();
        let mut after_pruning = self.after_pruning.lock().unwrap_or_else(|e| e.into_inner());
        if limiter.len() >= (2 * *after_pruning).max(NAMESPACES_BEFORE_PRUNING) {
            limiter.retain_recent();
            limiter.shrink_to_fit();
            *after_pruning = limiter.len();
        }
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_namespace_spends_its_own_budget_only() {
        let budget = EventBudget::new(10);
        let published = (0..100).filter(|_| budget.spend("flapping")).count();
        assert_eq!(published, 10, "the burst, then nothing until it refills");
        assert!(budget.spend("quiet"), "another namespace keeps its budget");
        tokio::time::advance(std::time::Duration::from_secs(6)).await;
        assert!(budget.spend("flapping"), "one more after a tenth of a minute");
        assert!(!budget.spend("flapping"));
        let unbounded = EventBudget::new(0);
        assert!((0..1000).all(|_| unbounded.spend("any")));
    }

    #[tokio::test(start_paused = true)]
    async fn namespaces_whose_budget_recovered_are_forgotten() {
        let budget = EventBudget::new(60);
        for i in 0..1000 {
            assert!(budget.spend(&format!("ns-{i}")));
            // Each namespace's Event is a second's budget: older ones have recovered.
            tokio::time::advance(std::time::Duration::from_millis(100)).await;
        }
        let held = budget.per_namespace.as_ref().map_or(0, |l| l.len());
        assert!(held <= 2 * NAMESPACES_BEFORE_PRUNING, "{held} namespaces held");
    }
}
