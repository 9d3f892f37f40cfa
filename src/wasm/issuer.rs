//! Bindings of the lease-bound issuer ([`crate::issuer`]).
//!
//! One call per issuer step, the same shape as the gate's: it takes the stored
//! record, the operation and its options, and answers one object — the result
//! the JS `Issuer` class (`pkg/lib/issuer.mjs`) resolves to, and the next
//! record. The class loads the record from the host store, calls in, and
//! commits the next record before it returns the result to anyone. Nothing
//! here stores anything. Options cross as typed arguments ([`StepOptions`]),
//! the answer as one object (serde-wasm-bindgen); which result carries which
//! code is decided here ([`crate::issuer::IssuerResult::code`]), not in JS.
//!
//! The stored state comes in as JSON text (the JS side stringifies an object
//! a store returned): one string instead of a dozen property reads, and the
//! same strict decoder ([`IssuerState::from_json`]) as the native tests. The
//! next state goes out as its JSON text, written by the same encoder
//! ([`IssuerState::to_json`]): the gate's convention, so both sides of the
//! package hand the stores text written in Rust, and JS parses it only where
//! a store takes the object form.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::{epoch_to_js, error, message_of, token_from_js};
use crate::error::Code;
use crate::issuer::{
    acquire, ms_from_f64, raise, raise_floor, raise_revoking, release, renew, AcquireRequest,
    EpochLimit, IssuerError, IssuerState, ScopedResult, LEASE_KEY_BYTES,
};

fn issuer_error(e: &IssuerError, scope: &str) -> JsValue {
    let scope = JsValue::from_str(scope);
    match e {
        IssuerError::EpochOverflow { epoch, limit } => error(
            e.code(),
            &message_of(&e),
            &[
                ("scope", scope),
                ("epoch", epoch_to_js(*epoch)),
                ("limit", epoch_to_js(*limit)),
            ],
        ),
        IssuerError::RaiseOverflow { at_least, limit } => error(
            e.code(),
            &message_of(&e),
            &[
                ("scope", scope),
                ("atLeast", epoch_to_js(*at_least)),
                ("limit", epoch_to_js(*limit)),
            ],
        ),
        _ => error(e.code(), &message_of(&e), &[("scope", scope)]),
    }
}

fn decode(state: Option<String>, scope: &str) -> Result<IssuerState, JsValue> {
    match state {
        None => Ok(IssuerState::default()),
        Some(text) => IssuerState::from_json(&text).map_err(|e| {
            error(
                Code::CorruptState,
                &message_of(&e),
                &[("scope", JsValue::from_str(scope))],
            )
        }),
    }
}

/// The per-operation options of [`issuer_step`], as the JS `Issuer` checked
/// and gathered them from `AcquireArgs`, `RenewArgs`, `ReleaseArgs` and
/// `RaiseArgs` (`pkg/index.d.ts`; `tests/js/api/types-sync.test.mjs` compares
/// the names). What an operation does not take is absent (empty, 0).
///
/// They cross as typed arguments, not as one object read member by member:
/// the cheaper of the two per step (docs/decisions/issuer-step.md).
pub struct StepOptions {
    /// Who asks (acquire, renew, release); ignored by raise.
    pub holder: String,
    /// The presented lease id (renew, release).
    pub lease_id: String,
    /// acquire, renew: the lease's length in host ms.
    pub ttl_ms: f64,
    /// Host time in ms (acquire, renew, raise).
    pub now: f64,
    /// acquire's request id.
    pub request_id: Option<String>,
    /// Epochs may go up to 2^64−1 (else 2^53−1): the limit of acquire and raise.
    pub bigint: bool,
    /// raise's floor (number or bigint).
    pub at_least: JsValue,
    /// acquire's 16 bytes from the host's CSPRNG (the key of a new lease id).
    pub random: Vec<u8>,
}

/// The answer of [`issuer_step`]: the result the `Issuer` resolves to, and
/// the next state to commit before it is handed out.
#[derive(Serialize)]
pub struct StepAnswer<'a> {
    /// `{ ok, code, scope, … }` ([`ScopedResult`]).
    pub result: ScopedResult<'a>,
    /// The JSON text of the record to commit ([`IssuerState::to_json`]), or
    /// `None` (null) when nothing changes.
    pub next: Option<String>,
}

/// Serializes an answer object (`None` as `null`).
pub(crate) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::new().serialize_missing_as_null(true))
        .map_err(|e| error(Code::InvalidArgument, &e.to_string(), &[]))
}

fn floor_of(at_least: &JsValue, limit: EpochLimit) -> Result<u64, IssuerError> {
    let floor = token_from_js(at_least)
        .map_err(|e| IssuerError::InvalidArgument(format!("atLeast must be an epoch: {e}")))?;
    raise_floor(floor, limit)
}

/// Applies one issuer transition to one scope's persisted state.
///
/// * `state`: the stored state as JSON text (`{"v":2,"epoch":"41","lease":…}`,
///   or format 1), or `undefined`/`null` for a scope with no record.
/// * `scope`: the scope.
/// * `op`: `"acquire"`, `"renew"`, `"release"`, `"raise"`, or `"raiseRevoking"`
///   (raise, revoking a live lease at or below `atLeast`: reconcile).
/// * the rest: the fields of [`StepOptions`], in order (what the operation
///   does not take is `undefined`, or 0 for the two times).
///
/// Answers `{ result, next }` ([`StepAnswer`]): `result` is the `Issuer`'s
/// result object (`ok`/`code` from [`crate::issuer::IssuerResult::code`]);
/// `next` the JSON text of the record to commit before the result is handed
/// out ([`IssuerState::to_json`]), or `null`.
/// Throws INVALID_ARGUMENT, CORRUPT_STATE, EPOCH_OVERFLOW (nothing changes on any).
#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = "__issuerStep")]
pub fn issuer_step(
    state: Option<String>,
    scope: &str,
    op: &str,
    holder: Option<String>,
    lease_id: Option<String>,
    ttl_ms: f64,
    now: f64,
    request_id: Option<String>,
    bigint: bool,
    at_least: JsValue,
    random: Option<Vec<u8>>,
) -> Result<JsValue, JsValue> {
    let decoded = decode(state, scope)?;
    let o = StepOptions {
        holder: holder.unwrap_or_default(),
        lease_id: lease_id.unwrap_or_default(),
        ttl_ms,
        now,
        request_id,
        bigint,
        at_least,
        random: random.unwrap_or_default(),
    };
    let limit = if o.bigint {
        EpochLimit::BigInt
    } else {
        EpochLimit::Number
    };
    let step = (|| match op {
        "acquire" => acquire(
            &decoded,
            &AcquireRequest {
                scope,
                holder: &o.holder,
                ttl_ms: ms_from_f64("ttlMs", o.ttl_ms)?,
                now_ms: ms_from_f64("now", o.now)?,
                request_id: o.request_id.as_deref(),
                limit,
                random: <[u8; LEASE_KEY_BYTES]>::try_from(o.random.as_slice())
                    .ok()
                    .ok_or_else(|| {
                        IssuerError::InvalidArgument(format!(
                            "acquire needs {LEASE_KEY_BYTES} random bytes for the lease id"
                        ))
                    })?,
            },
        ),
        "renew" => renew(
            &decoded,
            scope,
            &o.lease_id,
            &o.holder,
            ms_from_f64("ttlMs", o.ttl_ms)?,
            ms_from_f64("now", o.now)?,
        ),
        "release" => release(&decoded, scope, &o.lease_id, &o.holder),
        "raise" => Ok(raise(
            &decoded,
            floor_of(&o.at_least, limit)?,
            ms_from_f64("now", o.now)?,
        )),
        "raiseRevoking" => Ok(raise_revoking(
            &decoded,
            floor_of(&o.at_least, limit)?,
            ms_from_f64("now", o.now)?,
        )),
        _ => Err(IssuerError::InvalidArgument(
            "unknown issuer operation".to_owned(),
        )),
    })()
    .map_err(|e| issuer_error(&e, scope))?;
    to_js(&StepAnswer {
        result: ScopedResult {
            scope,
            result: &step.result,
        },
        next: step.next.map(|next| next.into_wire().to_json()),
    })
}

/// Decodes a scope's persisted issuer state (JSON text, or `undefined`/`null`
/// for no record) for reading: the record `Issuer.current` resolves to,
/// `{ scope, epoch, lease: { leaseId, holder, expiresAt, requestId } | null }`
/// ([`crate::issuer::IssuerRecord`]). Throws CORRUPT_STATE.
#[wasm_bindgen(js_name = "__issuerDecode")]
pub fn issuer_decode(state: Option<String>, scope: &str) -> Result<JsValue, JsValue> {
    to_js(&decode(state, scope)?.record(scope))
}
