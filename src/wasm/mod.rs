//! The binding layer: the only code that knows JavaScript.
//!
//! It converts JS values to epochs (numbers and bigints on a fast path that
//! never goes through serde), calls the pure core, and turns failures into
//! `FencegateError` objects with a stable `code`. The hand-written JS wrapper in
//! `pkg/lib/core.mjs` dispatches on the token's JS type before calling in.
//!
//! It builds two WebAssembly modules from one crate (decision record
//! `docs/decisions/two-wasm-modules.md`): the resource side (feature `resource`: [`resource`],
//! the host-store gate entries, signed-token policies and minting), which every
//! entry file loads at start-up, and the issuer side (feature `issuer`: the
//! `Issuer` step and the reconcile planner), which the package loads only when an
//! `Issuer` or `reconcile` is first used. This file holds what both share: the
//! error class and the epoch conversions. Host builds (`cargo test`) enable both.

#[cfg(feature = "resource")]
mod exchange;
#[cfg(feature = "resource")]
mod gate;
#[cfg(feature = "issuer")]
pub mod issuer;
#[cfg(feature = "issuer")]
mod reconcile;
#[cfg(feature = "resource")]
mod resource;
#[cfg(feature = "resource")]
mod signed;

#[cfg(feature = "resource")]
pub use resource::*;

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::error::{Code, TokenError};
use crate::token::{epoch_from_f64, epoch_from_u64, MAX_SAFE_INTEGER};

thread_local! {
    static ERROR_CLASS: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the JS `FencegateError` class that errors are built with.
/// Called once by the package's entry files right after the module is initialised.
#[wasm_bindgen(js_name = "__setErrorClass")]
pub fn set_error_class(class: Function) {
    ERROR_CLASS.with(|c| *c.borrow_mut() = Some(class));
}

/// The message of an error value: `to_string()` without its panic path
/// (a `Display` of ours never fails; no location string per site: decision
/// record wasm-size).
pub(crate) fn message_of(e: &dyn std::fmt::Display) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = write!(out, "{e}");
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

/// A `FencegateError` to throw: the code, the message and the detail fields,
/// built as the JS object once, when it crosses (`From<JsError> for JsValue`).
pub struct JsError {
    pub(crate) code: Code,
    pub(crate) message: String,
    pub(crate) details: Vec<(&'static str, JsValue)>,
}

// The issuer side builds its errors with `error` directly.
#[cfg_attr(not(feature = "resource"), allow(dead_code))]
impl JsError {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> JsError {
        JsError {
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// Adds the detail field `name` (a property of the thrown error).
    pub(crate) fn with(mut self, name: &'static str, value: JsValue) -> JsError {
        self.details.push((name, value));
        self
    }
}

impl From<JsError> for JsValue {
    fn from(e: JsError) -> JsValue {
        error(e.code, &e.message, &e.details)
    }
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
