//! The exchange: how one decision crosses between JavaScript and Wasm
//! (decision record `docs/decisions/typed-exchange.md`).
//!
//! One buffer in Wasm memory, sized by the JS side ([`exchange_buffer`]).
//! Before a decision call the JS side writes a [`RequestHead`] at its start
//! and the request's texts (UTF-8) and fingerprint bytes right after it, in
//! the order of the head's `…_bytes` fields; the call reads them as one
//! [`Request`], decides, and writes a [`DecisionHead`] at a fixed address
//! (`__decisionHead`), with the texts it answers (a verified token's claims, the next state's
//! JSON) in the output text buffer at `text_ptr`. Errors are thrown, never
//! written here: a decision entry returns `Result<_, JsError>`.
//!
//! Both heads are plain-old-data `#[repr(C)]` structs declared with
//! [`layout!`], which also lists each field's name, offset and type:
//! `tables().layout` hands that list to JS once, so the layout is written
//! here only and the JS side (`pkg/lib/exchange.mjs`) reads and writes fields
//! by name. A call is one crossing: nothing is allocated or converted per
//! field, and nothing is kept between calls (the buffers are transport only).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::JsError;
use crate::decision::{Operation, Outcome, SameEpoch, Verdict};
use crate::error::{Code, TokenError};
use crate::policy::Presented;
use crate::signed::Claims;
use crate::token::{epoch_from_f64, epoch_from_u64};

/// Declares a `#[repr(C)]` plain-old-data struct (no padding: `bytemuck`
/// refuses one at compile time) and its `FIELDS`: `(name, byte offset,
/// type)` for each field, in declaration order.
macro_rules! layout {
    ($(#[$m:meta])* pub(crate) struct $name:ident { $($(#[$fm:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
        pub(crate) struct $name { $($(#[$fm])* pub $f: $t,)* }
        impl $name {
            /// Each field's name, byte offset and type, in declaration order.
            pub(crate) const FIELDS: &'static [(&'static str, usize, &'static str)] =
                &[$((stringify!($f), core::mem::offset_of!($name, $f), stringify!($t))),*];
        }
    };
}

layout! {
    /// The fixed part of a decision request. Booleans are 0 or 1; `…_bytes`
    /// are the UTF-8 lengths of the texts that follow the head, in field
    /// order; a text whose `has_…` is 0 is absent (its length is 0).
    pub(crate) struct RequestHead {
        /// The token when `token_kind` is `number` (any f64: validated here).
        pub number: f64,
        /// The token when `token_kind` is `exact` (a bigint in 0..=2^64−1).
        pub exact: u64,
        /// This decision's reject-future ceiling when `ceiling_kind` is `number`.
        pub ceiling_number: f64,
        /// This decision's ceiling when `ceiling_kind` is `exact`.
        pub ceiling_exact: u64,
        /// The MemoryGate key slot (host-store gates: 0).
        pub slot: u32,
        /// Operation ids kept per key and epoch (`opWindow`).
        pub window: u32,
        /// The signed token's text (`token_kind` `signed` / `host_verified`).
        pub token_text_bytes: u32,
        /// The scope a signed token must name.
        pub scope_bytes: u32,
        pub op_id_bytes: u32,
        pub holder_bytes: u32,
        /// The stored state's JSON text (host-store gates).
        pub state_bytes: u32,
        /// The operation's fingerprint bytes (hashed here).
        pub fingerprint_bytes: u32,
        /// 1: establish, 0: write.
        pub establish: u8,
        /// 1: the same-epoch rule `strict` (host-store gates; MemoryGate keeps its own).
        pub strict: u8,
        /// The index of the token's kind in [`TokenKind::ALL`].
        pub token_kind: u8,
        /// The index of the ceiling's kind in [`CeilingKind::ALL`].
        pub ceiling_kind: u8,
        pub has_op_id: u8,
        pub has_holder: u8,
        pub has_state: u8,
        pub has_fingerprint: u8,
    }
}

layout! {
    /// The answer of a decision (or of a quarantine or inspect: the marks
    /// only). Epochs are u64; a field whose `has_…` is 0 is 0.
    pub(crate) struct DecisionHead {
        pub mark_before: u64,
        pub mark_after: u64,
        /// The validated token (`has_token`).
        pub token: u64,
        /// A verified signed token's epoch and generation (`has_claims`).
        pub claims_epoch: u64,
        pub claims_generation: u64,
        /// The verdict's status ([`Verdict::status`]): the index the counters use.
        pub status: u32,
        /// The UTF-8 lengths of the texts at `text_ptr`, in this order: the
        /// claims' kid, scope and lease id (together `claims_text_bytes`), the
        /// next state's JSON text, the holder the operation binds.
        pub kid_bytes: u32,
        pub scope_bytes: u32,
        pub lease_id_bytes: u32,
        pub claims_text_bytes: u32,
        pub next_bytes: u32,
        /// 0: the operation binds no holder (a holder is never empty; an
        /// empty lease id binds nothing: [`crate::decision::OpMeta::claimed_by`]).
        pub bound_holder_bytes: u32,
        /// Where the output texts are in Wasm memory.
        pub text_ptr: u32,
        /// The index of the outcome in `tables().outcomes`.
        pub outcome: u8,
        /// A duplicate's original: 1 advance, 0 accept.
        pub original_advanced: u8,
        /// The index of a rejection's code in `tables().codes`.
        pub code: u8,
        /// A verified token's algorithm: its index in `tables().algorithms`.
        pub alg: u8,
        pub has_token: u8,
        pub has_claims: u8,
        /// The next state to commit follows the claims (a decision that applies, host-store gates).
        pub has_next: u8,
        /// Inspect: the state has a quarantine floor (`mark_after`).
        pub has_floor: u8,
    }
}

/// The kind of a request's token ([`RequestHead::token_kind`] is its index
/// in [`TokenKind::ALL`]). `Missing` and `Malformed` carry no value: a
/// verdict names only the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Number,
    Exact,
    Signed,
    HostVerified,
    Missing,
    Malformed,
}

impl TokenKind {
    pub(crate) const ALL: [TokenKind; 6] = [
        TokenKind::Number,
        TokenKind::Exact,
        TokenKind::Signed,
        TokenKind::HostVerified,
        TokenKind::Missing,
        TokenKind::Malformed,
    ];

    /// The JS name (`tables().layout.tokenKinds`).
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            TokenKind::Number => "number",
            TokenKind::Exact => "exact",
            TokenKind::Signed => "signed",
            TokenKind::HostVerified => "hostVerified",
            TokenKind::Missing => "missing",
            TokenKind::Malformed => "malformed",
        }
    }
}

/// Where a request's reject-future ceiling comes from
/// ([`RequestHead::ceiling_kind`] is its index in [`CeilingKind::ALL`]): the
/// policy's own ceiling, none (`null`), a number, a bigint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CeilingKind {
    Policy,
    None,
    Number,
    Exact,
}

impl CeilingKind {
    pub(crate) const ALL: [CeilingKind; 4] = [
        CeilingKind::Policy,
        CeilingKind::None,
        CeilingKind::Number,
        CeilingKind::Exact,
    ];

    /// The JS name (`tables().layout.ceilingKinds`).
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            CeilingKind::Policy => "policy",
            CeilingKind::None => "none",
            CeilingKind::Number => "number",
            CeilingKind::Exact => "exact",
        }
    }
}

const HEAD: usize = std::mem::size_of::<RequestHead>();
const ANSWER: usize = std::mem::size_of::<DecisionHead>();

/// Where the last answer's [`DecisionHead`] is: a static, so an answer needs
/// no allocation (MemoryGate's numeric lane writes no request and never sizes
/// the exchange buffer). Stored as words in atomics so no `unsafe` is needed;
/// wasm32 has one thread. Output only: nothing here is read back by Rust.
static ANSWER_WORDS: [AtomicU64; ANSWER / 8] = [const { AtomicU64::new(0) }; ANSWER / 8];

/// The address of the answer ([`DecisionHead`]) in Wasm memory; it never moves.
#[wasm_bindgen(js_name = "__decisionHead")]
pub fn decision_head() -> usize {
    ANSWER_WORDS.as_ptr() as usize
}

thread_local! {
    /// The exchange buffer (see the module documentation), in 8-byte words so
    /// the JS side can view it as typed arrays of any field type.
    static BUFFER: Cell<Vec<u64>> = const { Cell::new(Vec::new()) };
    /// The output texts of the last answer; overwritten by the next one.
    static OUT_TEXT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Makes the exchange buffer at least `bytes` long (and never shorter than
/// a request head) and returns its address. The JS side calls it at start-up and
/// when a request needs more room; the address stays valid until the next
/// call of this function (Wasm memory never moves).
#[wasm_bindgen(js_name = "__exchangeBuffer")]
pub fn exchange_buffer(bytes: usize) -> usize {
    let mut buf = BUFFER.with(Cell::take);
    let words = bytes.max(HEAD).div_ceil(8);
    if buf.len() < words {
        // Exactly what was asked: the JS side leaves the room to grow.
        buf = vec![0; words];
    }
    let ptr = buf.as_ptr() as usize;
    BUFFER.with(|b| b.set(buf));
    ptr
}

/// The layout of the exchange for `tables().layout`: `{ request, decision }`,
/// each `{ size, fields: { name: [offset, type] } }` with camelCase names,
/// and the kind lists `tokenKinds`, `ceilingKinds`.
pub(crate) fn layout_js() -> JsValue {
    let head = |size: usize, fields: &[(&str, usize, &str)]| -> JsValue {
        let out = Object::new();
        let map = Object::new();
        for (name, offset, ty) in fields {
            let entry = Array::of2(&JsValue::from(*offset as u32), &JsValue::from_str(ty));
            let _ = Reflect::set(&map, &JsValue::from_str(&camel(name)), &entry);
        }
        let _ = Reflect::set(&out, &"size".into(), &JsValue::from(size as u32));
        let _ = Reflect::set(&out, &"fields".into(), &map);
        out.into()
    };
    let names = |list: &mut dyn Iterator<Item = &'static str>| -> JsValue {
        list.map(JsValue::from_str).collect::<Array>().into()
    };
    let out = Object::new();
    let _ = Reflect::set(&out, &"request".into(), &head(HEAD, RequestHead::FIELDS));
    let _ = Reflect::set(
        &out,
        &"decision".into(),
        &head(ANSWER, DecisionHead::FIELDS),
    );
    let tokens = &mut TokenKind::ALL.iter().map(|k| k.as_str());
    let ceilings = &mut CeilingKind::ALL.iter().map(|k| k.as_str());
    let _ = Reflect::set(&out, &"tokenKinds".into(), &names(tokens));
    let _ = Reflect::set(&out, &"ceilingKinds".into(), &names(ceilings));
    out.into()
}

/// `snake_case` → `camelCase` (the JS-facing field names).
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut up = false;
    for c in name.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// One decision request, read from the exchange buffer.
pub(crate) struct Request<'a> {
    pub op: Operation,
    /// The same-epoch rule of a host-store gate.
    pub same_epoch: SameEpoch,
    pub presented: Presented<'a>,
    pub scope: &'a str,
    pub op_id: Option<&'a str>,
    pub holder: Option<&'a str>,
    pub state: Option<&'a str>,
    pub fingerprint: Option<&'a [u8]>,
    pub window: u32,
    /// This decision's ceiling (`None`: the policy's own).
    pub ceiling: Option<Option<u64>>,
    pub slot: u32,
}

/// The INVALID_ARGUMENT of a request the JS side did not write as this
/// layout says (a package whose lib/ and .wasm differ).
fn garbled(what: &str) -> JsError {
    JsError::new(
        Code::InvalidArgument,
        format!("the decision request is not in the exchange layout ({what}): pkg/lib does not match the Wasm build"),
    )
}

impl<'a> Request<'a> {
    /// Reads the request in `buf` (the head, then its texts).
    fn read(buf: &'a [u8]) -> Result<Request<'a>, JsError> {
        let head: RequestHead =
            bytemuck::pod_read_unaligned(buf.get(..HEAD).ok_or_else(|| garbled("short"))?);
        let mut rest = &buf[HEAD..];
        let mut bytes = |n: u32| -> Result<&'a [u8], JsError> {
            let n = n as usize;
            if rest.len() < n {
                return Err(garbled("a length beyond the buffer"));
            }
            let (b, r) = rest.split_at(n);
            rest = r;
            Ok(b)
        };
        let mut text = |n: u32| -> Result<&'a str, JsError> {
            std::str::from_utf8(bytes(n)?).map_err(|_| garbled("text that is not UTF-8"))
        };
        let token_text = text(head.token_text_bytes)?;
        let scope = text(head.scope_bytes)?;
        let op_id = text(head.op_id_bytes)?;
        let holder = text(head.holder_bytes)?;
        let state = text(head.state_bytes)?;
        let fingerprint = bytes(head.fingerprint_bytes)?;
        let kind = TokenKind::ALL.get(usize::from(head.token_kind));
        let presented = match kind.ok_or_else(|| garbled("token kind"))? {
            TokenKind::Number => Presented::Plain(epoch_from_f64(head.number)),
            TokenKind::Exact => Presented::Plain(epoch_from_u64(head.exact)),
            TokenKind::Signed => Presented::Signed(token_text),
            TokenKind::HostVerified => Presented::HostVerified(token_text),
            TokenKind::Missing => Presented::Plain(Err(TokenError::Missing)),
            TokenKind::Malformed => Presented::Plain(Err(TokenError::Malformed(
                "a token must be a number or a bigint",
            ))),
        };
        let ceiling = CeilingKind::ALL.get(usize::from(head.ceiling_kind));
        let ceiling = match ceiling.ok_or_else(|| garbled("ceiling kind"))? {
            CeilingKind::Policy => None,
            CeilingKind::None => Some(None),
            CeilingKind::Number => Some(Some(head.ceiling_number as u64)),
            CeilingKind::Exact => Some(Some(head.ceiling_exact)),
        };
        Ok(Request {
            op: Operation::establish_if(head.establish != 0),
            same_epoch: SameEpoch::strict_if(head.strict != 0),
            presented,
            scope,
            op_id: (head.has_op_id != 0).then_some(op_id),
            holder: (head.has_holder != 0).then_some(holder),
            state: (head.has_state != 0).then_some(state),
            fingerprint: (head.has_fingerprint != 0).then_some(fingerprint),
            window: head.window,
            ceiling,
            slot: head.slot,
        })
    }
}

/// Decides the request in the exchange buffer with `f` and writes its
/// answer there; returns the verdict's status. An error writes nothing.
pub(crate) fn decide_request(
    f: impl FnOnce(&Request<'_>) -> Result<Answer, JsError>,
) -> Result<u32, JsError> {
    let buf = BUFFER.with(Cell::take);
    let answer = Request::read(bytemuck::cast_slice(&buf)).and_then(|req| f(&req));
    BUFFER.with(|b| b.set(buf));
    Ok(put_answer(&answer?))
}

/// What a decision answers: the verdict, a verified token's claims, the
/// next state's JSON text to commit (host-store gates, when it applies), and
/// the holder the operation binds (the audit record's).
pub(crate) struct Answer {
    pub verdict: Verdict,
    pub claims: Option<Claims>,
    pub next: Option<String>,
    pub holder: Option<String>,
}

/// Writes `answer` to the exchange (see [`DecisionHead`]); returns the status.
pub(crate) fn put_answer(answer: &Answer) -> u32 {
    let mut head = verdict_head(&answer.verdict);
    put_texts(
        &mut head,
        answer.claims.as_ref(),
        answer.next.as_deref(),
        answer.holder.as_deref(),
    );
    put_head(&head);
    head.status
}

/// Writes a verified token's claims alone (`verifyToken`).
pub(crate) fn put_claims(claims: &Claims) {
    let mut head = DecisionHead::default();
    put_texts(&mut head, Some(claims), None, None);
    put_head(&head);
}

/// The verdict's part of an answer: marks, status, outcome, code, token.
fn verdict_head(v: &Verdict) -> DecisionHead {
    let (outcome, original) = match v.outcome {
        Outcome::Advance => (0, false),
        Outcome::Accept => (1, false),
        Outcome::Reject => (2, false),
        Outcome::Duplicate {
            original_advanced, ..
        } => (3, original_advanced),
    };
    DecisionHead {
        mark_before: v.mark_before,
        mark_after: v.mark_after,
        status: v.status(),
        outcome,
        original_advanced: u8::from(original),
        code: v.code.map_or(0, |c| c as u8),
        has_token: u8::from(v.token.is_some()),
        token: v.token.unwrap_or(0),
        ..DecisionHead::default()
    }
}

/// The claims, the next state's text and the bound holder into the output text buffer.
fn put_texts(
    head: &mut DecisionHead,
    claims: Option<&Claims>,
    next: Option<&str>,
    holder: Option<&str>,
) {
    if claims.is_some() || next.is_some() || holder.is_some() {
        let mut out = OUT_TEXT.with(Cell::take);
        out.clear();
        if let Some(c) = claims {
            head.has_claims = 1;
            head.alg = c.alg.byte();
            head.claims_epoch = c.epoch;
            head.claims_generation = c.generation;
            for (len, text) in [
                (&mut head.kid_bytes, &c.kid),
                (&mut head.scope_bytes, &c.scope),
                (&mut head.lease_id_bytes, &c.lease_id),
            ] {
                *len = text.len() as u32;
                out.extend_from_slice(text.as_bytes());
            }
            head.claims_text_bytes = out.len() as u32;
        }
        if let Some(n) = next {
            head.has_next = 1;
            head.next_bytes = n.len() as u32;
            out.extend_from_slice(n.as_bytes());
        }
        if let Some(h) = holder {
            head.bound_holder_bytes = h.len() as u32;
            out.extend_from_slice(h.as_bytes());
        }
        head.text_ptr = out.as_ptr() as usize as u32;
        OUT_TEXT.with(|o| o.set(out));
    }
}

/// Writes the marks of a quarantine or inspect: before, after, and whether
/// `after` is a quarantine floor (inspect).
pub(crate) fn put_marks(before: u64, after: u64, has_floor: bool) {
    put_head(&DecisionHead {
        mark_before: before,
        mark_after: after,
        has_floor: u8::from(has_floor),
        ..DecisionHead::default()
    });
}

fn put_head(head: &DecisionHead) {
    let words: [u64; ANSWER / 8] = bytemuck::cast(*head);
    for (slot, word) in ANSWER_WORDS.iter().zip(words) {
        slot.store(word, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field is listed, in order, with no gap (the JS side reads by these offsets).
    #[test]
    fn the_layouts_list_every_byte() {
        fn size_of(ty: &str) -> usize {
            match ty {
                "f64" | "u64" => 8,
                "u32" => 4,
                "u8" => 1,
                other => panic!("a type the JS side cannot read: {other}"),
            }
        }
        for (fields, size) in [(RequestHead::FIELDS, HEAD), (DecisionHead::FIELDS, ANSWER)] {
            let mut at = 0;
            for (name, offset, ty) in fields {
                assert_eq!(*offset, at, "{name}");
                at += size_of(ty);
            }
            assert_eq!(at, size);
        }
        assert_eq!(camel("token_text_bytes"), "tokenTextBytes");
        for (i, k) in TokenKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{}", k.as_str());
        }
        for (i, k) in CeilingKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{}", k.as_str());
        }
    }

    /// A request written by the layout reads back as the request it describes.
    #[test]
    fn a_request_reads_back() {
        let head = RequestHead {
            exact: 7,
            window: 64,
            op_id_bytes: 4,
            state_bytes: 18,
            token_kind: 1,
            has_op_id: 1,
            has_state: 1,
            ..RequestHead::default()
        };
        let mut buf = bytemuck::bytes_of(&head).to_vec();
        buf.extend_from_slice(br#"op-1{"v":1,"mark":"5"}"#);
        let req = Request::read(&buf).map_err(|e| e.message).unwrap();
        assert!(matches!(req.presented, Presented::Plain(Ok(7))));
        assert_eq!(req.op_id, Some("op-1"));
        assert_eq!(req.holder, None);
        assert_eq!(req.state, Some(r#"{"v":1,"mark":"5"}"#));
        assert_eq!(req.ceiling, None);
        buf.truncate(buf.len() - 1);
        assert!(Request::read(&buf).is_err());
    }
}
