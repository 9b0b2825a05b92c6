//! edge-operator: run an edge platform (CDN, Shield WAF, container apps) from Kubernetes.
//!
//! One crate, three binaries that only parse their arguments and dispatch here:
//!
//! - [`api`]: the typed client of the Edge Platform API (`EdgeClient`, its
//!   configuration, errors and wire models) and the platform's published schemas;
//! - [`resources`]: what the custom resources share (conditions, Secret references,
//!   event filters, annotations, what the driver reads of each) and how their CRDs are
//!   written; each kind's resource lives in its folder of `controller::kinds`;
//! - [`controller`]: `edge-operator`, the reconcile framework, one reconcile per kind
//!   and the runtime around them (`controller::runtime::run`);
//! - [`sim`]: `edge-sim`, an offline emulator of the whole API, in-process
//!   (`sim::spawn`) or as a server;
//! - [`cli`]: `edgectl`, the commands over the client and their rendering;
//! - [`telemetry`], [`signal`]: logging and the stop signals the binaries share;
//!   `fairness`: the fair queues that share a budget among tenants, for the client's
//!   quota lines and the controller's reconcile turns.
//!
//! Modules depend one way: `controller` on `api` and `resources`; `cli` on those and
//! the kinds (`edgectl plan`, `export`, `rollout`); `sim` on `api`.

pub mod api;
pub mod cli;
pub mod controller;
mod fairness;
pub mod resources;
pub mod signal;
pub mod sim;
pub mod telemetry;
