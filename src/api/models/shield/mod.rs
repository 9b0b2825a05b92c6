//! Shield: event-log search, access lists and rate limits.

mod access_lists;
mod events;
mod rate_limits;

pub use self::access_lists::*;
pub use self::events::*;
pub use self::rate_limits::*;
