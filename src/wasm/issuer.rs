//! Bindings of the lease-bound issuer ([`crate::issuer`]).
//!
//! One function applies one transition to one scope's persisted issuer state
//! and answers `{ result, nextState }`; the JS `Issuer` class
//! (`pkg/lib/issuer.mjs`) loads the state from the host store, calls it, and
//! commits `nextState` before it returns `result` to anyone. Nothing here
//! stores anything.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::{epoch_to_js, error, token_from_js};
use crate::error::{Code, StateError};
use crate::issuer::{
    acquire, lease_id, ms_from_f64, raise, release, renew, AcquireRequest, EpochLimit, Grant,
    IssuerError, IssuerResult, IssuerState, WireIssuerState, WireLease, ISSUER_STATE_VERSION,
    ISSUER_WIRE_FIELDS, LEASE_WIRE_FIELDS,
};

fn set(obj: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), value);
}

fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn invalid(message: String, field: &str, value: JsValue) -> JsValue {
    error(Code::InvalidArgument, &message, &[(field, value)])
}

fn string_arg(op: &JsValue, field: &str) -> Result<String, JsValue> {
    let value = get(op, field);
    match value.as_string() {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(invalid(
            format!("{field} must be a non-empty string"),
            field,
            value,
        )),
    }
}

fn optional_string_arg(op: &JsValue, field: &str) -> Result<Option<String>, JsValue> {
    let value = get(op, field);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    string_arg(op, field).map(Some)
}

fn ms_arg(op: &JsValue, field: &str) -> Result<u64, JsValue> {
    let value = get(op, field);
    let Some(n) = value.as_f64() else {
        return Err(invalid(
            format!("{field} must be a number of milliseconds"),
            field,
            value,
        ));
    };
    ms_from_f64(field, n).map_err(|e| invalid(e.to_string(), field, value))
}

fn limit_arg(op: &JsValue) -> Result<EpochLimit, JsValue> {
    let value = get(op, "epochs");
    match value.as_string().as_deref() {
        None if value.is_undefined() => Ok(EpochLimit::Number),
        Some("number") => Ok(EpochLimit::Number),
        Some("bigint") => Ok(EpochLimit::BigInt),
        _ => Err(invalid(
            "epochs must be 'number' (epochs up to 2^53−1) or 'bigint' (up to 2^64−1)".to_owned(),
            "epochs",
            value,
        )),
    }
}

fn check_keys(value: &JsValue, fields: &[&str], what: &str) -> Result<(), StateError> {
    if !value.is_object() || Array::is_array(value) {
        return Err(StateError(format!("{what} must be an object")));
    }
    let keys = Object::keys(value.unchecked_ref::<Object>());
    for key in keys.iter() {
        let known = key
            .as_string()
            .is_some_and(|k| fields.contains(&k.as_str()));
        if !known {
            return Err(StateError(format!("unknown {what} field {key:?}")));
        }
    }
    for field in fields {
        let present = Reflect::has(value, &JsValue::from_str(field)).unwrap_or(false);
        if !present {
            return Err(StateError(format!("{what} has no field {field:?}")));
        }
    }
    Ok(())
}

/// Decodes a persisted issuer state: `null`/`undefined` is a fresh scope; an
/// object or its JSON text must be format version 1 exactly (CORRUPT_STATE otherwise).
pub(crate) fn decode_issuer_state_js(value: &JsValue) -> Result<IssuerState, StateError> {
    if value.is_undefined() || value.is_null() {
        return Ok(IssuerState::default());
    }
    let parsed;
    let value = if let Some(text) = value.as_string() {
        parsed = js_sys::JSON::parse(&text)
            .map_err(|_| StateError("issuer state text is not JSON".to_owned()))?;
        &parsed
    } else {
        value
    };
    check_keys(value, &ISSUER_WIRE_FIELDS, "issuer state")?;
    let lease = get(value, "lease");
    if !lease.is_null() {
        check_keys(&lease, &LEASE_WIRE_FIELDS, "issuer lease")?;
    }
    // Read field by field (no serde here: it would add ~20 KB of Wasm for two small structs).
    let v = get(value, "v")
        .as_f64()
        .ok_or_else(|| StateError("issuer state field v must be the number 1".to_owned()))?;
    if v != ISSUER_STATE_VERSION as f64 {
        return Err(StateError(format!(
            "unsupported issuer state format version (this build reads version {ISSUER_STATE_VERSION})"
        )));
    }
    let text = |obj: &JsValue, field: &str| {
        get(obj, field)
            .as_string()
            .ok_or_else(|| StateError(format!("issuer state field {field} must be a string")))
    };
    let lease = if lease.is_null() {
        None
    } else {
        let request_id = get(&lease, "requestId");
        Some(WireLease {
            holder: text(&lease, "holder")?,
            expires_at: text(&lease, "expiresAt")?,
            request_id: if request_id.is_null() {
                None
            } else {
                Some(request_id.as_string().ok_or_else(|| {
                    StateError("issuer lease requestId must be a string or null".to_owned())
                })?)
            },
        })
    };
    let wire = WireIssuerState {
        v: ISSUER_STATE_VERSION,
        epoch: text(value, "epoch")?,
        lease,
    };
    IssuerState::from_wire(&wire)
}

fn state_to_js(state: &IssuerState) -> JsValue {
    let wire = state.to_wire();
    let out = Object::new();
    set(&out, "v", &JsValue::from_f64(wire.v as f64));
    set(&out, "epoch", &JsValue::from_str(&wire.epoch));
    let lease = match &wire.lease {
        None => JsValue::NULL,
        Some(l) => {
            let o = Object::new();
            set(&o, "holder", &JsValue::from_str(&l.holder));
            set(&o, "expiresAt", &JsValue::from_str(&l.expires_at));
            set(
                &o,
                "requestId",
                &l.request_id
                    .as_deref()
                    .map_or(JsValue::NULL, JsValue::from_str),
            );
            o.into()
        }
    };
    set(&out, "lease", &lease);
    out.into()
}

fn issuer_error(e: &IssuerError, scope: &str) -> JsValue {
    let scope = JsValue::from_str(scope);
    match e {
        IssuerError::EpochOverflow { epoch, limit } => error(
            e.code(),
            &e.to_string(),
            &[
                ("scope", scope),
                ("epoch", epoch_to_js(*epoch)),
                ("limit", epoch_to_js(*limit)),
            ],
        ),
        _ => error(e.code(), &e.to_string(), &[("scope", scope)]),
    }
}

fn grant_to_js(out: &Object, g: &Grant) {
    set(out, "epoch", &epoch_to_js(g.epoch));
    set(out, "leaseId", &JsValue::from_str(&g.lease_id));
    set(out, "holder", &JsValue::from_str(&g.holder));
    set(out, "expiresAt", &JsValue::from_f64(g.expires_at as f64));
    set(
        out,
        "requestId",
        &g.request_id
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str),
    );
}

fn result_to_js(result: &IssuerResult, scope: &str) -> JsValue {
    let out = Object::new();
    let code = result.code();
    set(&out, "ok", &JsValue::from_bool(code.is_none()));
    set(
        &out,
        "code",
        &code.map_or(JsValue::NULL, |c| JsValue::from_str(c.as_str())),
    );
    set(&out, "scope", &JsValue::from_str(scope));
    match result {
        IssuerResult::Granted(g) => {
            grant_to_js(&out, g);
            set(&out, "replayed", &JsValue::from_bool(g.replayed));
        }
        IssuerResult::Renewed(g) => grant_to_js(&out, g),
        IssuerResult::Held {
            epoch,
            holder,
            expires_at,
        } => {
            set(&out, "epoch", &epoch_to_js(*epoch));
            set(&out, "holder", &JsValue::from_str(holder));
            set(&out, "expiresAt", &JsValue::from_f64(*expires_at as f64));
        }
        IssuerResult::Expired { epoch } => set(&out, "epoch", &epoch_to_js(*epoch)),
        IssuerResult::Released { released, epoch } => {
            set(&out, "released", &JsValue::from_bool(*released));
            set(&out, "epoch", &epoch_to_js(*epoch));
        }
        IssuerResult::Raised { before, after } => {
            set(&out, "epochBefore", &epoch_to_js(*before));
            set(&out, "epoch", &epoch_to_js(*after));
        }
    }
    out.into()
}

/// Applies one issuer transition to one scope's persisted state.
///
/// `state`: the stored issuer state (`{ v: 1, epoch, lease }` object or JSON
/// text), or `null` for a scope with no record. `op`: `{ op, scope, … }` with
/// * `op: 'acquire'`: `holder`, `ttlMs`, `now`, optional `requestId`, `epochs` (`'number'` | `'bigint'`);
/// * `op: 'renew'`: `leaseId`, `ttlMs`, `now`;
/// * `op: 'release'`: `leaseId`;
/// * `op: 'raise'`: `atLeast` (an epoch, number or bigint), `now`.
///
/// Answers `{ result, nextState }`: `nextState` is the state to commit before
/// `result` is handed out, or `null` when nothing changes. Throws
/// INVALID_ARGUMENT, CORRUPT_STATE, EPOCH_OVERFLOW (nothing changes on any).
#[wasm_bindgen(js_name = "__issuerStep")]
pub fn issuer_step(state: JsValue, op: JsValue) -> Result<JsValue, JsValue> {
    if !op.is_object() {
        return Err(invalid(
            "an issuer operation must be an object".to_owned(),
            "op",
            op,
        ));
    }
    let scope = string_arg(&op, "scope")?;
    let decoded = decode_issuer_state_js(&state).map_err(|e| {
        error(
            Code::CorruptState,
            &e.to_string(),
            &[("scope", JsValue::from_str(&scope))],
        )
    })?;
    let kind = get(&op, "op").as_string().unwrap_or_default();
    let step = match kind.as_str() {
        "acquire" => {
            let holder = string_arg(&op, "holder")?;
            let request_id = optional_string_arg(&op, "requestId")?;
            let req = AcquireRequest {
                scope: &scope,
                holder: &holder,
                ttl_ms: ms_arg(&op, "ttlMs")?,
                now_ms: ms_arg(&op, "now")?,
                request_id: request_id.as_deref(),
                limit: limit_arg(&op)?,
            };
            acquire(&decoded, &req)
        }
        "renew" => {
            let id = string_arg(&op, "leaseId")?;
            renew(
                &decoded,
                &scope,
                &id,
                ms_arg(&op, "ttlMs")?,
                ms_arg(&op, "now")?,
            )
        }
        "release" => {
            let id = string_arg(&op, "leaseId")?;
            release(&decoded, &scope, &id)
        }
        "raise" => {
            let value = get(&op, "atLeast");
            let at_least = token_from_js(&value).map_err(|e| {
                invalid(
                    format!("atLeast must be an epoch: {e}"),
                    "atLeast",
                    value.clone(),
                )
            })?;
            Ok(raise(&decoded, at_least, ms_arg(&op, "now")?))
        }
        _ => {
            return Err(invalid(
                "op must be 'acquire', 'renew', 'release' or 'raise'".to_owned(),
                "op",
                get(&op, "op"),
            ))
        }
    }
    .map_err(|e| issuer_error(&e, &scope))?;
    let out = Object::new();
    set(&out, "result", &result_to_js(&step.result, &scope));
    set(
        &out,
        "nextState",
        &step.next.as_ref().map_or(JsValue::NULL, state_to_js),
    );
    Ok(out.into())
}

/// Decodes a scope's persisted issuer state for reading:
/// `{ scope, epoch, lease: { leaseId, holder, expiresAt, requestId } | null }`
/// (`null` state → epoch 0, no lease). Throws CORRUPT_STATE.
#[wasm_bindgen(js_name = "__issuerDecode")]
pub fn issuer_decode(state: JsValue, scope: String) -> Result<JsValue, JsValue> {
    let decoded = decode_issuer_state_js(&state).map_err(|e| {
        error(
            Code::CorruptState,
            &e.to_string(),
            &[("scope", JsValue::from_str(&scope))],
        )
    })?;
    let out = Object::new();
    set(&out, "scope", &JsValue::from_str(&scope));
    set(&out, "epoch", &epoch_to_js(decoded.epoch));
    let lease = match &decoded.lease {
        None => JsValue::NULL,
        Some(l) => {
            let o = Object::new();
            set(
                &o,
                "leaseId",
                &JsValue::from_str(&lease_id(&scope, decoded.epoch)),
            );
            set(&o, "holder", &JsValue::from_str(&l.holder));
            set(&o, "expiresAt", &JsValue::from_f64(l.expires_at as f64));
            set(
                &o,
                "requestId",
                &l.request_id
                    .as_deref()
                    .map_or(JsValue::NULL, JsValue::from_str),
            );
            o.into()
        }
    };
    set(&out, "lease", &lease);
    Ok(out.into())
}
