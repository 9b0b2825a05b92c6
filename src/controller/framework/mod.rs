//! What every kind's reconcile shares, in three parts that depend one way:
//! - `pipeline`: what a kind implements (`pipeline::kind::Reconcilable`), the driver
//!   that runs it and writes its outcome, the registry every kind joins, the status (its
//!   conditions, the kstatus contract, time formats, writing it) and what is read of any
//!   object;
//! - `services`: what the reconciles of every kind share (`services::shared::Shared`):
//!   credentials, the error backoff, the Event budget, the leader gate, metrics;
//! - `reasons`: the words of failures and conditions both read: condition types,
//!   reasons, and the failures a reconcile can have.

pub(crate) mod extend;
#[cfg(test)]
pub(crate) mod mock_apiserver;
pub mod pipeline;
pub(crate) mod prelude;
pub mod reasons;
pub(crate) mod services;
