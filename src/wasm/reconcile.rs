//! Binding of the reconcile planner ([`crate::reconcile`]): one call per
//! scope, what `reconcile()` read in, the plan out, both as objects. The JS
//! side (`pkg/lib/reconcile.mjs`) carries the plan out through the stores;
//! nothing is decided there.
//!
//! Objects in are read member by member ([`Members`]), not with
//! serde-wasm-bindgen's `Deserialize`, whose error paths pull float formatting
//! into the `.wasm` (docs/decisions/reconcile-planner.md); answers go out through
//! serde-wasm-bindgen's `Serializer`.

use std::cell::RefCell;

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

use super::error;
use super::issuer::to_js;
use crate::error::Code;
use crate::issuer::{IssuerRecord, LeaseRecord};
use crate::reconcile::{plan, FenceRecord, Raised, ScopeInput};
use crate::token::MAX_SAFE_INTEGER;

thread_local! {
    /// JS strings of the member names read so far (a dozen): made once, not
    /// per call (decoding a name from Wasm memory was most of a step's cost).
    static NAMES: RefCell<Vec<(&'static str, JsValue)>> = const { RefCell::new(Vec::new()) };
}

fn js_name(name: &'static str) -> JsValue {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some((_, v)) = names.iter().find(|(n, _)| std::ptr::eq(*n, name)) {
            return v.clone();
        }
        let v = JsValue::from_str(name);
        names.push((name, v.clone()));
        v
    })
}

/// The members of a JS object that the package's own JS built (a record
/// `Issuer.current` or `Gate.inspect` resolved to): each read
/// once by name; a member of the wrong type is an error naming it.
struct Members(JsValue);

impl Members {
    /// The member `name` (`undefined` when absent or not an object).
    pub fn get(&self, name: &'static str) -> JsValue {
        Reflect::get(&self.0, &js_name(name)).unwrap_or(JsValue::UNDEFINED)
    }

    fn wrong(name: &'static str, what: &str) -> String {
        format!("{name} must be {what}")
    }

    /// A string member (absent: `None`).
    pub fn opt_string(&self, name: &'static str) -> Result<Option<String>, String> {
        let v = self.get(name);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        v.as_string()
            .map(Some)
            .ok_or_else(|| Self::wrong(name, "a string"))
    }

    /// A required string member.
    pub fn string(&self, name: &'static str) -> Result<String, String> {
        self.opt_string(name)?
            .ok_or_else(|| Self::wrong(name, "a string"))
    }

    /// A boolean member (absent: false).
    pub fn flag(&self, name: &'static str) -> Result<bool, String> {
        let v = self.get(name);
        if v.is_undefined() {
            return Ok(false);
        }
        v.as_bool().ok_or_else(|| Self::wrong(name, "a boolean"))
    }

    /// An epoch or ms member: a safe integer ≥ 0 or a bigint up to 2^64−1 (absent: `None`).
    pub fn opt_u64(&self, name: &'static str) -> Result<Option<u64>, String> {
        let v = self.get(name);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        let n = match v.as_f64() {
            Some(n) if n.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER as f64).contains(&n) => {
                Some(n as u64)
            }
            Some(_) => None,
            None if v.is_bigint() => u64::try_from(v).ok(),
            None => None,
        };
        n.map(Some)
            .ok_or_else(|| Self::wrong(name, "an integer in 0..2^64−1"))
    }

    /// A required epoch or ms member.
    pub fn u64(&self, name: &'static str) -> Result<u64, String> {
        self.opt_u64(name)?
            .ok_or_else(|| Self::wrong(name, "an integer in 0..2^64−1"))
    }

    /// An object member (absent or null: `None`).
    pub fn object(&self, name: &'static str) -> Result<Option<Members>, String> {
        let v = self.get(name);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        if !v.is_object() {
            return Err(Self::wrong(name, "an object"));
        }
        Ok(Some(Members(v)))
    }
}

fn lease_record(m: &Members) -> Result<LeaseRecord, String> {
    Ok(LeaseRecord {
        lease_id: m.string("leaseId")?,
        holder: m.string("holder")?,
        expires_at: m.u64("expiresAt")?,
        request_id: m.opt_string("requestId")?,
    })
}

fn scope_input(input: JsValue) -> Result<ScopeInput, String> {
    let m = Members(input);
    let issuer = m.object("issuer")?.ok_or("issuer must be an object")?;
    let keys = m.get("keys");
    let keys = keys
        .dyn_ref::<js_sys::Array>()
        .ok_or("keys must be an array")?
        .iter()
        .map(|r| {
            let r = Members(r);
            Ok(FenceRecord {
                key: r.string("key")?,
                exists: r.flag("exists")?,
                mark: r.u64("mark")?,
                holder: r.opt_string("holder")?,
                quarantine: r.opt_u64("quarantine")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let raised = match m.object("raised")? {
        None => None,
        Some(r) => Some(Raised {
            epoch_before: r.u64("epochBefore")?,
            epoch: r.u64("epoch")?,
            revoked: r.flag("revoked")?,
        }),
    };
    Ok(ScopeInput {
        issuer: IssuerRecord {
            scope: issuer.string("scope")?,
            epoch: issuer.u64("epoch")?,
            lease: issuer
                .object("lease")?
                .map(|l| lease_record(&l))
                .transpose()?,
        },
        keys,
        now: m.u64("now")?,
        bigint: m.flag("bigint")?,
        raised,
    })
}

/// Plans the repair of one scope: `input` is a [`ScopeInput`]
/// (`{ issuer, keys, now, bigint, raised? }`: the record `Issuer.current`
/// resolved to, the `Gate.inspect` records that could be read, host ms, the
/// issuer's epoch kind, and the result of the raise once it was carried out);
/// answers the [`crate::reconcile::ScopePlan`] object. Throws INVALID_ARGUMENT
/// when `input` does not have that shape.
#[wasm_bindgen(js_name = "__reconcilePlan")]
pub fn reconcile_plan(input: JsValue) -> Result<JsValue, JsValue> {
    let input = scope_input(input).map_err(|e| {
        error(
            Code::InvalidArgument,
            &format!("reconcile plan input: {e}"),
            &[],
        )
    })?;
    to_js(&plan(&input))
}
