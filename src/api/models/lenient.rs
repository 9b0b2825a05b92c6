//! Deserializers for reading someone else's API: a `null` where the published schema
//! says nullable reads as the default, and enum strings match in any case.

use serde::{Deserialize, Deserializer};

/// Deserializes `null` as the type's default, so a nullable member never fails a read.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The case whose name matches `raw` ignoring ASCII case.
pub(crate) fn match_case_insensitive<T: Copy>(raw: &str, cases: &[(&str, T)]) -> Option<T> {
    cases
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(raw))
        .map(|(_, value)| *value)
}
