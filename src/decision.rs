//! The fence check: advance, accept or reject an epoch against a high-water mark.
//!
//! The rules are the seed article's ("the protected resource keeps the largest
//! epoch it has accepted, refuses smaller ones, advances on larger ones") and
//! Kleppmann's "How to do distributed locking" (2016): the storage server, not
//! the client, makes the comparison.

use crate::error::{Code, TokenError};

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
    /// Parses the policy names used by the JS API: `"allow"` or `"strict"`.
    pub fn from_name(name: &str) -> Option<SameEpoch> {
        match name {
            "allow" => Some(SameEpoch::Allow),
            "strict" => Some(SameEpoch::Strict),
            _ => None,
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
    /// accept under either policy, so a retried barrier is harmless.
    Establish,
}

/// The three outcomes of a fence check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// token > mark: raise the mark to the token and apply the change.
    Advance,
    /// token == mark and the same-epoch policy allows it: apply, mark unchanged.
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
pub const fn decide(mark: u64, token: u64, policy: SameEpoch, op: Operation) -> Verdict {
    let (outcome, code, mark_after) = if token > mark {
        (Outcome::Advance, None, token)
    } else if token < mark {
        (Outcome::Reject, Some(Code::StaleToken), mark)
    } else if matches!(op, Operation::Establish) || matches!(policy, SameEpoch::Allow) {
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
            let policy = if strict { SameEpoch::Strict } else { SameEpoch::Allow };
            let op = if est { Operation::Establish } else { Operation::Write };
            let v = decide(mark, token, policy, op);
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
