//! `edge-sim`: an offline emulator of the Edge Platform API.

pub mod events;
