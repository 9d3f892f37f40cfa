//! Binding for host-store-backed gates: one call that decodes the stored state,
//! decides, and returns the next persisted state. The protocol around it (load,
//! commit, retry, errors of host callbacks) runs in `pkg/lib/gate.mjs`, because
//! the callbacks may return Promises; the decision itself stays here.

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;

use super::{decode_state_js, epoch_to_js, error, token_from_js, wire_to_js};
use crate::decision::{Operation, SameEpoch};
use crate::error::Code;
use crate::host::decide_state as decide_core;

fn set(obj: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), value);
}

/// Decides one operation against a key's stored state.
///
/// * `state` — the stored state as loaded by the host: the wire object
///   `{v: 1, mark: "41"}`, its JSON text, or `null`/`undefined` when the key has
///   no fence record (mark 0).
/// * `token` — any JS value; only a safe integer ≥ 1 or a bigint in 1..2^64−1
///   can pass.
/// * `establish` — raise the mark with no data change instead of a write.
/// * `strict` — same-epoch policy `strict` instead of `allow`.
///
/// Returns `{ status, token, markBefore, markAfter, next }` where `status` is
/// 0 = advance, 1 = accept, 2 + code index = reject, and `next` is the wire
/// state to commit with the change, or `null` when rejected (write nothing).
/// Throws CORRUPT_STATE (with `state`) when the stored state does not decode.
#[wasm_bindgen(js_name = "__decideState")]
pub fn decide_state(
    state: JsValue,
    token: JsValue,
    establish: bool,
    strict: bool,
) -> Result<JsValue, JsValue> {
    let stored = if state.is_null() || state.is_undefined() {
        None
    } else {
        Some(decode_state_js(&state).map_err(|e| {
            error(
                Code::CorruptState,
                &e.to_string(),
                &[("state", state.clone())],
            )
        })?)
    };
    let policy = if strict {
        SameEpoch::Strict
    } else {
        SameEpoch::Allow
    };
    let op = if establish {
        Operation::Establish
    } else {
        Operation::Write
    };
    let d = decide_core(stored, token_from_js(&token), policy, op);
    let out = Object::new();
    set(&out, "status", &JsValue::from(d.verdict.status()));
    set(
        &out,
        "token",
        &d.verdict.token.map_or(JsValue::NULL, epoch_to_js),
    );
    set(&out, "markBefore", &epoch_to_js(d.verdict.mark_before));
    set(&out, "markAfter", &epoch_to_js(d.verdict.mark_after));
    set(
        &out,
        "next",
        &d.next.map_or(JsValue::NULL, |s| wire_to_js(&s.to_wire())),
    );
    Ok(out.into())
}
