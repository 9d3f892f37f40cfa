//! The resource side of the binding (feature `resource`, the default module
//! `fencegate_bg.wasm`): the names and limits table, token and state
//! conversions, and the in-memory gate. Decisions cross through the exchange
//! ([`super::exchange`]), which `__gateDecide` ([`super::gate`]) and
//! [`RawMemoryGate`] share.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::exchange::{decide_request, layout_js, put_answer, put_marks, Answer};
use super::signed::{self, RawPolicy};
use super::{epoch_to_js, error, gate, message_of, token_from_js, JsError};
use crate::decision::{decide, OpMeta, Operation, SameEpoch, Verdict};
use crate::error::{Code, StateError, TokenError};
use crate::state::ResourceState;
use crate::store::{apply_to, quarantined, Entry};
use crate::token::{epoch_from_f64, parse_token};

/// The names and limits the JS wrapper needs, read once when the module is
/// instantiated so that no table or limit is written twice
/// (decision record names-from-rust):
///
/// * `codes`: every stable code string, indexed by the hot-path status (`status - 2`);
/// * `outcomes`: the outcome names; `duplicateStatus`: the first duplicate status;
/// * `higherEpochModes`: mode names by the number `RawPolicy` takes;
/// * `algorithms`: algorithm names by `claims_alg` (index 0: `null`);
/// * `maxTokenText`: the longest signed-token text (UTF-16 units = bytes, ASCII);
/// * `maxKeyBytes`: the longest resource key / scope in UTF-8 bytes;
/// * `maxWindow`, `defaultWindow`: the `opWindow` bounds;
/// * `leaseKeyBytes`: the random bytes an issuer's `acquire` takes;
/// * `maxHolderBytes`, `maxOpIdBytes`: the longest holder and operation id in UTF-8 bytes;
/// * `maxFingerprintInput`: the longest operation a fingerprint is taken of, in bytes;
/// * `maxStateText`: the longest stored state text, in UTF-16 units;
/// * `layout`: the exchange's request and decision heads, field by field
///   ([`super::exchange`]), and the token and ceiling kinds.
#[wasm_bindgen(js_name = "__tables")]
pub fn tables() -> Object {
    use crate::decision::{Outcome, DUPLICATE_STATUS};
    use crate::signed::{Algorithm, MAX_SCOPE_LEN, MAX_TEXT_LEN};
    let names = |it: &mut dyn Iterator<Item = &'static str>| -> JsValue {
        it.map(JsValue::from_str).collect::<Array>().into()
    };
    let algorithms = (1..=u8::MAX)
        .map_while(Algorithm::from_byte)
        .map(|a| JsValue::from_str(a.as_str()));
    let duplicate = Outcome::Duplicate {
        original_advanced: false,
        original_before: 0,
    };
    let outcomes = [
        Outcome::Advance,
        Outcome::Accept,
        Outcome::Reject,
        duplicate,
    ];
    let fields: [(&str, JsValue); 17] = [
        (
            "maxFingerprintInput",
            (crate::ops::MAX_FINGERPRINT_INPUT as u32).into(),
        ),
        ("maxStateText", (crate::state::MAX_STATE_TEXT as u32).into()),
        ("layout", layout_js()),
        ("codes", names(&mut Code::ALL.iter().map(|c| c.as_str()))),
        (
            "outcomes",
            names(&mut outcomes.into_iter().map(Outcome::as_str)),
        ),
        ("duplicateStatus", DUPLICATE_STATUS.into()),
        (
            "higherEpochModes",
            names(&mut signed::HIGHER_EPOCH_MODES.iter().map(|m| m.as_str())),
        ),
        (
            "algorithms",
            std::iter::once(JsValue::NULL)
                .chain(algorithms)
                .collect::<Array>()
                .into(),
        ),
        ("maxTokenText", (MAX_TEXT_LEN as u32).into()),
        ("maxKeyBytes", (MAX_SCOPE_LEN as u32).into()),
        ("maxWindow", (crate::ops::MAX_WINDOW as u32).into()),
        ("defaultWindow", (crate::ops::DEFAULT_WINDOW as u32).into()),
        (
            "leaseKeyBytes",
            (crate::issuer::LEASE_KEY_BYTES as u32).into(),
        ),
        (
            "maxHolderBytes",
            (crate::ops::MAX_HOLDER_BYTES as u32).into(),
        ),
        ("maxOpIdBytes", (crate::ops::MAX_OP_ID_BYTES as u32).into()),
        (
            "maxRequestIdBytes",
            (crate::issuer::MAX_REQUEST_ID_BYTES as u32).into(),
        ),
        (
            "maxLeaseIdBytes",
            (crate::signed::MAX_LEASE_ID_LEN as u32).into(),
        ),
    ];
    let out = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&out, &JsValue::from_str(k), &v);
    }
    out
}

fn token_error(e: &TokenError, token: &JsValue) -> JsValue {
    error(e.code(), &message_of(&e), &[("token", token.clone())])
}

fn state_error(e: &StateError) -> JsValue {
    error(Code::CorruptState, &message_of(&e), &[])
}

/// Validates any JS value as a fencing token and returns the canonical epoch
/// (number ≤ 2^53−1, bigint above). Throws MISSING_TOKEN / MALFORMED_TOKEN.
#[wasm_bindgen(js_name = "toToken")]
pub fn to_token(value: JsValue) -> Result<JsValue, JsValue> {
    token_from_js(&value)
        .map(epoch_to_js)
        .map_err(|e| token_error(&e, &value))
}

/// Parses header/JSON text with the canonical decimal grammar `[1-9][0-9]*`
/// (≤ 2^64−1). Throws MISSING_TOKEN for undefined/null, MALFORMED_TOKEN otherwise.
#[wasm_bindgen(js_name = "parseToken")]
pub fn parse_token_js(text: JsValue) -> Result<JsValue, JsValue> {
    if text.is_undefined() || text.is_null() {
        return Err(token_error(&TokenError::Missing, &text));
    }
    let Some(s) = text.as_string() else {
        return Err(token_error(
            &TokenError::Malformed("parseToken takes a string"),
            &text,
        ));
    };
    parse_token(&s)
        .map(epoch_to_js)
        .map_err(|e| token_error(&e, &text))
}

/// Decodes persisted state (the wire object, or its JSON text), format v1 to v4.
/// Objects are turned into JSON text first, so one decoder
/// ([`ResourceState::from_json`]) reads every form.
pub(crate) fn decode_state_js(value: &JsValue) -> Result<ResourceState, StateError> {
    if let Some(text) = value.as_string() {
        return ResourceState::from_json(&text);
    }
    if !value.is_object() || Array::is_array(value) {
        return Err(StateError(
            "state must be an object {v, mark, …} or its JSON text".to_owned(),
        ));
    }
    let text = js_sys::JSON::stringify(value)
        .ok()
        .and_then(|t| t.as_string())
        .ok_or_else(|| StateError("state object cannot be turned into JSON".to_owned()))?;
    ResourceState::from_json(&text)
}

/// The wire object of a state (parsed from its JSON text).
pub(crate) fn state_to_js(state: &ResourceState) -> JsValue {
    js_sys::JSON::parse(&state.to_json()).unwrap_or(JsValue::UNDEFINED)
}

/// Decodes persisted state (`{"v":1,"mark":"41"}` as an object or JSON text)
/// and returns `{ mark }`. Throws CORRUPT_STATE for anything else.
#[wasm_bindgen(js_name = "decodeState")]
pub fn decode_state(value: JsValue) -> Result<JsValue, JsValue> {
    let state = decode_state_js(&value).map_err(|e| state_error(&e))?;
    let out = Object::new();
    let _ = Reflect::set(&out, &JsValue::from_str("mark"), &epoch_to_js(state.mark));
    if state.holder.is_some() || !state.ops.is_empty() {
        let holder = state
            .holder
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str);
        let _ = Reflect::set(&out, &JsValue::from_str("holder"), &holder);
        let ops: Array = state
            .ops
            .ops
            .iter()
            .map(|r| JsValue::from_str(&r.id))
            .collect();
        let _ = Reflect::set(&out, &JsValue::from_str("opIds"), &ops);
    }
    if let Some(floor) = state.quarantine {
        let _ = Reflect::set(&out, &JsValue::from_str("quarantine"), &epoch_to_js(floor));
    }
    Ok(out.into())
}

/// A quarantine floor: 0, or an epoch (number ≤ 2^53−1 or bigint ≤ 2^64−1).
pub(crate) fn floor_from_js(value: &JsValue) -> Result<u64, JsValue> {
    match token_from_js(value) {
        Ok(f) => Ok(f),
        Err(_) if value.as_f64() == Some(0.0) || *value == 0u64 => Ok(0),
        Err(e) => Err(error(
            Code::InvalidArgument,
            &format!("a quarantine floor must be 0 or an epoch ({e})"),
            &[("floor", value.clone())],
        )),
    }
}

/// Encodes a mark (a number or bigint ≥ 0) as the persisted wire object
/// `{ v: 1, mark: "<decimal>" }`.
#[wasm_bindgen(js_name = "encodeState")]
pub fn encode_state(mark: JsValue) -> Result<JsValue, JsValue> {
    let mark = match token_from_js(&mark) {
        Ok(m) => m,
        Err(_) if mark.as_f64() == Some(0.0) || mark == 0u64 => 0,
        Err(e) => {
            return Err(error(
                Code::InvalidArgument,
                &format!("encodeState: mark must be an epoch or 0 ({e})"),
                &[("mark", mark)],
            ))
        }
    };
    Ok(state_to_js(&ResourceState::at(mark)))
}

/// The embedded in-memory gate's marks, one per key, decided here. Keys are
/// interned to `u32` slots by the JS wrapper (`MemoryGate` in
/// `pkg/lib/core.mjs`), which also holds the values: it stores a write's value
/// in the same synchronous call, only when the status returned here says the
/// write applied, so check and change are still one step with no await or
/// throw between them. A number token passes no strings and no `JsValue`s.
///
/// The JS side hands out slots 0, 1, 2… in order, so the states are a
/// vector indexed by slot (a hash map of slots cost a lookup per decision);
/// `None`: the slot has no state yet. Check and apply follow
/// [`MemoryStore::apply_claimed`](crate::store::MemoryStore::apply_claimed):
/// a verdict that does not apply changes nothing, a new slot gets state
/// only when the verdict applies.
#[wasm_bindgen]
pub struct RawMemoryGate {
    same_epoch: SameEpoch,
    slots: Vec<Option<Entry<()>>>,
}

#[wasm_bindgen]
impl RawMemoryGate {
    /// A gate with the same-epoch rule `"allow"` (false) or `"strict"` (true).
    #[wasm_bindgen(constructor)]
    pub fn new(strict: bool) -> RawMemoryGate {
        RawMemoryGate {
            same_epoch: SameEpoch::strict_if(strict),
            slots: Vec::new(),
        }
    }

    /// The numeric lane of a gate without policy options (decision record
    /// `typed-exchange`): one write or establish on `slot` with a number
    /// token and no operation options, decided by the fence check and
    /// [`settle`] as every other request. Answers in the exchange like
    /// [`RawMemoryGate::apply`] and returns the status. Three scalars and no
    /// request to read: the JS side calls it for every plain number write.
    pub fn fence(&mut self, slot: u32, establish: bool, number: f64) -> u32 {
        let op = Operation::establish_if(establish);
        let token = epoch_from_f64(number);
        let same_epoch = self.same_epoch;
        let verdict = self.decide(op, slot, &OpMeta::NONE, |mark| {
            let v = match &token {
                Ok(t) => decide(mark, *t, same_epoch, op),
                Err(e) => Verdict::invalid_token(mark, e),
            };
            (v, None)
        });
        put_answer(&Answer {
            verdict,
            claims: None,
            next: None,
            holder: None,
        })
    }

    /// One write or establish, whatever the token kind and options: the
    /// request in the exchange (its `slot`), decided under `policy` (the
    /// plain policy for a gate without policy options), holder and
    /// operation-id rules included. Throws INVALID_ARGUMENT for invalid
    /// operation options (nothing changed). Answers in the exchange and
    /// returns the status (0 advance, 1 accept, 2 + code index reject,
    /// 256/257 duplicate); the caller stores a write's value when it is below 2.
    pub fn apply(&mut self, policy: &mut RawPolicy) -> Result<u32, JsError> {
        decide_request(|req| {
            let meta = gate::op_meta(req)?;
            let same_epoch = self.same_epoch;
            let mut claims = None;
            let verdict = self.decide(req.op, req.slot, &meta, |mark| {
                let (v, c) = policy.admit(mark, req, same_epoch, req.op);
                let holder = signed::lease_id(&c).map(str::to_owned);
                claims = c;
                (v, holder)
            });
            // The holder the operation binds, as `apply_to` settled it.
            let holder = meta.claimed_by(signed::lease_id(&claims)).holder;
            Ok(Answer {
                verdict,
                holder: holder.map(str::to_owned),
                claims,
                next: None,
            })
        })
    }

    /// The mark of `slot` (0: no state): a number, a bigint above 2^53−1.
    pub fn mark(&self, slot: u32) -> JsValue {
        epoch_to_js(self.mark_of(slot))
    }

    /// Whether a write was ever applied to `slot` (an establish alone does not count).
    #[wasm_bindgen(js_name = "hasValue")]
    pub fn has_value(&self, slot: u32) -> bool {
        self.get(slot).is_some_and(|e| e.value.is_some())
    }

    /// Whether `slot` has state (some operation was applied to it).
    #[wasm_bindgen(js_name = "hasState")]
    pub fn has_state(&self, slot: u32) -> bool {
        self.get(slot).is_some()
    }

    /// Quarantines `slot` at `floor` (a number or bigint ≥ 0): see
    /// [`MemoryStore::quarantine`](crate::store::MemoryStore::quarantine).
    /// Returns whether anything changed; the marks before and after are in
    /// the exchange.
    pub fn quarantine(&mut self, slot: u32, floor: JsValue) -> Result<bool, JsValue> {
        let floor = floor_from_js(&floor)?;
        let before = self.mark_of(slot);
        let changed = match self.slot_mut(slot) {
            Some(entry) => entry.state.quarantine_at(floor),
            None => {
                self.insert(slot, quarantined(floor));
                true
            }
        };
        put_marks(before, self.mark_of(slot), false);
        Ok(changed)
    }

    /// The persisted wire form of `slot`'s state, or `undefined` when it has none.
    pub fn state(&self, slot: u32) -> JsValue {
        self.get(slot)
            .map_or(JsValue::UNDEFINED, |e| state_to_js(&e.state))
    }
}

impl RawMemoryGate {
    /// The check-and-apply on `slot` both entries share
    /// ([`apply_to`](crate::store::apply_to) over the slot vector): `check`
    /// makes the epoch-level verdict and names a token's holder; [`settle`]
    /// applies holder and operation-id rules.
    fn decide(
        &mut self,
        op: Operation,
        slot: u32,
        meta: &OpMeta<'_>,
        check: impl FnOnce(u64) -> (Verdict, Option<String>),
    ) -> Verdict {
        let value = matches!(op, Operation::Write).then_some(());
        match self.slot_mut(slot) {
            Some(entry) => apply_to(Some(entry), op, value, meta, check, |_| {}),
            None => apply_to(None, op, value, meta, check, |entry| {
                self.insert(slot, entry)
            }),
        }
    }

    fn get(&self, slot: u32) -> Option<&Entry<()>> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    fn slot_mut(&mut self, slot: u32) -> Option<&mut Entry<()>> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    /// The mark of `slot` (0: no state).
    fn mark_of(&self, slot: u32) -> u64 {
        self.get(slot).map_or(0, |e| e.state.mark)
    }

    /// Gives `slot` its first state (the vector grows to it: slots come in order).
    fn insert(&mut self, slot: u32, entry: Entry<()>) {
        let i = slot as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(entry);
    }
}
