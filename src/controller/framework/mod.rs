//! What every kind's reconcile shares: the driver that runs a pipeline and writes its
//! outcome, the vocabulary (`conditions`, `error`), the status contract (`health`,
//! `status`), and the context parts (`credentials`, `backoff`, `leader`, `metrics`,
//! `shared_reads`).

pub mod backoff;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod driver;
pub mod error;
pub mod health;
pub mod leader;
pub mod metrics;
#[cfg(test)]
pub(crate) mod mock_apiserver;
mod process_metrics;
pub mod shared_reads;
pub mod status;
