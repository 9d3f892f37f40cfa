//! The persisted formats as serde types, and their JSON text
//! (docs/decisions/persisted-formats-serde.md).
//!
//! * Resource state, formats v1–v4 ([`crate::state`] documents the fields):
//!   read as [`StateText`], written as [`StateOut`].
//! * Issuer record, formats v1 and v2 ([`crate::issuer`] documents the
//!   fields): [`WireIssuerState`] and [`WireLease`], both directions.
//!
//! # Text path: `serde-json-wasm` in Wasm, text in and text out
//!
//! Why this backend (measured against `serde_json` and the host's `JSON.parse`
//! handing an object over through `serde-wasm-bindgen`:
//! docs/decisions/persisted-formats-serde.md):
//!
//! * `JSON.parse` cannot keep the format's strictness: it keeps the last of
//!   two duplicate members, reads `4.0`, `1e0` and `-0` as numbers, and rounds
//!   integers above 2^53−1, so `{"v":4.0,…}` or a duplicated `mark` would be
//!   read instead of refused (`CORRUPT_STATE`). Closing that would mean a
//!   second, hand-written scan of the text in JS.
//! * Handing an object over costs one boundary read per member (and per
//!   window entry) instead of one string copy; the stores hand over text.
//! * `serde_json` is as strict but much larger in the .wasm: it
//!   carries float parsing and printing (a `1.0` where a `u64` belongs is
//!   read as a float to name it in the error) and a generic reader.
//! * `serde-json-wasm` (CosmWasm's serde_json without floats) sees duplicate
//!   struct fields, unknown fields (`deny_unknown_fields`), lone surrogates,
//!   bad escapes, trailing text and non-canonical numbers (`01`, `1.0`,
//!   `1e3`, `-0` and integers above 2^64−1 are no `u64`) by itself;
//!   canonical decimal text is checked by [`Dec`]. Three things it reads that
//!   JSON does not allow are refused before it reads the text (`not_json`).
//! * No visitor here falls back on serde's default `invalid_type`: its
//!   message formats `Unexpected::Float`, which links float printing into
//!   the .wasm.
//!
//! Absent and `null` differ in every format (a field is required, or
//! forbidden, by version): [`present`] keeps them apart.

use std::collections::VecDeque;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use crate::error::StateError;
use crate::token::parse_token;

/// The issuer record's format version written by
/// [`IssuerState::to_wire`](crate::issuer::IssuerState::to_wire) (except for a
/// version-1 lease that is renewed: see [`crate::issuer`]).
pub const ISSUER_STATE_VERSION: u64 = 2;

/// The issuer record's format version that has derived lease ids (still read).
pub const ISSUER_STATE_VERSION_1: u64 = 1;

/// A `u64` as canonical decimal text: `"0"` or `[1-9][0-9]*`, ≤ 2^64−1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dec(pub u64);

impl Serialize for Dec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 20];
        s.serialize_str(decimal_str(self.0, &mut buf))
    }
}

impl<'de> Deserialize<'de> for Dec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dec, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("canonical decimal text in 0 to 2^64-1")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Dec, E> {
                decimal(text).map(Dec).ok_or_else(|| {
                    E::custom(format_args!(
                        "{} is not canonical decimal text in 0 to 2^64-1",
                        to_text(&cut(text, 40))
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// `text` as canonical decimal (`"0"` or what [`parse_token`] accepts).
pub fn decimal(text: &str) -> Option<u64> {
    if text == "0" {
        return Some(0);
    }
    parse_token(text).ok()
}

/// `n` in decimal, written into `buf`.
#[inline(never)]
pub fn decimal_str(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[i..]).unwrap_or("0")
}

/// A field that may be absent (`None`), `null` (`Some(None)`) or a value.
/// Used with `#[serde(default)]`: serde alone reads absent and `null` alike.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A required field that may be `null` (serde alone would read an absent
/// `Option` field as `null`).
fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// A field that may be absent but never `null`.
fn some<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

// ---------------------------------------------------------------------------
// Resource state

/// A stored resource state as read: the fields of every version, each
/// `None` when absent. [`crate::state::ResourceState::from_json`] checks that
/// exactly the fields of version `v` are present and validates them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateText {
    /// The format version.
    pub v: u64,
    /// The high-water mark.
    pub mark: Dec,
    /// v2–v4: the holder or `null`.
    #[serde(default, deserialize_with = "present")]
    pub holder: Option<Option<String>>,
    /// v2–v4: the operation window (v4 an array, v2/v3 an object).
    #[serde(default)]
    pub ops: Option<OpsText>,
    /// v2–v4: the evicted-id filter as hex text, or `null`.
    #[serde(default, deserialize_with = "present")]
    pub evicted: Option<Option<String>>,
    /// v3, v4: the quarantine floor, or `null`.
    #[serde(default, deserialize_with = "present")]
    pub quarantine: Option<Option<Dec>>,
}

/// The operation window as read.
#[derive(Debug)]
pub enum OpsText {
    /// v4: `[[id, before], [id, before, fingerprint], …]`.
    List(Vec<OpText>),
    /// v2/v3: `{id: before, …}` in text order (ids unique).
    Map(Vec<(String, Dec)>),
}

/// One v4 window entry: `[id, mark before]` or `[id, mark before, fingerprint]`.
#[derive(Debug)]
pub struct OpText {
    /// The operation id.
    pub id: String,
    /// The mark before it.
    pub before: Dec,
    /// Its fingerprint as 32 lowercase hex digits.
    pub fingerprint: Option<String>,
}

impl<'de> Deserialize<'de> for OpsText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OpsText, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OpsText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of operations (v4) or an object id → mark before (v2, v3)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OpsText, A::Error> {
                let mut out = Vec::new();
                while let Some(op) = seq.next_element::<OpText>()? {
                    out.push(op);
                }
                Ok(OpsText::List(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OpsText, A::Error> {
                let mut out: Vec<(String, Dec)> = Vec::new();
                while let Some(id) = map.next_key::<String>()? {
                    if out.iter().any(|(k, _)| *k == id) {
                        return Err(de::Error::custom(format_args!(
                            "operation id {} appears twice",
                            to_text(&cut(&id, 40))
                        )));
                    }
                    let before = map.next_value::<Dec>()?;
                    out.push((id, before));
                }
                Ok(OpsText::Map(out))
            }
            // Every other JSON value: refused without serde's default
            // `invalid_type`, whose message formats floats (float printing
            // that nothing else in the .wasm needs).
            fn visit_unit<E: de::Error>(self) -> Result<OpsText, E> {
                Err(not_ops())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<OpsText, E> {
                Err(not_ops())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<OpsText, E> {
                Err(not_ops())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<OpsText, E> {
                Err(not_ops())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<OpsText, E> {
                Err(not_ops())
            }
        }
        d.deserialize_any(V)
    }
}

/// The error for `ops` that is neither an array nor an object.
#[cold]
fn not_ops<E: de::Error>() -> E {
    E::custom("ops must be an array (v4) or an object (v2, v3)")
}

impl<'de> Deserialize<'de> for OpText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OpText, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OpText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("[id, mark before] or [id, mark before, fingerprint], all text")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OpText, A::Error> {
                let (Some(id), Some(before)) = (seq.next_element()?, seq.next_element()?) else {
                    return Err(de::Error::invalid_length(1, &self));
                };
                let fingerprint = seq.next_element()?;
                // A fourth element is refused whatever it is: read as text,
                // anything else fails already (cheaper than `IgnoredAny`,
                // which would link a skip-any-value reader).
                if seq.next_element::<String>()?.is_some() {
                    return Err(de::Error::invalid_length(4, &self));
                }
                Ok(OpText {
                    id,
                    before,
                    fingerprint,
                })
            }
        }
        d.deserialize_seq(V)
    }
}

/// A resource state as written: format v1 (`holder`… `None`) or v4 (all
/// fields, in this order).
#[derive(Serialize)]
pub struct StateOut<'a> {
    /// 1 or 4.
    pub v: u8,
    /// The high-water mark.
    pub mark: Dec,
    /// v4: the holder or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<Option<&'a str>>,
    /// v4: the window, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<OpsOut<'a>>,
    /// v4: the filter (`"fnv1a:"`-prefixed for a v2/v3 filter) or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted: Option<Option<String>>,
    /// v4: the quarantine floor or `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Option<Dec>>,
}

/// The v4 window as written: `[[id, before], [id, before, fingerprint], …]`.
pub struct OpsOut<'a>(pub &'a VecDeque<crate::ops::OpRecord>);

impl Serialize for OpsOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            seq.serialize_element(&OpOut(r))?;
        }
        seq.end()
    }
}

struct OpOut<'a>(&'a crate::ops::OpRecord);

impl Serialize for OpOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut seq = s.serialize_seq(Some(2 + usize::from(r.fingerprint.is_some())))?;
        seq.serialize_element(&r.id)?;
        seq.serialize_element(&Dec(r.mark_before))?;
        if let Some(fp) = &r.fingerprint {
            seq.serialize_element(&hex(fp))?;
        }
        seq.end()
    }
}

/// `bytes` as lowercase hex.
#[inline(never)]
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

// ---------------------------------------------------------------------------
// Issuer record

/// A persisted issuer record as text fields, before validation
/// ([`crate::issuer::IssuerState::from_wire`]): exactly `v`, `epoch` and
/// `lease`, in any order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireIssuerState {
    /// Format version, 1 or 2.
    pub v: u64,
    /// The last epoch issued, canonical decimal text.
    pub epoch: String,
    /// The lease or `null` (required, may be null).
    #[serde(deserialize_with = "nullable")]
    pub lease: Option<WireLease>,
}

/// A lease as text fields, before validation. `id` and `ttl_ms` are present
/// in format 2 and absent in format 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WireLease {
    /// The lease id (format 2).
    #[serde(
        default,
        deserialize_with = "some",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// Holder id.
    pub holder: String,
    /// Expiry (ms) as canonical decimal text.
    pub expires_at: String,
    /// The acquiring ttl (ms) as canonical decimal text (format 2).
    #[serde(
        default,
        deserialize_with = "some",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_ms: Option<String>,
    /// Request id or `null` (required, may be null).
    #[serde(deserialize_with = "nullable")]
    pub request_id: Option<String>,
}

impl WireIssuerState {
    /// Reads the JSON text of a record: exactly the fields `v` (the integer 1
    /// or 2), `epoch` (a string) and `lease` (`null`, or an object: in format
    /// 1 exactly `holder`, `expiresAt` (strings) and `requestId` (a string or
    /// `null`); in format 2 also `id` and `ttlMs` (strings)), members in any order.
    pub fn from_json(text: &str) -> Result<WireIssuerState, StateError> {
        let wire: WireIssuerState =
            from_text(text).map_err(|e| StateError(format!("issuer state: {e}")))?;
        let v2 = match wire.v {
            ISSUER_STATE_VERSION_1 => false,
            ISSUER_STATE_VERSION => true,
            other => {
                return Err(StateError(format!(
                    "unsupported issuer state format version {other} (this build reads versions 1 and 2)"
                )))
            }
        };
        if let Some(l) = &wire.lease {
            if l.id.is_some() != v2 || l.ttl_ms.is_some() != v2 {
                return Err(StateError(format!(
                    "issuer lease of format version {} has exactly the fields {}",
                    wire.v,
                    if v2 {
                        "id, holder, expiresAt, ttlMs, requestId"
                    } else {
                        "holder, expiresAt, requestId"
                    }
                )));
            }
        }
        Ok(wire)
    }

    /// The JSON text, fields in the documented order (`id` and `ttlMs` only when present).
    pub fn to_json(&self) -> String {
        to_text(self)
    }
}

// ---------------------------------------------------------------------------
// Text

/// Reads one value of `T` from JSON text (nothing but whitespace after it).
pub fn from_text<T: serde::de::DeserializeOwned>(
    text: &str,
) -> Result<T, serde_json_wasm::de::Error> {
    if not_json(text.as_bytes()) {
        return Err(serde_json_wasm::de::Error::Custom(
            "a raw control character in a string, a comma after `[`, or an escaped high surrogate without an escaped low one".to_owned(),
        ));
    }
    serde_json_wasm::from_str(text)
}

/// Whether `text` has one of the three things `serde-json-wasm` 1.0.1
/// reads although JSON does not allow them (serde_json and the hand-written
/// reader before it refused all three; `strictness_is_kept` holds each):
///
/// * a raw U+0000–U+001F inside a string (it checks only strings that hold
///   an escape);
/// * a comma right after `[` (`[,1]` reads as `[1]`; found by `scripts/fuzz.sh`);
/// * an escaped high surrogate not directly followed by an escaped low one
///   (`"\ud800\n\udc00"` reads as a newline and U+10000).
///
/// Not a JSON reader: it follows quotes and backslashes only, and leaves
/// everything else to `serde-json-wasm`.
fn not_json(text: &[u8]) -> bool {
    let (mut in_string, mut after_bracket, mut i) = (false, false, 0);
    while let Some(&b) = text.get(i) {
        i += 1;
        match (in_string, b) {
            (true, 0..=0x1f) => return true,
            (true, b'"') => in_string = false,
            (true, b'\\') => {
                // text[i] is the escaped character; `\uD800`–`\uDBFF` must be
                // followed by `\uDC00`–`\uDFFF`.
                let high = matches!(
                    text.get(i..i + 3),
                    Some([b'u', b'd' | b'D', b'8' | b'9' | b'a' | b'b' | b'A' | b'B'])
                );
                let low = matches!(
                    text.get(i + 5..i + 9),
                    Some([b'\\', b'u', b'd' | b'D', b'c'..=b'f' | b'C'..=b'F'])
                );
                if high && !low {
                    return true;
                }
                i += 1;
            }
            (true, _) | (false, b' ' | b'\t' | b'\n' | b'\r') => {}
            (false, b',') if after_bracket => return true,
            (false, _) => {
                in_string = b == b'"';
                after_bracket = b == b'[';
            }
        }
    }
    false
}

/// The JSON text of `value`, strings escaped exactly as the formats were
/// always written: `"`, `\`, `\n`, `\r`, `\t` with a backslash, every other
/// control character as `\u00xx` (lowercase), everything else as is.
/// `serde-json-wasm` writes U+0008 and U+000C as `\b` and `\f` and the other
/// `\u00XX` in uppercase; both are rewritten here.
pub fn to_text<T: Serialize + ?Sized>(value: &T) -> String {
    // Serializing into a Vec fails only if a Serialize impl fails; ours do not.
    let text = serde_json_wasm::to_vec(value).unwrap_or_default();
    let mut out = Vec::with_capacity(text.len() + 8);
    // Every backslash in JSON text starts an escape: `\` and one character;
    // `hex` counts the digits of a `\u` escape still to come.
    let (mut escape, mut hex) = (false, 0);
    for &b in &text {
        match (escape, b) {
            (true, b'b') => out.extend_from_slice(b"u0008"),
            (true, b'f') => out.extend_from_slice(b"u000c"),
            (true, b'u') => {
                hex = 4;
                out.push(b);
            }
            _ if hex > 0 => {
                hex -= 1;
                out.push(b.to_ascii_lowercase());
            }
            _ => out.push(b),
        }
        escape = !escape && hex == 0 && b == b'\\';
    }
    // The text is UTF-8, and only ASCII was replaced.
    String::from_utf8(out).unwrap_or_default()
}

/// `s` as a JSON string literal: how messages quote names and texts (not
/// `{:?}`, whose escaping brings core's Unicode tables into the `.wasm`).
/// The same escaping as the persisted formats ([`to_text`]).
pub fn quoted(s: &str) -> String {
    to_text(s)
}

/// At most `max` characters of `text` (error messages never quote long input).
#[inline(never)]
pub(crate) fn cut(text: &str, max: usize) -> String {
    // `get`, not `&text[..i]`: `i` is a char boundary, but indexing would link
    // core's `slice_error_fail` and its formatting (docs/decisions/wasm-size.md).
    match text
        .char_indices()
        .nth(max)
        .and_then(|(i, _)| text.get(..i))
    {
        Some(head) => format!("{head}…"),
        None => text.to_owned(),
    }
}

/// The TypeScript declarations of the records this module defines, as
/// `pkg/index.d.ts` publishes them (docs/decisions/generated-types.md):
/// `src/typescript.rs` renders each one there; tests/js/api/types-sync.test.mjs
/// compares their members with what the built package answers.
pub(crate) const TYPESCRIPT: &[(&str, &str)] = &[
    (
        "PersistedStateV1",
        r##"/** Format version 1. */
export interface PersistedStateV1 {
  v: 1;
  /** The high-water mark as canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  mark: string;
}"##,
    ),
    (
        "PersistedStateV2",
        r##"/** Format version 2 (read only; written before v4): v1 plus holder binding and the per-epoch operation-id window. */
export interface PersistedStateV2 {
  v: 2;
  /** The high-water mark as canonical decimal text. */
  mark: string;
  /** The holder (or signed token's lease id) that established the current epoch, or null. */
  holder: string | null;
  /** Operation ids applied in the current epoch, oldest first → the mark before each (decimal text). */
  ops: Record<string, string>;
  /** Bloom filter of ids pushed out of the window in this epoch: two 1024-bit generations (current first), 512 lowercase hex digits; or null. */
  evicted: string | null;
}"##,
    ),
    (
        "PersistedStateV3",
        r##"/** Format version 3 (read only; written before v4 while a key was quarantined): v2 plus the quarantine floor. */
export interface PersistedStateV3 extends Omit<PersistedStateV2, 'v'> {
  v: 3;
  /** The quarantine floor as decimal text (≤ mark), or null: epochs ≤ it are refused (QUARANTINED). */
  quarantine: string | null;
}"##,
    ),
    (
        "PersistedOp",
        r##"/**
 * One applied operation in format 4: `[id, markBefore]`, or `[id, markBefore,
 * fingerprint]` with the first 128 bits of the SHA-256 of the operation's
 * `fingerprint` as 32 lowercase hex digits.
 */
export type PersistedOp = [id: string, markBefore: string] | [id: string, markBefore: string, fingerprint: string];"##,
    ),
    (
        "PersistedStateV4",
        r##"/** Format version 4: written whenever a key has a holder, operation ids or a quarantine. */
export interface PersistedStateV4 {
  v: 4;
  /** The high-water mark as canonical decimal text. */
  mark: string;
  /** The holder (or signed token's lease id) that established the current epoch, or null. */
  holder: string | null;
  /** Operation ids applied in the current epoch, oldest first: an array, so hosts that reorder object members keep the order. */
  ops: PersistedOp[];
  /**
   * Bloom filter of ids pushed out of the window in this epoch: two 1024-bit
   * generations (current first), 512 lowercase hex digits; `"fnv1a:"` + 512
   * hex digits for a filter carried over from a v2/v3 state (its old hash);
   * or null.
   */
  evicted: string | null;
  /** The quarantine floor as decimal text (≤ mark), or null. */
  quarantine: string | null;
}"##,
    ),
    (
        "PersistedIssuerStateV2",
        r##"/** Issuer state format 2: the lease id (random) and the acquiring ttl are stored. */
export interface PersistedIssuerStateV2 {
  v: 2;
  /** The last epoch issued, canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  epoch: string;
  lease: {
    /** The lease id: `"<epoch>.<22 base64url characters>"` (16 random bytes). */
    id: string;
    /** Non-empty holder id. */
    holder: string;
    /** Expiry in host ms, decimal text (≤ 2^53−1). */
    expiresAt: string;
    /** The acquiring request's ttlMs, decimal text (1..2^53−1); renewals keep it. */
    ttlMs: string;
    /** The acquiring request's id, or null. */
    requestId: string | null;
  } | null;
}"##,
    ),
    (
        "PersistedIssuerStateV1",
        r##"/** Issuer state format 1 (before random lease ids): lease ids are derived, `"<scope>#<epoch>"`. */
export interface PersistedIssuerStateV1 {
  v: 1;
  /** The last epoch issued, canonical decimal text ("0" or `[1-9][0-9]*`, ≤ 2^64−1). */
  epoch: string;
  lease: {
    /** Non-empty holder id. */
    holder: string;
    /** Expiry in host ms, decimal text (≤ 2^53−1). */
    expiresAt: string;
    /** The acquiring request's id, or null. */
    requestId: string | null;
  } | null;
}"##,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every string is written as the hand-written writer did, and reads back.
        #[test]
        fn strings_round_trip(s in any::<String>()) {
            let text = to_text(&s);
            let mut want = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => want.push_str("\\\""),
                    '\\' => want.push_str("\\\\"),
                    '\n' => want.push_str("\\n"),
                    '\r' => want.push_str("\\r"),
                    '\t' => want.push_str("\\t"),
                    c if (c as u32) < 0x20 => want.push_str(&format!("\\u{:04x}", c as u32)),
                    c => want.push(c),
                }
            }
            want.push('"');
            prop_assert_eq!(&text, &want);
            let back: String = from_text(&text).unwrap();
            prop_assert_eq!(back, s);
        }
    }

    #[test]
    fn decimal_text_is_canonical() {
        for (text, want) in [
            ("\"0\"", Some(0)),
            ("\"41\"", Some(41)),
            ("\"18446744073709551615\"", Some(u64::MAX)),
            ("\"18446744073709551616\"", None),
            ("\"041\"", None),
            ("\"00\"", None),
            ("\"-1\"", None),
            ("\"+1\"", None),
            ("\" 1\"", None),
            ("\"1.0\"", None),
            ("\"\"", None),
            ("1", None),
            ("null", None),
        ] {
            let got = from_text::<Dec>(text).ok();
            assert_eq!(got, want.map(Dec), "{text}");
        }
        let mut buf = [0u8; 20];
        for n in [0, 9, 10, 41, u64::MAX] {
            assert_eq!(decimal_str(n, &mut buf), n.to_string());
        }
    }
}
