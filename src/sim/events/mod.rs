//! Security events of Shield Zones: compact storage and the search engine.

pub mod search;
pub mod store;

pub use search::{SearchError, ValidSearch, execute, validate};
pub use store::{EventInput, EventStore};

#[cfg(test)]
mod tests;
