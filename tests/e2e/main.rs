//! End-to-end tests on a real control plane (kube-apiserver, etcd, controller
//! manager): the CRDs, the Helm chart, and the operator as a process against edge-sim.
//! `tests/support/cluster.rs` starts the control plane, or uses `EDGE_TEST_KUBECONFIG`.

#[path = "../support/mod.rs"]
mod support;

mod chart;
mod chart_emulator;
mod chart_install;
mod chart_knobs;
mod control_plane;
mod crd_validation;
mod gitops_health;
mod hostile;
mod killed;
mod loading_flood;
mod memory_bounds;
mod monitoring;
mod operator_access_list;
mod operator_app_watch;
mod operator_certificate;
mod operator_resilience;
mod operator_rollout;
mod operator_tls;
mod plan;
mod protections_together;
mod shards;
mod tenants;
