//! Tests that need no cluster: edge-sim over HTTP, the client, edgectl, the committed
//! CRDs, and the platform's published contract in both directions.

#[path = "../support/mod.rs"]
mod support;

mod argocd;
mod client;
mod contract;
mod crds;
mod docs;
mod doctor;
mod edgectl;
mod edgectl_writes;
mod gitops_examples;
mod hostile_network;
mod layout;
mod plan;
mod recipes;
mod release;
mod sim_accounts;
mod sim_admin;
mod sim_fuzz;
mod sim_logging;
mod sim_platform;
mod sim_query;
mod sim_recording;
mod sim_search;
mod tls;
mod wire_form;
