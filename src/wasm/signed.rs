//! Bindings for signed tokens and gate policies (issue 5).
//!
//! `RawPolicy` holds a parsed [`GatePolicy`] (keyring, `requireSigned`,
//! higher-epoch mode) plus the host's ceiling; gates take it by reference, so a
//! host-store gate can reuse it. `mintToken` / `verifyToken` are thin wrappers
//! over [`crate::signed`]. The JS wrapper (`pkg/lib/signed.mjs`) validates
//! option shapes before calling in.

use wasm_bindgen::prelude::*;

use super::{epoch_to_js, error, host, token_from_js, RawMemoryGate};
use crate::decision::{Operation, SameEpoch};
use crate::error::{Code, TokenError};
use crate::policy::{GatePolicy, HigherEpoch, Presented};
use crate::signed::{Claims, Key, SignedError};
use crate::token::{epoch_from_f64, epoch_from_u64};

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
    error(e.code(), &e.to_string(), &details)
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
            "unknown key type {alg:?}"
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
/// host's ceiling. Built by the JS wrapper from gate options; holds key
/// material in WebAssembly memory until `free()`.
#[wasm_bindgen]
pub struct RawPolicy {
    policy: GatePolicy,
    ceiling: Option<u64>,
    last_claims: Option<Claims>,
    last_token: Option<u64>,
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
            last_claims: None,
            last_token: None,
        })
    }

    /// Adds a key: `alg` is `"hmac-sha256"` (the secret), `"ed25519-public"`
    /// (a 32-byte public key) or `"ed25519-seed"` (a 32-byte seed). Throws
    /// INVALID_ARGUMENT for bad ids, lengths, duplicates or retired ids.
    /// The copy of `bytes` in Wasm memory is wiped when the call returns.
    pub fn add_key(&mut self, kid: &str, alg: &str, bytes: Vec<u8>) -> Result<(), JsValue> {
        make_key(alg, &Secret(bytes).0)
            .and_then(|key| self.policy.keyring.insert(kid, key))
            .map_err(|e| signed_error(&e))
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
    pub fn set_ceiling(&mut self, ceiling: JsValue) -> Result<(), JsValue> {
        self.ceiling = if ceiling.is_undefined() || ceiling.is_null() {
            None
        } else {
            Some(u64_from_js(&ceiling, "higherEpoch.ceiling")?)
        };
        Ok(())
    }

    /// Verifies `text` and keeps its claims for the `claims_*` accessors;
    /// `scope` undefined skips the scope check. Throws MALFORMED_TOKEN /
    /// KEY_RETIRED / UNKNOWN_KEY / BAD_SIGNATURE / WRONG_SCOPE.
    pub fn verify(&mut self, text: JsValue, scope: Option<String>) -> Result<(), JsValue> {
        self.last_claims = None;
        let Some(text) = text.as_string() else {
            let e = if text.is_undefined() || text.is_null() {
                TokenError::Missing
            } else {
                TokenError::Malformed("a signed token is a string")
            };
            return Err(error(e.code(), &e.to_string(), &[("token", text)]));
        };
        let claims = self
            .policy
            .keyring
            .verify(&text, scope.as_deref())
            .map_err(|e| signed_error(&e))?;
        self.last_claims = Some(claims);
        Ok(())
    }

    // The last verified claims (from `verify` or a gate operation), read field
    // by field: one string for the text fields keeps this to a single UTF-8
    // decode, which is what dominates building a JS object from Wasm.

    /// `kid + scope + leaseId` of the last verified claims, or `undefined` when
    /// the last operation had none (an unsigned token, or a refusal).
    pub fn claims_text(&self) -> Option<String> {
        self.last_claims
            .as_ref()
            .map(|c| [c.kid.as_str(), &c.scope, &c.lease_id].concat())
    }

    /// The length of `kid` in UTF-16 units (it is ASCII).
    pub fn claims_kid_len(&self) -> u32 {
        self.last_claims.as_ref().map_or(0, |c| c.kid.len() as u32)
    }

    /// The length of `scope` in UTF-16 units.
    pub fn claims_scope_len(&self) -> u32 {
        self.last_claims
            .as_ref()
            .map_or(0, |c| c.scope.encode_utf16().count() as u32)
    }

    /// The algorithm's wire byte (its index in `__tables().algorithms`), 0 = none.
    pub fn claims_alg(&self) -> u8 {
        self.last_claims.as_ref().map_or(0, |c| c.alg.byte())
    }

    /// The validated token of the last host-store decision under this policy
    /// (canonical epoch), or `null` when it was not authenticated (see
    /// `RawMemoryGate::last_token`).
    pub fn last_token(&self) -> JsValue {
        self.last_token.map_or(JsValue::NULL, epoch_to_js)
    }

    /// Decides against the stored mark of a host-store gate (`pkg/lib/gate.mjs`
    /// after `__state_*`): provenance, higher-epoch policy, fence check.
    fn decide_host(&mut self, scope: &str, p: Presented<'_>, flags: u32) -> u32 {
        self.policy.same_epoch = if flags & host::STRICT != 0 {
            SameEpoch::Strict
        } else {
            SameEpoch::Allow
        };
        let op = if flags & host::ESTABLISH != 0 {
            Operation::Establish
        } else {
            Operation::Write
        };
        let (rp, ceiling) = (&self.policy, self.ceiling);
        let mut claims = None;
        let mut token = None;
        let status = host::decide_with(op, |mark| {
            let (v, c) = rp.admit(mark, p, scope, op, ceiling);
            let holder = lease_holder(&c);
            claims = c;
            token = v.token;
            (v, holder)
        });
        self.last_claims = claims;
        self.last_token = token;
        status
    }

    /// Host-store decision for a number, bigint or signed-token text; `flags`
    /// as `__decide_*` (1 establish, 2 strict). Returns the status.
    pub fn decide_host_any(&mut self, scope: &str, token: JsValue, flags: u32) -> u32 {
        let mut text = None;
        let plain = presented(&token, &mut text);
        let p = match &text {
            Some(t) => Presented::Signed(t),
            None => Presented::Plain(plain),
        };
        self.decide_host(scope, p, flags)
    }

    /// Host-store decision for a JS number token (no scope needed).
    pub fn decide_host_n(&mut self, token: f64, flags: u32) -> u32 {
        self.decide_host("", Presented::Plain(epoch_from_f64(token)), flags)
    }

    /// The epoch (number ≤ 2^53−1, bigint above), or `null`.
    pub fn claims_epoch(&self) -> JsValue {
        self.last_claims
            .as_ref()
            .map_or(JsValue::NULL, |c| epoch_to_js(c.epoch))
    }

    /// The issuer generation (number ≤ 2^53−1, bigint above), or `null`.
    pub fn claims_generation(&self) -> JsValue {
        self.last_claims
            .as_ref()
            .map_or(JsValue::NULL, |c| epoch_to_js(c.generation))
    }
}

fn presented(token: &JsValue, text: &mut Option<String>) -> Result<u64, TokenError> {
    if let Some(n) = token.as_f64() {
        return epoch_from_f64(n);
    }
    if token.is_bigint() {
        return u64::try_from(token.clone())
            .map_err(|_| TokenError::Malformed("a bigint token must be in 1..2^64−1"))
            .and_then(epoch_from_u64);
    }
    if let Some(s) = token.as_string() {
        *text = Some(s);
        return Ok(0);
    }
    token_from_js(token)
}

impl RawMemoryGate {
    fn apply_policy(
        &mut self,
        policy: &mut RawPolicy,
        slot: u32,
        scope: &str,
        token: &JsValue,
        op: Operation,
    ) -> u32 {
        let mut text = None;
        let plain = presented(token, &mut text);
        let p = match &text {
            Some(t) => Presented::Signed(t),
            None => Presented::Plain(plain),
        };
        self.apply_presented(policy, slot, scope, p, op)
    }

    fn apply_presented(
        &mut self,
        policy: &mut RawPolicy,
        slot: u32,
        scope: &str,
        p: Presented<'_>,
        op: Operation,
    ) -> u32 {
        policy.policy.same_epoch = self.store.policy();
        let (rp, ceiling) = (&policy.policy, policy.ceiling);
        let mut claims = None;
        let check = |mark| {
            let (v, c) = rp.admit(mark, p, scope, op, ceiling);
            let holder = lease_holder(&c);
            claims = c;
            (v, holder)
        };
        // The JS wrapper keeps the values: a write's value is stored there when
        // the returned status says it applied (see `RawMemoryGate`). A signed
        // token's lease id is the holder for holder binding (issue 6).
        let meta = host::take_meta();
        let value = matches!(op, Operation::Write).then_some(());
        let verdict = self
            .store
            .apply_claimed(&slot, op, value, &meta.view(), check);
        policy.last_claims = claims;
        self.done(verdict)
    }
}

/// A signed token's lease id, the holder for holder binding (issue 6); none when empty.
fn lease_holder(claims: &Option<Claims>) -> Option<String> {
    claims
        .as_ref()
        .map(|c| c.lease_id.clone())
        .filter(|l| !l.is_empty())
}

#[wasm_bindgen]
impl RawMemoryGate {
    /// Fenced write under a policy: `token` is a number, a bigint or a signed
    /// token's text; `scope` is what a signed token must name. Returns the
    /// status (0 advance, 1 accept, 2 + code index reject); the caller stores
    /// the value when the status is below 2.
    pub fn write_p(
        &mut self,
        policy: &mut RawPolicy,
        slot: u32,
        scope: &str,
        token: JsValue,
    ) -> u32 {
        self.apply_policy(policy, slot, scope, &token, Operation::Write)
    }

    /// `write_p` for a JS number token (no scope, no strings: plain numbers
    /// carry no scope, and under `requireSigned` they are refused anyway).
    pub fn write_pn(&mut self, policy: &mut RawPolicy, slot: u32, token: f64) -> u32 {
        let p = Presented::Plain(epoch_from_f64(token));
        self.apply_presented(policy, slot, "", p, Operation::Write)
    }

    /// `establish_p` for a JS number token (see `write_pn`).
    pub fn establish_pn(&mut self, policy: &mut RawPolicy, slot: u32, token: f64) -> u32 {
        let p = Presented::Plain(epoch_from_f64(token));
        self.apply_presented(policy, slot, "", p, Operation::Establish)
    }

    /// Establish under a policy (see `write_p`).
    pub fn establish_p(
        &mut self,
        policy: &mut RawPolicy,
        slot: u32,
        scope: &str,
        token: JsValue,
    ) -> u32 {
        self.apply_policy(policy, slot, scope, &token, Operation::Establish)
    }

    /// The last verdict's validated token (canonical: number ≤ 2^53−1, bigint
    /// above), or `null` when it was missing, malformed, unsigned under
    /// `requireSigned`, or not authenticated.
    pub fn last_token(&self) -> JsValue {
        self.last.token.map_or(JsValue::NULL, epoch_to_js)
    }
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
