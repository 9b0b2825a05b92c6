//! What every kind's reconcile shares: the pipeline a kind implements, the driver that
//! runs it and writes its outcome, the vocabulary (`conditions`, `error`), the status contract (`health`,
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
pub mod pipeline;
mod process_metrics;
pub mod shared_reads;
pub mod status;
