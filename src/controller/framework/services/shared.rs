//! What the reconcilers of every kind share, each part in its own module: credentials,
//! failure counts, metrics, Events (and each namespace's budget of them) and leadership. What one kind keeps is its
//! `Reconcilable::State`; its flags are its `Reconcilable::Settings`.

use std::sync::Arc;

use kube::runtime::events::Recorder;

use crate::controller::framework::services::backoff::FailureCounts;
use crate::controller::framework::services::credentials::AccessKeys;
use crate::controller::framework::services::event_budget::EventBudget;
use crate::controller::framework::services::leader::LeaderGate;
use crate::controller::framework::services::metrics::Metrics;

pub(crate) struct Shared {
    pub kube: kube::Client,
    pub access_keys: AccessKeys,
    pub failures: FailureCounts,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    /// What each namespace's objects may publish as Events.
    pub event_budget: EventBudget,
    /// Whether this process may act; also asked by the platform client before each write.
    pub leader: Arc<LeaderGate>,
}
