//! Bindings for signed tokens and gate policies
//! (docs/decisions/signed-tokens-verification.md).
//!
//! `RawPolicy` holds a parsed [`GatePolicy`] (keyring, `requireSigned`,
//! higher-epoch mode) plus the host's ceiling; gates take it by reference, so a
//! host-store gate can reuse it. `mintToken` / `verifyToken` are thin wrappers
//! over [`crate::signed`]. The JS wrapper (`pkg/lib/signed.mjs`) validates
//! option shapes before calling in. Names reach JS in camelCase (`addKey`,
//! `hostCheck`, `setCeiling`).

use wasm_bindgen::prelude::*;

use super::exchange::{put_claims, Request};
use super::{error, message_of, token_from_js};
use crate::decision::{decide, Operation, SameEpoch, Verdict};
use crate::error::{Code, TokenError};
use crate::policy::{GatePolicy, HigherEpoch, Presented};
use crate::signed::{Claims, Key, SignedError};
use crate::token::epoch_from_f64;

fn signed_error(e: &SignedError) -> JsValue {
    let mut details: Vec<(&str, JsValue)> = Vec::new();
    match e {
        SignedError::UnknownKey(kid) | SignedError::KeyRetired(kid) => {
            details.push(("kid", JsValue::from_str(kid)));
        }
        SignedError::WrongScope { expected, found } => {
            details.push(("expected", JsValue::from_str(expected)));
            details.push(("scope", JsValue::from_str(found)));
        }
        _ => {}
    }
    error(e.code(), &message_of(&e), &details)
}

fn invalid(message: &str) -> JsValue {
    error(Code::InvalidArgument, message, &[])
}

/// A u64 from a JS number (safe integer ≥ 0) or bigint (0..2^64−1), for
/// fields where 0 is allowed (issuer generation, ceilings).
fn u64_from_js(value: &JsValue, what: &str) -> Result<u64, JsValue> {
    if let Some(n) = value.as_f64() {
        if n == 0.0 {
            return Ok(0);
        }
        return epoch_from_f64(n)
            .map_err(|e| invalid(&format!("{what} must be an integer ≥ 0 ({e})")));
    }
    if value.is_bigint() {
        return u64::try_from(value.clone())
            .map_err(|_| invalid(&format!("{what} must be a bigint in 0..2^64−1")));
    }
    Err(invalid(&format!("{what} must be a number or a bigint")))
}

/// Which optional algorithms this build has: `["ed25519"]` or `[]`.
#[wasm_bindgen(js_name = "__features")]
pub fn features() -> Vec<String> {
    let mut f = Vec::new();
    if cfg!(feature = "ed25519") {
        f.push("ed25519".to_owned());
    }
    f
}

fn make_key(alg: &str, bytes: &[u8]) -> Result<Key, SignedError> {
    match alg {
        "hmac-sha256" => Key::hmac(bytes),
        "ed25519-host" => Key::host_ed25519(bytes),
        #[cfg(feature = "ed25519")]
        "ed25519-public" => Key::ed25519_public(bytes),
        #[cfg(feature = "ed25519")]
        "ed25519-seed" => Key::ed25519_secret(bytes),
        #[cfg(not(feature = "ed25519"))]
        "ed25519-public" | "ed25519-seed" => Err(SignedError::InvalidArgument(
            "this build has no Ed25519 support (it is a separate build: docs/signed-tokens.md)"
                .to_owned(),
        )),
        _ => Err(SignedError::InvalidArgument(format!(
            "unknown key type {}",
            crate::format::quoted(alg)
        ))),
    }
}

/// Key bytes handed in by the host: the binding owns this copy in Wasm memory
/// and wipes it when dropped, so a secret does not stay in freed memory.
struct Secret(Vec<u8>);

impl Drop for Secret {
    fn drop(&mut self) {
        crate::signed::wipe_vec(&mut self.0);
    }
}

/// Zeroes the 64 KiB of Wasm stack below the caller's frame. Key material is
/// copied onto the stack while a key is made or used (the HMAC pad states,
/// an Ed25519 seed), and nothing else clears it; the JS side calls this after
/// adding, retiring and freeing keys, minting and verifying, from the top
/// level (so every frame those calls used lies below). 64 KiB is far more
/// than any call here uses, and far less than the 1 MiB stack.
#[wasm_bindgen(js_name = "__wipeStack")]
pub fn wipe_stack() {
    zeroize::zeroize_stack::<{ 64 * 1024 }>();
}

/// The higher-epoch modes by the number `RawPolicy::new` takes.
pub(crate) const HIGHER_EPOCH_MODES: [HigherEpoch; 3] = [
    HigherEpoch::Adopt,
    HigherEpoch::AdoptWithin { max_jump: 0 },
    HigherEpoch::RejectFuture,
];

/// A gate policy: keyring, `requireSigned`, the higher-epoch mode and the
/// host's ceiling. Built by the JS wrapper from gate options (a gate without
/// policy options uses one shared plain policy: no keys, `adopt`); holds key
/// material in WebAssembly memory until `free()`.
#[wasm_bindgen]
pub struct RawPolicy {
    policy: GatePolicy,
    ceiling: Option<u64>,
}

impl RawPolicy {
    /// Decides a request's token against `mark`: provenance, the higher-epoch
    /// policy (with the request's ceiling when it brings one), the fence check.
    /// Returns the epoch-level verdict and a verified token's claims.
    pub(crate) fn admit(
        &mut self,
        mark: u64,
        req: &Request<'_>,
        same_epoch: SameEpoch,
        op: Operation,
    ) -> (Verdict, Option<Claims>) {
        if let (Presented::Plain(token), true) = (&req.presented, self.policy.is_plain()) {
            // What `GatePolicy::admit` answers for a plain policy, without its provenance steps.
            let v = match token {
                Ok(t) => decide(mark, *t, same_epoch, op),
                Err(e) => Verdict::invalid_token(mark, e),
            };
            return (v, None);
        }
        self.policy.same_epoch = same_epoch;
        let ceiling = req.ceiling.unwrap_or(self.ceiling);
        self.policy
            .admit(mark, req.presented.clone(), req.scope, op, ceiling)
    }
}

#[wasm_bindgen]
impl RawPolicy {
    /// `mode`: the index of the higher-epoch mode in [`HIGHER_EPOCH_MODES`]
    /// (the JS side reads their names from `__tables().higherEpochModes`);
    /// `max_jump` (epochs) for `adopt-within`.
    #[wasm_bindgen(constructor)]
    pub fn new(require_signed: bool, mode: u8, max_jump: JsValue) -> Result<RawPolicy, JsValue> {
        let higher = match HIGHER_EPOCH_MODES.get(usize::from(mode)) {
            Some(HigherEpoch::AdoptWithin { .. }) => HigherEpoch::AdoptWithin {
                max_jump: u64_from_js(&max_jump, "higherEpoch.maxJump")?,
            },
            Some(other) => *other,
            None => return Err(invalid("unknown higher-epoch mode")),
        };
        Ok(RawPolicy {
            policy: GatePolicy {
                require_signed,
                higher,
                ..GatePolicy::default()
            },
            ceiling: None,
        })
    }

    /// Adds a key: `alg` is `"hmac-sha256"` (the secret), `"ed25519-public"`
    /// (a 32-byte public key), `"ed25519-seed"` (a 32-byte seed) or
    /// `"ed25519-host"` (a 32-byte public key the host verifies with, WebCrypto). Throws
    /// INVALID_ARGUMENT for bad ids, lengths, duplicates or retired ids.
    /// The copy of `bytes` in Wasm memory is wiped when the call returns.
    #[wasm_bindgen(js_name = "addKey")]
    pub fn add_key(&mut self, kid: &str, alg: &str, bytes: Vec<u8>) -> Result<(), JsValue> {
        make_key(alg, &Secret(bytes).0)
            .and_then(|key| self.policy.keyring.insert(kid, key))
            .map_err(|e| signed_error(&e))
    }

    /// What the host must verify for a signed token under an `ed25519-host`
    /// key (WebCrypto): `[kid, publicKey, signingInput, signature]`, or
    /// `undefined` when the token does not parse, names a retired, unknown or
    /// other kind of key, or another algorithm (the decision then refuses it).
    #[wasm_bindgen(js_name = "hostCheck")]
    pub fn host_check(&self, text: &str) -> JsValue {
        let Some(c) = self.policy.keyring.host_check(text) else {
            return JsValue::UNDEFINED;
        };
        let bytes = |b: &[u8]| JsValue::from(js_sys::Uint8Array::from(b));
        js_sys::Array::of4(
            &JsValue::from_str(&c.kid),
            &bytes(&c.public_key),
            &bytes(&c.signing_input),
            &bytes(&c.signature),
        )
        .into()
    }

    /// Retires a key id (KEY_RETIRED from now on); its key bytes are wiped.
    pub fn retire(&mut self, kid: &str) -> Result<(), JsValue> {
        self.policy
            .keyring
            .retire(kid)
            .map_err(|e| signed_error(&e))
    }

    /// Sets the host's ceiling for reject-future (a number or bigint ≥ 0), or
    /// clears it with `undefined` / `null`.
    #[wasm_bindgen(js_name = "setCeiling")]
    pub fn set_ceiling(&mut self, ceiling: JsValue) -> Result<(), JsValue> {
        self.ceiling = if ceiling.is_undefined() || ceiling.is_null() {
            None
        } else {
            Some(u64_from_js(&ceiling, "higherEpoch.ceiling")?)
        };
        Ok(())
    }

    /// Verifies `text`; its claims go to the exchange (read like a
    /// decision's). `scope` undefined skips the scope check. Throws
    /// MALFORMED_TOKEN / KEY_RETIRED / UNKNOWN_KEY / BAD_SIGNATURE / WRONG_SCOPE.
    pub fn verify(&self, text: JsValue, scope: Option<String>) -> Result<(), JsValue> {
        let Some(text) = text.as_string() else {
            let e = if text.is_undefined() || text.is_null() {
                TokenError::Missing
            } else {
                TokenError::Malformed("a signed token is a string")
            };
            return Err(error(e.code(), &message_of(&e), &[("token", text)]));
        };
        let claims = self
            .policy
            .keyring
            .verify(&text, scope.as_deref())
            .map_err(|e| signed_error(&e))?;
        put_claims(&claims);
        Ok(())
    }
}

/// A verified signed token's lease id (possibly empty; what it binds:
/// [`OpMeta::claimed_by`](crate::decision::OpMeta::claimed_by)); none for a plain token.
pub(crate) fn lease_id(claims: &Option<Claims>) -> Option<&str> {
    claims.as_ref().map(|c| c.lease_id.as_str())
}

/// Mints a signed token's text form.
///
/// `alg` is `"hmac-sha256"` (key = the secret, 32..=1024 bytes) or
/// `"ed25519-seed"` (key = the 32-byte seed; Ed25519 builds only). `epoch` is
/// an epoch (number or bigint ≥ 1), `generation` a number or bigint ≥ 0.
/// Throws INVALID_ARGUMENT for a claim that breaks its rule.
#[wasm_bindgen(js_name = "__mintToken")]
#[allow(clippy::too_many_arguments)]
pub fn mint_token(
    scope: String,
    epoch: JsValue,
    lease_id: String,
    generation: JsValue,
    kid: String,
    alg: &str,
    key: Vec<u8>,
) -> Result<String, JsValue> {
    // Owned (not borrowed) so that the copy in Wasm memory is wiped on return.
    let key = Secret(key);
    let epoch = token_from_js(&epoch).map_err(|e| {
        invalid(&format!(
            "epoch must be an epoch (number or bigint ≥ 1): {e}"
        ))
    })?;
    let generation = u64_from_js(&generation, "generation")?;
    if alg == "ed25519-public" {
        return Err(invalid("an Ed25519 public key can verify but not mint"));
    }
    let key = make_key(alg, &key.0).map_err(|e| signed_error(&e))?;
    let claims = Claims {
        alg: key.alg(),
        epoch,
        generation,
        kid,
        scope,
        lease_id,
    };
    crate::signed::mint(&claims, &key).map_err(|e| signed_error(&e))
}

/// The 32-byte Ed25519 public key of a 32-byte seed (Ed25519 builds only).
#[wasm_bindgen(js_name = "__ed25519PublicKey")]
pub fn ed25519_public_key(seed: Vec<u8>) -> Result<Vec<u8>, JsValue> {
    let seed = Secret(seed);
    #[cfg(feature = "ed25519")]
    {
        let key = Key::ed25519_secret(&seed.0).map_err(|e| signed_error(&e))?;
        key.ed25519_public_bytes()
            .map(|b| b.to_vec())
            .ok_or_else(|| invalid("not an Ed25519 key"))
    }
    #[cfg(not(feature = "ed25519"))]
    {
        let _ = seed;
        Err(invalid(
            "this build has no Ed25519 support (it is a separate build: docs/signed-tokens.md)",
        ))
    }
}
