//! Security events of Shield Zones: compact storage and the search engine.

mod group;
mod page;
pub(crate) mod search;
pub(crate) mod store;
pub(crate) mod validate;

pub use search::execute;
pub use store::{EventInput, EventStore};
pub use validate::{SearchError, ValidSearch, validate};

#[cfg(test)]
mod tests;
