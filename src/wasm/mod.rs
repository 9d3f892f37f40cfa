//! The binding layer: the only code that knows JavaScript.
//!
//! It converts JS values to epochs (numbers and bigints on a fast path that
//! never goes through serde), calls the pure core, and turns failures into
//! `FencegateError` objects with a stable `code`. The hand-written JS wrapper in
//! `pkg/lib/core.mjs` dispatches on the token's JS type before calling in.

pub mod issuer;
mod reconcile;

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use js_sys::{Array, Function, Object, Reflect};
use rustc_hash::FxBuildHasher;
use wasm_bindgen::prelude::*;

use crate::decision::{Operation, SameEpoch, Verdict};
use crate::error::{Code, StateError, TokenError};
use crate::state::ResourceState;
use crate::store::MemoryStore;
use crate::token::{epoch_from_f64, epoch_from_u64, parse_token, MAX_SAFE_INTEGER};

mod host;
mod signed;

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the JS `FencegateError` class that errors are built with.
/// Called once by the package's entry files right after the module is initialised.
#[wasm_bindgen(js_name = "__setErrorClass")]
pub fn set_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

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
/// * `leaseKeyBytes`: the random bytes an issuer's `acquire` takes.
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
    let fields: [(&str, JsValue); 13] = [
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

/// Builds a `FencegateError(code, message, details)`; a plain `Error` with
/// `code` when the class was not registered.
pub(crate) fn error(code: Code, message: &str, details: &[(&str, JsValue)]) -> JsValue {
    let fields = Object::new();
    for (k, v) in details {
        let _ = Reflect::set(&fields, &JsValue::from_str(k), v);
    }
    let class = ERROR_CLASS.with(|c| c.borrow().clone());
    if let Some(class) = class {
        let args = Array::of3(
            &JsValue::from_str(code.as_str()),
            &JsValue::from_str(message),
            &fields,
        );
        if let Ok(e) = Reflect::construct(&class, &args) {
            return e;
        }
    }
    let e = js_sys::Error::new(message);
    let _ = Reflect::set(
        &e,
        &JsValue::from_str("code"),
        &JsValue::from_str(code.as_str()),
    );
    e.into()
}

fn token_error(e: &TokenError, token: &JsValue) -> JsValue {
    error(e.code(), &e.to_string(), &[("token", token.clone())])
}

fn state_error(e: &StateError) -> JsValue {
    error(Code::CorruptState, &e.to_string(), &[])
}

/// An epoch as a JS value: a number when ≤ 2^53−1, a bigint above (canonical,
/// so equal epochs are always `===`).
pub(crate) fn epoch_to_js(epoch: u64) -> JsValue {
    if epoch <= MAX_SAFE_INTEGER {
        JsValue::from_f64(epoch as f64)
    } else {
        JsValue::from(epoch)
    }
}

/// The slow path for any JS value: undefined/null are missing; numbers and
/// bigints are checked exactly; everything else (strings, booleans, objects,
/// arrays, symbols) is malformed.
pub(crate) fn token_from_js(value: &JsValue) -> Result<u64, TokenError> {
    if value.is_undefined() || value.is_null() {
        return Err(TokenError::Missing);
    }
    if let Some(n) = value.as_f64() {
        return epoch_from_f64(n);
    }
    if value.is_bigint() {
        let exact = u64::try_from(value.clone())
            .map_err(|_| TokenError::Malformed("a bigint token must be in 1..2^64−1"))?;
        return epoch_from_u64(exact);
    }
    if value.is_string() {
        return Err(TokenError::Malformed(
            "a token must be a number or a bigint; parse header/JSON text with parseToken()",
        ));
    }
    Err(TokenError::Malformed(
        "a token must be a number or a bigint",
    ))
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

/// The output scratch of the last decision, read by the JS wrapper through a
/// `Float64Array` and a `BigUint64Array` over Wasm memory instead of more calls:
/// `[markBefore, markAfter]` as f64 (−1 when above 2^53−1), the same two
/// exactly as u64, and the status as f64 (host-store decisions only). Output
/// only: nothing here is read back by a later call. Stored as bits in atomics
/// so no `unsafe` is needed; wasm32 has one thread.
static LAST_MARKS: [AtomicU64; 5] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// The address of the five-slot scratch in Wasm memory (see `LAST_MARKS`).
#[wasm_bindgen(js_name = "__marksPtr")]
pub fn marks_ptr() -> usize {
    LAST_MARKS.as_ptr() as usize
}

/// Leaves a decision's marks (and status) in the scratch.
pub(crate) fn put_marks(before: u64, after: u64, status: u32) {
    LAST_MARKS[0].store(small(before).to_bits(), Ordering::Relaxed);
    LAST_MARKS[1].store(small(after).to_bits(), Ordering::Relaxed);
    LAST_MARKS[2].store(before, Ordering::Relaxed);
    LAST_MARKS[3].store(after, Ordering::Relaxed);
    LAST_MARKS[4].store(f64::from(status).to_bits(), Ordering::Relaxed);
}

pub(crate) fn small(epoch: u64) -> f64 {
    if epoch <= MAX_SAFE_INTEGER {
        epoch as f64
    } else {
        -1.0
    }
}

/// The embedded in-memory gate's marks, one per key, decided here. Keys are
/// interned to `u32` slots by the JS wrapper (`MemoryGate` in
/// `pkg/lib/core.mjs`), which also holds the values: it stores a write's value
/// in the same synchronous call, only when the status returned here says the
/// write applied, so check and change are still one step with no await or
/// throw between them. The hot path passes no strings and no `JsValue`s.
#[wasm_bindgen]
pub struct RawMemoryGate {
    pub(crate) store: MemoryStore<u32, (), FxBuildHasher>,
    pub(crate) last: Verdict,
}

#[wasm_bindgen]
impl RawMemoryGate {
    /// A gate with the same-epoch policy `"allow"` (false) or `"strict"` (true).
    #[wasm_bindgen(constructor)]
    pub fn new(strict: bool) -> RawMemoryGate {
        let policy = if strict {
            SameEpoch::Strict
        } else {
            SameEpoch::Allow
        };
        RawMemoryGate {
            store: MemoryStore::with_hasher(policy, FxBuildHasher),
            last: Verdict::invalid_token(0, &TokenError::Missing),
        }
    }

    pub(crate) fn done(&mut self, verdict: Verdict) -> u32 {
        self.last = verdict;
        LAST_MARKS[0].store(small(verdict.mark_before).to_bits(), Ordering::Relaxed);
        LAST_MARKS[1].store(small(verdict.mark_after).to_bits(), Ordering::Relaxed);
        verdict.status()
    }

    /// Fenced write with a number token (fast path). Returns the status
    /// (0 advance, 1 accept, 2 + code index reject).
    pub fn write_n(&mut self, slot: u32, token: f64) -> u32 {
        let v = self.store.write(&slot, epoch_from_f64(token), ());
        self.done(v)
    }

    /// Fenced write with a bigint token already checked to be in 0..2^64−1.
    pub fn write_b(&mut self, slot: u32, token: u64) -> u32 {
        let v = self.store.write(&slot, epoch_from_u64(token), ());
        self.done(v)
    }

    /// Fenced write with any other token value (slow path: rejected unless it
    /// is a valid number or bigint).
    pub fn write_any(&mut self, slot: u32, token: JsValue) -> u32 {
        let v = self.store.write(&slot, token_from_js(&token), ());
        self.done(v)
    }

    /// Fenced write carrying the operation id / holder set by `__meta` just
    /// before (issue 6). Returns the status (256/257 = duplicate).
    pub fn write_m(&mut self, slot: u32, token: JsValue) -> u32 {
        self.apply_m(slot, &token, Operation::Write)
    }

    /// Establish carrying the holder set by `__meta` just before.
    pub fn establish_m(&mut self, slot: u32, token: JsValue) -> u32 {
        self.apply_m(slot, &token, Operation::Establish)
    }

    fn apply_m(&mut self, slot: u32, token: &JsValue, op: Operation) -> u32 {
        let meta = host::take_meta();
        let value = matches!(op, Operation::Write).then_some(());
        let v = self
            .store
            .apply(&slot, token_from_js(token), op, value, &meta.view());
        self.done(v)
    }

    /// Establish with a number token.
    pub fn establish_n(&mut self, slot: u32, token: f64) -> u32 {
        let v = self.store.establish(&slot, epoch_from_f64(token));
        self.done(v)
    }

    /// Establish with a bigint token in 0..2^64−1.
    pub fn establish_b(&mut self, slot: u32, token: u64) -> u32 {
        let v = self.store.establish(&slot, epoch_from_u64(token));
        self.done(v)
    }

    /// Establish with any other token value.
    pub fn establish_any(&mut self, slot: u32, token: JsValue) -> u32 {
        let v = self.store.establish(&slot, token_from_js(&token));
        self.done(v)
    }

    /// The last verdict's mark before, exactly (a bigint).
    pub fn before_b(&self) -> u64 {
        self.last.mark_before
    }

    /// The last verdict's mark after, exactly (a bigint).
    pub fn after_b(&self) -> u64 {
        self.last.mark_after
    }

    /// The mark of `slot`, or −1 when above 2^53−1 (then use `mark_b`).
    pub fn mark_n(&self, slot: u32) -> f64 {
        small(self.store.mark(&slot))
    }

    /// The mark of `slot`, exactly.
    pub fn mark_b(&self, slot: u32) -> u64 {
        self.store.mark(&slot)
    }

    /// Whether a write was ever applied to `slot` (an establish alone does not count).
    pub fn has_value(&self, slot: u32) -> bool {
        self.store.get(&slot).is_some_and(|e| e.value.is_some())
    }

    /// Whether `slot` has state (some operation was applied to it).
    pub fn has_state(&self, slot: u32) -> bool {
        self.store.get(&slot).is_some()
    }

    /// Quarantines `slot` at `floor` (a number or bigint ≥ 0): see
    /// [`MemoryStore::quarantine`]. Returns whether anything changed; the
    /// marks before and after are in the scratch (`__marksPtr`).
    pub fn quarantine(&mut self, slot: u32, floor: JsValue) -> Result<bool, JsValue> {
        let floor = floor_from_js(&floor)?;
        let before = self.store.mark(&slot);
        let changed = self.store.quarantine(&slot, floor);
        let after = self.store.mark(&slot);
        LAST_MARKS[0].store(small(before).to_bits(), Ordering::Relaxed);
        LAST_MARKS[1].store(small(after).to_bits(), Ordering::Relaxed);
        self.last = Verdict {
            mark_before: before,
            mark_after: after,
            ..self.last
        };
        Ok(changed)
    }

    /// The persisted wire form of `slot`'s state, or `undefined` when it has none.
    pub fn state(&self, slot: u32) -> JsValue {
        self.store
            .get(&slot)
            .map_or(JsValue::UNDEFINED, |e| state_to_js(&e.state))
    }
}
