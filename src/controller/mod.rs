//! The operator: the reconcile framework, one reconcile per custom resource kind, and
//! the runtime around them.
//!
//! Dependencies point one way: `runtime` wires the `kinds` to the watches; each kind
//! implements the `framework`'s `framework::pipeline::kind::Reconcilable` trait with its
//! own condition types, reasons, errors and settings; the framework knows no kind
//! (`tests/offline/layout.rs` fails when it names one).

pub mod framework;
pub mod kinds;
pub mod runtime;
