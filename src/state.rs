//! The persisted state of one resource key, and its versioned wire form.
//!
//! Three format versions, all JSON-safe and exact for every u64 (DESIGN R6).
//! Version 1 is written while a key has no holder, no operation ids and no
//! quarantine (the common case, and the shipped adapters' fast path); version
//! 2 as soon as it has a holder or operation ids; version 3 only while the key
//! is quarantined (issue 9). Decoders read all three.
//!
//! ```json
//! {"v":1,"mark":"41"}
//! {"v":2,"mark":"41","holder":"node-a","ops":{"r1":"40","r2":"41"},"evicted":null}
//! {"v":3,"mark":"41","holder":null,"ops":{},"evicted":null,"quarantine":"41"}
//! ```
//!
//! * `v` — the format version, the number `1` or `2`.
//! * `mark` — the high-water mark as canonical decimal text (`"0"` or
//!   `[1-9][0-9]*`, ≤ 2^64−1). Text, because JSON numbers above 2^53 lose
//!   precision in JavaScript.
//! * `holder` (v2) — the holder or lease that established the current epoch,
//!   or `null` (unsigned numeric tokens name none).
//! * `ops` (v2) — the operation ids applied in the current epoch, oldest
//!   first, each mapped to the mark before it was applied (decimal text).
//! * `evicted` (v2) — `null`, or the Bloom filter of ids pushed out of the
//!   window in this epoch as 512 lowercase hex digits ([`crate::ops`]).
//! * `quarantine` (v3) — the quarantine floor as decimal text, or `null`.
//!   While it is set, every write and establish with an epoch ≤ the floor is
//!   refused with `QUARANTINED`; the first one above the floor advances the
//!   mark and lifts it. It never exceeds `mark` (a quarantine raises the mark
//!   to the floor, never lowers it: R5). A host sets it after a restore or a
//!   lost state (`gate.quarantine(key, floor)`, `reconcile`, R11).
//!
//! Fields appear exactly as listed, in this order; nothing else is allowed.
//! Anything else — another version, a number `mark`, `"041"`, a missing field,
//! an extra field, a non-object — is [`StateError`] (code `CORRUPT_STATE`),
//! never "empty, mark 0". A key that has no state at all is the only way to
//! have mark 0 without a stored record.

use std::collections::VecDeque;

use crate::error::StateError;
use crate::json::{self, Value};
use crate::ops::{valid_op_id, OpRecord, OpWindow, BLOOM_BYTES, MAX_HOLDER_BYTES, MAX_WINDOW};
use crate::token::parse_token;

/// The format version written for states with no holder and no operation ids.
pub const STATE_VERSION: u64 = 1;
/// The format version written when a state has a holder or operation ids.
pub const STATE_VERSION_2: u64 = 2;
/// The format version written while a state is quarantined.
pub const STATE_VERSION_3: u64 = 3;

/// The decoded state of a resource key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceState {
    /// The high-water mark: the largest epoch accepted (0 = never written).
    pub mark: u64,
    /// The holder (or lease) that established the current epoch, when one was named.
    pub holder: Option<String>,
    /// Operation ids applied in the current epoch.
    pub ops: OpWindow,
    /// The quarantine floor: epochs ≤ it are refused (`QUARANTINED`) until one
    /// above it is written or established. Always ≤ `mark`.
    pub quarantine: Option<u64>,
}

impl ResourceState {
    /// A state with only a mark (format v1).
    pub const fn at(mark: u64) -> ResourceState {
        ResourceState {
            mark,
            holder: None,
            ops: OpWindow {
                ops: VecDeque::new(),
                evicted: None,
            },
            quarantine: None,
        }
    }

    /// Quarantine (issue 9, R11): the floor becomes `max(floor, mark, old
    /// floor)` and the mark rises to it (never lowers, R5), so every epoch up
    /// to the current one is refused until a new owner writes or establishes a
    /// larger epoch. Returns `false` when nothing changes (already quarantined
    /// at that floor or above). The holder and operation ids of the current
    /// epoch are dropped when the mark rises.
    pub fn quarantine_at(&mut self, floor: u64) -> bool {
        let floor = floor.max(self.mark).max(self.quarantine.unwrap_or(0));
        if self.quarantine == Some(floor) && self.mark == floor {
            return false;
        }
        if floor > self.mark {
            self.mark = floor;
            self.holder = None;
            self.ops.clear();
        }
        self.quarantine = Some(floor);
        true
    }

    /// The JSON text of this state: format v1 when it has no holder and no
    /// operation ids, v2 otherwise.
    pub fn to_json(&self) -> String {
        if self.holder.is_none() && self.ops.is_empty() && self.quarantine.is_none() {
            return format!("{{\"v\":1,\"mark\":\"{}\"}}", self.mark);
        }
        let mut out = String::with_capacity(96);
        out.push_str(if self.quarantine.is_some() {
            "{\"v\":3,\"mark\":\""
        } else {
            "{\"v\":2,\"mark\":\""
        });
        out.push_str(&self.mark.to_string());
        out.push_str("\",\"holder\":");
        match &self.holder {
            Some(h) => json::write_str(&mut out, h),
            None => out.push_str("null"),
        }
        out.push_str(",\"ops\":{");
        for (i, r) in self.ops.ops.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::write_str(&mut out, &r.id);
            out.push_str(":\"");
            out.push_str(&r.mark_before.to_string());
            out.push('"');
        }
        out.push_str("},\"evicted\":");
        match &self.ops.evicted {
            Some(filter) => {
                out.push('"');
                for b in filter.iter() {
                    out.push(char::from(HEX[usize::from(b >> 4)]));
                    out.push(char::from(HEX[usize::from(b & 15)]));
                }
                out.push('"');
            }
            None => out.push_str("null"),
        }
        if let Some(floor) = self.quarantine {
            out.push_str(",\"quarantine\":\"");
            out.push_str(&floor.to_string());
            out.push('"');
        }
        out.push('}');
        out
    }

    /// Decodes the JSON text of format v1, v2 or v3 (see the module docs).
    pub fn from_json(text: &str) -> Result<ResourceState, StateError> {
        let value = json::parse(text)
            .map_err(|e| StateError(format!("state is not JSON of the expected shape: {e}")))?;
        let Value::Obj(fields) = value else {
            return Err(StateError(
                "state must be an object {v, mark, …}".to_owned(),
            ));
        };
        let version = match fields.first() {
            Some((k, Value::Int(v))) if k == "v" => *v,
            _ => {
                return Err(StateError(
                    "state must start with a numeric version field v".to_owned(),
                ))
            }
        };
        let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        let expected: &[&str] = match version {
            1 => &["v", "mark"],
            2 => &["v", "mark", "holder", "ops", "evicted"],
            3 => &["v", "mark", "holder", "ops", "evicted", "quarantine"],
            v => {
                return Err(StateError(format!(
                    "unsupported state format version {v} (this build reads versions 1, 2 and 3)"
                )))
            }
        };
        if names != expected {
            return Err(StateError(format!(
                "state format v{version} has exactly the fields {expected:?} in that order, found {names:?}"
            )));
        }
        let mut it = fields.into_iter().skip(1).map(|(_, v)| v);
        let mark = match it.next() {
            Some(Value::Str(m)) => decimal(&m, "mark")?,
            _ => return Err(StateError("mark must be decimal text".to_owned())),
        };
        let mut state = ResourceState::at(mark);
        if version == 1 {
            return Ok(state);
        }
        state.holder = match it.next() {
            Some(Value::Null) => None,
            Some(Value::Str(h)) if !h.is_empty() && h.len() <= MAX_HOLDER_BYTES => Some(h),
            _ => {
                return Err(StateError(format!(
                    "holder must be null or a string of 1..={MAX_HOLDER_BYTES} bytes"
                )))
            }
        };
        match it.next() {
            Some(Value::Obj(ops)) => {
                if ops.len() > MAX_WINDOW {
                    return Err(StateError(format!("more than {MAX_WINDOW} operation ids")));
                }
                for (id, before) in ops {
                    let Value::Str(before) = before else {
                        return Err(StateError(
                            "an operation's mark before must be decimal text".to_owned(),
                        ));
                    };
                    if !valid_op_id(&id) {
                        return Err(StateError(format!("invalid operation id {id:?}")));
                    }
                    let mark_before = decimal(&before, "operation mark before")?;
                    if mark_before > mark {
                        return Err(StateError(format!(
                            "operation {id:?} has a mark before above the mark"
                        )));
                    }
                    state.ops.ops.push_back(OpRecord { id, mark_before });
                }
                // Within an epoch only its first operation (the advance) can
                // have a mark before below the mark; JSON object key order may
                // change in a JS round trip, so the check is order-free.
                if state
                    .ops
                    .ops
                    .iter()
                    .filter(|r| r.mark_before < mark)
                    .count()
                    > 1
                {
                    return Err(StateError(
                        "more than one operation advanced to the current epoch".to_owned(),
                    ));
                }
            }
            _ => {
                return Err(StateError(
                    "ops must be an object of id → mark before".to_owned(),
                ))
            }
        }
        state.ops.evicted = match it.next() {
            Some(Value::Null) => None,
            Some(Value::Str(hex)) => Some(Box::new(unhex(&hex)?)),
            _ => return Err(StateError("evicted must be null or hex text".to_owned())),
        };
        if mark == 0 && (state.holder.is_some() || !state.ops.is_empty()) {
            return Err(StateError(
                "a state at mark 0 has no holder and no operation ids".to_owned(),
            ));
        }
        if version == 3 {
            state.quarantine = match it.next() {
                Some(Value::Null) => None,
                Some(Value::Str(f)) => {
                    let floor = decimal(&f, "quarantine")?;
                    if floor > mark {
                        return Err(StateError(
                            "the quarantine floor is above the mark".to_owned(),
                        ));
                    }
                    Some(floor)
                }
                _ => {
                    return Err(StateError(
                        "quarantine must be null or decimal text".to_owned(),
                    ))
                }
            };
        }
        Ok(state)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn unhex(text: &str) -> Result<[u8; BLOOM_BYTES], StateError> {
    let bytes = text.as_bytes();
    if bytes.len() != BLOOM_BYTES * 2 {
        return Err(StateError(format!(
            "evicted must be {} hex digits",
            BLOOM_BYTES * 2
        )));
    }
    let mut out = [0u8; BLOOM_BYTES];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(StateError("evicted must be lowercase hex".to_owned())),
        };
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Ok(out)
}

fn decimal(text: &str, what: &str) -> Result<u64, StateError> {
    if text == "0" {
        return Ok(0);
    }
    parse_token(text).map_err(|_| {
        StateError(format!(
            "{what} {text:?} is not canonical decimal text in 0..=2^64-1"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_exact() {
        for mark in [0, 1, 41, (1 << 53) + 1, u64::MAX] {
            let text = ResourceState::at(mark).to_json();
            assert_eq!(text, format!(r#"{{"v":1,"mark":"{mark}"}}"#));
            assert_eq!(ResourceState::from_json(&text), Ok(ResourceState::at(mark)));
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["mark"].as_str(), Some(mark.to_string().as_str()));
        }
    }

    #[test]
    fn v2_round_trip_with_holder_ops_and_filter() {
        let mut s = ResourceState::at(41);
        s.holder = Some("node-\"a\"".to_owned());
        for (i, id) in ["r1", "r2", "ü/3"].iter().enumerate() {
            s.ops.push(
                OpRecord {
                    id: (*id).to_owned(),
                    mark_before: 39 + i as u64,
                },
                2,
            );
        }
        let text = s.to_json();
        assert!(text.starts_with(r#"{"v":2,"mark":"41","holder":"node-\"a\"","ops":{"r2":"40","ü/3":"41"},"evicted":""#), "{text}");
        assert_eq!(ResourceState::from_json(&text), Ok(s.clone()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["evicted"].as_str().unwrap().len(), 512);
        let mut plain = ResourceState::at(7);
        plain.holder = Some("h".to_owned());
        assert_eq!(
            plain.to_json(),
            r#"{"v":2,"mark":"7","holder":"h","ops":{},"evicted":null}"#
        );
        assert_eq!(ResourceState::from_json(&plain.to_json()), Ok(plain));
    }

    #[test]
    fn v3_quarantine_round_trip_and_never_lowers() {
        let mut s = ResourceState::at(0);
        assert!(s.quarantine_at(9));
        assert_eq!(
            s.to_json(),
            r#"{"v":3,"mark":"9","holder":null,"ops":{},"evicted":null,"quarantine":"9"}"#
        );
        assert_eq!(ResourceState::from_json(&s.to_json()), Ok(s.clone()));
        assert!(!s.quarantine_at(9));
        assert!(!s.quarantine_at(3));
        let mut held = ResourceState::at(50);
        held.holder = Some("A".to_owned());
        assert!(held.quarantine_at(40));
        assert_eq!((held.mark, held.quarantine), (50, Some(50)));
        assert_eq!(held.holder.as_deref(), Some("A"));
        let mut big = ResourceState::at(u64::MAX - 1);
        assert!(big.quarantine_at(u64::MAX));
        assert_eq!(ResourceState::from_json(&big.to_json()), Ok(big.clone()));
        let null = r#"{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":null}"#;
        assert_eq!(ResourceState::from_json(null), Ok(ResourceState::at(5)));
    }

    #[test]
    fn damaged_state_is_corrupt_never_empty() {
        for bad in [
            r#"{"v":4,"mark":"41"}"#,
            r#"{"v":3,"mark":"41"}"#,
            r#"{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":"6"}"#,
            r#"{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":5}"#,
            r#"{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":"05"}"#,
            r#"{"v":3,"mark":"5","holder":null,"ops":{},"evicted":null}"#,
            r#"{"v":1,"mark":41}"#,
            r#"{"v":1,"mark":"041"}"#,
            r#"{"v":1,"mark":"-1"}"#,
            r#"{"v":1,"mark":"18446744073709551616"}"#,
            r#"{"v":1}"#,
            r#"{"mark":"1"}"#,
            r#"{"mark":"1","v":1}"#,
            r#"{"v":1,"mark":"1","extra":true}"#,
            r#"{"v":"1","mark":"1"}"#,
            r#"{"v":2,"mark":"1"}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":{"a":"6"},"evicted":null}"#,
            r#"{"v":2,"mark":"5","holder":"","ops":{},"evicted":null}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":{"":"1"},"evicted":null}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":{"a":1},"evicted":null}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":{"a":"1","a":"2"},"evicted":null}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":{},"evicted":"00"}"#,
            r#"{"v":2,"mark":"5","holder":null,"ops":[],"evicted":null}"#,
            r#"{"v":2,"mark":"0","holder":"x","ops":{},"evicted":null}"#,
            r#"{"v":2,"mark":"9","holder":null,"ops":{"a":"8","b":"3"},"evicted":null}"#,
            r#"[]"#,
            r#"null"#,
            r#""""#,
            "",
            "{",
        ] {
            assert!(ResourceState::from_json(bad).is_err(), "{bad}");
        }
    }
}
