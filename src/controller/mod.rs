//! The operator: one reconciler per custom resource kind, and the runtime around them.

pub mod access_list;
pub mod app_watch;
pub mod certificate;
pub mod conditions;
pub mod context;
pub mod error;
pub mod metrics;
pub mod runtime;
pub mod shared_reads;
