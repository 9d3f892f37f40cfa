//! Binding for host-store-backed gates: decode the stored state, decide, and
//! expose the verdict. The protocol around it (load, commit, retry, errors of
//! host callbacks) runs in `pkg/lib/gate.mjs`, because the callbacks may return
//! Promises; the decision itself stays here.
//!
//! Like `RawMemoryGate`, the hot path passes plain numbers and answers with a
//! status number: creating JS strings and objects from Wasm costs about a
//! microsecond each, more than the whole decision. One fenced operation is a
//! synchronous sequence of calls with no `await` in between:
//!
//! 1. `__state_text(text)` / `__state_any(value)` / `__state_none()` — decode the
//!    stored state (throws CORRUPT_STATE) and remember its mark;
//! 2. `__decide_n(token, flags)` / `__decide_b` / `__decide_any` — decide against
//!    that mark, remember the verdict, return its status (0 = advance,
//!    1 = accept, 2 + code index = reject);
//! 3. `__last_*` — the verdict's marks; the next state to commit is format v1
//!    with `mark = markAfter` when the status is < 2, and nothing otherwise.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use super::{decode_state_js, error, floor_from_js, small, token_from_js};
use crate::decision::{Operation, SameEpoch, Verdict};
use crate::error::{Code, StateError, TokenError};
use crate::host::{decide_state, decide_with_state, decode_canonical_text, HostDecision, OpMeta};
use crate::ops::{
    fingerprint, valid_op_id, DEFAULT_WINDOW, FINGERPRINT_BYTES, MAX_HOLDER_BYTES, MAX_WINDOW,
};
use crate::state::ResourceState;
use crate::token::{epoch_from_f64, epoch_from_u64};

/// `flags` bit: establish (raise the mark, no data change) instead of write.
pub(crate) const ESTABLISH: u32 = 1;
/// `flags` bit: same-epoch policy `strict` instead of `allow`.
pub(crate) const STRICT: u32 = 2;

thread_local! {
    static STORED: Cell<Option<ResourceState>> = const { Cell::new(None) };
    static LAST: Cell<Verdict> = const { Cell::new(Verdict::invalid_token(0, &TokenError::Missing)) };
    /// Operation id, holder, window and fingerprint for the next decision (set by `__meta`, cleared after it).
    static META: Cell<Meta> = const { Cell::new((None, None, DEFAULT_WINDOW, None)) };
    /// The next state of the last decision, when it is not plain format v1.
    static NEXT: Cell<Option<ResourceState>> = const { Cell::new(None) };
}

/// Runs `f` on the decoded stored state. The state is taken out of its cell
/// and put back (no `RefCell` borrow that a trap or a stack overflow inside
/// could leave held, which would poison every later decision).
fn with_stored<R>(f: impl FnOnce(Option<&ResourceState>) -> R) -> R {
    let stored = STORED.with(Cell::take);
    let r = f(stored.as_ref());
    STORED.with(|s| s.set(stored));
    r
}

fn corrupt(e: &StateError, state: JsValue) -> JsValue {
    error(Code::CorruptState, &e.to_string(), &[("state", state)])
}

/// The stored state is JSON text (what the shipped adapters keep). The exact
/// text they write takes a fast path; any other text goes through the full
/// decoder. Throws CORRUPT_STATE (with `state`).
#[wasm_bindgen(js_name = "__state_text")]
pub fn state_text(text: &str) -> Result<(), JsValue> {
    let state = match decode_canonical_text(text) {
        Some(s) => s,
        None => {
            let value = JsValue::from_str(text);
            decode_state_js(&value).map_err(|e| corrupt(&e, value))?
        }
    };
    STORED.with(|s| s.set(Some(state)));
    Ok(())
}

/// The stored state is any other JS value (the wire object `{v: 1, mark: "41"}`).
/// Throws CORRUPT_STATE (with `state`).
#[wasm_bindgen(js_name = "__state_any")]
pub fn state_any(value: JsValue) -> Result<(), JsValue> {
    let state = decode_state_js(&value).map_err(|e| corrupt(&e, value))?;
    STORED.with(|s| s.set(Some(state)));
    Ok(())
}

/// The key has no fence record: mark 0.
#[wasm_bindgen(js_name = "__state_none")]
pub fn state_none() {
    STORED.with(|s| s.set(None));
}

/// The decoded stored mark, or −1 when above 2^53−1 (then use `__stored_mark_b`).
#[wasm_bindgen(js_name = "__stored_mark_n")]
pub fn stored_mark_n() -> f64 {
    small(with_stored(|s| s.map_or(0, |s| s.mark)))
}

/// The decoded stored mark, exactly.
#[wasm_bindgen(js_name = "__stored_mark_b")]
pub fn stored_mark_b() -> u64 {
    with_stored(|s| s.map_or(0, |s| s.mark))
}

fn decide(token: Result<u64, TokenError>, flags: u32) -> u32 {
    let policy = if flags & STRICT != 0 {
        SameEpoch::Strict
    } else {
        SameEpoch::Allow
    };
    let op = if flags & ESTABLISH != 0 {
        Operation::Establish
    } else {
        Operation::Write
    };
    let meta = take_meta();
    let d = with_stored(|s| decide_state(s, token, policy, op, &meta.view()));
    finish(d)
}

/// Operation id, holder, window and fingerprint, as `__meta` received them.
type Meta = (
    Option<String>,
    Option<String>,
    usize,
    Option<[u8; FINGERPRINT_BYTES]>,
);

/// The operation metadata set by `__meta`, owned; [`TakenMeta::view`] borrows it as [`OpMeta`].
pub(crate) struct TakenMeta(Meta);

impl TakenMeta {
    /// The metadata as the core's [`OpMeta`].
    pub(crate) fn view(&self) -> OpMeta<'_> {
        OpMeta {
            op_id: self.0 .0.as_deref(),
            holder: self.0 .1.as_deref(),
            window: self.0 .2,
            fingerprint: self.0 .3,
        }
    }
}

/// Takes the metadata for this decision, leaving the defaults for the next one.
pub(crate) fn take_meta() -> TakenMeta {
    TakenMeta(META.with(|m| m.replace((None, None, DEFAULT_WINDOW, None))))
}

/// Remembers the decision's verdict (and its next state when it is not plain v1).
fn finish(d: HostDecision) -> u32 {
    LAST.with(|l| l.set(d.verdict));
    let plain = d
        .next
        .as_ref()
        .is_none_or(|n| n.holder.is_none() && n.ops.is_empty() && n.quarantine.is_none());
    NEXT.with(|n| n.set(if plain { None } else { d.next }));
    d.verdict.status()
}

/// Sets the operation id, holder, window size and fingerprint bytes (hashed
/// here, [`fingerprint`]) for the next `__decide_*` call only. Throws
/// INVALID_ARGUMENT for an id that is not 1..=128 bytes without control
/// characters, an empty holder, a window outside 1..=1024, or a fingerprint
/// without an operation id.
#[wasm_bindgen(js_name = "__meta")]
pub fn meta(
    op_id: Option<String>,
    holder: Option<String>,
    window: u32,
    fingerprint_bytes: Option<Vec<u8>>,
) -> Result<(), JsValue> {
    check_meta(op_id.as_deref(), holder.as_deref(), window)?;
    if fingerprint_bytes.is_some() && op_id.is_none() {
        return Err(error(
            Code::InvalidArgument,
            "a fingerprint belongs to an operation id: pass opId with it",
            &[],
        ));
    }
    let fp = fingerprint_bytes.map(|b| fingerprint(&b));
    META.with(|m| m.set((op_id, holder, window as usize, fp)));
    Ok(())
}

/// Validates operation metadata (shared with the in-memory gate).
pub(crate) fn check_meta(
    op_id: Option<&str>,
    holder: Option<&str>,
    window: u32,
) -> Result<(), JsValue> {
    if let Some(id) = op_id {
        if !valid_op_id(id) {
            return Err(error(
                Code::InvalidArgument,
                "an operation id is 1..=128 bytes of text without control characters",
                &[("opId", JsValue::from_str(id))],
            ));
        }
    }
    if holder == Some("") || holder.is_some_and(|h| h.len() > MAX_HOLDER_BYTES) {
        return Err(error(
            Code::InvalidArgument,
            "a holder is 1..=256 bytes of text",
            &[],
        ));
    }
    if window == 0 || window as usize > MAX_WINDOW {
        return Err(error(
            Code::InvalidArgument,
            &format!("the operation-id window is 1..={MAX_WINDOW}"),
            &[("opWindow", JsValue::from(window))],
        ));
    }
    Ok(())
}

/// Quarantine of the state decoded by `__state_*` (issue 9): the next state
/// as JSON text when it changes, `undefined` when it is already quarantined at
/// that floor or above. The marks before and after are left for `__last_*`.
/// `floor` is 0 or an epoch; INVALID_ARGUMENT otherwise.
#[wasm_bindgen(js_name = "__quarantine")]
pub fn quarantine(floor: JsValue) -> Result<Option<String>, JsValue> {
    let floor = floor_from_js(&floor)?;
    let (before, next) = with_stored(|stored| {
        let mut state = stored.cloned().unwrap_or_default();
        let before = state.mark;
        let changed = state.quarantine_at(floor);
        (before, (changed, state))
    });
    let (changed, state) = next;
    let mut v = Verdict::invalid_token(before, &TokenError::Missing);
    v.mark_after = state.mark;
    LAST.with(|l| l.set(v));
    Ok(changed.then(|| state.to_json()))
}

/// The decoded stored state's quarantine floor, or −1 when it has none, or
/// −2 when the floor is above 2^53−1 (then use `__stored_quarantine_b`).
#[wasm_bindgen(js_name = "__stored_quarantine_n")]
pub fn stored_quarantine_n() -> f64 {
    with_stored(|s| match s.and_then(|s| s.quarantine) {
        None => -1.0,
        Some(f) if f <= crate::token::MAX_SAFE_INTEGER => f as f64,
        Some(_) => -2.0,
    })
}

/// The decoded stored state's quarantine floor, exactly (0 when none).
#[wasm_bindgen(js_name = "__stored_quarantine_b")]
pub fn stored_quarantine_b() -> u64 {
    with_stored(|s| s.and_then(|s| s.quarantine).unwrap_or(0))
}

/// The decoded stored state's holder, or `undefined`.
#[wasm_bindgen(js_name = "__stored_holder")]
pub fn stored_holder() -> Option<String> {
    with_stored(|s| s.and_then(|s| s.holder.clone()))
}

/// The next state of the last decision as JSON text when it is format v4
/// (a holder or operation ids), `undefined` when it is plain v1 (the caller
/// then writes `{v: 1, mark: markAfter}`) or when nothing applies.
#[wasm_bindgen(js_name = "__next_text")]
pub fn next_text() -> Option<String> {
    NEXT.with(Cell::take).map(|s| s.to_json())
}

/// Decides with `check` (given the stored mark) and remembers the verdict, as
/// the `__decide_*` exports do, holder and operation-id semantics included;
/// the gate policy binding (`signed.rs`) uses it.
pub(crate) fn decide_with(
    op: Operation,
    check: impl FnOnce(u64) -> (Verdict, Option<String>),
) -> u32 {
    let meta = take_meta();
    let d = with_stored(|stored| {
        let (verdict, claimed) = check(stored.map_or(0, |s| s.mark));
        let meta = OpMeta {
            holder: meta.view().holder.or(claimed.as_deref()),
            ..meta.view()
        };
        decide_with_state(stored, verdict, op, &meta)
    });
    finish(d)
}

/// Decides a number token against the stored state.
#[wasm_bindgen(js_name = "__decide_n")]
pub fn decide_n(token: f64, flags: u32) -> u32 {
    decide(epoch_from_f64(token), flags)
}

/// Decides a bigint token already checked to be in 0..2^64−1.
#[wasm_bindgen(js_name = "__decide_b")]
pub fn decide_b(token: u64, flags: u32) -> u32 {
    decide(epoch_from_u64(token), flags)
}

/// Decides any other token value (missing or malformed unless a valid number/bigint).
#[wasm_bindgen(js_name = "__decide_any")]
pub fn decide_any(token: JsValue, flags: u32) -> u32 {
    decide(token_from_js(&token), flags)
}

/// The last verdict's mark before, or −1 when above 2^53−1 (then use `__last_before_b`).
#[wasm_bindgen(js_name = "__last_before_n")]
pub fn last_before_n() -> f64 {
    small(LAST.with(|l| l.get()).mark_before)
}

/// The last verdict's mark before, exactly.
#[wasm_bindgen(js_name = "__last_before_b")]
pub fn last_before_b() -> u64 {
    LAST.with(|l| l.get()).mark_before
}

/// The last verdict's mark after (the next state's mark), or −1 when above 2^53−1.
#[wasm_bindgen(js_name = "__last_after_n")]
pub fn last_after_n() -> f64 {
    small(LAST.with(|l| l.get()).mark_after)
}

/// The last verdict's mark after, exactly.
#[wasm_bindgen(js_name = "__last_after_b")]
pub fn last_after_b() -> u64 {
    LAST.with(|l| l.get()).mark_after
}
