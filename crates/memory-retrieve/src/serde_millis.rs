//! A [`Duration`] as whole milliseconds in configuration files: use with
//! `#[serde(with = "memory_retrieve::serde_millis")]`. Longer than `u64::MAX` milliseconds is
//! written as `u64::MAX`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// Writes `duration` as whole milliseconds.
///
/// # Errors
/// The serializer's.
pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// Reads whole milliseconds as a duration.
///
/// # Errors
/// The deserializer's, for anything but an unsigned integer.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_millis(u64::deserialize(deserializer)?))
}
