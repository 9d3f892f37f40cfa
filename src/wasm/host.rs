//! Binding for host-store-backed gates. The protocol around a decision (load,
//! commit, retry, errors of host callbacks) runs in `pkg/lib/driver.mjs`,
//! because the callbacks may return Promises; the decision itself stays here.
//!
//! One decision attempt is one call (issue 12): `__gate_decide(state, token,
//! flags, opId, holder, window, fingerprint)` decodes the stored state, decides
//! and returns the next state's JSON text (`undefined`: write nothing), with
//! the status and the marks in the output scratch (`__marksPtr`): creating JS
//! objects from Wasm costs about a microsecond each, more than the decision.
//! `__gate_quarantine` and `__gate_inspect` are the same shape. Nothing is
//! kept between those calls.
//!
//! The signed-token path of a gate policy (`signed.rs`) still runs as a
//! sequence of calls with no `await` in between: `__state` (decode and
//! remember the stored state), `__meta`, the policy's
//! `decide_host_*`, then `__last_*` and `__next_text`.

use std::cell::Cell;

use wasm_bindgen::prelude::*;

use super::{decode_state_js, error, floor_from_js, put_marks, small, token_from_js};
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

/// Decodes the stored state (see [`stored_from_text`]) and remembers it for
/// the policy path's decision. Throws CORRUPT_STATE (with `state`).
#[wasm_bindgen(js_name = "__state")]
pub fn state(text: Option<String>) -> Result<(), JsValue> {
    let state = stored_from_text(text)?;
    STORED.with(|s| s.set(state));
    Ok(())
}

/// The stored state a host store handed over, as text: `None` = no record;
/// the exact text the shipped adapters write takes a fast path, any other
/// text the full decoder (the JS side turns the object form into text first).
/// Throws CORRUPT_STATE (with `state`).
fn stored_from_text(text: Option<String>) -> Result<Option<ResourceState>, JsValue> {
    let Some(text) = text else {
        return Ok(None);
    };
    if let Some(s) = decode_canonical_text(&text) {
        return Ok(Some(s));
    }
    ResourceState::from_json(&text)
        .map(Some)
        .map_err(|e| corrupt(&e, JsValue::from_str(&text)))
}

/// The CORRUPT_STATE of a stored state that is neither null, text nor an
/// object (a number, a boolean…), with the decoder's message.
#[wasm_bindgen(js_name = "__state_error")]
pub fn state_error(value: JsValue) -> JsValue {
    match decode_state_js(&value) {
        Err(e) => corrupt(&e, value),
        Ok(_) => error(
            Code::CorruptState,
            "state must be an object {v, mark, …} or its JSON text",
            &[("state", value)],
        ),
    }
}

/// One decision attempt of a host-store gate, in one call (issue 12): the
/// stored state's text (see [`stored_from_text`]), the token (a number as
/// `number`, a bigint in 0..=2^64−1 as `exact`, any other value as `other`,
/// none of them: missing; typed so the hot kinds cross as plain numbers), the flags
/// and the operation metadata in (`window` undefined: the default; the
/// metadata is checked as `__meta` checks it). Out: the status and the marks
/// in the scratch (`__marksPtr`), and the next state's JSON text when the
/// decision applies (`undefined` on reject or duplicate: write nothing).
/// Nothing is kept in Wasm between calls.
#[wasm_bindgen(js_name = "__gate_decide")]
#[allow(clippy::too_many_arguments)]
pub fn gate_decide(
    state: Option<String>,
    number: Option<f64>,
    exact: Option<u64>,
    other: Option<JsValue>,
    flags: u32,
    op_id: Option<String>,
    holder: Option<String>,
    window: Option<u32>,
    fingerprint_bytes: Option<Vec<u8>>,
) -> Result<Option<String>, JsValue> {
    let stored = stored_from_text(state)?;
    let token = match (number, exact, other) {
        (Some(n), _, _) => epoch_from_f64(n),
        (_, Some(e), _) => epoch_from_u64(e),
        (_, _, Some(v)) => token_from_js(&v),
        _ => Err(TokenError::Missing),
    };
    let window = window.unwrap_or(DEFAULT_WINDOW as u32);
    if op_id.is_some() || holder.is_some() || window as usize != DEFAULT_WINDOW {
        check_meta(op_id.as_deref(), holder.as_deref(), window)?;
    }
    let fp = fingerprint_of(op_id.as_deref(), fingerprint_bytes)?;
    let meta = OpMeta {
        op_id: op_id.as_deref(),
        holder: holder.as_deref(),
        window: window as usize,
        fingerprint: fp,
    };
    let d = decide_state(
        stored.as_ref(),
        token,
        policy_of(flags),
        operation_of(flags),
        &meta,
    );
    put_marks(
        d.verdict.mark_before,
        d.verdict.mark_after,
        d.verdict.status(),
    );
    // A plain next state (format v1: no holder, operation ids or quarantine) is
    // left to the caller to spell as `{ v: 1, mark: markAfter }`: a string made
    // here and parsed there costs more than the whole decision (measured: a
    // Gate write over an in-memory store took 1.8 µs with, 3.3 µs without).
    Ok(d.next.filter(|n| !n.is_plain()).map(|n| n.to_json()))
}

/// Quarantine of a stored state in one call (issue 9): the next state's JSON
/// text when it changes, `undefined` when it is already quarantined at that
/// floor or above; the marks before and after in the scratch. CORRUPT_STATE
/// for the state first, then INVALID_ARGUMENT for a floor that is not 0 or an epoch.
#[wasm_bindgen(js_name = "__gate_quarantine")]
pub fn gate_quarantine(state: Option<String>, floor: JsValue) -> Result<Option<String>, JsValue> {
    let mut state = stored_from_text(state)?.unwrap_or_default();
    let floor = floor_from_js(&floor)?;
    let before = state.mark;
    let changed = state.quarantine_at(floor);
    put_marks(before, state.mark, 0);
    Ok(changed.then(|| state.to_json()))
}

/// The fence record of a stored state in one call: the holder bound to the
/// current epoch (`undefined`: none) returned; in the scratch the mark as the
/// "before" mark, the quarantine floor as the "after" mark and the status 1
/// when there is a floor, 0 when none. Throws CORRUPT_STATE.
#[wasm_bindgen(js_name = "__gate_inspect")]
pub fn gate_inspect(state: Option<String>) -> Result<Option<String>, JsValue> {
    let stored = stored_from_text(state)?;
    let s = stored.as_ref();
    let floor = s.and_then(|s| s.quarantine);
    put_marks(
        s.map_or(0, |s| s.mark),
        floor.unwrap_or(0),
        u32::from(floor.is_some()),
    );
    Ok(stored.and_then(|s| s.holder))
}

fn policy_of(flags: u32) -> SameEpoch {
    if flags & STRICT != 0 {
        SameEpoch::Strict
    } else {
        SameEpoch::Allow
    }
}

fn operation_of(flags: u32) -> Operation {
    if flags & ESTABLISH != 0 {
        Operation::Establish
    } else {
        Operation::Write
    }
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
    let plain = d.next.as_ref().is_none_or(ResourceState::is_plain);
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
    let fp = fingerprint_of(op_id.as_deref(), fingerprint_bytes)?;
    META.with(|m| m.set((op_id, holder, window as usize, fp)));
    Ok(())
}

/// The stored fingerprint of an operation's bytes; INVALID_ARGUMENT for a
/// fingerprint without an operation id.
fn fingerprint_of(
    op_id: Option<&str>,
    bytes: Option<Vec<u8>>,
) -> Result<Option<[u8; FINGERPRINT_BYTES]>, JsValue> {
    if bytes.is_some() && op_id.is_none() {
        return Err(error(
            Code::InvalidArgument,
            "a fingerprint belongs to an operation id: pass opId with it",
            &[],
        ));
    }
    Ok(bytes.map(|b| fingerprint(&b)))
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
    if let Some(h) = holder.filter(|h| h.is_empty() || h.len() > MAX_HOLDER_BYTES) {
        // The issuer's holder check (pkg/lib/issuer.mjs) says the same.
        return Err(error(
            Code::InvalidArgument,
            &format!("a holder is 1..={MAX_HOLDER_BYTES} UTF-8 bytes of text"),
            &[("holderBytes", JsValue::from(h.len()))],
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
