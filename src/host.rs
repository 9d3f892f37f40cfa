//! The decision for host stores: stored state in, verdict and next state out.
//!
//! A host store (SQLite, Redis, PostgreSQL, a Durable Object, …) keeps the
//! persisted state ([`crate::state`], format v1) next to the protected value and
//! reaches fencegate only through callbacks. For every operation the
//! orchestrator (`pkg/lib/gate.mjs`) loads the stored state, calls
//! [`decide_state`], and — only when the verdict applies — has the host commit
//! the returned next state together with the data change in one atomic step
//! (DESIGN R1). A rejection returns no next state, so the host writes nothing
//! (R3); the next state's mark is `max(mark, token)` (R5).

use crate::decision::{decide, Operation, SameEpoch, Verdict};
use crate::error::TokenError;
use crate::state::ResourceState;
use crate::token::parse_token;

/// The result of deciding one operation against stored state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostDecision {
    /// The verdict (same shape as the in-memory gate's).
    pub verdict: Verdict,
    /// The state to commit with the data change; `None` when rejected
    /// (the host must write nothing at all).
    pub next: Option<ResourceState>,
}

/// Decides `token` against the stored state of one key.
///
/// * `stored` — the decoded stored state, or `None` when the key has no fence
///   record yet (mark 0). Decoding errors are the caller's CORRUPT_STATE and
///   never reach this function as "no state".
/// * `token` — the validated epoch, or why it is not one (always a rejection).
///
/// On advance the next state carries the token as mark; on accept it carries
/// the unchanged mark (it is still written, so the host's version moves and a
/// concurrent writer that loaded the same version must re-check).
pub fn decide_state(
    stored: Option<ResourceState>,
    token: Result<u64, TokenError>,
    policy: SameEpoch,
    op: Operation,
) -> HostDecision {
    let mark = stored.map_or(0, |s| s.mark);
    let verdict = match token {
        Ok(t) => decide(mark, t, policy, op),
        Err(e) => Verdict::invalid_token(mark, &e),
    };
    let next = verdict.applies().then_some(ResourceState {
        mark: verdict.mark_after,
    });
    HostDecision { verdict, next }
}

/// Fast path for the exact text adapters write: `{"v":1,"mark":"<canonical decimal>"}`.
///
/// Returns `None` for anything else (other spacing, key order, corrupt text);
/// the caller then takes the general decoder, which accepts every valid
/// format-v1 JSON and names the error of an invalid one. Never wrong: a `Some`
/// is exactly what the general decoder would return.
pub fn decode_canonical_text(text: &str) -> Option<ResourceState> {
    let digits = text
        .strip_prefix(r#"{"v":1,"mark":""#)?
        .strip_suffix(r#""}"#)?;
    if digits == "0" {
        return Some(ResourceState { mark: 0 });
    }
    parse_token(digits).ok().map(|mark| ResourceState { mark })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Outcome;
    use crate::error::Code;
    use proptest::prelude::*;

    const W: Operation = Operation::Write;

    #[test]
    fn no_record_is_mark_zero() {
        let d = decide_state(None, Ok(1), SameEpoch::Allow, W);
        assert_eq!(d.verdict.outcome, Outcome::Advance);
        assert_eq!(d.next, Some(ResourceState { mark: 1 }));
    }

    #[test]
    fn rejection_has_no_next_state() {
        let s = Some(ResourceState { mark: 100 });
        let d = decide_state(s, Ok(99), SameEpoch::Allow, W);
        assert_eq!(
            (d.verdict.code, d.verdict.mark_after, d.next),
            (Some(Code::StaleToken), 100, None)
        );
        let d = decide_state(s, Err(TokenError::Missing), SameEpoch::Allow, W);
        assert_eq!((d.verdict.code, d.next), (Some(Code::MissingToken), None));
        let d = decide_state(s, Ok(100), SameEpoch::Strict, W);
        assert_eq!(
            (d.verdict.code, d.next),
            (Some(Code::SameEpochRejected), None)
        );
        let d = decide_state(s, Ok(101), SameEpoch::Allow, W);
        assert_eq!(d.next, Some(ResourceState { mark: 101 }));
    }

    #[test]
    fn accept_rewrites_the_same_mark() {
        let s = Some(ResourceState { mark: u64::MAX });
        let d = decide_state(s, Ok(u64::MAX), SameEpoch::Allow, W);
        assert_eq!(d.verdict.outcome, Outcome::Accept);
        assert_eq!(d.next, s);
        let d = decide_state(s, Ok(u64::MAX), SameEpoch::Strict, Operation::Establish);
        assert_eq!(d.next, s);
    }

    #[test]
    fn canonical_text_fast_path() {
        for mark in [0, 1, 41, (1 << 53) + 1, u64::MAX] {
            let text = format!(r#"{{"v":1,"mark":"{mark}"}}"#);
            assert_eq!(decode_canonical_text(&text), Some(ResourceState { mark }));
        }
        for other in [
            r#"{"v":1,"mark":"05"}"#,
            r#"{"v":1,"mark":"-1"}"#,
            r#"{"v":1,"mark":""}"#,
            r#"{"v":1,"mark":"18446744073709551616"}"#,
            r#"{"v":2,"mark":"5"}"#,
            r#"{"mark":"5","v":1}"#,
            r#"{ "v": 1, "mark": "5" }"#,
            r#"{"v":1,"mark":"5"} "#,
            r#"{"v":1,"mark":"5","x":1}"#,
            r#"{"v":1,"mark":"5\\"}"#,
            "",
        ] {
            assert_eq!(decode_canonical_text(other), None, "{other}");
        }
    }

    proptest! {
        #[test]
        fn fast_path_agrees_with_the_wire_form(mark in any::<u64>()) {
            let text = serde_json::to_string(&ResourceState { mark }.to_wire()).unwrap();
            prop_assert_eq!(decode_canonical_text(&text), Some(ResourceState { mark }));
        }

        #[test]
        fn fast_path_never_accepts_what_the_full_decoder_refuses(text in r#"\{"v":1,"mark":"[0-9a-z\-]{0,22}"\}.?"#) {
            if let Some(state) = decode_canonical_text(&text) {
                let wire: crate::state::WireState = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(ResourceState::from_wire(&wire), Ok(state));
            }
        }

        #[test]
        fn next_state_is_max_or_nothing(mark in any::<u64>(), token in 1u64.., strict in any::<bool>()) {
            let policy = if strict { SameEpoch::Strict } else { SameEpoch::Allow };
            let d = decide_state(Some(ResourceState { mark }), Ok(token), policy, W);
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
