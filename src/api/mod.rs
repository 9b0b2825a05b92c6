//! Typed client of the Edge Platform API.

pub mod models;
