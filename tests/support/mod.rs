//! Shared support of the e2e tests.
#![allow(dead_code)]

pub mod cluster;
pub mod gitops;
pub mod helm;
pub mod hostile_server;
pub mod operator;
pub mod sim;
