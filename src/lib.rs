//! edge-operator: run an edge platform (CDN, Shield WAF, container apps) from Kubernetes.
//!
//! - [`api`]: the typed client of the Edge Platform API and its wire models;
//! - [`sim`]: `edge-sim`, an offline emulator of the whole API.

pub mod api;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod signal;
pub mod sim;
pub mod telemetry;
