//! What the reconciles of every kind share ([`shared::Shared`]): the platform
//! credentials of each object, the error backoff, the Event budget, the leader gate,
//! the metrics.

pub(crate) mod backoff;
pub(crate) mod credentials;
pub(crate) mod event_budget;
pub(crate) mod leader;
pub(crate) mod metrics;
mod process_metrics;
pub(crate) mod shared;
