//! Prometheus metrics of the operator: reconciles by kind and result, errors by reason,
//! durations, platform requests and their latency by operation and status class,
//! requests waiting for the quota, objects by condition (and, when asked, each object's
//! conditions), leadership, build and the standard process metrics.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

use crate::api::limiter::Lane;
use crate::api::{Operation, RequestObserver};
use crate::controller::framework::reasons::{AnyReason, KindReason, vocabulary_words};
use crate::controller::framework::services::process_metrics::ProcessCollector;
use crate::resources::{Condition, ConditionStatus};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    kind: &'static str,
    reason: &'static str,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    kind: &'static str,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    kind: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LaneLabels {
    lane: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status_class: &'static str,
}

/// The object's namespace is `object_namespace`, so that it never clashes with the
/// `namespace` label a scrape gives the operator's own Pod.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    kind: &'static str,
    object_namespace: String,
    name: String,
    #[prometheus(flatten)]
    state: ConditionState,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionState {
    condition: String,
    status: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectsLabels {
    kind: &'static str,
    #[prometheus(flatten)]
    state: ConditionState,
}

/// One condition of an object as published: words of the vocabulary.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Published {
    condition: &'static str,
    status: &'static str,
    reason: &'static str,
}

impl Published {
    fn state(&self) -> ConditionState {
        ConditionState {
            condition: self.condition.to_string(),
            status: self.status.to_string(),
            reason: self.reason.to_string(),
        }
    }
}

/// What was published of each object: (kind, `namespace/name`) → its conditions.
/// Whole condition sets are interned: most objects share a few sets.
#[derive(Default)]
struct PublishedObjects {
    objects: HashMap<(&'static str, Box<str>), Arc<[Published]>>,
    sets: HashSet<Arc<[Published]>>,
}

/// The kept copy of `value`, kept now when new.
fn interned<T: ?Sized + Eq + std::hash::Hash>(kept: &mut HashSet<Arc<T>>, value: &T) -> Arc<T>
where
    for<'a> Arc<T>: From<&'a T>,
{
    if let Some(copy) = kept.get(value) {
        return copy.clone();
    }
    let copy = Arc::from(value);
    kept.insert(Arc::clone(&copy));
    copy
}

/// `metric`, registered under `name` with `help`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Reconciles by kind: their results, failures by reason, durations, the due objects
/// waiting for a turn, and the counts decisions were taken on.
struct ReconcileMetrics {
    results: Family<ReconcileLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    durations: Family<KindLabels, Histogram>,
    waiting: Family<KindLabels, Gauge>,
    decided_on: Family<DecisionLabels, Histogram>,
}

impl ReconcileMetrics {
    fn registered(registry: &mut Registry) -> Self {
        Self {
            results: registered(
                registry,
                "reconciles",
                "Reconciles by kind and result (success or error)",
                Family::default(),
            ),
            errors: registered(
                registry,
                "reconcile_errors",
                "Failed reconciles by kind and reason",
                Family::default(),
            ),
            durations: registered(
                registry,
                "reconcile_duration_seconds",
                "Reconcile duration by kind",
                Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.0, 16))),
            ),
            waiting: registered(
                registry,
                "reconciles_waiting",
                "Due objects waiting for a reconcile turn (turns go to namespaces in turn), by kind",
                Family::default(),
            ),
            decided_on: registered(
                registry,
                "decided_on",
                "The count a decision of a reconcile was taken on, by kind and by the reason of the decision",
                Family::new_with_constructor(|| Histogram::new(exponential_buckets(1.0, 10.0, 7))),
            ),
        }
    }
}

/// Requests to the platform by operation and status class, their latency, and the
/// requests waiting for the quota.
struct PlatformMetrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<RequestLabels, Histogram>,
    quota_waiting: Family<LaneLabels, Gauge>,
}

impl PlatformMetrics {
    fn registered(registry: &mut Registry) -> Self {
        Self {
            requests: registered(
                registry,
                "platform_requests",
                "Requests to the Edge Platform API by operation and status class",
                Family::default(),
            ),
            durations: registered(
                registry,
                "platform_request_duration_seconds",
                "Time from sending a request to the Edge Platform API to its answer's headers, by operation and status class",
                Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 14))),
            ),
            quota_waiting: registered(
                registry,
                "platform_quota_waiting",
                "Requests waiting for the shared platform quota (--platform-rate), by lane",
                Family::default(),
            ),
        }
    }
}

/// Objects by condition (and, with `per_object`, each object's conditions), their
/// status writes, and how late their polls started.
struct ObjectMetrics {
    counts: Family<ObjectsLabels, Gauge>,
    /// Each object's conditions, only with `--object-metrics`.
    conditions: Option<Family<ConditionLabels, Gauge>>,
    status_writes: Family<KindLabels, Counter>,
    poll_lag: Family<KindLabels, Histogram>,
}

impl ObjectMetrics {
    fn registered(registry: &mut Registry, per_object: bool) -> Self {
        Self {
            counts: registered(
                registry,
                "objects",
                "Objects by kind and by the status and reason of each of their conditions",
                Family::default(),
            ),
            conditions: per_object.then(|| {
                registered(
                    registry,
                    "condition",
                    "1 for each object's current condition status and reason",
                    Family::default(),
                )
            }),
            status_writes: registered(
                registry,
                "status_writes",
                "Status writes by kind: one per change a reader acts on",
                Family::default(),
            ),
            poll_lag: registered(
                registry,
                "poll_lag_seconds",
                "How long after its due time each poll of an observe-only object started",
                Family::new_with_constructor(|| {
                    Histogram::new([0.0, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0])
                }),
            ),
        }
    }
}

/// Events published by kind, reason and type, and those dropped over a namespace's
/// budget.
struct EventMetrics {
    published: Family<EventLabels, Counter>,
    dropped: Family<KindLabels, Counter>,
}

impl EventMetrics {
    fn registered(registry: &mut Registry) -> Self {
        Self {
            published: registered(
                registry,
                "events",
                "Events published, by kind, reason and type (Normal or Warning)",
                Family::default(),
            ),
            dropped: registered(
                registry,
                "events_dropped",
                "Events not published because their namespace spent its Event budget, by kind",
                Family::default(),
            ),
        }
    }
}

pub(crate) struct Metrics {
    registry: Registry,
    reconciles: ReconcileMetrics,
    platform: PlatformMetrics,
    objects: ObjectMetrics,
    events: EventMetrics,
    leader: Gauge,
    published: Mutex<PublishedObjects>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Metrics {
    /// The metrics; with `per_object`, also a series per condition of each object.
    pub(crate) fn new(per_object: bool) -> Self {
        let mut root = Registry::default();
        root.register_collector(Box::new(ProcessCollector));
        let registry = root.sub_registry_with_prefix("edge_operator");
        let reconciles = ReconcileMetrics::registered(registry);
        let platform = PlatformMetrics::registered(registry);
        let objects = ObjectMetrics::registered(registry, per_object);
        let events = EventMetrics::registered(registry);
        let leader = registered(
            registry,
            "leader",
            "1 while this process may act (it holds the leader Lease, or runs without election)",
            Gauge::default(),
        );
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("build_info", "The operator's version; always 1", build);
        Self {
            registry: root,
            reconciles,
            platform,
            objects,
            events,
            leader,
            published: Mutex::default(),
        }
    }
}

impl Metrics {
    pub(crate) fn reconciled<R: KindReason>(&self, kind: &str, elapsed: Duration, error_reason: Option<AnyReason<R>>) {
        let result = if error_reason.is_some() { "error" } else { "success" };
        self.reconciles
            .results
            .get_or_create(&ReconcileLabels {
                kind: kind.to_string(),
                result,
            })
            .inc();
        self.reconciles
            .durations
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .observe(elapsed.as_secs_f64());
        if let Some(reason) = error_reason {
            let kind = kind.to_string();
            let reason = reason.as_str();
            self.reconciles
                .errors
                .get_or_create(&ErrorLabels { kind, reason })
                .inc();
        }
    }

    pub(crate) fn status_written(&self, kind: &str) {
        self.objects
            .status_writes
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .inc();
    }

    pub(crate) fn event_published<R: KindReason>(&self, kind: &'static str, reason: AnyReason<R>, warning: bool) {
        let r#type = if warning { "Warning" } else { "Normal" };
        let reason = reason.as_str();
        self.events
            .published
            .get_or_create(&EventLabels { kind, reason, r#type })
            .inc();
    }

    pub(crate) fn event_dropped(&self, kind: &str) {
        self.events
            .dropped
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .inc();
    }

    /// Due objects of `kind` still waiting for a turn, as a turn starts.
    pub(crate) fn reconcile_waiting(&self, kind: &str, waiting: usize) {
        self.reconciles
            .waiting
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
    }

    /// The count a decision of `kind`, announced with `reason`, was taken on.
    pub(crate) fn decided_on<R: KindReason>(&self, kind: &'static str, reason: AnyReason<R>, count: i64) {
        let reason = reason.as_str();
        self.reconciles
            .decided_on
            .get_or_create(&DecisionLabels { kind, reason })
            .observe(count as f64);
    }

    /// Whether this process may act now (read at each scrape).
    pub(crate) fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    pub(crate) fn polled(&self, kind: &str, late: Duration) {
        self.objects
            .poll_lag
            .get_or_create(&KindLabels { kind: kind.to_string() })
            .observe(late.as_secs_f64());
    }

    /// Publishes an object's conditions, replacing what was published for it before:
    /// a condition it no longer has (a Stalled that cleared) is no longer counted, and
    /// one whose type or reason is not a word of the vocabulary (the common ones, the
    /// kind's reasons `R` and `own_types`) is not counted at all.
    pub(crate) fn set_conditions<R: KindReason>(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        conditions: &[Condition],
        own_types: &[&'static str],
    ) {
        let now: Vec<Published> = conditions
            .iter()
            .filter_map(|c| {
                let (condition, reason) = vocabulary_words::<R>(c, own_types)?;
                let status = match c.status {
                    ConditionStatus::True => "True",
                    ConditionStatus::False => "False",
                    ConditionStatus::Unknown => "Unknown",
                };
                Some(Published {
                    condition,
                    status,
                    reason: reason.as_str(),
                })
            })
            .collect();
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind, format!("{namespace}/{name}").into_boxed_str());
        let before = published.objects.get(&key).cloned().unwrap_or_else(|| Arc::new([]));
        if *before == *now {
            return;
        }
        self.unpublish(kind, namespace, name, before.iter().filter(|p| !now.contains(p)));
        for condition in now.iter().filter(|p| !before.contains(p)) {
            let state = condition.state();
            if let Some(family) = &self.objects.conditions {
                family
                    .get_or_create(&self.object_labels(kind, namespace, name, state.clone()))
                    .set(1);
            }
            self.objects.counts.get_or_create(&ObjectsLabels { kind, state }).inc();
        }
        let now = interned(&mut published.sets, now.as_slice());
        published.objects.insert(key, now);
    }

    /// Forgets a deleted object's conditions.
    pub(crate) fn forget(&self, kind: &'static str, namespace: &str, name: &str) {
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind, format!("{namespace}/{name}").into_boxed_str());
        if let Some(before) = published.objects.remove(&key) {
            self.unpublish(kind, namespace, name, before.iter());
        }
    }

    /// Forgets every object of `kind` that `present` (namespace, name) denies: those
    /// deleted while the watch was away, which no Delete event announces.
    pub(crate) fn forget_all_but(&self, kind: &'static str, present: impl Fn(&str, &str) -> bool) {
        let gone: Vec<(String, String)> = {
            let published = self.published.lock().unwrap_or_else(|e| e.into_inner());
            published
                .objects
                .keys()
                .filter(|(of, _)| *of == kind)
                .filter_map(|(_, key)| key.split_once('/'))
                .filter(|(namespace, name)| !present(namespace, name))
                .map(|(namespace, name)| (namespace.to_string(), name.to_string()))
                .collect()
        };
        for (namespace, name) in gone {
            self.forget(kind, &namespace, &name);
        }
    }

    fn object_labels(&self, kind: &'static str, namespace: &str, name: &str, state: ConditionState) -> ConditionLabels {
        ConditionLabels {
            kind,
            object_namespace: namespace.to_string(),
            name: name.to_string(),
            state,
        }
    }

    /// Takes `gone` conditions of an object out of the counts (a count that reaches
    /// zero is no longer exposed) and out of its own series.
    fn unpublish<'a>(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        gone: impl Iterator<Item = &'a Published>,
    ) {
        for condition in gone {
            let state = condition.state();
            if let Some(family) = &self.objects.conditions {
                family.remove(&self.object_labels(kind, namespace, name, state.clone()));
            }
            let labels = ObjectsLabels { kind, state };
            if self.objects.counts.get_or_create(&labels).dec() <= 1 {
                self.objects.counts.remove(&labels);
            }
        }
    }

    /// The OpenMetrics text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%error, "cannot encode metrics");
        }
        text
    }
}

impl RequestObserver for Metrics {
    fn record(&self, operation: Operation, status_class: &'static str, elapsed: Duration) {
        let labels = RequestLabels {
            operation: operation.as_str(),
            status_class,
        };
        self.platform.requests.get_or_create(&labels).inc();
        self.platform
            .durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    fn quota_wait(&self, lane: Lane, waiting: bool) {
        let gauge = self
            .platform
            .quota_waiting
            .get_or_create(&LaneLabels { lane: lane.as_str() });
        if waiting {
            gauge.inc();
        } else {
            gauge.dec();
        }
    }
}

#[cfg(test)]
mod tests;
