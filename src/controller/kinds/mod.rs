//! One folder per custom resource kind, each holding its whole pipeline.

pub mod access_list;
pub mod app_watch;
pub(crate) mod certificate;

#[cfg(test)]
mod driver_tests;
