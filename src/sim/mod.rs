//! `edge-sim`: an offline emulator of the Edge Platform API.
//!
//! Dependencies point one way: `http` (router, middleware, one module per API area)
//! → `emulator` (the shared state) → `world` (the live world) → [`document`] (the
//! fixtures); [`events`] (the search engine) and `logs` (log queries) are pure.

// Handlers short-circuit with ready-made HTTP answers (`Result<_, Response>`), the
// idiomatic axum shape; the size of `Response` is irrelevant on this path.
#![allow(clippy::result_large_err)]

pub(crate) mod always_sent;
pub(crate) mod atomic_file;
pub(crate) mod clock;
pub mod document;
pub(crate) mod emulator;
pub mod events;
pub mod generator;
pub(crate) mod http;
pub(crate) mod logs;
pub(crate) mod ratelimit;
pub mod recording;
pub mod state_file;
pub(crate) mod traffic;
pub(crate) mod wire_form;
pub(crate) mod world;

pub use document::SimDocument;
pub use emulator::{Fault, JournalEntry, Sim};
pub use http::admin::{ADMIN_TOKEN_HEADER, AdminAccess};
pub use http::{RunningSim, ServerTls, serve, spawn, spawn_sim, spawn_sim_with};
