//! Bindings of the lease-bound issuer ([`crate::issuer`]).
//!
//! One function applies one transition to one scope's persisted issuer state
//! and answers a flat array that the JS `Issuer` class (`pkg/lib/issuer.mjs`)
//! shapes into a result; the class loads the state from the host store, calls
//! in, and commits the next state before it returns the result to anyone.
//! Nothing here stores anything.
//!
//! The state crosses the boundary as JSON text, both ways (the JS side
//! stringifies an object a store returned, and parses the next state for the
//! store): one string instead of a dozen property reads and writes, and the
//! same strict decoder ([`IssuerState::from_json`]) as the native tests.

use js_sys::Array;
use wasm_bindgen::prelude::*;

use super::{epoch_to_js, error, token_from_js};
use crate::error::Code;
use crate::issuer::{
    acquire, ms_from_f64, raise, raise_floor, raise_revoking, release, renew, AcquireRequest,
    EpochLimit, Grant, IssuerError, IssuerResult, IssuerState, LEASE_KEY_BYTES,
};

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
        IssuerError::RaiseOverflow { at_least, limit } => error(
            e.code(),
            &e.to_string(),
            &[
                ("scope", scope),
                ("atLeast", epoch_to_js(*at_least)),
                ("limit", epoch_to_js(*limit)),
            ],
        ),
        _ => error(e.code(), &e.to_string(), &[("scope", scope)]),
    }
}

fn decode(state: Option<String>, scope: &str) -> Result<IssuerState, JsValue> {
    match state {
        None => Ok(IssuerState::default()),
        Some(text) => IssuerState::from_json(&text).map_err(|e| {
            error(
                Code::CorruptState,
                &e.to_string(),
                &[("scope", JsValue::from_str(scope))],
            )
        }),
    }
}

fn ms(name: &str, value: f64) -> Result<u64, IssuerError> {
    ms_from_f64(name, value)
}

fn opt_str(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// Result kinds, index 0 of the answer array (strings: the JS side keeps no table).
const GRANTED: &str = "granted";
const HELD: &str = "held";
const RENEWED: &str = "renewed";
const EXPIRED: &str = "expired";
const RELEASED: &str = "released";
const RAISED: &str = "raised";
const NOT_HELD: &str = "not-held";
const REQUEST_ID_REUSED: &str = "request-id-reused";

fn grant_row(kind: &str, g: &Grant, flag: bool) -> [JsValue; 7] {
    [
        JsValue::from_str(kind),
        epoch_to_js(g.epoch),
        JsValue::from_f64(g.expires_at as f64),
        JsValue::from_str(&g.holder),
        opt_str(g.request_id.as_deref()),
        JsValue::from_bool(flag),
        JsValue::from_str(&g.lease_id),
    ]
}

fn row(result: &IssuerResult) -> [JsValue; 7] {
    let none = || JsValue::NULL;
    match result {
        IssuerResult::Granted(g) => grant_row(GRANTED, g, g.replayed),
        IssuerResult::Renewed(g) => grant_row(RENEWED, g, false),
        IssuerResult::Held {
            epoch,
            holder,
            expires_at,
        } => [
            JsValue::from_str(HELD),
            epoch_to_js(*epoch),
            JsValue::from_f64(*expires_at as f64),
            JsValue::from_str(holder),
            none(),
            JsValue::FALSE,
            none(),
        ],
        IssuerResult::Expired { epoch } => [
            JsValue::from_str(EXPIRED),
            epoch_to_js(*epoch),
            none(),
            none(),
            none(),
            JsValue::FALSE,
            none(),
        ],
        IssuerResult::NotHeld | IssuerResult::RequestIdReused => [
            JsValue::from_str(if matches!(result, IssuerResult::NotHeld) {
                NOT_HELD
            } else {
                REQUEST_ID_REUSED
            }),
            none(),
            none(),
            none(),
            none(),
            JsValue::FALSE,
            none(),
        ],
        IssuerResult::Released { released, epoch } => [
            JsValue::from_str(RELEASED),
            epoch_to_js(*epoch),
            none(),
            none(),
            none(),
            JsValue::from_bool(*released),
            none(),
        ],
        IssuerResult::Raised {
            before,
            after,
            revoked,
        } => [
            JsValue::from_str(RAISED),
            epoch_to_js(*after),
            none(),
            none(),
            none(),
            JsValue::from_bool(*revoked),
            epoch_to_js(*before),
        ],
    }
}

/// Applies one issuer transition to one scope's persisted state.
///
/// * `state`: the stored state as JSON text (`{"v":2,"epoch":"41","lease":…}`,
///   or format 1), or `undefined`/`null` for a scope with no record.
/// * `op`: `"acquire"`, `"renew"`, `"release"`, `"raise"`, or `"raiseRevoking"`
///   (raise, revoking a live lease at or below `at_least`: reconcile).
/// * `holder`: who asks (acquire, renew, release); ignored by raise.
/// * `lease_id`: the presented lease id (renew, release); ignored otherwise.
/// * `ttl_ms`, `now_ms`: host milliseconds (ignored where the operation takes none).
/// * `request_id`: acquire's request id, or `undefined`.
/// * `bigint`: epochs may go up to 2^64−1 (else 2^53−1): the limit of acquire and raise.
/// * `at_least`: raise's floor (number or bigint).
/// * `random`: acquire's 16 bytes from the host's CSPRNG (the key of a new
///   lease id); ignored by the other operations.
///
/// Answers `[kind, epoch, expiresAt, holder, requestId, flag, leaseId|epochBefore, nextState]`:
/// `kind` `"granted"` (flag = replayed), `"held"` (LEASE_HELD), `"renewed"`,
/// `"expired"` (LEASE_EXPIRED), `"released"` (flag = released), `"raised"`
/// (flag = revoked), `"not-held"` (LEASE_NOT_HELD), `"request-id-reused"`
/// (REQUEST_ID_REUSED; these two carry nothing else); `nextState` is the JSON
/// text to commit before the result is handed out, or `null` when nothing changes.
/// Throws INVALID_ARGUMENT, CORRUPT_STATE, EPOCH_OVERFLOW (nothing changes on any).
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = "__issuerStep")]
pub fn issuer_step(
    state: Option<String>,
    op: &str,
    scope: &str,
    holder: &str,
    lease_id: &str,
    ttl_ms: f64,
    now_ms: f64,
    request_id: Option<String>,
    bigint: bool,
    at_least: JsValue,
    random: &[u8],
) -> Result<Array, JsValue> {
    let decoded = decode(state, scope)?;
    let limit = if bigint {
        EpochLimit::BigInt
    } else {
        EpochLimit::Number
    };
    let step = (|| match op {
        "acquire" => acquire(
            &decoded,
            &AcquireRequest {
                scope,
                holder,
                ttl_ms: ms("ttlMs", ttl_ms)?,
                now_ms: ms("now", now_ms)?,
                request_id: request_id.as_deref(),
                limit,
                random: <[u8; LEASE_KEY_BYTES]>::try_from(random).map_err(|_| {
                    IssuerError::InvalidArgument(format!(
                        "acquire needs {LEASE_KEY_BYTES} random bytes for the lease id"
                    ))
                })?,
            },
        ),
        "renew" => renew(
            &decoded,
            scope,
            lease_id,
            holder,
            ms("ttlMs", ttl_ms)?,
            ms("now", now_ms)?,
        ),
        "release" => release(&decoded, scope, lease_id, holder),
        "raise" => {
            let floor = token_from_js(&at_least).map_err(|e| {
                IssuerError::InvalidArgument(format!("atLeast must be an epoch: {e}"))
            })?;
            Ok(raise(
                &decoded,
                raise_floor(floor, limit)?,
                ms("now", now_ms)?,
            ))
        }
        "raiseRevoking" => {
            let floor = token_from_js(&at_least).map_err(|e| {
                IssuerError::InvalidArgument(format!("atLeast must be an epoch: {e}"))
            })?;
            Ok(raise_revoking(
                &decoded,
                raise_floor(floor, limit)?,
                ms("now", now_ms)?,
            ))
        }
        _ => Err(IssuerError::InvalidArgument(
            "unknown issuer operation".to_owned(),
        )),
    })()
    .map_err(|e| issuer_error(&e, scope))?;
    let out = Array::new();
    for v in row(&step.result) {
        out.push(&v);
    }
    out.push(
        &step
            .next
            .map_or(JsValue::NULL, |n| JsValue::from(n.to_json())),
    );
    Ok(out)
}

/// Decodes a scope's persisted issuer state (JSON text, or `undefined`/`null`
/// for no record) for reading: `[epoch, holder, expiresAt, requestId, leaseId]`,
/// the last four `null` when there is no lease. Throws CORRUPT_STATE.
#[wasm_bindgen(js_name = "__issuerDecode")]
pub fn issuer_decode(state: Option<String>, scope: &str) -> Result<Array, JsValue> {
    let decoded = decode(state, scope)?;
    let out = Array::new();
    out.push(&epoch_to_js(decoded.epoch));
    match &decoded.lease {
        None => {
            for _ in 0..4 {
                out.push(&JsValue::NULL);
            }
        }
        Some(l) => {
            out.push(&JsValue::from_str(&l.holder));
            out.push(&JsValue::from_f64(l.expires_at as f64));
            out.push(&opt_str(l.request_id.as_deref()));
            out.push(&JsValue::from_str(&l.id(scope, decoded.epoch)));
        }
    }
    Ok(out)
}
