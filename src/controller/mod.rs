//! The operator: one reconcile driver, one pipeline per custom resource kind, and the
//! runtime around them.
//!
//! Dependencies point one way: the kinds (`access_list`, `certificate`, `app_watch`)
//! implement [`driver::Reconciled`]; the driver uses the context parts (`credentials`,
//! `reads`, `backoff`, `status`, `metrics`) and the vocabulary (`conditions`, `error`);
//! `runtime` wires the driver to the watches.

pub mod access_list;
pub mod app_watch;
pub mod backoff;
pub mod cdn_tail;
pub mod certificate;
pub mod check;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod driver;
pub mod error;
pub mod health;
pub mod leader;
pub mod metrics;
#[cfg(test)]
mod mock_apiserver;
pub mod poll_schedule;
mod process_metrics;
pub mod reads;
pub mod runtime;
pub mod shared_reads;
pub mod shutdown;
pub mod status;
