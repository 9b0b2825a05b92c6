//! Recordings of a real account and parity with edge-sim.
//!
//! [`proxy`] (`edge-sim record`) forwards reads to the platform and keeps each
//! exchange (`exchange`) without credentials; `rebuild` turns the answers into a
//! fixtures document; [`parity`] (`edge-sim parity`) replays the requests against
//! edge-sim and reports, through `diff`, where its answers differ.

pub(crate) mod diff;
pub(crate) mod exchange;
pub mod parity;
pub mod proxy;
pub(crate) mod rebuild;
