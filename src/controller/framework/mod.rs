//! What every kind's reconcile shares: the pipeline a kind implements, the driver that
//! runs it and writes its outcome, the errors (`error`), the status (`status`: its
//! conditions, the kstatus contract, time formats, writing it), what is read of any
//! object (`object`), what the reconcilers of every kind share (`shared`, with its
//! parts: `credentials`, `backoff`, `event_budget`, `leader`, `metrics`,
//! `shared_reads`), and what runs
//! a kind's controller (`runner`).

pub(crate) mod backoff;
pub(crate) mod credentials;
pub(crate) mod driver;
pub(crate) mod error;
pub(crate) mod event_budget;
pub(crate) mod kind;
pub(crate) mod leader;
pub(crate) mod metrics;
#[cfg(test)]
pub(crate) mod mock_apiserver;
pub(crate) mod object;
pub(crate) mod plan;
mod process_metrics;
pub mod registry;
pub(crate) mod shared;
pub(crate) mod shared_reads;
pub mod status;
