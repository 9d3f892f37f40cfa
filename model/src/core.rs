//! The one place where the model calls the fencegate core.
//!
//! Everything the model does to a store goes through these functions, which
//! call the shipped Rust functions: [`fencegate::decision::decide_state`] (the
//! decision every host-store gate makes, `pkg/lib/gate.mjs` → `__gateDecide`),
//! [`fencegate::state::ResourceState::quarantine_at`] (`gate.quarantine`) and
//! the issuer transitions [`fencegate::issuer::acquire`], [`release`] and
//! [`raise_revoking`] (`Issuer.acquire`, `.release`, `.raise({ revoke: true })`).
//! Stores hold the records as the JSON text the core writes (`to_json`) and
//! every step decodes them again with the core's strict decoders, as a host
//! store round trip does.
//!
//! When a core signature changes (op-id state, lease ids, codecs), this file is
//! the only one to adapt.

use fencegate::decision::{
    decide_state, decide_with_state, OpMeta, Operation, Outcome, SameEpoch, Verdict,
};
use fencegate::issuer::{
    acquire, keyed_lease_id, raise_revoking, release, AcquireRequest, EpochLimit, IssuerResult,
    IssuerState, LEASE_KEY_BYTES,
};
use fencegate::state::ResourceState;

/// The one scope the model's issuer hands epochs out for.
pub const SCOPE: &str = "s";

/// Which gate runs. `AcceptsStale` is the deliberate breakage for the
/// checker's teeth test: it lives here, in the model, never in the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GateVariant {
    /// The shipped decision.
    Real,
    /// The fence comparison accepts equal-or-lower epochs (broken on purpose).
    AcceptsStale,
}

/// What a resource answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// Applied and raised the mark.
    Advance,
    /// Applied at the current mark.
    Accept,
    /// The operation id was applied already in this epoch; nothing applied.
    Duplicate,
    /// Refused with this code; nothing changes.
    Refused(&'static str),
}

impl Answer {
    /// Whether the operation was applied (the data change lands).
    pub fn applies(self) -> bool {
        matches!(self, Answer::Advance | Answer::Accept)
    }
}

/// A resource's answer and the record to commit with the data change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateAnswer {
    /// The verdict.
    pub answer: Answer,
    /// The next record (JSON text) when the operation applies, else `None`.
    pub next: Option<String>,
}

fn decode_resource(text: Option<&str>) -> Option<ResourceState> {
    text.map(|t| {
        ResourceState::from_json(t)
            .unwrap_or_else(|e| panic!("the model stored a record the core refuses: {t}: {e}"))
    })
}

/// Mark, holder and quarantine floor of a resource record (`gate.inspect`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceView {
    /// The high-water mark (0 without a record).
    pub mark: u64,
    /// The holder bound to the current epoch.
    pub holder: Option<String>,
    /// The quarantine floor.
    pub quarantine: Option<u64>,
}

/// Reads a resource record.
pub fn resource_view(text: Option<&str>) -> ResourceView {
    let s = decode_resource(text).unwrap_or_default();
    ResourceView {
        mark: s.mark,
        holder: s.holder,
        quarantine: s.quarantine,
    }
}

/// One fenced write or establish against a stored record, as the host-store
/// gate does it (same-epoch policy `allow`).
pub fn gate_op(
    stored: Option<&str>,
    token: u64,
    establish: bool,
    op_id: Option<&str>,
    holder: Option<&str>,
    window: usize,
    variant: GateVariant,
) -> GateAnswer {
    let state = decode_resource(stored);
    let op = if establish {
        Operation::Establish
    } else {
        Operation::Write
    };
    let meta = OpMeta {
        op_id,
        holder,
        window,
        fingerprint: None,
    };
    let d = match variant {
        GateVariant::Real => decide_state(state.as_ref(), Ok(token), SameEpoch::Allow, op, &meta),
        GateVariant::AcceptsStale => {
            let mark = state.as_ref().map_or(0, |s| s.mark);
            let verdict = if token <= mark {
                Verdict {
                    outcome: Outcome::Accept,
                    code: None,
                    token: Some(token),
                    mark_before: mark,
                    mark_after: mark,
                }
            } else {
                fencegate::decision::decide(mark, token, SameEpoch::Allow, op)
            };
            decide_with_state(state.as_ref(), verdict, op, &meta)
        }
    };
    let answer = match d.verdict.outcome {
        Outcome::Advance => Answer::Advance,
        Outcome::Accept => Answer::Accept,
        Outcome::Duplicate { .. } => Answer::Duplicate,
        Outcome::Reject => Answer::Refused(d.verdict.code.map_or("REJECT", |c| c.as_str())),
    };
    GateAnswer {
        answer,
        next: d.next.map(|s| s.to_json()),
    }
}

/// `gate.quarantine(key, floor)`: the new record when it changes.
pub fn quarantine(stored: Option<&str>, floor: u64) -> Option<String> {
    let mut s = decode_resource(stored).unwrap_or_default();
    s.quarantine_at(floor).then(|| s.to_json())
}

fn decode_issuer(text: Option<&str>) -> IssuerState {
    text.map(|t| {
        IssuerState::from_json(t).unwrap_or_else(|e| {
            panic!("the model stored an issuer record the core refuses: {t}: {e}")
        })
    })
    .unwrap_or_default()
}

/// The issuer's record of the scope (`issuer.current`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuerView {
    /// The last epoch issued.
    pub epoch: u64,
    /// The lease of that epoch: holder and expiry (ms).
    pub lease: Option<(String, u64)>,
}

/// Reads the issuer record.
pub fn issuer_view(text: Option<&str>) -> IssuerView {
    let s = decode_issuer(text);
    IssuerView {
        epoch: s.epoch,
        lease: s.lease.map(|l| (l.holder, l.expires_at)),
    }
}

/// The answer to an acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Acquired {
    /// A lease: its epoch and expiry; `replayed` for a retried request id.
    Granted {
        /// The epoch.
        epoch: u64,
        /// Expiry in ms.
        expires: u64,
        /// A retry of a request that was granted already.
        replayed: bool,
    },
    /// `LEASE_HELD`, `LEASE_EXPIRED` or another refusal.
    Refused(&'static str),
}

/// `Issuer.acquire`: the answer and the record to persist before answering.
pub fn issuer_acquire(
    stored: Option<&str>,
    holder: &str,
    ttl_ms: u64,
    now_ms: u64,
    request_id: &str,
) -> (Acquired, Option<String>) {
    let state = decode_issuer(stored);
    let random = lease_key(holder, state.epoch.saturating_add(1));
    let req = AcquireRequest {
        scope: SCOPE,
        holder,
        ttl_ms,
        now_ms,
        request_id: Some(request_id),
        limit: EpochLimit::Number,
        random,
    };
    match acquire(&state, &req) {
        Err(e) => (Acquired::Refused(e.code().as_str()), None),
        Ok(step) => {
            let answer = match &step.result {
                IssuerResult::Granted(g) => Acquired::Granted {
                    epoch: g.epoch,
                    expires: g.expires_at,
                    replayed: g.replayed,
                },
                other => Acquired::Refused(other.code().map_or("REFUSED", |c| c.as_str())),
            };
            (answer, step.next.map(|s| s.to_json()))
        }
    }
}

/// The random part of a lease id, which the host draws from its CSPRNG
/// (`crypto.getRandomValues`). The model derives it from the holder and the
/// epoch instead, so a client can present its own lease id again and the
/// state space stays finite; distinct holders still get distinct ids.
fn lease_key(holder: &str, epoch: u64) -> [u8; LEASE_KEY_BYTES] {
    let mut key = [0u8; LEASE_KEY_BYTES];
    for (i, b) in holder.bytes().take(8).enumerate() {
        key[i] = b;
    }
    key[8..].copy_from_slice(&epoch.to_be_bytes());
    key
}

/// `Issuer.release` by `holder` of its lease of `epoch`: the record to persist, if any.
pub fn issuer_release(stored: Option<&str>, epoch: u64, holder: &str) -> Option<String> {
    let state = decode_issuer(stored);
    let id = keyed_lease_id(SCOPE, epoch, &lease_key(holder, epoch));
    // A lease id above the stored epoch (a restored issuer) is CORRUPT_STATE,
    // another holder's id is LEASE_NOT_HELD: nothing changes, as for any error.
    release(&state, SCOPE, &id, holder)
        .ok()
        .and_then(|step| step.next.map(|s| s.to_json()))
}

/// The answer to `Issuer.raise({ atLeast, now, revoke: true })`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raised {
    /// The epoch before and after (≥ before) and whether a live lease was revoked.
    Raised {
        /// The epoch before.
        before: u64,
        /// The epoch after.
        epoch: u64,
        /// A live lease was revoked.
        revoked: bool,
    },
    /// A live lease above `at_least` holds the scope (`LEASE_HELD`).
    Held,
}

/// `Issuer.raise` with `revoke: true` (what reconcile calls).
pub fn issuer_raise_revoking(
    stored: Option<&str>,
    at_least: u64,
    now_ms: u64,
) -> (Raised, Option<String>) {
    let state = decode_issuer(stored);
    let step = raise_revoking(&state, at_least, now_ms);
    let answer = match step.result {
        IssuerResult::Raised {
            before,
            after,
            revoked,
        } => Raised::Raised {
            before,
            epoch: after,
            revoked,
        },
        _ => Raised::Held,
    };
    (answer, step.next.map(|s| s.to_json()))
}
