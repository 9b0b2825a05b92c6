//! The runtime's visits of the registry of kinds: their settings for one shard, the
//! finalizers they put on Secrets, and their controllers.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Api;
use kube::api::DynamicObject;

use super::controllers::Controllers;
use crate::controller::framework::pipeline::kind::{Reconcilable, Reconciler};
use crate::controller::framework::pipeline::registry::Registry;
use crate::controller::framework::services::shared::Shared;
use crate::controller::kinds::{Kind, KindSettings, register};

/// Each kind's settings as one shard of several operators, named `shard`.
pub(super) fn for_shard(settings: &mut KindSettings, shard: &str) {
    struct ForShard<'a>(&'a mut KindSettings, &'a str);
    impl Registry for ForShard<'_> {
        fn register<K: Reconcilable>(&mut self) {
            if let Some(settings) = self.0.get_mut::<K>() {
                K::for_shard(settings, self.1);
            }
        }
    }
    register(&mut ForShard(settings, shard));
}

/// The finalizers the kinds put on Secrets.
pub(super) fn secret_finalizers(settings: &KindSettings) -> Vec<String> {
    struct Finalizers<'a>(&'a KindSettings, Vec<String>);
    impl Registry for Finalizers<'_> {
        fn register<K: Reconcilable>(&mut self) {
            let finalizer = self.0.get::<K>().and_then(K::secret_finalizer);
            self.1.extend(finalizer.map(str::to_string));
        }
    }
    let mut finalizers = Finalizers(settings, Vec::new());
    register(&mut finalizers);
    finalizers.1
}

/// Every kind's controllers, each subscribed to what it watches.
pub(super) fn controllers<'a>(
    runner: &'a Controllers<'a>,
    shared: &Arc<Shared>,
    settings: &KindSettings,
) -> Vec<BoxFuture<'a, ()>> {
    struct Starting<'a, 's> {
        runner: &'a Controllers<'a>,
        shared: &'s Arc<Shared>,
        settings: &'s KindSettings,
        running: Vec<BoxFuture<'a, ()>>,
    }
    impl Registry for Starting<'_, '_> {
        fn register<K: Reconcilable>(&mut self) {
            let Some(settings) = self.settings.get::<K>() else {
                tracing::error!(
                    kind = K::kind_name(),
                    "no settings for this kind; its controller does not run"
                );
                return;
            };
            let reconciler = Arc::new(Reconciler::<K>::new(self.shared.clone(), settings.clone()));
            self.running.push(K::controllers(reconciler, self.runner));
        }
    }
    let mut starting = Starting {
        runner,
        shared,
        settings,
        running: Vec::new(),
    };
    register(&mut starting);
    starting.running
}

/// The objects of the first kind, untyped: what the probes of the apiserver read.
pub(super) fn probed_api(client: &kube::Client, namespace: Option<&str>) -> Option<Api<DynamicObject>> {
    let resource = Kind::all().first()?.api_resource();
    Some(match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}
