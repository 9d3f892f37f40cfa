//! The persisted state of one resource key, and its versioned wire form.
//!
//! Format version 1 (JSON-safe, exact for every u64, DESIGN R6):
//!
//! ```json
//! {"v":1,"mark":"41"}
//! ```
//!
//! * `v` — the format version, the number `1`.
//! * `mark` — the high-water mark as canonical decimal text (`"0"` or
//!   `[1-9][0-9]*`, ≤ 2^64−1). Text, because JSON numbers above 2^53 lose
//!   precision in JavaScript.
//!
//! No other fields are allowed. Anything else — another version, a number
//! `mark`, `"041"`, a missing field, an extra field, a non-object — is
//! [`StateError`] (code `CORRUPT_STATE`), never "empty, mark 0". A key that has
//! no state at all is the only way to have mark 0 without a stored record.

use serde::{Deserialize, Serialize};

use crate::error::StateError;
use crate::token::parse_token;

/// The current format version written by [`ResourceState::to_wire`].
pub const STATE_VERSION: u64 = 1;

/// The decoded state of a resource key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceState {
    /// The high-water mark: the largest epoch accepted (0 = never written).
    pub mark: u64,
}

/// The serde shape of format version 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireState {
    /// Format version, always [`STATE_VERSION`] when written.
    pub v: u64,
    /// The mark as canonical decimal text.
    pub mark: String,
}

/// The field names of format version 1, in order. Decoders that cannot
/// enforce `deny_unknown_fields` themselves (serde-wasm-bindgen reads only the
/// declared properties of a JS object) check the object's own keys against it.
pub const WIRE_FIELDS: [&str; 2] = ["v", "mark"];

/// Only the version, read first so an unknown version gets a clear message.
#[derive(Deserialize)]
pub struct WireVersion {
    /// The format version found.
    pub v: u64,
}

impl ResourceState {
    /// The wire form of this state.
    pub fn to_wire(&self) -> WireState {
        WireState {
            v: STATE_VERSION,
            mark: self.mark.to_string(),
        }
    }

    /// Validates a wire form (after its version was checked with [`check_version`]).
    pub fn from_wire(wire: &WireState) -> Result<ResourceState, StateError> {
        check_version(wire.v)?;
        let mark = if wire.mark == "0" {
            0
        } else {
            parse_token(&wire.mark).map_err(|_| {
                StateError(format!(
                    "mark {:?} is not canonical decimal text in 0..=2^64-1",
                    wire.mark
                ))
            })?
        };
        Ok(ResourceState { mark })
    }
}

/// Refuses every format version this build does not know.
pub fn check_version(v: u64) -> Result<(), StateError> {
    if v == STATE_VERSION {
        Ok(())
    } else {
        Err(StateError(format!(
            "unsupported state format version {v} (this build reads version {STATE_VERSION})"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<ResourceState, StateError> {
        let version: WireVersion =
            serde_json::from_str(text).map_err(|e| StateError(e.to_string()))?;
        check_version(version.v)?;
        let wire: WireState = serde_json::from_str(text).map_err(|e| StateError(e.to_string()))?;
        ResourceState::from_wire(&wire)
    }

    #[test]
    fn round_trip_is_exact() {
        for mark in [0, 1, 41, (1 << 53) + 1, u64::MAX] {
            let text = serde_json::to_string(&ResourceState { mark }.to_wire()).unwrap();
            assert_eq!(decode(&text), Ok(ResourceState { mark }));
        }
        assert_eq!(
            serde_json::to_string(&ResourceState { mark: 41 }.to_wire()).unwrap(),
            r#"{"v":1,"mark":"41"}"#
        );
    }

    #[test]
    fn damaged_state_is_corrupt_never_empty() {
        for bad in [
            r#"{"v":2,"mark":"41"}"#,
            r#"{"v":1,"mark":41}"#,
            r#"{"v":1,"mark":"041"}"#,
            r#"{"v":1,"mark":"-1"}"#,
            r#"{"v":1,"mark":"18446744073709551616"}"#,
            r#"{"v":1}"#,
            r#"{"mark":"1"}"#,
            r#"{"v":1,"mark":"1","extra":true}"#,
            r#"{"v":"1","mark":"1"}"#,
            r#"[]"#,
            r#"null"#,
            r#""""#,
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }
}
