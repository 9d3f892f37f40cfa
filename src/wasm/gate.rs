//! Binding for gates over host stores. The protocol around a decision (load,
//! commit, retry, errors of host callbacks) runs in `pkg/lib/driver.mjs`,
//! because the callbacks may return Promises; the decision itself stays here.
//!
//! One decision attempt is one call, whatever the token kind: `__gateDecide`
//! reads the request from the exchange ([`super::exchange`]: the stored
//! state's text and every other text come with it), decodes the stored state,
//! decides under the policy handle (the plain policy for a gate without policy
//! options) and answers the verdict, the claims and the next state's JSON text
//! in the exchange. `__gateQuarantine` and `__gateInspect` answer their marks
//! there too. Nothing is kept between calls.

use wasm_bindgen::prelude::*;

use super::exchange::{decide_request, put_marks, Answer, Request};
use super::signed::{lease_id, RawPolicy};
use super::{decode_state_js, error, floor_from_js, message_of, JsError};
use crate::decision::{decide_with_state, OpMeta};
use crate::error::{Code, StateError};
use crate::ops::{fingerprint, valid_op_id, FINGERPRINT_BYTES, MAX_HOLDER_BYTES, MAX_WINDOW};
use crate::state::ResourceState;
use crate::token::parse_token;

fn corrupt(e: &StateError, state: JsValue) -> JsError {
    JsError::new(Code::CorruptState, message_of(&e)).with("state", state)
}

/// The stored state a host store handed over, as text: `None` = no record;
/// the exact text the shipped adapters write takes a fast path
/// ([`decode_canonical_text`]), any other text the full decoder (the JS side
/// turns the object form into text first). Throws CORRUPT_STATE (with `state`).
fn stored_from_text(text: Option<&str>) -> Result<Option<ResourceState>, JsError> {
    let Some(text) = text else {
        return Ok(None);
    };
    if let Some(s) = decode_canonical_text(text) {
        return Ok(Some(s));
    }
    ResourceState::from_json(text)
        .map(Some)
        .map_err(|e| corrupt(&e, JsValue::from_str(text)))
}

/// Fast path for the exact text adapters write: `{"v":1,"mark":"<canonical decimal>"}`.
///
/// Returns `None` for anything else (other spacing, key order, corrupt text);
/// the caller then takes the general decoder, which accepts every valid
/// format-v1 JSON and names the error of an invalid one. Never wrong: a `Some`
/// is exactly what the general decoder would return.
pub(crate) fn decode_canonical_text(text: &str) -> Option<ResourceState> {
    let digits = text
        .strip_prefix(r#"{"v":1,"mark":""#)?
        .strip_suffix(r#""}"#)?;
    if digits == "0" {
        return Some(ResourceState::at(0));
    }
    parse_token(digits).ok().map(ResourceState::at)
}

/// The CORRUPT_STATE of a stored state that is neither null, text nor an
/// object (a number, a boolean…), with the decoder's message.
#[wasm_bindgen(js_name = "__stateError")]
pub fn state_error(value: JsValue) -> JsValue {
    match decode_state_js(&value) {
        Err(e) => corrupt(&e, value).into(),
        Ok(_) => error(
            Code::CorruptState,
            "state must be an object {v, mark, …} or its JSON text",
            &[("state", value)],
        ),
    }
}

/// One decision attempt of a host-store gate, in one call, for every token
/// kind: the request in the exchange, decided under `policy`. Throws
/// CORRUPT_STATE for the stored state first, then INVALID_ARGUMENT for the
/// operation options. Answers, in the exchange, the verdict, the claims of a
/// signed token, and the next state's JSON text when the verdict applies;
/// returns the verdict's status.
#[wasm_bindgen(js_name = "__gateDecide")]
pub fn gate_decide(policy: &mut RawPolicy) -> Result<u32, JsError> {
    decide_request(|req| {
        let stored = stored_from_text(req.state)?;
        let meta = op_meta(req)?;
        let mark = stored.as_ref().map_or(0, |s| s.mark);
        let (verdict, claims) = policy.admit(mark, req, req.same_epoch, req.op);
        // A verified lease id is the holder, whatever `holder` the caller named.
        let meta = meta.claimed_by(lease_id(&claims));
        let d = decide_with_state(stored.as_ref(), verdict, req.op, &meta);
        let next = d.next.filter(|_| d.verdict.applies()).map(|n| n.to_json());
        Ok(Answer {
            verdict: d.verdict,
            holder: meta.holder.map(str::to_owned),
            claims,
            next,
        })
    })
}

/// The operation options of a request, checked (INVALID_ARGUMENT, see [`check_meta`]).
pub(crate) fn op_meta<'a>(req: &Request<'a>) -> Result<OpMeta<'a>, JsError> {
    check_meta(req.op_id, req.holder, req.window)?;
    let fingerprint = fingerprint_of(req.op_id, req.fingerprint)?;
    Ok(OpMeta {
        op_id: req.op_id,
        holder: req.holder,
        window: req.window as usize,
        fingerprint,
    })
}

/// Quarantine of a stored state in one call (decision record reconcile-planner): the next state's JSON
/// text when it changes, `undefined` when it is already quarantined at that
/// floor or above; the marks before and after in the exchange. CORRUPT_STATE
/// for the state first, then INVALID_ARGUMENT for a floor that is not 0 or an epoch.
#[wasm_bindgen(js_name = "__gateQuarantine")]
pub fn gate_quarantine(state: Option<String>, floor: JsValue) -> Result<Option<String>, JsValue> {
    let mut state = stored_from_text(state.as_deref())?.unwrap_or_default();
    let floor = floor_from_js(&floor)?;
    let before = state.mark;
    let changed = state.quarantine_at(floor);
    put_marks(before, state.mark, false);
    Ok(changed.then(|| state.to_json()))
}

/// The fence record of a stored state in one call: the holder bound to the
/// current epoch (`undefined`: none) returned; in the exchange the mark as
/// `markBefore` and the quarantine floor as `markAfter` (`hasFloor`).
/// Throws CORRUPT_STATE.
#[wasm_bindgen(js_name = "__gateInspect")]
pub fn gate_inspect(state: Option<String>) -> Result<Option<String>, JsValue> {
    let stored = stored_from_text(state.as_deref())?;
    let s = stored.as_ref();
    let floor = s.and_then(|s| s.quarantine);
    put_marks(s.map_or(0, |s| s.mark), floor.unwrap_or(0), floor.is_some());
    Ok(stored.and_then(|s| s.holder))
}

/// The stored fingerprint of an operation's bytes; INVALID_ARGUMENT for a
/// fingerprint without an operation id.
pub(crate) fn fingerprint_of(
    op_id: Option<&str>,
    bytes: Option<&[u8]>,
) -> Result<Option<[u8; FINGERPRINT_BYTES]>, JsError> {
    if bytes.is_some() && op_id.is_none() {
        return Err(JsError::new(
            Code::InvalidArgument,
            "a fingerprint belongs to an operation id: pass opId with it",
        ));
    }
    Ok(bytes.map(fingerprint))
}

/// Validates operation metadata (both gates): INVALID_ARGUMENT for an id
/// that is not 1..=128 bytes without control characters, an empty or too
/// long holder, or a window outside 1..=1024.
pub(crate) fn check_meta(
    op_id: Option<&str>,
    holder: Option<&str>,
    window: u32,
) -> Result<(), JsError> {
    if let Some(id) = op_id {
        if !valid_op_id(id) {
            return Err(JsError::new(
                Code::InvalidArgument,
                "an operation id is 1 to 128 bytes of text without control characters",
            )
            .with("opId", JsValue::from_str(id)));
        }
    }
    if let Some(h) = holder.filter(|h| h.is_empty() || h.len() > MAX_HOLDER_BYTES) {
        // The issuer's holder check (pkg/lib/issuer.mjs) says the same.
        return Err(JsError::new(
            Code::InvalidArgument,
            format!("a holder is 1 to {MAX_HOLDER_BYTES} UTF-8 bytes of text"),
        )
        .with("holderBytes", JsValue::from(h.len())));
    }
    if window == 0 || window as usize > MAX_WINDOW {
        return Err(JsError::new(
            Code::InvalidArgument,
            format!("the operation-id window is 1 to {MAX_WINDOW}"),
        )
        .with("opWindow", JsValue::from(window)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn canonical_text_fast_path() {
        for mark in [0, 1, 41, (1 << 53) + 1, u64::MAX] {
            let text = format!(r#"{{"v":1,"mark":"{mark}"}}"#);
            assert_eq!(decode_canonical_text(&text), Some(ResourceState::at(mark)));
        }
        for other in [
            r#"{"v":1,"mark":"05"}"#,
            r#"{"v":1,"mark":"-1"}"#,
            r#"{"v":1,"mark":""}"#,
            r#"{"v":1,"mark":"18446744073709551616"}"#,
            r#"{"v":2,"mark":"5"}"#,
            r#"{"mark":"5","v":1}"#,
            r#"{ "v": 1, "mark": "5" }"#,
            r#"{"v":1,"mark":"5"} "#,
            r#"{"v":1,"mark":"5","x":1}"#,
            r#"{"v":1,"mark":"5\\"}"#,
            "",
        ] {
            assert_eq!(decode_canonical_text(other), None, "{other}");
        }
    }

    proptest! {
        #[test]
        fn fast_path_agrees_with_the_wire_form(mark in any::<u64>()) {
            let text = ResourceState::at(mark).to_json();
            prop_assert_eq!(decode_canonical_text(&text), Some(ResourceState::at(mark)));
        }

        #[test]
        fn fast_path_never_accepts_what_the_full_decoder_refuses(text in r#"\{"v":1,"mark":"[0-9a-z\-]{0,22}"\}.?"#) {
            if let Some(state) = decode_canonical_text(&text) {
                prop_assert_eq!(ResourceState::from_json(&text), Ok(state));
            }
        }
    }
}
