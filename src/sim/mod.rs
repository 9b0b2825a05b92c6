//! `edge-sim`: an offline emulator of the Edge Platform API.
//!
//! The search engine ([`events`]) and the log query ([`logs`]) are pure; the HTTP
//! layer ([`server`], [`platform`], [`logging`], [`admin`]) only parses, validates and
//! serialises.

// Handlers short-circuit with ready-made HTTP answers (`Result<_, Response>`), the
// idiomatic axum shape; the size of `Response` is irrelevant on this path.
#![allow(clippy::result_large_err)]

pub mod admin;
pub mod clock;
pub mod events;
pub mod generator;
pub mod logging;
pub mod logs;
pub mod platform;
pub mod ratelimit;
pub mod server;
pub mod state;

pub use server::{Fault, JournalEntry, RunningSim, Sim, serve, spawn, spawn_sim};
pub use state::SimDocument;
