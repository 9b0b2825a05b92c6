//! Shared support of the e2e tests.
#![allow(dead_code)]

pub(crate) mod cluster;
pub(crate) mod gitops;
pub(crate) mod helm;
pub(crate) mod hostile_server;
pub(crate) mod manifest;
pub(crate) mod operator;
pub(crate) mod recipe;
pub(crate) mod sim;
pub(crate) mod tls;
