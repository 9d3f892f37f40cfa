//! The resource side of the binding (feature `resource`, the default module
//! `fencegate_bg.wasm`): the names and limits table, token and state
//! conversions, the request transport (input buffer and output scratch) that
//! `__gate_decide` ([`super::gate`]) and [`RawMemoryGate::apply`] share, and
//! the in-memory gate.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::signed::{self, RawPolicy};
use super::{epoch_to_js, error, gate, message_of, token_from_js};
use crate::decision::{
    decide, settle, settle_op_advance, settle_plain, OpMeta, Operation, SameEpoch, Verdict,
};
use crate::error::{Code, StateError, TokenError};
use crate::ops::FINGERPRINT_BYTES;
use crate::policy::Presented;
use crate::signed::Claims;
use crate::state::ResourceState;
use crate::store::{apply_to, quarantined, Entry};
use crate::token::{epoch_from_f64, epoch_from_u64, parse_token, MAX_SAFE_INTEGER};

/// The names and limits the JS wrapper needs, read once when the module is
/// instantiated so that no table or limit is written twice (issue 12):
///
/// * `codes`: every stable code string, indexed by the hot-path status (`status - 2`);
/// * `outcomes`: the outcome names; `duplicateStatus`: the first duplicate status;
/// * `higherEpochModes`: mode names by the number `RawPolicy` takes;
/// * `algorithms`: algorithm names by `claims_alg` (index 0: `null`);
/// * `maxTokenText`: the longest signed-token text (UTF-16 units = bytes, ASCII);
/// * `maxKeyBytes`: the longest resource key / scope in UTF-8 bytes;
/// * `maxWindow`, `defaultWindow`: the `opWindow` bounds;
/// * `leaseKeyBytes`: the random bytes an issuer's `acquire` takes;
/// * `maxHolderBytes`, `maxOpIdBytes`: the longest holder and operation id in UTF-8 bytes;
/// * `scratch`: the slot names of the output scratch, in order ([`SCRATCH`]);
/// * `requestFlags`: the flag names of a decision request, bit 0 first ([`REQUEST_FLAGS`]).
#[wasm_bindgen(js_name = "__tables")]
pub fn tables() -> Object {
    use crate::decision::{Outcome, DUPLICATE_STATUS};
    use crate::signed::{Algorithm, MAX_SCOPE_LEN, MAX_TEXT_LEN};
    let names = |it: &mut dyn Iterator<Item = &'static str>| -> JsValue {
        it.map(JsValue::from_str).collect::<Array>().into()
    };
    let algorithms = (1..=u8::MAX)
        .map_while(Algorithm::from_byte)
        .map(|a| JsValue::from_str(a.as_str()));
    let duplicate = Outcome::Duplicate {
        original_advanced: false,
        original_before: 0,
    };
    let outcomes = [
        Outcome::Advance,
        Outcome::Accept,
        Outcome::Reject,
        duplicate,
    ];
    let fields: [(&str, JsValue); 16] = [
        ("scratch", names(&mut SCRATCH.iter().copied())),
        ("requestFlags", names(&mut REQUEST_FLAGS.iter().copied())),
        ("codes", names(&mut Code::ALL.iter().map(|c| c.as_str()))),
        (
            "outcomes",
            names(&mut outcomes.into_iter().map(Outcome::as_str)),
        ),
        ("duplicateStatus", DUPLICATE_STATUS.into()),
        (
            "higherEpochModes",
            names(&mut signed::HIGHER_EPOCH_MODES.iter().map(|m| m.as_str())),
        ),
        (
            "algorithms",
            std::iter::once(JsValue::NULL)
                .chain(algorithms)
                .collect::<Array>()
                .into(),
        ),
        ("maxTokenText", (MAX_TEXT_LEN as u32).into()),
        ("maxKeyBytes", (MAX_SCOPE_LEN as u32).into()),
        ("maxWindow", (crate::ops::MAX_WINDOW as u32).into()),
        ("defaultWindow", (crate::ops::DEFAULT_WINDOW as u32).into()),
        (
            "leaseKeyBytes",
            (crate::issuer::LEASE_KEY_BYTES as u32).into(),
        ),
        (
            "maxHolderBytes",
            (crate::ops::MAX_HOLDER_BYTES as u32).into(),
        ),
        ("maxOpIdBytes", (crate::ops::MAX_OP_ID_BYTES as u32).into()),
        (
            "maxRequestIdBytes",
            (crate::issuer::MAX_REQUEST_ID_BYTES as u32).into(),
        ),
        (
            "maxLeaseIdBytes",
            (crate::signed::MAX_LEASE_ID_LEN as u32).into(),
        ),
    ];
    let out = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&out, &JsValue::from_str(k), &v);
    }
    out
}

fn token_error(e: &TokenError, token: &JsValue) -> JsValue {
    error(e.code(), &message_of(&e), &[("token", token.clone())])
}

fn state_error(e: &StateError) -> JsValue {
    error(Code::CorruptState, &message_of(&e), &[])
}

/// Validates any JS value as a fencing token and returns the canonical epoch
/// (number ≤ 2^53−1, bigint above). Throws MISSING_TOKEN / MALFORMED_TOKEN.
#[wasm_bindgen(js_name = "toToken")]
pub fn to_token(value: JsValue) -> Result<JsValue, JsValue> {
    token_from_js(&value)
        .map(epoch_to_js)
        .map_err(|e| token_error(&e, &value))
}

/// Parses header/JSON text with the canonical decimal grammar `[1-9][0-9]*`
/// (≤ 2^64−1). Throws MISSING_TOKEN for undefined/null, MALFORMED_TOKEN otherwise.
#[wasm_bindgen(js_name = "parseToken")]
pub fn parse_token_js(text: JsValue) -> Result<JsValue, JsValue> {
    if text.is_undefined() || text.is_null() {
        return Err(token_error(&TokenError::Missing, &text));
    }
    let Some(s) = text.as_string() else {
        return Err(token_error(
            &TokenError::Malformed("parseToken takes a string"),
            &text,
        ));
    };
    parse_token(&s)
        .map(epoch_to_js)
        .map_err(|e| token_error(&e, &text))
}

/// Decodes persisted state (the wire object, or its JSON text), format v1 to v4.
/// Objects are turned into JSON text first, so one decoder
/// ([`ResourceState::from_json`]) reads every form.
pub(crate) fn decode_state_js(value: &JsValue) -> Result<ResourceState, StateError> {
    if let Some(text) = value.as_string() {
        return ResourceState::from_json(&text);
    }
    if !value.is_object() || Array::is_array(value) {
        return Err(StateError(
            "state must be an object {v, mark, …} or its JSON text".to_owned(),
        ));
    }
    let text = js_sys::JSON::stringify(value)
        .ok()
        .and_then(|t| t.as_string())
        .ok_or_else(|| StateError("state object cannot be turned into JSON".to_owned()))?;
    ResourceState::from_json(&text)
}

/// The wire object of a state (parsed from its JSON text).
pub(crate) fn state_to_js(state: &ResourceState) -> JsValue {
    js_sys::JSON::parse(&state.to_json()).unwrap_or(JsValue::UNDEFINED)
}

/// Decodes persisted state (`{"v":1,"mark":"41"}` as an object or JSON text)
/// and returns `{ mark }`. Throws CORRUPT_STATE for anything else.
#[wasm_bindgen(js_name = "decodeState")]
pub fn decode_state(value: JsValue) -> Result<JsValue, JsValue> {
    let state = decode_state_js(&value).map_err(|e| state_error(&e))?;
    let out = Object::new();
    let _ = Reflect::set(&out, &JsValue::from_str("mark"), &epoch_to_js(state.mark));
    if state.holder.is_some() || !state.ops.is_empty() {
        let holder = state
            .holder
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str);
        let _ = Reflect::set(&out, &JsValue::from_str("holder"), &holder);
        let ops: Array = state
            .ops
            .ops
            .iter()
            .map(|r| JsValue::from_str(&r.id))
            .collect();
        let _ = Reflect::set(&out, &JsValue::from_str("opIds"), &ops);
    }
    if let Some(floor) = state.quarantine {
        let _ = Reflect::set(&out, &JsValue::from_str("quarantine"), &epoch_to_js(floor));
    }
    Ok(out.into())
}

/// A quarantine floor: 0, or an epoch (number ≤ 2^53−1 or bigint ≤ 2^64−1).
pub(crate) fn floor_from_js(value: &JsValue) -> Result<u64, JsValue> {
    match token_from_js(value) {
        Ok(f) => Ok(f),
        Err(_) if value.as_f64() == Some(0.0) || *value == 0u64 => Ok(0),
        Err(e) => Err(error(
            Code::InvalidArgument,
            &format!("a quarantine floor must be 0 or an epoch ({e})"),
            &[("floor", value.clone())],
        )),
    }
}

/// Encodes a mark (a number or bigint ≥ 0) as the persisted wire object
/// `{ v: 1, mark: "<decimal>" }`.
#[wasm_bindgen(js_name = "encodeState")]
pub fn encode_state(mark: JsValue) -> Result<JsValue, JsValue> {
    let mark = match token_from_js(&mark) {
        Ok(m) => m,
        Err(_) if mark.as_f64() == Some(0.0) || mark == 0u64 => 0,
        Err(e) => {
            return Err(error(
                Code::InvalidArgument,
                &format!("encodeState: mark must be an epoch or 0 ({e})"),
                &[("mark", mark)],
            ))
        }
    };
    Ok(state_to_js(&ResourceState::at(mark)))
}

/// The slots of the output scratch, in order (`__tables().scratch`). A
/// decision leaves its whole result here, so the JS side reads it through a
/// `Float64Array` / `BigUint64Array` over Wasm memory instead of more calls:
/// the marks, status and validated token (f64, −1 when above 2^53−1, then
/// exactly as u64 in the `…Exact` slot; a token of −2: none), the verified
/// claims (algorithm byte, 0 = none; the UTF-16 lengths of `kid` and `scope`
/// inside the claims text; epoch and generation), and where the output text
/// lies in Wasm memory: the claims text (`kid + scope + leaseId`) followed by
/// the next state's JSON when it is not plain format v1.
pub(crate) const SCRATCH: [&str; 17] = [
    "before",
    "after",
    "beforeExact",
    "afterExact",
    "status",
    "token",
    "tokenExact",
    "alg",
    "kidLen",
    "scopeLen",
    "epoch",
    "epochExact",
    "generation",
    "generationExact",
    "textPtr",
    "claimsBytes",
    "nextBytes",
];

/// Output only: nothing here is read back by a later call. Stored as bits in
/// atomics so no `unsafe` is needed; wasm32 has one thread.
static SCRATCH_SLOTS: [AtomicU64; 17] = [const { AtomicU64::new(0) }; 17];

thread_local! {
    /// The input buffer: the JS side writes a request's text (UTF-8) and a
    /// fingerprint's bytes here right before the call that reads them, so a
    /// request crosses in that one call with no allocation (see [`input_buffer`]).
    static IN_TEXT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    /// The bytes of the last decision's output text (see [`SCRATCH`]); a
    /// transport buffer, overwritten by the next decision and never read by Rust.
    static OUT_TEXT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Makes the input buffer at least `bytes` long and returns its address. The
/// JS side calls this only when a request needs more room than it has (the
/// address stays valid until the next call of this function: Wasm memory
/// never moves). Like the scratch it is transport only: each call that reads
/// it is told how many bytes its request wrote.
#[wasm_bindgen(js_name = "__inputBuffer")]
pub fn input_buffer(bytes: usize) -> usize {
    let mut buf = IN_TEXT.with(Cell::take);
    if buf.len() < bytes {
        buf = vec![0; bytes.next_power_of_two()];
    }
    let ptr = buf.as_ptr() as usize;
    IN_TEXT.with(|b| b.set(buf));
    ptr
}

/// Runs `f` on a request's text (the input buffer's first `text_bytes`
/// bytes) and fingerprint (the next `fingerprint_bytes`, when the request
/// has one). Text that is not UTF-8 or lengths beyond the buffer (which the
/// JS side never writes) read as empty.
pub(crate) fn with_input<R>(
    text_bytes: u32,
    fingerprint_bytes: Option<u32>,
    f: impl FnOnce(&str, Option<&[u8]>) -> R,
) -> R {
    let buf = IN_TEXT.with(Cell::take);
    let (t, rest) = buf.split_at(buf.len().min(text_bytes as usize));
    let text = std::str::from_utf8(t).unwrap_or("");
    let fp = fingerprint_bytes.map(|n| &rest[..rest.len().min(n as usize)]);
    let r = f(text, fp);
    IN_TEXT.with(|b| b.set(buf));
    r
}

/// The address of the scratch in Wasm memory (see [`SCRATCH`]).
#[wasm_bindgen(js_name = "__marksPtr")]
pub fn marks_ptr() -> usize {
    SCRATCH_SLOTS.as_ptr() as usize
}

fn put_f64(slot: usize, value: f64) {
    SCRATCH_SLOTS[slot].store(value.to_bits(), Ordering::Relaxed);
}

/// An epoch in the slot pair `slot` (f64, −1 above 2^53−1) and `slot + 1` (u64).
fn put_epoch(slot: usize, epoch: u64) {
    put_f64(slot, small(epoch));
    SCRATCH_SLOTS[slot + 1].store(epoch, Ordering::Relaxed);
}

/// Leaves marks (and status) in the scratch: quarantine and inspect.
pub(crate) fn put_marks(before: u64, after: u64, status: u32) {
    put_f64(0, small(before));
    put_f64(1, small(after));
    SCRATCH_SLOTS[2].store(before, Ordering::Relaxed);
    SCRATCH_SLOTS[3].store(after, Ordering::Relaxed);
    put_f64(4, f64::from(status));
}

/// Leaves a decision's whole result in the scratch (see [`SCRATCH`]): the
/// verdict, the verified claims, and the next state's JSON when the decision
/// applies and the next state is not plain format v1 (the JS side spells
/// `{ v: 1, mark: markAfter }` itself: a string made here and parsed there
/// costs more than the whole decision).
pub(crate) fn put_verdict(v: &Verdict, claims: Option<&Claims>, next: Option<&ResourceState>) {
    put_marks(v.mark_before, v.mark_after, v.status());
    match v.token {
        Some(t) => put_epoch(5, t),
        None => put_f64(5, -2.0),
    }
    put_claims(claims, next.filter(|n| v.applies() && !n.is_plain()));
}

/// Leaves a verified token's claims (none: algorithm 0) and a next state's
/// JSON in the scratch and the output text.
pub(crate) fn put_claims(claims: Option<&Claims>, next: Option<&ResourceState>) {
    let Some(c) = claims else {
        put_f64(7, 0.0);
        match next {
            Some(n) => put_text(0, n.to_json().as_bytes()),
            None => put_f64(16, 0.0),
        }
        return;
    };
    put_f64(7, f64::from(c.alg.byte()));
    put_f64(8, c.kid.len() as f64);
    put_f64(9, c.scope.encode_utf16().count() as f64);
    put_epoch(10, c.epoch);
    put_epoch(12, c.generation);
    let text = [c.kid.as_str(), &c.scope, &c.lease_id].concat();
    let mut bytes = text.into_bytes();
    let claims_bytes = bytes.len();
    if let Some(n) = next {
        bytes.extend_from_slice(n.to_json().as_bytes());
    }
    put_text(claims_bytes, &bytes);
}

/// Copies `bytes` into the output buffer and records where they are;
/// `claims_bytes` of them are the claims text, the rest the next state.
fn put_text(claims_bytes: usize, bytes: &[u8]) {
    let mut out = OUT_TEXT.with(Cell::take);
    out.clear();
    out.extend_from_slice(bytes);
    put_f64(14, out.as_ptr() as usize as f64);
    put_f64(15, claims_bytes as f64);
    put_f64(16, (out.len() - claims_bytes) as f64);
    OUT_TEXT.with(|o| o.set(out));
}

pub(crate) fn small(epoch: u64) -> f64 {
    if epoch <= MAX_SAFE_INTEGER {
        epoch as f64
    } else {
        -1.0
    }
}

/// The flag bits of a decision request, bit 0 first (`__tables().requestFlags`):
/// `establish` (else write), `strict` (same-epoch rule of a host-store gate),
/// `state` (the packed text ends with the stored state's text), the token's
/// lane — `exact` (a bigint in 0..=2^64−1 in `exact`), `text` (a signed
/// token's text and the scope at the start of the packed text), `other` (any
/// other value: `number` 0 when it is missing, undefined or null, else 1:
/// malformed), else a number in `number` —, then
/// `opId` and `holder` (in the packed text), and `ceiling` / `ceilingExact`
/// (this decision's reject-future ceiling in `ceiling` or `ceiling_exact`;
/// −1: none), `fingerprint` (the operation's fingerprint bytes follow the
/// text in the input buffer), `hostVerified` (the host verified the signed
/// token's Ed25519 signature with WebCrypto: `Presented::HostVerified`).
pub(crate) const REQUEST_FLAGS: [&str; 12] = [
    "establish",
    "strict",
    "state",
    "exact",
    "text",
    "other",
    "opId",
    "holder",
    "ceiling",
    "ceilingExact",
    "fingerprint",
    "hostVerified",
];

pub(crate) const ESTABLISH: u32 = 1;
pub(crate) const STRICT: u32 = 1 << 1;
const STATE: u32 = 1 << 2;
const EXACT: u32 = 1 << 3;
const TEXT: u32 = 1 << 4;
const OTHER: u32 = 1 << 5;
const OP_ID: u32 = 1 << 6;
const HOLDER: u32 = 1 << 7;
const CEILING: u32 = 1 << 8;
const CEILING_EXACT: u32 = 1 << 9;
pub(crate) const FINGERPRINT: u32 = 1 << 10;
const HOST_VERIFIED: u32 = 1 << 11;

/// The first `units` UTF-16 code units of `s`, and the rest (JS measures the
/// packed pieces in UTF-16 units; they are ASCII almost always).
fn split_utf16(s: &str, units: u32) -> (&str, &str) {
    let units = units as usize;
    if let Some((head, tail)) = s.split_at_checked(units) {
        if head.is_ascii() {
            return (head, tail);
        }
    }
    let mut n = 0;
    for (i, c) in s.char_indices() {
        if n >= units {
            return (s.get(..i).unwrap_or(s), s.get(i..).unwrap_or(""));
        }
        n += c.len_utf16();
    }
    (s, "")
}

/// One decision request as the JS side packs it: every text (a signed
/// token's text and the scope, the operation id, the holder, the stored
/// state, in that order) in one string written to the input buffer
/// ([`with_input`]), so the call that decides carries them all; the token in
/// its lane; the per-operation options.
pub(crate) struct Request<'a> {
    pub presented: Presented<'a>,
    pub scope: &'a str,
    pub op_id: Option<&'a str>,
    pub holder: Option<&'a str>,
    pub state: Option<&'a str>,
    /// This decision's ceiling (`None`: the policy's own).
    pub ceiling: Option<Option<u64>>,
}

/// The lengths (UTF-16 units) of the packed texts: token, scope, op id, holder.
pub(crate) type Lengths = [u32; 4];

impl<'a> Request<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn unpack(
        text: &'a str,
        flags: u32,
        lens: Lengths,
        number: f64,
        exact: u64,
        ceiling: f64,
        ceiling_exact: u64,
    ) -> Request<'a> {
        let (token_text, rest) = split_utf16(text, if flags & TEXT != 0 { lens[0] } else { 0 });
        let (scope, rest) = split_utf16(rest, if flags & TEXT != 0 { lens[1] } else { 0 });
        let (op_id, rest) = split_utf16(rest, if flags & OP_ID != 0 { lens[2] } else { 0 });
        let (holder, rest) = split_utf16(rest, if flags & HOLDER != 0 { lens[3] } else { 0 });
        let presented = if flags & TEXT != 0 && flags & HOST_VERIFIED != 0 {
            Presented::HostVerified(token_text)
        } else if flags & TEXT != 0 {
            Presented::Signed(token_text)
        } else if flags & EXACT != 0 {
            Presented::Plain(epoch_from_u64(exact))
        } else if flags & OTHER != 0 {
            // Verdicts carry the code only, so the JS side says which of the
            // two this value is (`number` 0: missing) instead of handing it over.
            Presented::Plain(Err(if number == 0.0 {
                TokenError::Missing
            } else {
                TokenError::Malformed("a token must be a number or a bigint")
            }))
        } else {
            Presented::Plain(epoch_from_f64(number))
        };
        let own = if flags & CEILING_EXACT != 0 {
            Some(ceiling_exact)
        } else if ceiling >= 0.0 {
            Some(ceiling as u64)
        } else {
            None
        };
        let ceiling = (flags & CEILING != 0).then_some(own);
        Request {
            presented,
            scope,
            op_id: (flags & OP_ID != 0).then_some(op_id),
            holder: (flags & HOLDER != 0).then_some(holder),
            state: (flags & STATE != 0).then_some(rest),
            ceiling,
        }
    }

    /// The operation metadata, checked (INVALID_ARGUMENT, see [`gate::check_meta`]).
    pub(crate) fn meta(
        &self,
        window: u32,
        fingerprint: Option<&[u8]>,
    ) -> Result<OpMeta<'a>, JsValue> {
        if self.op_id.is_some()
            || self.holder.is_some()
            || window as usize != crate::ops::DEFAULT_WINDOW
        {
            gate::check_meta(self.op_id, self.holder, window)?;
        }
        let fingerprint: Option<[u8; FINGERPRINT_BYTES]> =
            gate::fingerprint_of(self.op_id, fingerprint)?;
        Ok(OpMeta {
            op_id: self.op_id,
            holder: self.holder,
            window: window as usize,
            fingerprint,
        })
    }
}

/// The embedded in-memory gate's marks, one per key, decided here. Keys are
/// interned to `u32` slots by the JS wrapper (`MemoryGate` in
/// `pkg/lib/core.mjs`), which also holds the values: it stores a write's value
/// in the same synchronous call, only when the status returned here says the
/// write applied, so check and change are still one step with no await or
/// throw between them. A number token passes no strings and no `JsValue`s.
///
/// The JS side hands out slots 0, 1, 2… in order, so the states are a
/// vector indexed by slot (a hash map of slots cost a lookup per decision);
/// `None`: the slot has no state yet. Check and apply follow
/// [`MemoryStore::apply_claimed`](crate::store::MemoryStore::apply_claimed):
/// a verdict that does not apply changes nothing, a new slot gets state
/// only when the verdict applies.
#[wasm_bindgen]
pub struct RawMemoryGate {
    same_epoch: SameEpoch,
    slots: Vec<Option<Entry<()>>>,
}

#[wasm_bindgen]
impl RawMemoryGate {
    /// A gate with the same-epoch rule `"allow"` (false) or `"strict"` (true).
    #[wasm_bindgen(constructor)]
    pub fn new(strict: bool) -> RawMemoryGate {
        let same_epoch = if strict {
            SameEpoch::Strict
        } else {
            SameEpoch::Allow
        };
        RawMemoryGate {
            same_epoch,
            slots: Vec::new(),
        }
    }

    /// The numeric lane of a gate without policy options: one write or
    /// establish (`flags` bit `establish`) on `slot` with a number token and
    /// no operation options, decided by the plain fence check (the verdict
    /// [`GatePolicy::admit`](crate::policy::GatePolicy::admit) gives a plain
    /// policy, without its provenance steps). Returns the status like
    /// [`RawMemoryGate::apply`]; the marks and the token are in the scratch.
    /// Three arguments and no `i64`: the JS side calls it for every plain
    /// number write.
    pub fn fence(&mut self, slot: u32, flags: u32, number: f64) -> u32 {
        self.fence_token(slot, flags, epoch_from_f64(number))
    }

    /// [`RawMemoryGate::fence`] for a bigint token in 0..=2^64−1.
    pub fn fence_exact(&mut self, slot: u32, flags: u32, exact: u64) -> u32 {
        self.fence_token(slot, flags, epoch_from_u64(exact))
    }

    /// [`RawMemoryGate::fence`] with an operation id (the first `op_bytes`
    /// bytes of the input buffer) and the gate's `window`: the numeric lane
    /// of a write with only an `opId`, which needs no request unpacking and
    /// no policy. Returns [`REFUSED_STATUS`] for an invalid id or window
    /// (nothing changed), like [`RawMemoryGate::apply`].
    pub fn fence_op(
        &mut self,
        slot: u32,
        flags: u32,
        number: f64,
        op_bytes: u32,
        window: u32,
    ) -> u32 {
        with_input(op_bytes, None, |id, _| {
            if !crate::ops::valid_op_id(id)
                || window == 0
                || window as usize > crate::ops::MAX_WINDOW
            {
                return REFUSED_STATUS;
            }
            let meta = OpMeta {
                op_id: Some(id),
                holder: None,
                window: window as usize,
                fingerprint: None,
            };
            let token = epoch_from_f64(number);
            let same_epoch = self.same_epoch;
            if let (Some(entry), Ok(t)) = (self.slot_mut(slot), &token) {
                // The usual op-id write advances the epoch: settled without the
                // call of `settle` (anything else: `decide_plain`, from the start).
                let op = operation_of(flags);
                let epoch_verdict = decide(entry.state.mark, *t, same_epoch, op);
                if let Some(verdict) = settle_op_advance(&mut entry.state, epoch_verdict, op, id) {
                    entry.value = Some(()); // an advancing write
                    put_verdict(&verdict, None, None);
                    return verdict.status();
                }
            }
            self.decide_plain(slot, flags, token, &meta)
        })
    }

    /// One write or establish (`flags` bit `establish`) on `slot`, in one
    /// call, whatever the token kind: the request as [`Request::unpack`]
    /// reads it (its text and fingerprint in the input buffer), decided under
    /// `policy` (the plain policy for a gate without policy options), holder
    /// and operation-id rules included. Returns the status (0 advance,
    /// 1 accept, 2 + code index reject, 256/257 duplicate), or
    /// [`REFUSED_STATUS`] when the operation options are invalid (nothing
    /// changed; `__check_meta` with the same options throws the
    /// INVALID_ARGUMENT: a `Result` here would cost every write a JS array).
    /// The rest of the result is in the scratch. The caller stores a write's
    /// value when the status is below 2. A number or bigint token with no
    /// options under the plain policy takes [`RawMemoryGate::fence`] instead.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        policy: &mut RawPolicy,
        slot: u32,
        flags: u32,
        number: f64,
        exact: u64,
        text_bytes: u32,
        token_len: u32,
        scope_len: u32,
        op_len: u32,
        holder_len: u32,
        window: u32,
        fingerprint_bytes: u32,
    ) -> u32 {
        let fp = (flags & FINGERPRINT != 0).then_some(fingerprint_bytes);
        with_input(text_bytes, fp, |text, fingerprint| {
            let lens = [token_len, scope_len, op_len, holder_len];
            let req = Request::unpack(text, flags, lens, number, exact, -1.0, 0);
            let Ok(meta) = req.meta(window, fingerprint) else {
                return REFUSED_STATUS;
            };
            let same_epoch = self.same_epoch;
            let op = operation_of(flags);
            let mut claims = None;
            let verdict = self.decide(flags, slot, &meta, |mark| {
                let (v, c) = policy.admit(mark, &req, same_epoch, op);
                let holder = signed::lease_id(&c).map(str::to_owned);
                claims = c;
                (v, holder)
            });
            put_verdict(&verdict, claims.as_ref(), None);
            verdict.status()
        })
    }

    /// The mark of `slot`, or −1 when above 2^53−1 (then use `mark_b`).
    pub fn mark_n(&self, slot: u32) -> f64 {
        small(self.mark(slot))
    }

    /// The mark of `slot`, exactly.
    pub fn mark_b(&self, slot: u32) -> u64 {
        self.mark(slot)
    }

    /// Whether a write was ever applied to `slot` (an establish alone does not count).
    pub fn has_value(&self, slot: u32) -> bool {
        self.get(slot).is_some_and(|e| e.value.is_some())
    }

    /// Whether `slot` has state (some operation was applied to it).
    pub fn has_state(&self, slot: u32) -> bool {
        self.get(slot).is_some()
    }

    /// Quarantines `slot` at `floor` (a number or bigint ≥ 0): see
    /// [`MemoryStore::quarantine`](crate::store::MemoryStore::quarantine). Returns whether anything changed; the
    /// marks before and after are in the scratch (`__marksPtr`).
    pub fn quarantine(&mut self, slot: u32, floor: JsValue) -> Result<bool, JsValue> {
        let floor = floor_from_js(&floor)?;
        let before = self.mark(slot);
        let changed = match self.slot_mut(slot) {
            Some(entry) => entry.state.quarantine_at(floor),
            None => {
                self.insert(slot, quarantined(floor));
                true
            }
        };
        put_marks(before, self.mark(slot), 0);
        Ok(changed)
    }

    /// The persisted wire form of `slot`'s state, or `undefined` when it has none.
    pub fn state(&self, slot: u32) -> JsValue {
        self.get(slot)
            .map_or(JsValue::UNDEFINED, |e| state_to_js(&e.state))
    }
}

impl RawMemoryGate {
    /// The plain fence check on `slot` (no policy, no operation options),
    /// its verdict left in the scratch.
    fn fence_token(&mut self, slot: u32, flags: u32, token: Result<u64, TokenError>) -> u32 {
        let op = operation_of(flags);
        let same_epoch = self.same_epoch;
        if let (Some(entry), Ok(t)) = (self.slot_mut(slot), &token) {
            let epoch_verdict = decide(entry.state.mark, *t, same_epoch, op);
            let verdict = match settle_plain(&mut entry.state, epoch_verdict) {
                Some(v) => v,
                None => settle(&mut entry.state, epoch_verdict, op, &OpMeta::NONE),
            };
            if verdict.applies() && matches!(op, Operation::Write) {
                entry.value = Some(());
            }
            put_verdict(&verdict, None, None);
            return verdict.status();
        }
        self.decide_plain(slot, flags, token, &OpMeta::NONE)
    }

    /// The plain fence check on `slot` with operation options `meta`
    /// (settled as every gate settles them), its verdict left in the scratch.
    /// One copy for the three numeric entries.
    #[inline(never)]
    fn decide_plain(
        &mut self,
        slot: u32,
        flags: u32,
        token: Result<u64, TokenError>,
        meta: &OpMeta<'_>,
    ) -> u32 {
        let same_epoch = self.same_epoch;
        let op = operation_of(flags);
        let verdict = self.decide(flags, slot, meta, |mark| {
            let v = match &token {
                Ok(t) => decide(mark, *t, same_epoch, op),
                Err(e) => Verdict::invalid_token(mark, e),
            };
            (v, None)
        });
        put_verdict(&verdict, None, None);
        verdict.status()
    }

    /// The check-and-apply on `slot` every entry shares
    /// ([`apply_to`](crate::store::apply_to), over the slot vector): `check`
    /// makes the epoch-level verdict and names a token's holder. Two copies
    /// in the module: the plain check (the numeric entries share
    /// [`RawMemoryGate::decide_plain`]) and the policy's; a `dyn` check cost the
    /// numeric lane about 12 ns.
    #[inline]
    fn decide(
        &mut self,
        flags: u32,
        slot: u32,
        meta: &OpMeta<'_>,
        check: impl FnOnce(u64) -> (Verdict, Option<String>),
    ) -> Verdict {
        let op = operation_of(flags);
        let value = matches!(op, Operation::Write).then_some(());
        match self.slot_mut(slot) {
            Some(entry) => apply_to(Some(entry), op, value, meta, check, |_| {}),
            None => apply_to(None, op, value, meta, check, |entry| {
                self.insert(slot, entry)
            }),
        }
    }

    fn get(&self, slot: u32) -> Option<&Entry<()>> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    fn slot_mut(&mut self, slot: u32) -> Option<&mut Entry<()>> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// The mark of `slot` (0: no state).
    fn mark(&self, slot: u32) -> u64 {
        self.get(slot).map_or(0, |e| e.state.mark)
    }

    /// Gives `slot` its first state (the vector grows to it: slots come in order).
    fn insert(&mut self, slot: u32, entry: Entry<()>) {
        let i = slot as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(entry);
    }
}

/// The status `RawMemoryGate::apply` returns for invalid operation options.
pub(crate) const REFUSED_STATUS: u32 = u32::MAX;

/// Throws the INVALID_ARGUMENT of invalid operation options (the one
/// `RawMemoryGate::apply` refused with [`REFUSED_STATUS`]); nothing when valid.
#[wasm_bindgen(js_name = "__check_meta")]
pub fn check_meta_js(
    op_id: Option<String>,
    holder: Option<String>,
    window: u32,
    fingerprint: Option<Vec<u8>>,
) -> Result<(), JsValue> {
    gate::check_meta(op_id.as_deref(), holder.as_deref(), window)?;
    gate::fingerprint_of(op_id.as_deref(), fingerprint.as_deref()).map(|_| ())
}

/// Write or establish, by the request's `establish` flag.
pub(crate) fn operation_of(flags: u32) -> Operation {
    if flags & ESTABLISH != 0 {
        Operation::Establish
    } else {
        Operation::Write
    }
}
