//! The persisted state of one resource key, and its versioned wire form.
//!
//! Four format versions, all JSON-safe and exact for every u64 (DESIGN R6).
//! Version 1 is written while a key has no holder, no operation ids and no
//! quarantine (the common case, and the shipped adapters' fast path); version
//! 4 otherwise (docs/decisions/state-format-v4.md). Versions 2 and 3 are no longer written; decoders
//! read all four.
//!
//! ```json
//! {"v":1,"mark":"41"}
//! {"v":4,"mark":"41","holder":"node-a","ops":[["r1","40"],["r2","41","9f86d081884c7d659a2feaa0c55ad015"]],"evicted":null,"quarantine":null}
//! {"v":2,"mark":"41","holder":"node-a","ops":{"r1":"40","r2":"41"},"evicted":null}
//! {"v":3,"mark":"41","holder":null,"ops":{},"evicted":null,"quarantine":"41"}
//! ```
//!
//! * `v` — the format version, the number `1`, `2`, `3` or `4`.
//! * `mark` — the high-water mark as canonical decimal text (`"0"` or
//!   `[1-9][0-9]*`, ≤ 2^64−1). Text, because JSON numbers above 2^53 lose
//!   precision in JavaScript.
//! * `holder` (v2–v4) — the holder or lease that established the current
//!   epoch, or `null` (unsigned numeric tokens name none).
//! * `ops` (v4) — the operation ids applied in the current epoch, oldest
//!   first, as an **array** of `[id, mark before]` or `[id, mark before,
//!   fingerprint]` (decimal text; the fingerprint as 32 lowercase hex digits,
//!   [`crate::ops::fingerprint`]). The window's order is the array's order, so
//!   it survives any host that reorders object members (PostgreSQL `jsonb`,
//!   MySQL `JSON`, a JS object with integer-like keys, document stores).
//! * `ops` (v2, v3) — the same as an object id → mark before. Its member
//!   order was the window order; a host that reordered it changed which id
//!   is evicted next (never whether an id is refused: an evicted id goes to
//!   the filter). Read as found.
//! * `evicted` (v2–v4) — `null`, or the Bloom filter of ids pushed out of the
//!   window in this epoch as 512 lowercase hex digits ([`crate::ops`]). In v4
//!   a filter carried over from a v2/v3 state is written `"fnv1a:"` + hex: it
//!   keeps the old hash until the epoch advances.
//! * `quarantine` (v3, v4) — the quarantine floor as decimal text, or `null`.
//!   While it is set, every write and establish with an epoch ≤ the floor is
//!   refused with `QUARANTINED`; the first one above the floor advances the
//!   mark and lifts it. It never exceeds `mark` (a quarantine raises the mark
//!   to the floor, never lowers it: R5). A host sets it after a restore or a
//!   lost state (`gate.quarantine(key, floor)`, `reconcile`, R11).
//!
//! Each version has exactly its fields, **in any order** (hosts that store
//! the state as an object reorder members: alphabetically, or integer-like
//! names first); nothing else is allowed. Anything else — another version, a
//! number `mark`, `"041"`, a missing, unknown or duplicate field, a
//! non-object — is [`StateError`] (code `CORRUPT_STATE`), never "empty, mark
//! 0". A key that has no state at all is the only way to have mark 0 without
//! a stored record.

use std::collections::VecDeque;

use crate::error::StateError;
use crate::format::{self, cut, Dec, OpText, OpsOut, OpsText, StateOut, StateText};
use crate::ops::{
    valid_op_id, OpRecord, OpWindow, BLOOM_BYTES, FINGERPRINT_BYTES, MAX_HOLDER_BYTES, MAX_WINDOW,
};

/// The fields of each format version (any order).
const FIELDS_V1: &[&str] = &["v", "mark"];
const FIELDS_V2: &[&str] = &["v", "mark", "holder", "ops", "evicted"];
const FIELDS_V3: &[&str] = &["v", "mark", "holder", "ops", "evicted", "quarantine"];
/// The prefix of a v4 `evicted` filter that keeps the v2/v3 hash.
const LEGACY_FILTER: &str = "fnv1a:";

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

/// The longest stored state text a gate hands to the decoder, in UTF-16 units
/// (64 Mi): the largest valid state (a full operation-id window of the longest
/// ids, a holder, a filter) is under 1 MiB, and a longer text is CORRUPT_STATE
/// before it is copied into Wasm memory.
pub const MAX_STATE_TEXT: usize = 64 << 20;

impl ResourceState {
    /// A state with only a mark (format v1).
    pub const fn at(mark: u64) -> ResourceState {
        ResourceState {
            mark,
            holder: None,
            ops: OpWindow {
                ops: VecDeque::new(),
                evicted: None,
                legacy_hash: false,
            },
            quarantine: None,
        }
    }

    /// Quarantine (R11): the floor becomes `max(floor, mark, old
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

    /// Whether this state is written as format v1 (no holder, operation ids or quarantine).
    pub fn is_plain(&self) -> bool {
        self.holder.is_none() && self.ops.is_empty() && self.quarantine.is_none()
    }

    /// The JSON text of this state: format v1 when it has no holder, no
    /// operation ids and no quarantine, v4 otherwise ([`StateOut`]).
    pub fn to_json(&self) -> String {
        let mut out = StateOut {
            v: 1,
            mark: Dec(self.mark),
            holder: None,
            ops: None,
            evicted: None,
            quarantine: None,
        };
        if !self.is_plain() {
            out.v = 4;
            out.holder = Some(self.holder.as_deref());
            out.ops = Some(OpsOut(&self.ops.ops));
            out.evicted = Some(self.ops.evicted.as_ref().map(|filter| {
                let prefix = if self.ops.legacy_hash {
                    LEGACY_FILTER
                } else {
                    ""
                };
                prefix.to_owned() + &format::hex(&filter[..])
            }));
            out.quarantine = Some(self.quarantine.map(Dec));
        }
        format::to_text(&out)
    }

    /// Decodes the JSON text of format v1, v2, v3 or v4 (see the module
    /// docs): members in any order, each version's fields exactly.
    pub fn from_json(text: &str) -> Result<ResourceState, StateError> {
        let t: StateText = format::from_text(text)
            .map_err(|e| StateError(format!("state is not JSON of the expected shape: {e}")))?;
        let version = t.v;
        let expected = match version {
            1 => FIELDS_V1,
            2 => FIELDS_V2,
            3 | 4 => FIELDS_V3,
            v => {
                return Err(StateError(format!(
                    "unsupported state format version {v} (this build reads versions 1 to 4)"
                )))
            }
        };
        let present = [
            t.holder.is_some(),
            t.ops.is_some(),
            t.evicted.is_some(),
            t.quarantine.is_some(),
        ];
        for (i, name) in FIELDS_V3.iter().enumerate().skip(2) {
            if present[i - 2] != expected.contains(name) {
                return Err(StateError(format!(
                    "state format v{version} has exactly the fields {} (any order); {} \"{name}\"",
                    format::to_text(expected),
                    if present[i - 2] {
                        "unexpected"
                    } else {
                        "missing"
                    }
                )));
            }
        }
        let mark = t.mark.0;
        let mut state = ResourceState::at(mark);
        if version == 1 {
            return Ok(state);
        }
        state.holder = match t.holder.flatten() {
            None => None,
            Some(h) if !h.is_empty() && h.len() <= MAX_HOLDER_BYTES => Some(h),
            _ => {
                return Err(StateError(format!(
                    "holder must be null or a string of 1 to {MAX_HOLDER_BYTES} bytes"
                )))
            }
        };
        let records =
            match (version, t.ops) {
                (4, Some(OpsText::List(items))) => ops_v4(items)?,
                (2 | 3, Some(OpsText::Map(members))) => ops_v2(members)?,
                (4, _) => return Err(err(
                    "ops must be an array of [id, mark before] or [id, mark before, fingerprint]",
                )),
                _ => return Err(err("ops must be an object of id → mark before")),
            };
        for r in &records {
            if r.mark_before > mark {
                return Err(StateError(format!(
                    "operation {} has a mark before above the mark",
                    format::to_text(&cut(&r.id, 40))
                )));
            }
        }
        // Within an epoch only its first operation (the advance) can have a
        // mark before below the mark.
        if records.iter().filter(|r| r.mark_before < mark).count() > 1 {
            return Err(err("more than one operation advanced to the current epoch"));
        }
        state.ops.ops = records;
        if let Some(hex) = t.evicted.flatten() {
            let (legacy, hex) = match hex.strip_prefix(LEGACY_FILTER) {
                Some(rest) if version == 4 => (true, rest),
                _ => (version < 4, hex.as_str()),
            };
            state.ops.evicted = Some(Box::new(unhex(hex)?));
            state.ops.legacy_hash = legacy;
        }
        if mark == 0 && (state.holder.is_some() || !state.ops.is_empty()) {
            return Err(err("a state at mark 0 has no holder and no operation ids"));
        }
        state.quarantine = match t.quarantine.flatten() {
            None => None,
            Some(Dec(floor)) if floor > mark => {
                return Err(err("the quarantine floor is above the mark"))
            }
            Some(Dec(floor)) => Some(floor),
        };
        Ok(state)
    }
}

/// The window of a v4 state: `[[id, before], [id, before, fingerprint], …]`.
#[inline(never)]
fn ops_v4(items: Vec<OpText>) -> Result<VecDeque<OpRecord>, StateError> {
    if items.len() > MAX_WINDOW {
        return Err(StateError(format!("more than {MAX_WINDOW} operation ids")));
    }
    let mut out: VecDeque<OpRecord> = VecDeque::with_capacity(items.len());
    for item in items {
        let fingerprint = match &item.fingerprint {
            None => None,
            Some(fp) => Some(unhex_fingerprint(fp)?),
        };
        let record = op_record(item.id, item.before, fingerprint)?;
        if out.iter().any(|r| r.id == record.id) {
            return Err(StateError(format!(
                "operation id {} appears twice",
                format::to_text(&cut(&record.id, 40))
            )));
        }
        out.push_back(record);
    }
    Ok(out)
}

/// The window of a v2/v3 state: `{id: before, …}`, in text order (the
/// reader refuses a repeated id).
#[inline(never)]
fn ops_v2(members: Vec<(String, Dec)>) -> Result<VecDeque<OpRecord>, StateError> {
    if members.len() > MAX_WINDOW {
        return Err(StateError(format!("more than {MAX_WINDOW} operation ids")));
    }
    members
        .into_iter()
        .map(|(id, before)| op_record(id, before, None))
        .collect()
}

#[inline(never)]
fn op_record(
    id: String,
    before: Dec,
    fingerprint: Option<[u8; FINGERPRINT_BYTES]>,
) -> Result<OpRecord, StateError> {
    if !valid_op_id(&id) {
        return Err(StateError(format!(
            "invalid operation id {}",
            format::to_text(&cut(&id, 40))
        )));
    }
    Ok(OpRecord {
        mark_before: before.0,
        id,
        fingerprint,
    })
}

/// A [`StateError`] with a fixed message (kept out of line: the decoder has
/// many error paths and each would otherwise carry its own copy).
#[cold]
#[inline(never)]
fn err(message: &str) -> StateError {
    StateError(message.to_owned())
}

fn unhex(text: &str) -> Result<[u8; BLOOM_BYTES], StateError> {
    let mut out = [0u8; BLOOM_BYTES];
    unhex_into(text, &mut out, "evicted")?;
    Ok(out)
}

fn unhex_fingerprint(text: &str) -> Result<[u8; FINGERPRINT_BYTES], StateError> {
    let mut out = [0u8; FINGERPRINT_BYTES];
    unhex_into(text, &mut out, "a fingerprint")?;
    Ok(out)
}

#[inline(never)]
fn unhex_into(text: &str, out: &mut [u8], what: &str) -> Result<(), StateError> {
    let bytes = text.as_bytes();
    if bytes.len() != out.len() * 2 {
        return Err(StateError(format!(
            "{what} must be {} hex digits",
            out.len() * 2
        )));
    }
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(StateError(format!("{what} must be lowercase hex"))),
        };
        *o = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Ok(())
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

    fn rec(id: &str, mark_before: u64) -> OpRecord {
        OpRecord {
            id: id.to_owned(),
            mark_before,
            fingerprint: None,
        }
    }

    #[test]
    fn v4_round_trip_with_holder_ops_fingerprints_and_filter() {
        let mut s = ResourceState::at(41);
        s.holder = Some("node-\"a\"".to_owned());
        for (i, id) in ["r1", "r2", "ü/3"].iter().enumerate() {
            s.ops.push(rec(id, 39 + i as u64), 2);
        }
        s.ops.ops[1].fingerprint = Some(crate::ops::fingerprint(b"test"));
        let text = s.to_json();
        assert!(text.starts_with(r#"{"v":4,"mark":"41","holder":"node-\"a\"","ops":[["r2","40"],["ü/3","41","9f86d081884c7d659a2feaa0c55ad015"]],"evicted":""#), "{text}");
        assert!(text.ends_with(r#"","quarantine":null}"#), "{text}");
        assert_eq!(ResourceState::from_json(&text), Ok(s.clone()));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["evicted"].as_str().unwrap().len(), 512);
        let mut plain = ResourceState::at(7);
        plain.holder = Some("h".to_owned());
        assert_eq!(
            plain.to_json(),
            r#"{"v":4,"mark":"7","holder":"h","ops":[],"evicted":null,"quarantine":null}"#
        );
        assert_eq!(ResourceState::from_json(&plain.to_json()), Ok(plain));
    }

    /// Format 4: the window order is the array's, so a host that reorders
    /// object members (jsonb, a JS object, a document store) changes nothing.
    #[test]
    fn members_in_any_order_decode_the_same() {
        let mut s = ResourceState::at(5);
        s.holder = Some("node-a".to_owned());
        for id in ["z", "1", "y"] {
            s.ops.push(rec(id, 5), 2);
        }
        s.quarantine_at(3);
        let text = s.to_json();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        // serde_json's default map sorts keys: the alphabetical order.
        let sorted = v.to_string();
        assert!(sorted.starts_with(r#"{"evicted":"#), "{sorted}");
        assert_eq!(ResourceState::from_json(&sorted), Ok(s.clone()));
        let spaced = r#"{ "quarantine" : "5", "ops": [ ["1", "5"], ["y","5"] ], "mark":"5", "v": 4, "holder":"node-a", "evicted":null }"#;
        let d = ResourceState::from_json(spaced).unwrap();
        assert_eq!(
            d.ops.ops.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["1", "y"]
        );
        assert_eq!((d.mark, d.quarantine), (5, Some(5)));
        // The issue's jsonb row: a v2 state whose members jsonb reordered.
        let jsonb = r#"{"v": 2, "ops": {}, "mark": "8", "holder": "node-a", "evicted": null}"#;
        let mut expected = ResourceState::at(8);
        expected.holder = Some("node-a".to_owned());
        assert_eq!(ResourceState::from_json(jsonb), Ok(expected));
        assert_eq!(
            ResourceState::from_json(r#"{"mark":"41","v":1}"#),
            Ok(ResourceState::at(41))
        );
    }

    /// A filter read from format 2/3 keeps its hash (so its ids are still
    /// found) and is written back tagged; a new epoch drops it.
    #[test]
    fn legacy_filter_survives_the_format_change() {
        let mut old = ResourceState::at(5);
        old.ops.legacy_hash = true;
        for id in ["a", "b", "c", "d"] {
            old.ops.push(rec(id, 5), 3);
        }
        let v4 = old.to_json();
        assert!(v4.contains(r#""evicted":"fnv1a:"#), "{v4}");
        assert_eq!(ResourceState::from_json(&v4), Ok(old.clone()));
        assert_eq!(old.ops.seen("a"), crate::ops::Seen::Expired);
        old.ops.clear();
        assert!(!old.ops.legacy_hash);
        for bad in [
            r#"{"v":2,"mark":"5","holder":null,"ops":{},"evicted":"fnv1a:00"}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[],"evicted":"fnv1a:00","quarantine":null}"#,
        ] {
            assert!(ResourceState::from_json(bad).is_err(), "{bad}");
        }
    }

    /// Every text of formats 1–3 that the build before format 4 wrote (or
    /// accepted) decodes as it did then (tests/fixtures/state-v1-v3.json).
    #[test]
    fn v1_to_v3_fixture_decodes_as_before() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/state-v1-v3.json"
        ))
        .unwrap();
        let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
        let cases = fixture["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 16);
        for case in cases {
            let text = case["text"].as_str().unwrap();
            let s = ResourceState::from_json(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let want = &case["decoded"];
            let mark = match &want["mark"] {
                serde_json::Value::Number(n) => n.as_u64().unwrap(),
                m => m.as_str().unwrap().trim_end_matches('n').parse().unwrap(),
            };
            assert_eq!(s.mark, mark, "{text}");
            if let Some(ids) = want.get("opIds") {
                let ids: Vec<&str> = ids
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap())
                    .collect();
                assert_eq!(
                    s.ops.ops.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
                    ids
                );
                assert_eq!(s.holder.as_deref(), want["holder"].as_str());
            } else {
                assert!(s.holder.is_none() && s.ops.ops.is_empty());
            }
            assert_eq!(
                s.quarantine,
                want.get("quarantine").and_then(serde_json::Value::as_u64)
            );
            assert_eq!(s.ops.legacy_hash, s.ops.evicted.is_some(), "{text}");
            // Written back as v4 (or v1), it decodes to the same state.
            assert_eq!(ResourceState::from_json(&s.to_json()), Ok(s.clone()));
        }
    }

    #[test]
    fn damaged_state_is_corrupt_never_empty() {
        for bad in [
            r#"{"v":5,"mark":"41"}"#,
            r#"{"v":0,"mark":"41"}"#,
            r#"{"v":4,"mark":"41"}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[],"evicted":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":{},"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","5","00"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","5","9F86D081884C7D659A2FEAA0C55AD015"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","5","9f86d081884c7d659a2feaa0c55ad015","x"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a",5]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","5"],["a","5"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","4"],["b","3"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[["a","6"]],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":["a"],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[],"evicted":null,"quarantine":null,"x":1}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[],"evicted":null,"quarantine":null,"v":4}"#,
            r#"{"v":4,"mark":"05","holder":null,"ops":[],"evicted":null,"quarantine":null}"#,
            r#"{"v":04,"mark":"5","holder":null,"ops":[],"evicted":null,"quarantine":null}"#,
            r#"{"v":4.0,"mark":"5","holder":null,"ops":[],"evicted":null,"quarantine":null}"#,
            r#"{"v":4,"mark":"5","holder":null,"ops":[],"evicted":null,"quarantine":"6"}"#,
            r#"{"mark":"1","v":1,"holder":null}"#,
            r#"{"mark":"1","mark":"1","v":1}"#,
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
