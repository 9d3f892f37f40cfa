//! Gate policy: where a token came from (provenance) and how far above the mark
//! a resource lets it go (the higher-epoch policy). Both run before the plain
//! fence check [`decide`], and neither ever raises the mark on a refusal.
//!
//! A gate decides one operation in this order, stopping at the first refusal:
//!
//! 1. **Provenance** ([`check_provenance`]): a missing token is `MISSING_TOKEN`;
//!    with `require_signed`, a plain number or bigint is `UNSIGNED_TOKEN`; a
//!    signed token must parse (`MALFORMED_TOKEN`), name a configured key id
//!    (`KEY_RETIRED` / `UNKNOWN_KEY`), verify (`BAD_SIGNATURE`) and carry the
//!    resource's scope (`WRONG_SCOPE`). See [`crate::signed`].
//! 2. **Higher-epoch policy** ([`decide_with_policy`]), only when token > mark:
//!    * `adopt` (default) — any higher epoch advances the mark (the seed's rule);
//!    * `adopt-within` `max_jump` — token − mark ≤ `max_jump`, else
//!      `EPOCH_JUMP_TOO_LARGE`. The limit counts from mark 0 too: a new key
//!      accepts epochs 1..=`max_jump`;
//!    * `reject-future` — token ≤ the ceiling, else `FUTURE_EPOCH`. The ceiling
//!      is the one the host supplies for this check (e.g. the issuer's current
//!      epoch); without one, it is the mark for writes (so only `establish` can
//!      raise the mark, and writes only ever accept) and unlimited for
//!      `establish`. A host that leaves `establish` open to clients should
//!      supply a ceiling or require signed tokens.
//! 3. **Fence check** ([`decide`]): advance / accept / `STALE_TOKEN` /
//!    `SAME_EPOCH_REJECTED`.
//!
//! Why: a forged huge number must not lock the rightful owner out (DESIGN R9);
//! signed tokens stop forgery, `adopt-within` and `reject-future` bound the damage
//! of a leaked key or a buggy issuer, and fit resources that cannot verify signatures.

use crate::decision::{decide, Operation, Outcome, SameEpoch, Verdict};
use crate::error::{Code, TokenError};
use crate::signed::{Claims, Keyring, SignedError};

/// What a gate does with a token above the mark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HigherEpoch {
    /// Any higher epoch advances the mark (default; the seed's rule).
    #[default]
    Adopt,
    /// A higher epoch advances only if token − mark ≤ `max_jump` (epochs);
    /// otherwise `EPOCH_JUMP_TOO_LARGE`.
    AdoptWithin {
        /// The largest accepted distance above the mark, in epochs.
        max_jump: u64,
    },
    /// Only epochs ≤ the ceiling advance; otherwise `FUTURE_EPOCH`. The ceiling
    /// is supplied per check (see the module docs).
    RejectFuture,
}

impl HigherEpoch {
    /// The JS name: `"adopt"`, `"adopt-within"` or `"reject-future"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HigherEpoch::Adopt => "adopt",
            HigherEpoch::AdoptWithin { .. } => "adopt-within",
            HigherEpoch::RejectFuture => "reject-future",
        }
    }
}

/// A rejection that happened before the fence check: the mark stays.
pub const fn refusal(mark: u64, code: Code, token: Option<u64>) -> Verdict {
    Verdict {
        outcome: Outcome::Reject,
        code: Some(code),
        token,
        mark_before: mark,
        mark_after: mark,
    }
}

/// The fence check with a higher-epoch policy in front of it.
///
/// `ceiling` is the host-supplied ceiling for [`HigherEpoch::RejectFuture`]
/// (ignored by the other policies). Tokens ≤ mark go straight to [`decide`], so
/// the policy never changes stale/accept answers.
pub fn decide_with_policy(
    mark: u64,
    token: u64,
    same_epoch: SameEpoch,
    higher: HigherEpoch,
    ceiling: Option<u64>,
    op: Operation,
) -> Verdict {
    if token > mark {
        match higher {
            HigherEpoch::Adopt => {}
            HigherEpoch::AdoptWithin { max_jump } => {
                if token - mark > max_jump {
                    return refusal(mark, Code::EpochJumpTooLarge, Some(token));
                }
            }
            HigherEpoch::RejectFuture => {
                let limit = match (ceiling, op) {
                    (Some(c), _) => c,
                    (None, Operation::Establish) => u64::MAX,
                    (None, Operation::Write) => mark,
                };
                if token > limit {
                    return refusal(mark, Code::FutureEpoch, Some(token));
                }
            }
        }
    }
    decide(mark, token, same_epoch, op)
}

/// A token as presented to a gate, before any check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    /// A plain epoch (a JS number or bigint, or parsed decimal text), or why it is not one.
    Plain(Result<u64, TokenError>),
    /// The text form of a signed token (`fg1.…`).
    Signed(&'a str),
    /// A signed token whose Ed25519 signature the host verified (WebCrypto)
    /// under a [`crate::signed::Key::HostEd25519`] key; every other check
    /// (and every other key) runs as for [`Presented::Signed`].
    HostVerified(&'a str),
}

/// Where a token came from, as far as the gate can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// A plain number: nobody vouches for it.
    Plain(u64),
    /// A verified signed token: the issuer holding the key minted it for this scope.
    Signed(Claims),
}

impl Provenance {
    /// The epoch, whatever the provenance.
    pub fn epoch(&self) -> u64 {
        match self {
            Provenance::Plain(e) => *e,
            Provenance::Signed(c) => c.epoch,
        }
    }
}

/// Step 1 of the module docs: returns the epoch and its provenance, or the
/// code of the refusal (with the epoch when a genuine token was refused only
/// for its scope).
pub fn check_provenance(
    presented: Presented<'_>,
    keyring: &Keyring,
    require_signed: bool,
    scope: &str,
) -> Result<Provenance, (Code, Option<u64>)> {
    match presented {
        Presented::Plain(Err(e)) => Err((e.code(), None)),
        Presented::Plain(Ok(_)) if require_signed => Err((Code::UnsignedToken, None)),
        Presented::Plain(Ok(epoch)) => Ok(Provenance::Plain(epoch)),
        Presented::Signed(text) | Presented::HostVerified(text) => match crate::signed::parse(text)
            .and_then(|parsed| {
                let host = matches!(presented, Presented::HostVerified(_));
                keyring.verify_parsed_host(parsed, Some(scope), host)
            }) {
            Ok(claims) => Ok(Provenance::Signed(claims)),
            Err(SignedError::WrongScope { .. }) => {
                // The token is genuine, so its epoch is worth reporting; the
                // error path re-parses only on this rare refusal.
                let epoch = crate::signed::parse(text).ok().map(|p| p.claims.epoch);
                Err((Code::WrongScope, epoch))
            }
            Err(e) => Err((e.code(), None)),
        },
    }
}

/// Everything a gate needs to decide one operation beyond the mark.
#[derive(Clone, Debug, Default)]
pub struct GatePolicy {
    /// Equal epochs: `allow` or `strict` (R2).
    pub same_epoch: SameEpoch,
    /// Epochs above the mark: `adopt`, `adopt-within`, `reject-future`.
    pub higher: HigherEpoch,
    /// Refuse plain numbers with `UNSIGNED_TOKEN` (R9).
    pub require_signed: bool,
    /// Keys that signed tokens are verified with (may be empty).
    pub keyring: Keyring,
}

impl GatePolicy {
    /// Whether this policy is the plain fence check (no keys, `adopt`, unsigned
    /// allowed), so a gate may take its fast path.
    pub fn is_plain(&self) -> bool {
        !self.require_signed && self.keyring.is_empty() && self.higher == HigherEpoch::Adopt
    }

    /// Decides one operation against `mark`: provenance, then the higher-epoch
    /// policy, then the fence check. `scope` is the resource's scope (what a
    /// signed token must name); `ceiling` is the host's ceiling for
    /// `reject-future`, if any. Returns the verdict and, when the token was
    /// signed and verified, its claims.
    pub fn admit(
        &self,
        mark: u64,
        presented: Presented<'_>,
        scope: &str,
        op: Operation,
        ceiling: Option<u64>,
    ) -> (Verdict, Option<Claims>) {
        match check_provenance(presented, &self.keyring, self.require_signed, scope) {
            Err((code, epoch)) => (refusal(mark, code, epoch), None),
            Ok(prov) => {
                let verdict = decide_with_policy(
                    mark,
                    prov.epoch(),
                    self.same_epoch,
                    self.higher,
                    ceiling,
                    op,
                );
                let claims = match prov {
                    Provenance::Signed(c) => Some(c),
                    Provenance::Plain(_) => None,
                };
                (verdict, claims)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signed::tests::{claims, ring, K2};
    use crate::signed::{mint, Key};
    use crate::store::MemoryStore;
    use proptest::prelude::*;

    const W: Operation = Operation::Write;
    const E: Operation = Operation::Establish;
    const ALLOW: SameEpoch = SameEpoch::Allow;

    fn code(v: &Verdict) -> Option<&'static str> {
        v.code.map(Code::as_str)
    }

    #[test]
    fn adopt_within_boundary() {
        let p = HigherEpoch::AdoptWithin { max_jump: 1000 };
        let v = decide_with_policy(10, 1010, ALLOW, p, None, W);
        assert_eq!((v.outcome, v.mark_after), (Outcome::Advance, 1010));
        let v = decide_with_policy(10, 1011, ALLOW, p, None, W);
        assert_eq!(
            (code(&v), v.mark_after, v.token),
            (Some("EPOCH_JUMP_TOO_LARGE"), 10, Some(1011))
        );
        let v = decide_with_policy(10, 5000, ALLOW, p, None, E);
        assert_eq!((code(&v), v.mark_after), (Some("EPOCH_JUMP_TOO_LARGE"), 10));
        // From mark 0, and at the top of the range (no overflow).
        assert_eq!(
            decide_with_policy(0, 1000, ALLOW, p, None, W).outcome,
            Outcome::Advance
        );
        assert_eq!(
            code(&decide_with_policy(0, 1001, ALLOW, p, None, W)),
            Some("EPOCH_JUMP_TOO_LARGE")
        );
        let big = HigherEpoch::AdoptWithin { max_jump: u64::MAX };
        assert_eq!(
            decide_with_policy(0, u64::MAX, ALLOW, big, None, W).outcome,
            Outcome::Advance
        );
        // Lower and equal epochs are the plain check's business.
        assert_eq!(
            code(&decide_with_policy(10, 9, ALLOW, p, None, W)),
            Some("STALE_TOKEN")
        );
        assert_eq!(
            decide_with_policy(10, 10, ALLOW, p, None, W).outcome,
            Outcome::Accept
        );
        let zero = HigherEpoch::AdoptWithin { max_jump: 0 };
        assert_eq!(
            code(&decide_with_policy(10, 11, ALLOW, zero, None, W)),
            Some("EPOCH_JUMP_TOO_LARGE")
        );
    }

    #[test]
    fn reject_future() {
        let p = HigherEpoch::RejectFuture;
        // No host ceiling: writes cannot advance, establish can.
        let v = decide_with_policy(5, 6, ALLOW, p, None, W);
        assert_eq!((code(&v), v.mark_after), (Some("FUTURE_EPOCH"), 5));
        let v = decide_with_policy(5, 6, ALLOW, p, None, E);
        assert_eq!((v.outcome, v.mark_after), (Outcome::Advance, 6));
        assert_eq!(
            decide_with_policy(6, 6, ALLOW, p, None, W).outcome,
            Outcome::Accept
        );
        // A host ceiling bounds both, inclusive.
        let v = decide_with_policy(5, 9, ALLOW, p, Some(9), W);
        assert_eq!((v.outcome, v.mark_after), (Outcome::Advance, 9));
        let v = decide_with_policy(5, 10, ALLOW, p, Some(9), W);
        assert_eq!((code(&v), v.mark_after), (Some("FUTURE_EPOCH"), 5));
        let v = decide_with_policy(5, 10, ALLOW, p, Some(9), E);
        assert_eq!((code(&v), v.mark_after), (Some("FUTURE_EPOCH"), 5));
        assert_eq!(
            code(&decide_with_policy(5, 4, ALLOW, p, Some(9), W)),
            Some("STALE_TOKEN")
        );
    }

    #[test]
    fn admit_order_and_codes() {
        let mut policy = GatePolicy {
            require_signed: true,
            keyring: ring(),
            ..GatePolicy::default()
        };
        let good = policy.keyring.mint("k1", &claims("orders", 7)).unwrap();
        let (v, c) = policy.admit(3, Presented::Signed(&good), "orders", W, None);
        assert_eq!(
            (v.outcome, v.mark_after, v.token),
            (Outcome::Advance, 7, Some(7))
        );
        assert_eq!(c.unwrap().lease_id, "lease-7");

        let cases: Vec<(Presented<'_>, &str, &str)> = vec![
            (Presented::Plain(Ok(1 << 63)), "orders", "UNSIGNED_TOKEN"),
            (
                Presented::Plain(Err(TokenError::Missing)),
                "orders",
                "MISSING_TOKEN",
            ),
            (
                Presented::Plain(Err(TokenError::Malformed("x"))),
                "orders",
                "MALFORMED_TOKEN",
            ),
            (
                Presented::Signed("fg1.nope.nope"),
                "orders",
                "MALFORMED_TOKEN",
            ),
            (Presented::Signed(&good), "invoices", "WRONG_SCOPE"),
        ];
        for (p, scope, expected) in cases {
            let (v, c) = policy.admit(3, p.clone(), scope, W, None);
            assert_eq!(
                (code(&v), v.mark_after, c),
                (Some(expected), 3, None),
                "{p:?}"
            );
        }
        let forged = mint(&claims("orders", u64::MAX), &Key::hmac(K2).unwrap()).unwrap();
        let (v, _) = policy.admit(3, Presented::Signed(&forged), "orders", W, None);
        assert_eq!(
            (code(&v), v.mark_after, v.token),
            (Some("BAD_SIGNATURE"), 3, None)
        );

        // Signature and scope come before the epoch: a stale token of another
        // scope answers WRONG_SCOPE, not STALE_TOKEN.
        let (v, _) = policy.admit(100, Presented::Signed(&good), "invoices", W, None);
        assert_eq!((code(&v), v.token), (Some("WRONG_SCOPE"), Some(7)));

        policy.keyring.retire("k1").unwrap();
        let (v, _) = policy.admit(3, Presented::Signed(&good), "orders", W, None);
        assert_eq!(code(&v), Some("KEY_RETIRED"));

        // Without require_signed both forms are accepted (migration).
        let policy = GatePolicy {
            keyring: ring(),
            ..GatePolicy::default()
        };
        assert_eq!(
            policy
                .admit(0, Presented::Plain(Ok(2)), "s", W, None)
                .0
                .outcome,
            Outcome::Advance
        );
        assert!(!policy.is_plain());
        assert!(GatePolicy::default().is_plain());
        // A signed token at a gate with no keys names an unknown key.
        let (v, _) = GatePolicy::default().admit(0, Presented::Signed(&good), "orders", W, None);
        assert_eq!(code(&v), Some("UNKNOWN_KEY"));
    }

    /// The scenarios through the in-memory store: each leaves mark and data unchanged.
    #[test]
    fn refusals_change_nothing_in_the_store() {
        let policy = GatePolicy {
            require_signed: true,
            keyring: ring(),
            higher: HigherEpoch::AdoptWithin { max_jump: 1000 },
            ..GatePolicy::default()
        };
        let mut store: MemoryStore<String, &str> = MemoryStore::new(SameEpoch::Allow);
        let t10 = policy.keyring.mint("k1", &claims("a", 10)).unwrap();
        let v = store.apply_with(
            "a",
            Operation::Write,
            Some("v10"),
            &crate::decision::OpMeta::NONE,
            |m| policy.admit(m, Presented::Signed(&t10), "a", W, None).0,
        );
        assert_eq!(v.outcome, Outcome::Advance);
        let t5000 = policy.keyring.mint("k1", &claims("a", 5000)).unwrap();
        let forged = mint(&claims("a", 1 << 63), &Key::hmac(K2).unwrap()).unwrap();
        let other = policy.keyring.mint("k1", &claims("b", 11)).unwrap();
        let attempts: Vec<(Presented<'_>, &str)> = vec![
            (Presented::Signed(&t5000), "EPOCH_JUMP_TOO_LARGE"),
            (Presented::Signed(&forged), "BAD_SIGNATURE"),
            (Presented::Signed(&other), "WRONG_SCOPE"),
            (Presented::Plain(Ok(1 << 63)), "UNSIGNED_TOKEN"),
        ];
        for (p, expected) in attempts {
            let v = store.apply_with(
                "a",
                Operation::Write,
                Some("bad"),
                &crate::decision::OpMeta::NONE,
                |m| policy.admit(m, p.clone(), "a", W, None).0,
            );
            assert_eq!(
                (code(&v), v.mark_before, v.mark_after),
                (Some(expected), 10, 10)
            );
            let v = store.apply_with(
                "a",
                Operation::Establish,
                None,
                &crate::decision::OpMeta::NONE,
                |m| policy.admit(m, p, "a", E, None).0,
            );
            assert_eq!(code(&v), Some(expected));
            assert_eq!(
                (store.mark("a"), store.get("a").unwrap().value),
                (10, Some("v10"))
            );
        }
        // A refused first write creates no entry.
        let v = store.apply_with(
            "b",
            Operation::Write,
            Some("bad"),
            &crate::decision::OpMeta::NONE,
            |m| policy.admit(m, Presented::Signed(&t10), "b", W, None).0,
        );
        assert_eq!(code(&v), Some("WRONG_SCOPE"));
        assert!(store.get("b").is_none());
    }

    proptest! {
        #[test]
        fn policy_never_lowers_and_only_narrows(mark in any::<u64>(), token in 1u64.., jump in any::<u64>(), ceiling in proptest::option::of(any::<u64>()), est in any::<bool>(), which in 0u8..3) {
            let op = if est { E } else { W };
            let higher = match which {
                0 => HigherEpoch::Adopt,
                1 => HigherEpoch::AdoptWithin { max_jump: jump },
                _ => HigherEpoch::RejectFuture,
            };
            let v = decide_with_policy(mark, token, ALLOW, higher, ceiling, op);
            let plain = decide(mark, token, ALLOW, op);
            prop_assert_eq!(v.mark_before, mark);
            prop_assert!(v.mark_after >= mark);
            if !v.applies() { prop_assert_eq!(v.mark_after, mark); }
            // A policy only ever turns an advance into a refusal.
            if v.applies() { prop_assert_eq!(v, plain); }
            if token <= mark { prop_assert_eq!(v, plain); }
        }
    }
}
