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

use super::{decode_state_js, error, small, token_from_js};
use crate::decision::{Operation, SameEpoch, Verdict};
use crate::error::{Code, StateError, TokenError};
use crate::host::{decide_state, decode_canonical_text};
use crate::state::ResourceState;
use crate::token::{epoch_from_f64, epoch_from_u64};

/// `flags` bit: establish (raise the mark, no data change) instead of write.
pub(crate) const ESTABLISH: u32 = 1;
/// `flags` bit: same-epoch policy `strict` instead of `allow`.
pub(crate) const STRICT: u32 = 2;

thread_local! {
    static STORED: Cell<Option<ResourceState>> = const { Cell::new(None) };
    static LAST: Cell<Verdict> = const { Cell::new(Verdict::invalid_token(0, &TokenError::Missing)) };
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
    small(STORED.with(|s| s.get()).map_or(0, |s| s.mark))
}

/// The decoded stored mark, exactly.
#[wasm_bindgen(js_name = "__stored_mark_b")]
pub fn stored_mark_b() -> u64 {
    STORED.with(|s| s.get()).map_or(0, |s| s.mark)
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
    let stored = STORED.with(|s| s.get());
    let d = decide_state(stored, token, policy, op);
    LAST.with(|l| l.set(d.verdict));
    d.verdict.status()
}

/// Decides with `check` (given the stored mark) and remembers the verdict, as
/// the `__decide_*` exports do; the gate policy binding (`signed.rs`) uses it.
pub(crate) fn decide_with(check: impl FnOnce(u64) -> Verdict) -> u32 {
    let mark = STORED.with(|s| s.get()).map_or(0, |s| s.mark);
    let verdict = check(mark);
    LAST.with(|l| l.set(verdict));
    verdict.status()
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
