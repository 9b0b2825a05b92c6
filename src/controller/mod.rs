//! The operator: one reconciler per custom resource kind, and the runtime around them.

pub mod access_list;
pub mod conditions;
pub mod context;
pub mod error;
pub mod metrics;
