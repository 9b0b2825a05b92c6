//! The operator: the reconcile framework, one pipeline per custom resource kind, and
//! the runtime around them.
//!
//! Dependencies point one way: `runtime` wires the `kinds` to the watches; each kind
//! implements the `framework`'s [`framework::pipeline::Reconciled`] pipeline; the
//! framework knows no kind.

pub mod framework;
pub mod kinds;
pub mod runtime;
