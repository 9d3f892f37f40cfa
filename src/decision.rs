//! The fence check: advance, accept or reject an epoch against a high-water mark.
//!
//! The rules are the seed article's ("the protected resource keeps the largest
//! epoch it has accepted, refuses smaller ones, advances on larger ones") and
//! Kleppmann's "How to do distributed locking" (2016): the storage server, not
//! the client, makes the comparison.

use crate::error::{Code, TokenError};
use crate::ops::{OpRecord, Seen, DEFAULT_WINDOW, FINGERPRINT_BYTES};
use crate::state::ResourceState;

/// What to do when a token equals the mark (DESIGN R2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SameEpoch {
    /// One owner writes many times in its epoch (ownership epochs; the default).
    #[default]
    Allow,
    /// Every operation needs a larger token: per-operation sequence numbers, a
    /// different protocol from ownership epochs.
    Strict,
}

impl SameEpoch {
    /// `Strict` when `strict`, else `Allow` (a gate's `sameEpoch` option as a flag).
    pub const fn strict_if(strict: bool) -> SameEpoch {
        if strict {
            SameEpoch::Strict
        } else {
            SameEpoch::Allow
        }
    }
}

/// The kind of operation being fenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A data change guarded by the token.
    Write,
    /// Raise the mark with no data change (the barrier a new owner runs before
    /// working, DESIGN R7). Establishing the current mark again is an idempotent
    /// accept under either same-epoch rule, so a retried barrier is harmless.
    Establish,
}

impl Operation {
    /// `Establish` when `establish`, else `Write` (a request's flag).
    pub const fn establish_if(establish: bool) -> Operation {
        if establish {
            Operation::Establish
        } else {
            Operation::Write
        }
    }
}

/// The outcome of a fence check: advance, accept, reject, or duplicate (an
/// operation id already applied in this epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// token > mark: raise the mark to the token and apply the change.
    Advance,
    /// token == mark and the same-epoch rule allows it: apply, mark unchanged.
    Accept,
    /// Nothing changes: not the mark, not the data (R3).
    Reject,
    /// The operation id was already applied in this epoch (DESIGN R10): nothing
    /// changes, and the verdict says what the original did.
    Duplicate {
        /// `true` when the original advanced the mark, `false` when it was accepted.
        original_advanced: bool,
        /// The mark before the original was applied.
        original_before: u64,
    },
}

impl Outcome {
    /// The JS name: `"advance"`, `"accept"` or `"reject"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Advance => "advance",
            Outcome::Accept => "accept",
            Outcome::Reject => "reject",
            Outcome::Duplicate { .. } => "duplicate",
        }
    }
}

/// The first status number used for duplicates (see [`Verdict::status`]).
pub const DUPLICATE_STATUS: u32 = 256;

/// The result of one fence check. `mark_after >= mark_before` always (R5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// advance / accept / reject.
    pub outcome: Outcome,
    /// Why it was rejected; `None` for advance and accept.
    pub code: Option<Code>,
    /// The validated token, or `None` when the token itself was missing/malformed.
    pub token: Option<u64>,
    /// The mark before the check (0 = never written).
    pub mark_before: u64,
    /// The mark after the check: the token on advance, otherwise unchanged.
    pub mark_after: u64,
}

impl Verdict {
    /// `true` for advance and accept: the host must apply the change.
    /// (A duplicate applies nothing: the original already did.)
    pub const fn applies(&self) -> bool {
        matches!(self.outcome, Outcome::Advance | Outcome::Accept)
    }

    /// A rejection with `code` for a valid token; the mark stays.
    pub const fn rejected(&self, code: Code) -> Verdict {
        Verdict {
            outcome: Outcome::Reject,
            code: Some(code),
            token: self.token,
            mark_before: self.mark_before,
            mark_after: self.mark_before,
        }
    }

    /// A rejection for a token that failed validation; the mark stays.
    pub const fn invalid_token(mark: u64, error: &TokenError) -> Verdict {
        Verdict {
            outcome: Outcome::Reject,
            code: Some(error.code()),
            token: None,
            mark_before: mark,
            mark_after: mark,
        }
    }

    /// A compact status for the hot path: 0 = advance, 1 = accept, 2 + code
    /// index = reject, 256 = duplicate of an advance, 257 = duplicate of an accept.
    pub const fn status(&self) -> u32 {
        match (self.outcome, self.code) {
            (Outcome::Advance, _) => 0,
            (Outcome::Accept, _) => 1,
            (
                Outcome::Duplicate {
                    original_advanced: true,
                    ..
                },
                _,
            ) => DUPLICATE_STATUS,
            (Outcome::Duplicate { .. }, _) => DUPLICATE_STATUS + 1,
            (Outcome::Reject, Some(code)) => 2 + code as u32,
            (Outcome::Reject, None) => 2 + Code::StaleToken as u32,
        }
    }
}

/// Decides one operation: `token` (already a valid epoch ≥ 1) against `mark`.
///
/// * token > mark → [`Outcome::Advance`], `mark_after = token`
/// * token == mark → [`Outcome::Accept`] under [`SameEpoch::Allow`] or for
///   [`Operation::Establish`]; `SAME_EPOCH_REJECTED` for a write under `Strict`
/// * token < mark → `STALE_TOKEN`
///
/// Comparison is on `u64` values: never text, never a narrower type.
pub const fn decide(mark: u64, token: u64, same_epoch: SameEpoch, op: Operation) -> Verdict {
    let (outcome, code, mark_after) = if token > mark {
        (Outcome::Advance, None, token)
    } else if token < mark {
        (Outcome::Reject, Some(Code::StaleToken), mark)
    } else if matches!(op, Operation::Establish) || matches!(same_epoch, SameEpoch::Allow) {
        (Outcome::Accept, None, mark)
    } else {
        (Outcome::Reject, Some(Code::SameEpochRejected), mark)
    };
    Verdict {
        outcome,
        code,
        token: Some(token),
        mark_before: mark,
        mark_after,
    }
}

// ---- The decision against a stored state (holder binding, operation ids,
// quarantine): shared by the in-memory store (`crate::store`) and the gates
// over host stores (`crate::wasm`), which load the stored state, decide here,
// and — only when the verdict applies — commit the returned next state with
// the data change in one atomic step (DESIGN R1). A rejection returns no next
// state, so nothing is written (R3); the next mark is `max(mark, token)` (R5).

/// What an operation says about itself beyond its token (decision record
/// operation-ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpMeta<'a> {
    /// The operation id, for de-duplication within an epoch (writes only;
    /// ignored by establish).
    pub op_id: Option<&'a str>,
    /// The holder or lease presenting the token. Unsigned numeric tokens name
    /// none; then holder binding cannot apply.
    pub holder: Option<&'a str>,
    /// How many operation ids the key keeps per epoch (1..=1024).
    pub window: usize,
    /// The operation's fingerprint ([`crate::ops::fingerprint`]), recorded
    /// with its id: a retry of the id with a different one is `OP_ID_REUSED`.
    pub fingerprint: Option<[u8; FINGERPRINT_BYTES]>,
}

impl OpMeta<'_> {
    /// No operation id, no holder.
    pub const NONE: OpMeta<'static> = OpMeta {
        op_id: None,
        holder: None,
        window: DEFAULT_WINDOW,
        fingerprint: None,
    };
}

impl<'a> OpMeta<'a> {
    /// The operation as the gate settles it after verifying a signed token
    /// whose lease id is `lease_id`: a non-empty lease id is the holder,
    /// whatever holder the operation names; an empty one (or no signed token)
    /// binds nothing, and the operation's own holder stays. The one definition
    /// of a token's holder (docs/signed-tokens.md, "The lease id in a token").
    pub fn claimed_by(&self, lease_id: Option<&'a str>) -> OpMeta<'a> {
        OpMeta {
            holder: lease_id.filter(|l| !l.is_empty()).or(self.holder),
            ..*self
        }
    }
}

/// Records operation id `op_id` (if any) in the window as applied over
/// `verdict.mark_before`, with the operation's fingerprint.
fn record_op(state: &mut ResourceState, op_id: Option<&str>, verdict: &Verdict, meta: &OpMeta<'_>) {
    if let Some(id) = op_id {
        let record = OpRecord {
            id: id.to_owned(),
            mark_before: verdict.mark_before,
            fingerprint: meta.fingerprint,
        };
        state.ops.push(record, meta.window);
    }
}

/// Applies holder binding and operation-id semantics to an epoch-level
/// `verdict` (from [`decide`] or a gate policy) and, when the result
/// applies, updates `state` in place. A result that does not apply leaves
/// `state` untouched (R3).
///
/// A quarantined state (decision record reconcile-planner) first refuses every valid token ≤ its floor
/// with `QUARANTINED`; an advance above the floor lifts the quarantine.
///
/// At an equal epoch, in this order:
/// 1. the state names a holder and the operation names a different one →
///    `EPOCH_CONFLICT` (one epoch handed to two owners: an issuer rollback);
/// 2. the operation id is in the window and both it and the operation carry
///    a fingerprint, and they differ → `OP_ID_REUSED` (the id was reused for
///    a different operation, like the IETF Idempotency-Key draft's
///    422);
/// 3. the operation id is in the window → `duplicate` with the original's
///    outcome (also under `strict`, so a retry after COMMIT_UNKNOWN is safe);
/// 4. the id fell out of the window (Bloom filter hit) → `OP_ID_EXPIRED`;
/// 5. otherwise the epoch-level verdict stands; an accept records the id and,
///    when the state named no holder yet, binds the operation's holder.
///
/// On advance the new epoch's holder is the operation's, and the window
/// restarts with this operation's id.
pub fn settle(
    state: &mut ResourceState,
    verdict: Verdict,
    op: Operation,
    meta: &OpMeta<'_>,
) -> Verdict {
    let Some(token) = verdict.token else {
        return verdict;
    };
    if let Some(floor) = state.quarantine {
        // A quarantined key refuses every epoch up to its floor, whatever the
        // epoch-level verdict said about it (stale, equal, or a gate-policy refusal
        // other than the fence check keeps its own code).
        let fence_level = verdict.applies()
            || matches!(
                verdict.code,
                Some(Code::StaleToken | Code::SameEpochRejected)
            );
        if fence_level && token <= floor {
            return verdict.rejected(Code::Quarantined);
        }
    }
    let op_id = if matches!(op, Operation::Write) {
        meta.op_id
    } else {
        None
    };
    match verdict.outcome {
        Outcome::Advance => {
            state.mark = state.mark.max(verdict.mark_after);
            state.quarantine = None;
            state.holder = meta.holder.map(str::to_owned);
            match op_id {
                // The same as `clear` and `record_op`, without a new allocation for the id.
                Some(id) => state.ops.restart(id, verdict.mark_before, meta.fingerprint),
                None => state.ops.clear(),
            }
            verdict
        }
        Outcome::Accept | Outcome::Reject if token == state.mark => {
            let strict_refusal = verdict.code == Some(Code::SameEpochRejected);
            if verdict.outcome == Outcome::Reject && !strict_refusal {
                return verdict;
            }
            if let (Some(bound), Some(holder)) = (state.holder.as_deref(), meta.holder) {
                if bound != holder {
                    return verdict.rejected(Code::EpochConflict);
                }
            }
            if let Some(id) = op_id {
                match state.ops.seen(id) {
                    Seen::Applied(original) => {
                        if let (Some(was), Some(now)) = (original.fingerprint, meta.fingerprint) {
                            if was != now {
                                return verdict.rejected(Code::OpIdReused);
                            }
                        }
                        return Verdict {
                            outcome: Outcome::Duplicate {
                                original_advanced: original.mark_before < token,
                                original_before: original.mark_before,
                            },
                            code: None,
                            token: Some(token),
                            mark_before: state.mark,
                            mark_after: state.mark,
                        };
                    }
                    Seen::Expired => return verdict.rejected(Code::OpIdExpired),
                    Seen::New => {}
                }
            }
            if strict_refusal {
                return verdict;
            }
            if state.holder.is_none() {
                state.holder = meta.holder.map(str::to_owned);
            }
            record_op(state, op_id, &verdict, meta);
            verdict
        }
        _ => verdict,
    }
}

/// The result of deciding one operation against stored state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDecision {
    /// The verdict (same shape as the in-memory gate's).
    pub verdict: Verdict,
    /// The state to commit with the data change; `None` when nothing applies
    /// (reject or duplicate: the host must write nothing at all).
    pub next: Option<ResourceState>,
}

/// Decides `token` against the stored state of one key.
///
/// * `stored` — the decoded stored state, or `None` when the key has no fence
///   record yet (mark 0). Decoding errors are the caller's CORRUPT_STATE and
///   never reach this function as "no state".
/// * `token` — the validated epoch, or why it is not one (always a rejection).
/// * `meta` — operation id and holder ([`settle`]).
///
/// On advance the next state carries the token as mark; on accept it carries
/// the unchanged mark (it is still written, so the host's version moves and a
/// concurrent writer that loaded the same version must re-check).
pub fn decide_state(
    stored: Option<&ResourceState>,
    token: Result<u64, TokenError>,
    same_epoch: SameEpoch,
    op: Operation,
    meta: &OpMeta<'_>,
) -> StoredDecision {
    let mark = stored.map_or(0, |s| s.mark);
    let verdict = match token {
        Ok(t) => decide(mark, t, same_epoch, op),
        Err(e) => Verdict::invalid_token(mark, &e),
    };
    decide_with_state(stored, verdict, op, meta)
}

/// Like [`decide_state`] for an epoch-level verdict already made against the
/// stored mark (e.g. by a gate policy).
pub fn decide_with_state(
    stored: Option<&ResourceState>,
    verdict: Verdict,
    op: Operation,
    meta: &OpMeta<'_>,
) -> StoredDecision {
    let quarantined = stored.is_some_and(|s| s.quarantine.is_some());
    if !verdict.applies() && meta.op_id.is_none() && meta.holder.is_none() && !quarantined {
        return StoredDecision {
            verdict,
            next: None,
        };
    }
    let mut state = stored.cloned().unwrap_or_default();
    let verdict = settle(&mut state, verdict, op, meta);
    let next = verdict.applies().then_some(state);
    StoredDecision { verdict, next }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn table() {
        let w = Operation::Write;
        let v = decide(0, 1, SameEpoch::Allow, w);
        assert_eq!(
            (v.outcome, v.code, v.mark_after),
            (Outcome::Advance, None, 1)
        );
        let v = decide(2, 2, SameEpoch::Allow, w);
        assert_eq!(
            (v.outcome, v.code, v.mark_after),
            (Outcome::Accept, None, 2)
        );
        let v = decide(2, 2, SameEpoch::Strict, w);
        assert_eq!(
            (v.outcome, v.code, v.mark_after),
            (Outcome::Reject, Some(Code::SameEpochRejected), 2)
        );
        let v = decide(2, 2, SameEpoch::Strict, Operation::Establish);
        assert_eq!((v.outcome, v.mark_after), (Outcome::Accept, 2));
        let v = decide(3, 2, SameEpoch::Allow, w);
        assert_eq!(
            (v.outcome, v.code, v.mark_after),
            (Outcome::Reject, Some(Code::StaleToken), 3)
        );
        // No narrow types: 2^31 and 2^32 boundaries, and above 2^53.
        for (m, t) in [
            ((1u64 << 31) - 1, 1u64 << 31),
            ((1 << 32) - 1, 1 << 32),
            (1 << 53, (1 << 53) + 1),
            (u64::MAX - 1, u64::MAX),
        ] {
            let v = decide(m, t, SameEpoch::Allow, w);
            assert_eq!((v.outcome, v.mark_after), (Outcome::Advance, t));
            let v = decide(t, m, SameEpoch::Allow, w);
            assert_eq!(
                (v.outcome, v.code),
                (Outcome::Reject, Some(Code::StaleToken))
            );
        }
    }

    #[test]
    fn status_codes() {
        assert_eq!(decide(0, 1, SameEpoch::Allow, Operation::Write).status(), 0);
        assert_eq!(decide(1, 1, SameEpoch::Allow, Operation::Write).status(), 1);
        assert_eq!(decide(2, 1, SameEpoch::Allow, Operation::Write).status(), 4);
        assert_eq!(
            Verdict::invalid_token(5, &TokenError::Missing).status(),
            2 + Code::MissingToken as u32
        );
    }

    proptest! {
        #[test]
        fn mark_never_decreases(mark in any::<u64>(), token in 1u64.., strict in any::<bool>(), est in any::<bool>()) {
            let same_epoch = if strict { SameEpoch::Strict } else { SameEpoch::Allow };
            let op = if est { Operation::Establish } else { Operation::Write };
            let v = decide(mark, token, same_epoch, op);
            prop_assert!(v.mark_after >= v.mark_before);
            prop_assert_eq!(v.mark_before, mark);
            prop_assert_eq!(v.applies(), token > mark || (token == mark && (!strict || est)));
            prop_assert_eq!(v.mark_after, mark.max(token));
            if !v.applies() { prop_assert_eq!(v.mark_after, mark); }
        }

        #[test]
        fn a_sequence_keeps_the_maximum(tokens in proptest::collection::vec(1u64.., 1..50)) {
            let mut mark = 0;
            for t in &tokens {
                let v = decide(mark, *t, SameEpoch::Allow, Operation::Write);
                prop_assert_eq!(v.applies(), *t >= mark);
                mark = v.mark_after;
            }
            prop_assert_eq!(mark, *tokens.iter().max().unwrap());
        }
    }
}

#[cfg(test)]
mod stored_tests {
    use super::*;
    use crate::error::Code;
    use proptest::prelude::*;

    const W: Operation = Operation::Write;

    #[test]
    fn no_record_is_mark_zero() {
        let d = decide_state(None, Ok(1), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        assert_eq!(d.next, Some(ResourceState::at(1)));
    }

    #[test]
    fn rejection_has_no_next_state() {
        let s = Some(ResourceState::at(100));
        let d = decide_state(s.as_ref(), Ok(99), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(
            (d.verdict.code, d.verdict.mark_after, d.next),
            (Some(Code::StaleToken), 100, None)
        );
        let d = decide_state(
            s.as_ref(),
            Err(TokenError::Missing),
            SameEpoch::Allow,
            W,
            &OpMeta::NONE,
        );
        assert_eq!((d.verdict.code, d.next), (Some(Code::MissingToken), None));
        let d = decide_state(s.as_ref(), Ok(100), SameEpoch::Strict, W, &OpMeta::NONE);
        assert_eq!(
            (d.verdict.code, d.next),
            (Some(Code::SameEpochRejected), None)
        );
        let d = decide_state(s.as_ref(), Ok(101), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(d.next, Some(ResourceState::at(101)));
    }

    #[test]
    fn accept_rewrites_the_same_mark() {
        let s = Some(ResourceState::at(u64::MAX));
        let d = decide_state(s.as_ref(), Ok(u64::MAX), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        assert_eq!(d.next, s);
        let d = decide_state(
            s.as_ref(),
            Ok(u64::MAX),
            SameEpoch::Strict,
            Operation::Establish,
            &OpMeta::NONE,
        );
        assert_eq!(d.next, s);
    }

    /// A write under the `allow` same-epoch rule: the call most of these tests make.
    fn allow(
        stored: Option<&ResourceState>,
        token: Result<u64, TokenError>,
        meta: &OpMeta<'_>,
    ) -> StoredDecision {
        decide_state(stored, token, SameEpoch::Allow, W, meta)
    }

    fn meta<'a>(op_id: Option<&'a str>, holder: Option<&'a str>, window: usize) -> OpMeta<'a> {
        OpMeta {
            op_id,
            holder,
            window,
            fingerprint: None,
        }
    }

    /// Mark 4; write(5, op r1) advances; the reply is lost; the retry
    /// with op r1 is a duplicate, applies nothing, and the mark stays 5.
    #[test]
    fn retried_operation_is_a_duplicate() {
        let s = ResourceState::at(4);
        let d = allow(Some(&s), Ok(5), &meta(Some("r1"), None, 64));
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        let s = d.next.unwrap();
        assert_eq!(
            s.to_json(),
            r#"{"v":4,"mark":"5","holder":null,"ops":[["r1","4"]],"evicted":null,"quarantine":null}"#
        );
        for same_epoch in [SameEpoch::Allow, SameEpoch::Strict] {
            let d = decide_state(Some(&s), Ok(5), same_epoch, W, &meta(Some("r1"), None, 64));
            assert_eq!(
                d.verdict.outcome,
                Outcome::Duplicate {
                    original_advanced: true,
                    original_before: 4
                }
            );
            assert_eq!(
                (
                    d.verdict.mark_before,
                    d.verdict.mark_after,
                    d.verdict.status()
                ),
                (5, 5, 256)
            );
            assert_eq!(d.next, None);
        }
        let d = allow(Some(&s), Ok(5), &meta(Some("r2"), None, 64));
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        let s2 = d.next.unwrap();
        let d = allow(Some(&s2), Ok(5), &meta(Some("r2"), None, 64));
        assert_eq!(
            d.verdict.outcome,
            Outcome::Duplicate {
                original_advanced: false,
                original_before: 5
            }
        );
        assert_eq!(d.verdict.status(), 257);
        // A new epoch clears the window: r1 is new again at epoch 6.
        let d = allow(Some(&s2), Ok(6), &meta(Some("r1"), None, 64));
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        assert_eq!(d.next.unwrap().ops.ops.len(), 1);
        // A stale retry is stale, not a duplicate.
        let d = allow(Some(&s2), Ok(4), &meta(Some("r1"), None, 64));
        assert_eq!(d.verdict.code, Some(Code::StaleToken));
    }

    /// Mark 5, window 3: a, b, c, d applied; a again is not applied as new.
    #[test]
    fn evicted_id_is_not_applied_as_new() {
        let mut s = ResourceState::at(5);
        for id in ["a", "b", "c", "d"] {
            let d = allow(Some(&s), Ok(5), &meta(Some(id), None, 3));
            assert_eq!(d.verdict.outcome, Outcome::Accept, "{id}");
            s = d.next.unwrap();
        }
        let d = allow(Some(&s), Ok(5), &meta(Some("a"), None, 3));
        assert_eq!(
            (d.verdict.outcome, d.verdict.code, d.next),
            (Outcome::Reject, Some(Code::OpIdExpired), None)
        );
        let d = allow(Some(&s), Ok(5), &meta(Some("b"), None, 3));
        assert_eq!(
            d.verdict.outcome,
            Outcome::Duplicate {
                original_advanced: false,
                original_before: 5
            }
        );
    }

    /// Window 2, epoch 5, ids `z`, `1`, `y`, then `1` again: a
    /// duplicate, whatever order a host hands the stored members back in.
    #[test]
    fn window_order_survives_reordered_members() {
        let mut text: Option<String> = None;
        for id in ["z", "1", "y"] {
            let s = text
                .as_deref()
                .map(|t| ResourceState::from_json(t).unwrap());
            let d = allow(s.as_ref(), Ok(5), &meta(Some(id), None, 2));
            assert!(d.verdict.applies(), "{id}");
            // The host re-serialises the state with members sorted.
            let v: serde_json::Value = serde_json::from_str(&d.next.unwrap().to_json()).unwrap();
            text = Some(v.to_string());
        }
        let s = ResourceState::from_json(text.as_deref().unwrap()).unwrap();
        let d = allow(Some(&s), Ok(5), &meta(Some("1"), None, 2));
        assert_eq!(
            (d.verdict.outcome, d.next),
            (
                Outcome::Duplicate {
                    original_advanced: false,
                    original_before: 5
                },
                None
            )
        );
        let d = allow(Some(&s), Ok(5), &meta(Some("z"), None, 2));
        assert_eq!(d.verdict.code, Some(Code::OpIdExpired));
    }

    /// An operation id reused with a different fingerprint is
    /// OP_ID_REUSED and changes nothing; the same fingerprint, or none on
    /// either side, is a duplicate as before.
    #[test]
    fn op_id_reused_with_another_fingerprint() {
        let fp = |b: &[u8]| Some(crate::ops::fingerprint(b));
        let with = |fingerprint| OpMeta {
            op_id: Some("pay-1"),
            holder: None,
            window: 64,
            fingerprint,
        };
        let d = decide_state(None, Ok(5), SameEpoch::Allow, W, &with(fp(b"{\"pay\":10}")));
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        let s = d.next.unwrap();
        for same_epoch in [SameEpoch::Allow, SameEpoch::Strict] {
            let d = decide_state(Some(&s), Ok(5), same_epoch, W, &with(fp(b"{\"pay\":99}")));
            assert_eq!(
                (
                    d.verdict.outcome,
                    d.verdict.code,
                    d.verdict.mark_after,
                    d.next
                ),
                (Outcome::Reject, Some(Code::OpIdReused), 5, None)
            );
            for same in [fp(b"{\"pay\":10}"), None] {
                let d = decide_state(Some(&s), Ok(5), same_epoch, W, &with(same));
                assert_eq!(
                    (d.verdict.outcome, d.next),
                    (
                        Outcome::Duplicate {
                            original_advanced: true,
                            original_before: 0
                        },
                        None
                    )
                );
            }
        }
        // Recorded without a fingerprint: any retry is a duplicate (a format-v2 record).
        let d = decide_state(None, Ok(5), SameEpoch::Allow, W, &with(None));
        let s = d.next.unwrap();
        let d = decide_state(Some(&s), Ok(5), SameEpoch::Allow, W, &with(fp(b"x")));
        assert!(matches!(d.verdict.outcome, Outcome::Duplicate { .. }));
        // A stale token is stale, whatever its fingerprint.
        let d = decide_state(Some(&s), Ok(4), SameEpoch::Allow, W, &with(fp(b"x")));
        assert_eq!(d.verdict.code, Some(Code::StaleToken));
    }

    /// The same epoch from a different holder is EPOCH_CONFLICT.
    #[test]
    fn holder_binding() {
        let d = decide_state(
            None,
            Ok(41),
            SameEpoch::Allow,
            Operation::Establish,
            &meta(None, Some("A"), 64),
        );
        let s = d.next.unwrap();
        assert_eq!(s.holder.as_deref(), Some("A"));
        let d = allow(Some(&s), Ok(41), &meta(None, Some("B"), 64));
        assert_eq!(
            (d.verdict.code, d.verdict.mark_after, d.next),
            (Some(Code::EpochConflict), 41, None)
        );
        let d = allow(Some(&s), Ok(41), &meta(None, Some("A"), 64));
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        // An unnamed (plain numeric) token cannot be told apart: accepted.
        let d = decide_state(Some(&s), Ok(41), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        // The first named writer binds an epoch established without a holder.
        let d = decide_state(
            Some(&ResourceState::at(41)),
            Ok(41),
            SameEpoch::Allow,
            W,
            &meta(None, Some("A"), 64),
        );
        let s = d.next.unwrap();
        assert_eq!(s.holder.as_deref(), Some("A"));
        let d = allow(Some(&s), Ok(41), &meta(None, Some("B"), 64));
        assert_eq!(d.verdict.code, Some(Code::EpochConflict));
        // A new epoch belongs to its own holder.
        let d = allow(Some(&s), Ok(42), &meta(None, Some("B"), 64));
        assert_eq!(d.next.unwrap().holder.as_deref(), Some("B"));
    }

    /// The resource's state was lost while the issuer is at 9; after
    /// `quarantine(9)` tokens ≤ 9 are refused until epoch 10 is established.
    #[test]
    fn quarantine_refuses_up_to_the_floor_until_a_new_epoch() {
        let mut s = ResourceState::default();
        assert!(s.quarantine_at(9));
        for (token, op, same_epoch) in [
            (9, W, SameEpoch::Allow),
            (9, Operation::Establish, SameEpoch::Allow),
            (9, W, SameEpoch::Strict),
            (3, W, SameEpoch::Allow),
            (1, Operation::Establish, SameEpoch::Allow),
        ] {
            for m in [OpMeta::NONE, meta(Some("r1"), Some("A"), 64)] {
                let d = decide_state(Some(&s), Ok(token), same_epoch, op, &m);
                assert_eq!(
                    (d.verdict.code, d.verdict.mark_after, &d.next),
                    (Some(Code::Quarantined), 9, &None),
                    "{token} {op:?}"
                );
            }
        }
        // A bad token keeps its own code.
        let d = decide_state(
            Some(&s),
            Err(TokenError::Missing),
            SameEpoch::Allow,
            W,
            &OpMeta::NONE,
        );
        assert_eq!(d.verdict.code, Some(Code::MissingToken));
        let d = decide_state(
            Some(&s),
            Ok(10),
            SameEpoch::Allow,
            Operation::Establish,
            &meta(None, Some("B"), 64),
        );
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        let lifted = d.next.unwrap();
        assert_eq!(
            lifted.to_json(),
            r#"{"v":4,"mark":"10","holder":"B","ops":[],"evicted":null,"quarantine":null}"#
        );
        let d = allow(Some(&lifted), Ok(10), &meta(None, Some("B"), 64));
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        // A write above the floor also advances and lifts it.
        let d = decide_state(Some(&s), Ok(11), SameEpoch::Allow, W, &OpMeta::NONE);
        assert_eq!(d.next, Some(ResourceState::at(11)));
    }

    proptest! {
        #[test]
        fn quarantine_never_lowers_and_refuses_the_floor(mark in any::<u64>(), floor in any::<u64>(), token in 1u64..) {
            let mut s = ResourceState::at(mark);
            s.quarantine_at(floor);
            prop_assert_eq!(s.mark, mark.max(floor));
            prop_assert_eq!(ResourceState::from_json(&s.to_json()), Ok(s.clone()));
            let d = decide_state(Some(&s), Ok(token), SameEpoch::Allow, W, &OpMeta::NONE);
            if token <= s.mark {
                prop_assert_eq!(d.verdict.code, Some(Code::Quarantined));
                prop_assert_eq!(d.next, None);
            } else {
                prop_assert_eq!(d.next.map(|n| (n.mark, n.quarantine)), Some((token, None)));
            }
        }

        #[test]
        fn an_op_id_is_applied_at_most_once_per_epoch(ids in proptest::collection::vec(0u8..20, 1..80), window in 1usize..8) {
            let mut s = ResourceState::at(3);
            let mut applied = std::collections::HashSet::new();
            for id in ids {
                let id = format!("op{id}");
                let d = allow(Some(&s), Ok(3), &meta(Some(&id), None, window));
                if d.verdict.applies() {
                    prop_assert!(applied.insert(id.clone()), "{} applied twice", id);
                    s = d.next.unwrap();
                } else {
                    prop_assert!(applied.contains(&id) || d.verdict.code == Some(Code::OpIdExpired));
                    prop_assert_eq!(d.next, None);
                }
                prop_assert_eq!(s.mark, 3);
            }
        }

        #[test]
        fn next_state_is_max_or_nothing(mark in any::<u64>(), token in 1u64.., strict in any::<bool>()) {
            let same_epoch = if strict { SameEpoch::Strict } else { SameEpoch::Allow };
            let d = decide_state(Some(&ResourceState::at(mark)), Ok(token), same_epoch, W, &OpMeta::NONE);
            match d.next {
                Some(n) => {
                    prop_assert!(d.verdict.applies());
                    prop_assert_eq!(n.mark, mark.max(token));
                }
                None => prop_assert!(!d.verdict.applies()),
            }
        }
    }
}
