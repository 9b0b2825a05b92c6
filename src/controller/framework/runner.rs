//! What runs each kind's controller (the runtime), as the registry of kinds sees it.

use std::sync::Arc;

use kube::Api;
use kube::runtime::watcher;

use super::kind::{Reconcilable, Reconciler};

pub(crate) trait Runner: Sync {
    /// A kind's subscription to what the runtime watches for every kind (the changes
    /// of the Secrets objects reference), taken before those watches run.
    type Subscription: Send;

    /// The objects of kind `K` in the namespace watched.
    fn api<K: Reconcilable>(&self) -> Api<K>;

    /// How every kind's watch lists its objects, at start and at every relist.
    fn watch_config(&self) -> watcher::Config;

    /// Runs the controller of kind `K`, `concurrency` reconciles at once, until shutdown.
    fn run<K: Reconcilable>(
        &self,
        reconciler: Arc<Reconciler<K>>,
        subscription: Self::Subscription,
        concurrency: u16,
    ) -> impl Future<Output = ()> + Send + '_;
}
