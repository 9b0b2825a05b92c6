//! What one tenant's objects leave of the shared operator to another (issue 74's
//! figures): reconcile turns while one namespace keeps thousands of objects due, a Pull
//! Zone's logging budget while another tenant's watches name it with a key that cannot
//! read it, and the operator's memory on paused objects whose status a status writer
//! filled to the most the operator caches.

use std::time::Duration;

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::Settings;
use crate::harness::Cluster;
use crate::report::Report;

mod cdn_budget;
mod paused;
mod turns;

const SUITE: &str = "tenants";

pub(crate) async fn run(cluster: &Cluster, settings: &Settings, report: &mut Report) {
    if let Err(error) = turns::run(cluster, settings, report).await {
        report.error(SUITE, &format!("reconcile turns: {error:#}"));
    }
    if let Err(error) = cdn_budget::run(cluster, settings, report).await {
        report.error(SUITE, &format!("CDN budget: {error:#}"));
    }
    if let Err(error) = paused::run(cluster, settings, report).await {
        report.error(SUITE, &format!("paused statuses: {error:#}"));
    }
}

/// Deletes `namespaces` at once and waits until each is gone, within `within`.
async fn delete_namespaces(cluster: &Cluster, namespaces: &[&str], within: Duration) -> anyhow::Result<()> {
    futures::future::try_join_all(namespaces.iter().map(|name| cluster.delete_namespace(name, within))).await?;
    Ok(())
}

/// A task that merge-patches objects every second, in turn, until stopped.
struct EverySecond {
    stop: oneshot::Sender<()>,
    task: JoinHandle<anyhow::Result<usize>>,
}

/// At most this many seconds of patches: the runs stop theirs long before.
const MOST_SECONDS: usize = 3_600;

impl EverySecond {
    /// Every second, patches `per_second` of `names` (in turn, from the first) with
    /// `patch(n)`, n counting the patches made.
    fn start<K>(
        api: Api<K>,
        names: Vec<String>,
        per_second: usize,
        patch: impl Fn(usize) -> serde_json::Value + Send + 'static,
    ) -> Self
    where
        K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            let mut made = 0;
            for _ in 0..MOST_SECONDS {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tick.tick() => {}
                }
                for _ in 0..per_second {
                    let name = &names[made % names.len()];
                    api.patch(name, &PatchParams::default(), &Patch::Merge(patch(made)))
                        .await
                        .with_context(|| format!("patching {name}"))?;
                    made += 1;
                }
            }
            Ok(made)
        });
        Self { stop, task }
    }

    /// Stops the patches and answers how many were made.
    async fn stop(self) -> anyhow::Result<usize> {
        let _ = self.stop.send(());
        self.task.await.context("the patching task")?
    }
}
